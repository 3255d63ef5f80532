"""Copying history between two repositories on this machine, in proportion to what is new.

A remote on a local path needs no pack protocol: the commits the target lacks are
found by walking back from the wanted heads until a commit the target holds (a
repository holds every object of every commit it holds, as git's connectivity rule
says), and of each new commit's tree only the entries that differ from its parents'
trees are visited. With gitmem's fan-out layout that is a few folders per change,
however many memories the store holds.

Objects travel as raw bytes: read from a loose file or a pack, never parsed into
dulwich objects (a tree is split into entries by dulwich's native parser only to be
compared with its parents'). Each object's id is computed again from its content, so a
damaged source object is refused rather than copied. They arrive as one pack written by
``packing.write_pack``, the one pack writer: its index written from what was written,
not by reading the pack back, both fsynced and renamed into place pack first, and the
folder fsynced (by the caller, when it asks so, before a ref names what arrived).

A copy from another repository (a fetch from a remote on this machine, which may be
anyone's) holds each object it reads to the bound a push hook holds it to
(:data:`~gitmem.store.pushobjects.OBJECT_MAX`), from the size its header, or its
delta's, declares before anything is inflated: an object past it stops the copy
(``TooLarge``, naming the object and the commit that brought it), and nothing is written.
"""

from __future__ import annotations

import os
import zlib
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator
from functools import partial
from hashlib import sha1
from itertools import repeat
from operator import add
from typing import BinaryIO, NamedTuple

from dulwich.errors import (
    ApplyDeltaError,
    ChecksumMismatch,
    FileFormatException,
    ObjectFormatException,
)
from dulwich.object_store import DiskObjectStore
from dulwich.objects import ObjectID, object_class, object_header, parse_tree
from dulwich.repo import Repo

from gitmem.store.packing import PACKED, Record, write_pack
from gitmem.store.packreader import Packs
from gitmem.store.pushobjects import LOOSE_HEAD, Made, TooLarge, loose_read
from gitmem.store.trees import (
    BadTree,
    Trees,
    common_head,
    common_tail,
    named,
    starts_in,
    starts_of,
)

__all__ = ["copy_history"]

_DIR_MODE = 0o040000
_GITLINK_MODE = 0o160000
_COMMIT, _TREE = 1, 2
_SHA_LENGTH = 20
_DELTA_DEPTH = 10
"""The longest delta chain written (git allows 50): reading a tree resolves its chain."""

Entry = tuple[bytes, int, bytes]
Entries = frozenset[Entry]


def copy_history(
    source: Repo,
    target: Repo,
    heads: list[str],
    *,
    sync_folder: bool = True,
    trees: Trees | None = None,
    into_own: bool = False,
    bounded: bool = False,
) -> int:
    """Copy into ``target`` every object reachable from ``heads`` in ``source`` that
    ``target`` lacks, as one durable pack; returns how many objects were copied.

    ``trees``: trees shared with the other readers of a sync (what this copy reads of
    them from ``source`` is checked against their ids before it is shared).
    ``into_own``: ``target`` is the repository of those readers (a fetch), so a tree
    it holds already (a new commit's parent's) is read from it, as its own, not from
    ``source`` and checked.
    ``bounded``: ``source`` is another's repository, whose objects are held to
    ``OBJECT_MAX`` (``TooLarge`` past it, and nothing is written).

    With ``sync_folder=False`` the pack's name is not yet durable: the caller must fsync
    ``target``'s pack folder before a ref names what arrived.

    Raises ``KeyError`` for an object missing in ``source``, ``ValueError`` for one
    whose content does not match its id, ``OSError`` for a failed read or write."""
    reader = _RawReader(source.object_store, bounded)
    own = _RawReader(target.object_store) if into_own and trees is not None else None
    sha = ""
    try:
        commits = _new_commits(reader, target, heads)
        objects: dict[str, _Object] = {}
        cache = _TreeCache(reader, trees, own)
        for sha in reversed(commits):  # oldest first: a tree's delta base is written before it
            tree, parents = reader.links(sha)
            kind, content, packed = reader.entry(sha)
            objects[sha] = _Object(kind, content, packed=packed)
            _copy_tree(reader, cache, tree, [reader.links(p)[0] for p in parents], objects)
    except TooLarge as exc:
        exc.commit = exc.commit or sha or heads[0]
        raise
    finally:
        reader.close()
        if own is not None:
            own.close()
    if objects:
        _write_pack(target.object_store, objects, cache.checked, sync_folder=sync_folder)
    return len(objects)


class _RawReader:
    """Raw reads of a repository's objects, a commit's tree and parents cached;
    ``bounded``: each held to ``OBJECT_MAX`` before it is inflated."""

    def __init__(self, store: DiskObjectStore, bounded: bool = False) -> None:
        self.store = store
        self._links: dict[str, tuple[str, list[str]]] = {}
        self._packs: Packs | None = None
        self._loose = _loose_folders(os.fspath(store.path))
        self._bounded = bounded
        self._relisted = False
        self._made = Made() if bounded else None

    def raw(self, sha: str) -> tuple[int, bytes]:
        """``(type number, content)`` of an object; ``KeyError`` if it is not here."""
        kind, content, _ = self.entry(sha)
        return kind, content

    def entry(self, sha: str) -> tuple[int, bytes, bytes]:
        """``(type number, content, packed)``: ``packed`` is the object as its pack
        holds it (header and zlib stream), when it is held whole there, else empty."""
        try:
            return self._entry(sha)
        except TooLarge as exc:
            exc.sha = exc.sha or sha
            raise

    def _entry(self, sha: str) -> tuple[int, bytes, bytes]:
        found = self._loose_object(sha)
        if found is None:
            return self._packed(sha)
        return *found, b""

    def _loose_object(self, sha: str) -> tuple[int, bytes] | None:
        """The loose object ``sha``, or ``None`` if it has no file."""
        # a repository's newest objects may be loose: read the file directly (dulwich
        # would parse it, after missing it in every pack and rescanning the pack folder)
        if sha[:2] not in self._loose:
            return None
        try:
            with open(os.path.join(self.store.path, sha[:2], sha[2:]), "rb") as f:
                data = self._inflated(f) if self._bounded else zlib.decompress(f.read())
        except FileNotFoundError:
            return None
        except zlib.error as exc:
            raise ValueError(f"object {sha} does not inflate: {exc}") from None
        header, _, content = data.partition(b"\0")
        kind, _, size = header.partition(b" ")
        found = object_class(kind)
        if found is None or not size.isdigit() or int(size) != len(content):
            raise ValueError(f"object {sha} has a damaged header")
        return found.type_num, content

    @staticmethod
    def _inflated(f: BinaryIO) -> bytes:
        """A loose object's file inflated, its declared size held to ``OBJECT_MAX``
        first, and no more read or inflated than that size allows."""
        try:
            data, size = loose_read(f)
        except TooLarge:
            raise
        except ValueError as exc:
            raise zlib.error(str(exc)) from None
        return zlib.decompressobj().decompress(data, size + LOOSE_HEAD)

    def _packed(self, sha: str) -> tuple[int, bytes, bytes]:
        if self._packs is None:
            # a bounded read takes a delta's base named by id from a loose file too, and
            # counts what it makes over the packs listed anew
            loose = self._loose_object if self._bounded else None
            folder = os.path.join(self.store.path, "pack")
            self._packs = Packs(folder, self._bounded, loose, self._made)
        try:
            found = self._packs.get(bytes.fromhex(sha))
            if found is not None:
                return found
            if self._bounded:
                return self._unread(sha)
            # a pack or a loose object that arrived since, or a pack entry this reader
            # leaves to dulwich
            return (*self.store.get_raw(ObjectID(sha.encode())), b"")
        except (KeyError, TooLarge):
            raise
        except (zlib.error, ApplyDeltaError, ChecksumMismatch, FileFormatException) as exc:
            raise ValueError(f"object {sha} does not read: {exc}") from None

    def _unread(self, sha: str) -> tuple[int, bytes, bytes]:
        """Another's object no pack read here holds in a form this reader reads: read
        again once the folder is listed anew (files may have come since); missing if the
        repository lacks it; else refused, never handed to dulwich, which holds no
        object to the bound nor a chain of deltas to one delta at a time."""
        if not self._relisted:
            self._relisted = True
            self._loose = _loose_folders(os.fspath(self.store.path))
            if self._packs is not None:
                self._packs.close()
                self._packs = None
            return self._entry(sha)
        if ObjectID(sha.encode()) not in self.store:
            raise KeyError(sha)
        raise ValueError(
            f"object {sha} is stored there in a form a sync does not read from another's "
            "repository (an index of an older version, or a delta whose base is missing); "
            "have it repacked there (git repack -a -d)"
        )

    def close(self) -> None:
        if self._packs is not None:
            self._packs.close()

    def links(self, sha: str) -> tuple[str, list[str]]:
        """A commit's tree and parents, from its header lines."""
        found = self._links.get(sha)
        if found is None:
            kind, content = self.raw(sha)
            if kind != _COMMIT:
                raise ValueError(f"object {sha} is not a commit")
            tree = ""
            parents: list[str] = []
            for line in content.split(b"\n\n", 1)[0].split(b"\n"):
                if line.startswith(b"tree "):
                    tree = line[5:].decode("ascii")
                elif line.startswith(b"parent "):
                    parents.append(line[7:].decode("ascii"))
            if len(tree) != 40:
                raise ValueError(f"commit {sha} names no tree")
            found = (tree, parents)
            self._links[sha] = found
        return found


def _loose_folders(objects: str) -> frozenset[str]:
    """The fan-out folders of ``objects`` that may hold loose objects, read once: in a
    repository whose objects are packed, most lookups then skip a failed ``open``."""
    try:
        return frozenset(n for n in os.listdir(objects) if len(n) == 2)
    except FileNotFoundError:
        return frozenset()


def _new_commits(reader: _RawReader, target: Repo, heads: list[str]) -> list[str]:
    """The commits reachable from ``heads`` that ``target`` lacks, each before its
    parents."""
    store = target.object_store
    # the pack folder read once: every new commit is a miss, after which dulwich would
    # read the folder again (a pack landing meanwhile at worst makes a commit travel twice)
    packs = Packs(os.path.join(store.path, "pack"))
    loose = _loose_folders(os.fspath(store.path))
    try:
        found: list[str] = []
        seen: set[str] = set()
        stack = list(heads)
        while stack:
            sha = stack.pop()
            if sha in seen:
                continue
            seen.add(sha)
            if bytes.fromhex(sha) in packs or (
                sha[:2] in loose and os.path.exists(os.path.join(store.path, sha[:2], sha[2:]))
            ):
                continue
            found.append(sha)
            stack.extend(reader.links(sha)[1])
        return found
    finally:
        packs.close()


class _TreeCache:
    """Trees by id (bounded: a long history passes many): their content and where each
    entry starts, and, when asked, all their entries."""

    def __init__(
        self, reader: _RawReader, shared: Trees | None = None, own: _RawReader | None = None
    ) -> None:
        self._reader = reader
        self._shared = shared
        self._own = own
        self._trees: dict[str, _Tree] = {}
        self._sets: dict[str, Entries] = {}
        self.checked: dict[str, bytes] = {}
        """The content of each tree shared with the other readers, by id: it was
        checked against its id then, and need not be again when it is written."""

    def tree(self, sha: str, content: bytes | None = None) -> _Tree:
        found = self._trees.get(sha)
        if found is None:
            if self._shared is not None:
                if content is not None:
                    self._share(sha, content)
                try:
                    content = self._shared.content(sha.encode(), self._read)
                    starts = self._shared.starts(sha.encode(), self._read)
                except BadTree as exc:
                    raise ValueError(f"tree {sha} does not parse: {exc.reason}") from None
                if starts is None:
                    starts = _starts(sha, content, 0, len(content))[1]
            else:
                content = content if content is not None else self._read(sha.encode())
                starts = _starts_of(sha, content)
            found = _Tree(content, starts)
            self._keep(sha, found)
        return found

    def entries(self, sha: str, content: bytes | None = None) -> Entries:
        found = self._sets.get(sha)
        if found is None:
            content = self.tree(sha, content).content
            if self._shared is not None:
                try:
                    found = frozenset(self._shared.entries(sha.encode(), self._read))
                except BadTree as exc:
                    raise ValueError(f"tree {sha} does not parse: {exc.reason}") from None
            else:
                try:
                    found = frozenset(parse_tree(content, _SHA_LENGTH))
                except ObjectFormatException as exc:
                    raise ValueError(f"tree {sha} does not parse: {exc}") from None
            self._sets[sha] = found
        return found

    def _read(self, sha: bytes) -> bytes:
        """A tree's content from the target when it is the sharing readers' own
        repository and holds it, else from the source; one read from the source and
        shared with other readers is checked against its id first (the source may be
        another repository)."""
        if self._own is not None:
            try:
                kind, content = self._own.raw(sha.decode())
            except KeyError:
                pass  # new in this copy, and let go of by the bounded caches
            else:
                if kind != _TREE:
                    raise ValueError(f"object {sha.decode()} is not a tree")
                return content
        kind, content = self._reader.raw(sha.decode())
        if kind != _TREE:
            raise ValueError(f"object {sha.decode()} is not a tree")
        if self._shared is not None:
            _check(sha.decode(), kind, content)
        return content

    def _share(self, sha: str, content: bytes, starts: list[int] | None = None) -> None:
        """Hand a tree read from the source to the other readers, checked first."""
        if self._shared is not None:
            if self.checked.get(sha) is not content:
                if self._shared.checked(sha.encode()) is not content:
                    _check(sha, _TREE, content)
                self.checked[sha] = content
            self._shared.keep(sha.encode(), content, starts, checked=True)

    def kept(self, sha: str) -> bytes | None:
        """Tree ``sha``'s content if this copy or another reader of the sync read it
        (each keeps only content read from its own repository or checked against its
        id), else ``None``: nothing is read."""
        found = self._trees.get(sha)
        if found is not None:
            return found.content
        return self._shared.kept_content(sha.encode()) if self._shared is not None else None

    def entry(self, sha: str, name: bytes) -> Entry | None:
        """Tree ``sha``'s entry ``name``, found in its raw bytes (not parsed whole)."""
        tree = self.tree(sha)
        found = named(tree.content, tree.starts, name)
        return None if found is None else (name, found[0], found[1])

    def changed(self, sha: str, content: bytes, parent: str) -> tuple[list[Entry], _Change]:
        """The entries of tree ``sha`` that its ``parent`` version lacks, and how the
        two differ. Only the entries between the common head and tail are parsed: a
        change rewrites an entry or two of a 256-entry root tree, and where each entry
        starts in the parent says where the child's entries start too (they are equal
        up to the head, and from a parent's entry start inside the common tail on)."""
        old = self.tree(parent)
        before, starts = old.content, old.starts
        most = min(len(before), len(content))
        head = common_head(content, before, most)
        tail = common_tail(content, before, most - head)
        first = bisect_right(starts, head) - 1
        shift = len(content) - len(before)
        mine: list[Entry] = []
        kept = starts[:first]
        at = starts[first]
        while True:
            if at >= len(content) - tail:
                last = bisect_left(starts, at - shift)
                if last < len(starts) and starts[last] == at - shift:
                    break
            kept.append(at)
            entry, at = _entry(sha, content, at)
            mine.append(entry)
        theirs = _starts(parent, before, starts[first], at - shift)[0]
        # an entry's id changed in place (the usual change) moves nothing after it
        kept += starts[last:] if not shift else map(add, starts[last:], repeat(shift))
        self._keep(sha, _Tree(content, kept))
        self._share(sha, content, kept)
        gone = frozenset(theirs)
        return [e for e in mine if e not in gone], _Change(head, tail, {e[0]: e for e in theirs})

    def _keep(self, sha: str, tree: _Tree) -> None:
        if len(self._trees) > 4096:
            self._trees.clear()
            self._sets.clear()
        self._trees[sha] = tree


class _Tree(NamedTuple):
    content: bytes
    starts: list[int]
    """Where each entry starts, and the content's length last."""


class _Change(NamedTuple):
    """How a tree differs from its parent version: the length of their common head
    and tail, and the parent's entries between them, by name."""

    head: int
    tail: int
    olds: dict[bytes, Entry]


def _entry(sha: str, content: bytes, at: int) -> tuple[Entry, int]:
    """The tree entry starting at ``at`` (name, mode, hex id) and where the next starts."""
    end = content.find(b"\0", at)
    mode, space, name = content[at : max(end, at)].partition(b" ")
    if end < 0 or end + 21 > len(content) or not space or not name or not mode.isdigit():
        raise ValueError(f"tree {sha} does not parse at byte {at}")
    try:
        number = int(mode, 8)
    except ValueError:
        raise ValueError(f"tree {sha} has a bad mode at byte {at}") from None
    return (name, number, content[end + 1 : end + 21].hex().encode()), end + 21


def _starts_of(sha: str, content: bytes) -> list[int]:
    """Where each entry of a whole tree starts, and its length last: from dulwich's
    native parse, each entry's length made from its mode's usual spelling, checked
    against the tree's length (a mode spelled otherwise, say with a leading zero, or
    an unusual mode, is found by reading the entries one by one); a tree of usual
    entries is placed from its bytes, not parsed."""
    found = starts_in(content)
    if found is not None:
        return found
    try:
        entries = list(parse_tree(content, _SHA_LENGTH))
    except ObjectFormatException as exc:
        raise ValueError(f"tree {sha} does not parse: {exc}") from None
    starts = starts_of(entries, len(content))
    return starts if starts is not None else _starts(sha, content, 0, len(content))[1]


def _starts(sha: str, content: bytes, at: int, end: int) -> tuple[list[Entry], list[int]]:
    """The entries of ``content`` from ``at`` to ``end`` and where each starts (with
    ``end`` last, when ``end`` is the content's length)."""
    entries: list[Entry] = []
    starts: list[int] = []
    while at < end:
        starts.append(at)
        entry, at = _entry(sha, content, at)
        entries.append(entry)
    if at != end:
        raise ValueError(f"tree {sha} does not parse at byte {at}")
    if end == len(content):
        starts.append(end)
    return entries, starts


def _copy_tree(
    reader: _RawReader,
    trees: _TreeCache,
    sha: str,
    parents: list[str],
    objects: dict[str, _Object],
) -> None:
    # a tree equal to a parent's is held by the target already, or arrives with that
    # parent; no lookup in the target for trees and blobs: what differs from every
    # parent is new almost always (an object sent twice is harmless)
    stack = [(sha, parents)]
    while stack:
        tree_sha, before = stack.pop()
        if tree_sha in before or tree_sha in objects:
            continue
        # a tree another reader of the sync read already is not read (inflated) again
        content = trees.kept(tree_sha)
        if content is not None:
            kind, packed = _TREE, b""
        else:
            kind, content, packed = reader.entry(tree_sha)
        if kind != _TREE:
            raise ValueError(f"object {tree_sha} is not a tree")
        olds: list[Callable[[bytes], Entry | None]] = []
        if before:
            fresh, change = trees.changed(tree_sha, content, before[0])
            olds.append(change.olds.get)
            # a merge's tree: what its first parent lacks, less what another one holds
            for other in before[1:]:
                olds.append(partial(trees.entry, other))
                fresh = [e for e in fresh if trees.entry(other, e[0]) != e]
        else:  # a first tree: every entry
            fresh = list(trees.entries(tree_sha, content))
            change = None
        objects[tree_sha] = _as_delta(content, packed, before, objects, change)
        for name, mode, entry in fresh:
            new = entry.decode()
            if mode == _DIR_MODE:
                found = (old(name) for old in olds)
                stack.append((new, [o[2].decode() for o in found if o and o[1] == mode]))
            elif mode != _GITLINK_MODE and new not in objects:
                kind, content, packed = reader.entry(new)
                objects[new] = _Object(kind, content, packed=packed)


class _Object(NamedTuple):
    """An object to write: its type and content, and the object (already in the pack)
    its content is written as a delta against, with that delta and the chain's depth."""

    kind: int
    content: bytes
    base: str | None = None
    delta: bytes = b""
    depth: int = 0
    packed: bytes = b""
    """The object as the source's pack holds it, copied as it is (no zlib round trip)."""


def _as_delta(
    content: bytes,
    packed: bytes,
    before: list[str],
    objects: dict[str, _Object],
    change: _Change | None = None,
) -> _Object:
    """A tree as a delta against its first parent's version of it when that one is in
    the pack already: a change rewrites an entry or two of a tree, so the delta is the
    common head and tail copied and the middle inserted (git writes root trees so).
    ``change`` gives the common head and tail when they are known already."""
    base = objects.get(before[0]) if before else None
    if base is None or base.kind != _TREE or base.depth >= _DELTA_DEPTH:
        return _Object(_TREE, content, packed=packed)
    if change is None or len(before) != 1:
        delta = _delta(base.content, content)
    else:
        delta = _delta_between(base.content, content, change.head, change.tail)
    if delta is None:
        return _Object(_TREE, content, packed=packed)
    return _Object(_TREE, content, before[0], delta, base.depth + 1)


# Not dulwich's create_delta, which searches the source for matches: in a sync of 100
# changes a side, 46 us a tree against 7 here (head and tail known), and 250 against 24
# for a merge's trees (head and tail found): 15% of the sync's CPU time in all.
def _delta(source: bytes, target: bytes) -> bytes | None:
    """A git delta that makes ``target`` from ``source`` by copying their common head
    and tail and inserting the rest; ``None`` when it would not save half."""
    most = min(len(source), len(target))
    head = common_head(target, source, most)
    tail = common_tail(target, source, most - head)
    return _delta_between(source, target, head, tail)


def _delta_between(source: bytes, target: bytes, head: int, tail: int) -> bytes | None:
    """``_delta`` for a common head and tail known already."""
    if (len(target) - head - tail) * 2 > len(target):
        return None
    out = bytearray(_size(len(source)) + _size(len(target)))
    _copy(out, 0, head)
    middle = target[head : len(target) - tail]
    for i in range(0, len(middle), 0x7F):
        chunk = middle[i : i + 0x7F]
        out.append(len(chunk))
        out += chunk
    _copy(out, len(source) - tail, tail)
    return bytes(out)


# dulwich's encoders of these two instructions are private (_delta_encode_size,
# _encode_copy_operation): a later dulwich may rename them, so the format's two
# instructions are written here
def _size(n: int) -> bytes:
    """A delta header's size: seven bits a byte, least significant first."""
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _copy(out: bytearray, offset: int, length: int) -> None:
    """Append copy instructions for ``length`` bytes of the source from ``offset``."""
    while length > 0:
        size = min(length, 0xFFFF)  # a version-2 pack's longest copy
        op, args = 0x80, bytearray()
        for i in range(4):
            byte = (offset >> (8 * i)) & 0xFF
            if byte:
                op |= 1 << i
                args.append(byte)
        for i in range(2):
            byte = (size >> (8 * i)) & 0xFF
            if byte:
                op |= 0x10 << i
                args.append(byte)
        out.append(op)
        out += args
        offset, length = offset + size, length - size


def _check(sha: str, kind: int, content: bytes) -> None:
    """Refuse an object whose content does not match its id."""
    digest = sha1(object_header(kind, len(content)))
    digest.update(content)  # not joined to its header first: a copy of the whole content
    if digest.hexdigest() != sha:
        raise ValueError(f"object {sha} does not match its content")


def _write_pack(
    store: DiskObjectStore,
    objects: dict[str, _Object],
    checked: dict[str, bytes],
    *,
    sync_folder: bool,
) -> None:
    """Write ``objects`` into ``store`` as one pack and its index, by packing's writer;
    ``checked``: content already checked against its id, by id."""
    # each id is computed again from the content (this very content once is enough): a
    # damaged source object is refused
    for sha, obj in objects.items():
        if checked.get(sha) is not obj.content:
            _check(sha, obj.kind, obj.content)
    records: Iterator[Record] = (
        (PACKED, obj.packed, bytes.fromhex(sha), None)
        if obj.packed and obj.base is None
        else (
            obj.kind,
            obj.content if obj.base is None else obj.delta,
            bytes.fromhex(sha),
            None if obj.base is None else bytes.fromhex(obj.base),
        )
        for sha, obj in objects.items()
    )
    # a delta's base is written before it, so it is an offset into this pack
    objects_dir = os.fspath(store.path)
    # zlib's level chosen per object, as for a commit's own objects: trees (object ids
    # mostly, which hardly shrink) stored as they are, small objects with a small window
    write_pack(objects_dir, records, len(objects), level=None, sync_folder=sync_folder)
    _ = store.packs  # the store takes up the new pack now
