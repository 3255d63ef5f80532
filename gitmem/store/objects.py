"""Reading git objects through dulwich, with caches keyed by object id.

Objects never change, so a cache keyed by id is always right; it only needs a bound.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Callable
from operator import itemgetter
from typing import NamedTuple, TypeVar, cast

from dulwich.errors import ObjectFormatException
from dulwich.objects import Blob, Commit, ObjectID, ShaFile, Tree, object_header, parse_tree
from dulwich.repo import Repo

from gitmem.errors import StorageError
from gitmem.lean.heads import message_of
from gitmem.store import memoryfiles as files
from gitmem.store.message import Edited, Facts, parse_edits, parse_message
from gitmem.store.packreader import PackedObjects
from gitmem.store.rows import REMOVED
from gitmem.store.treefind import files_in
from gitmem.store.trees import EMPTY_TREE as EMPTY_TREE  # its home is trees; read here too
from gitmem.store.trees import BadTree, Entries, RawTree, Trees, names_of
from gitmem.types import Memory, Totals

DIR_MODE = 0o040000
FILE_MODE = 0o100644
_CACHE_MAX = 50_000
# a root tree's entry list costs a few KB: fewer of those are kept
_RAW_TREES_MAX = 4_096
_RECENT = 64
_DEPTH_MAX = 64  # folders deep a hand-made tree is read to
BLOB, TREE, COMMIT = Blob.type_num, Tree.type_num, Commit.type_num

TreeEntries = list[tuple[str, int, bytes]]
_NAME, _MODE, _ID, _TEXT = itemgetter(0), itemgetter(1), itemgetter(2), bytes.decode
K = TypeVar("K")
V = TypeVar("V")


class MemoryFiles(NamedTuple):
    """The blob ids of one memory's files."""

    md: bytes
    code: bytes | None
    on_use: bytes | None


Blobs = tuple[str, str, str]
"""The blob ids of a memory's ``.md``, code and onUse files, "-" where absent."""


class Step(NamedTuple):
    """A commit as a walk of the history sees it."""

    parents: list[str]
    facts: Facts | None
    blobs: tuple[Blobs, ...]
    """One entry per edit in ``facts``."""


def object_id(type_num: int, content: bytes) -> bytes:
    """The binary id git gives an object of type ``type_num`` (blob, tree or commit)
    holding ``content``."""
    digest = hashlib.sha1(object_header(type_num, len(content)))
    digest.update(content)
    return digest.digest()


Record = tuple[int, bytes, bytes, None]
"""A new object for the pack writer: type, content, binary id, no delta base (see
``gitmem.store.packing.Record``)."""


class NewObjects:
    """The objects one commit adds, as the pack writer takes them, with what the reader
    keeps of them once they are published (see ``ObjectReader.remember``)."""

    def __init__(self) -> None:
        self.records: list[Record] = []
        self.commit = ""
        """The commit's hex id, once ``add_commit`` made it."""
        self.commit_raw = b""
        self.trees: dict[str, RawTree] = {}
        self.sizes: dict[bytes, int] = {}
        self.texts: dict[bytes, str] = {}
        self.memories: list[tuple[MemoryFiles, Memory]] = []
        self._seen: set[bytes] = set()

    def _add(self, type_num: int, content: bytes, sha: bytes | None = None) -> bytes:
        sha = object_id(type_num, content) if sha is None else sha
        hexid = sha.hex().encode()
        if sha not in self._seen:  # one object twice in a pack would make a bad index
            self._seen.add(sha)
            self.records.append((type_num, content, sha, None))
            self.sizes[hexid] = len(content)
        return hexid

    def add_blob(self, content: bytes, text: str | None = None) -> bytes:
        """Add a blob; returns its hex id. ``text``: the content as text, if it is."""
        hexid = self._add(BLOB, content)
        if text is not None:
            self.texts[hexid] = text
        return hexid

    def add_tree(self, tree: RawTree) -> bytes:
        """Add a tree; returns its hex id."""
        hexid = self._add(TREE, tree.content())
        self.trees[hexid.decode()] = tree
        return hexid

    def add_tree_content(self, content: bytes, sha: bytes | None = None) -> bytes:
        """Add a tree given as its raw content (and its binary id, if known); returns its hex id."""
        return self._add(TREE, content, sha)

    def add_commit(
        self, tree: bytes, parents: list[str], ident: bytes, when: int, message: bytes
    ) -> str:
        """Add the commit (one per commit's objects), written by dulwich; returns its hex id."""
        commit = Commit()
        commit.tree = ObjectID(tree)
        commit.parents = [ObjectID(p.encode()) for p in parents]
        commit.author = commit.committer = ident
        commit.author_time = commit.commit_time = when
        commit.author_timezone = commit.commit_timezone = 0
        commit.message = message
        raw = commit.as_raw_string()
        self.commit = self._add(COMMIT, raw).decode()
        self.commit_raw = raw
        return self.commit


def blob_ids(found: MemoryFiles | None) -> Blobs:
    """The hex ids of a memory's files as the history index keeps them ("-" where absent)."""
    if found is None:
        return ("-", "-", "-")
    return (
        found.md.decode(),
        found.code.decode() if found.code else "-",
        found.on_use.decode() if found.on_use else "-",
    )


def memory_files(slug: str, entries: dict[str, bytes]) -> MemoryFiles | None:
    md = entries.get(slug + files.MD)
    if md is None:
        return None
    return MemoryFiles(md, entries.get(slug + files.CODE), entries.get(slug + files.ON_USE))


class ObjectReader:
    """Cached, thread-safe reads of commits, trees and memories."""

    def __init__(self, repo: Repo) -> None:
        self.repo = repo
        # dulwich reads packs through shared file objects: one reader at a time
        self.lock = threading.RLock()
        self._trees: dict[str, TreeEntries] = {}
        self._names: dict[str, dict[str, tuple[int, bytes]]] = {}
        self._sizes: dict[bytes, int] = {}
        self._texts: dict[bytes, str | None] = {}
        self.buckets: dict[bytes, dict[str, bytes]] = {}
        self._memories: dict[tuple[MemoryFiles, str], Memory] = {}
        # a slug's files in a root tree (see ``Snapshot``), found once: a tree never changes
        self.found: dict[tuple[str, str], MemoryFiles] = {}
        self._commits: dict[str, Commit] = {}
        self._facts: dict[str, Facts | None] = {}
        self._raw_trees: dict[str, RawTree] = {}
        self._raw_commits: dict[str, bytes] = {}
        self.tree_contents: dict[str, bytes] = {}
        self._roots: dict[str, str] = {}
        self._tallies: dict[tuple[str, str], Totals] = {}
        self._standings: dict[str, Facts | None] = {}
        self._outside: dict[str, tuple[Edited, ...]] = {}
        self.trees = Trees(_RECENT)  # shared with the other readers while a sync lasts
        # objects read straight from the packs; dulwich reads the rest (loose ones)
        self.packs = PackedObjects(getattr(repo.object_store, "pack_dir", None))

    def object(self, sha: str | bytes) -> ShaFile:
        key = ObjectID(sha if isinstance(sha, bytes) else sha.encode())
        store = self.repo.object_store
        with self.lock:
            try:
                try:
                    return store[key]
                except KeyError:
                    # a concurrent pack may have moved it: look at the packs afresh
                    _ = store.packs
                    return store[key]
            except KeyError:
                raise StorageError(
                    f"object {key.decode()} is missing; run `gitmem check`"
                ) from None
            except Exception as exc:  # zlib, format and I/O errors: a damaged object
                raise StorageError(
                    f"object {key.decode()} does not read ({exc}); run `gitmem check`"
                ) from exc

    def remember(self, new: NewObjects, facts: Facts | None) -> None:
        """Keep what this process just published, so reading it back costs nothing and
        the next commit builds on its trees without parsing them. ``facts``: the
        commit's, exactly as ``parse_message`` reads them (``None``: left to it)."""
        sha = new.commit
        # the commit object is made if something asks for more than its tree
        _bounded(self._raw_commits, _RAW_TREES_MAX)[sha] = new.commit_raw
        _bounded(self._roots)[sha] = new.commit_raw[5:45].decode()
        if facts is not None:
            _bounded(self._facts)[sha] = facts
        raw_trees = _bounded(self._raw_trees, _RAW_TREES_MAX)
        for hexid, tree in new.trees.items():
            raw_trees[hexid] = tree
        sizes = _bounded(self._sizes)
        for hexid, size in new.sizes.items():
            sizes[hexid] = size
        texts = _bounded(self._texts)
        for hexid, text in new.texts.items():
            texts[hexid] = text
        memories = _bounded(self._memories)
        for found, memory in new.memories:
            memories[found, memory.slug] = memory

    def commit(self, sha: str) -> Commit:
        found = self._commits.get(sha)
        if found is None:
            # read as the other objects are (straight from the packs first), then parsed
            raw = self.raw_commit(sha)
            found = cast(Commit, Commit.from_raw_string(COMMIT, raw, ObjectID(sha.encode())))
            _bounded(self._commits)[sha] = found
        return found

    def raw_commit(self, sha: str) -> bytes:
        """A commit as stored: its header lines, a blank line, its message."""
        return self._raw_commits.get(sha) or self.raw(sha, COMMIT)

    def root(self, sha: str) -> str:
        """The id of a commit's root tree."""
        found = self._roots.get(sha)
        if found is None:
            found = _bounded(self._roots)[sha] = _tree_and_parents(self, sha)[0]
        return found

    def facts(self, sha: str, message: bytes | None = None) -> Facts | None:
        """What a commit's message (its raw ``message``, if read already) says about it
        (``None`` for a commit gitmem did not make): parsed once however many of its paths
        a walk reads, as parsing it for each would cost the square of the paths."""
        if sha not in self._facts:
            raw = message if message is not None else message_of(self.raw_commit(sha))
            _bounded(self._facts)[sha] = parse_message(raw)
        return self._facts[sha]

    def standing(self, sha: str) -> Facts | None:
        """The facts of ``sha``, or, for a commit gitmem did not make (a person's ``git
        commit`` on a store's branch, say), those of its nearest first-parent ancestor
        that gitmem made; ``None`` if it has none. A store keeps the layout and the peaks
        its last gitmem commit recorded."""
        # each commit passed stands on what the walk finds: a line is walked once, not N times
        passed: list[str] = []
        at: str | None = sha
        while at is not None and at not in self._standings:
            found = self.facts(at)
            if found is not None:
                break
            passed.append(at)
            at = next(iter(self.parents(at)), None)
        else:
            found = self._standings[at] if at is not None else None
        for each in passed:
            _bounded(self._standings)[each] = found
        return found

    def tally(self, sha: str, kind: str, count: Callable[[], Totals]) -> Totals:
        """The totals of commit ``sha``'s tree as a store of ``kind`` counts them, by
        ``count`` once and then kept: a commit gitmem did not make records none."""
        found = self._tallies.get((sha, kind))
        if found is None:
            found = _bounded(self._tallies)[sha, kind] = count()
        return found

    def parents(self, sha: str) -> list[str]:
        """A commit's parents, the first parent first."""
        return _tree_and_parents(self, sha)[1]

    def step(self, sha: str) -> Step:
        """One step of a walk: a commit's parents, its facts, and for each slug it
        changed the blob ids of that memory's files, ``(md, code, on_use)`` with "-"
        where absent. A slug the commit removed gets its files in the first parent:
        the text it removed."""
        root, parents = _tree_and_parents(self, sha)
        facts = self.facts(sha)
        if facts is None:
            # a commit gitmem did not make: what its tree changes, as edits
            outside = self.outside(sha)
            if not outside:
                return Step(parents, None, ())
            standing = self.standing(sha)
            paths = standing is not None and standing.paths
            facts = Facts(outside, Totals(), Totals(), {}, paths)
        before = self.root(parents[0]) if parents else None
        blobs: list[Blobs] = []
        if facts.paths:
            for edit in facts.edits:
                found = self.entry_at(root, edit.slug)
                if found is not None and found[0] != DIR_MODE:
                    blobs.append((found[1].decode(), "-", "-"))
                    continue
                old = self.entry_at(before, edit.slug) if before is not None else None
                # a removal: the text it removed, marked as for a memory
                blobs.append((REMOVED + (old[1].decode() if old else "-"), "-", "-"))
            return Step(parents, facts, tuple(blobs))
        for edit in facts.edits:
            found = _files_at(self, root, edit.slug)
            if found is None and before is not None:
                # a removal: the text it removed, marked so the index knows it for one
                md, code, on_use = blob_ids(_files_at(self, before, edit.slug))
                blobs.append((REMOVED + md, code, on_use))
                continue
            blobs.append(blob_ids(found))
        return Step(parents, facts, tuple(blobs))

    def outside(self, sha: str) -> tuple[Edited, ...]:
        """What a commit gitmem did not make changed, as edits numbered 0: each memory
        (in a file store, each file) whose files differ from those of every parent
        (a merge's own changes, not what it brought in), ``create``, ``edit`` or
        ``delete`` as against the first parent, in name order. Kept once worked out."""
        found = self._outside.get(sha)
        if found is not None:
            return found
        standing = self.standing(sha)
        paths = standing is not None and standing.paths
        root = self.root(sha)
        befores: list[str | None] = [self.root(p) for p in self.parents(sha)] or [None]
        changed: dict[str, tuple[bool, bool]] | None = None
        for before in befores:
            diff = self._changed_names(before, root, paths)
            if changed is None:
                changed = diff  # the first parent says what the op is
            else:
                changed = {name: was for name, was in changed.items() if name in diff}
        edits: list[Edited] = []
        for name, (had, has) in sorted((changed or {}).items()):
            op = "create" if not had else "delete" if not has else "edit"
            edits.append(Edited(name, op, 0))
        found = _bounded(self._outside)[sha] = tuple(edits)
        return found

    def _changed_names(
        self, before: str | None, after: str, paths: bool
    ) -> dict[str, tuple[bool, bool]]:
        """The memories (``paths``: the files) whose files differ between two root
        trees: name → (in ``before``, in ``after``)."""
        changed: dict[str, tuple[bool, bool]] = {}
        for path, (old, new) in self._diff(before, after, "").items():
            if paths:
                changed[path] = (old is not None, new is not None)
                continue
            folder, _, name = path.rpartition("/")
            split = files.split_name(name)
            if split is None or folder != files.bucket(split[0]):
                continue  # not a memory's file: a store's own files, a stray one
            md = f"{folder}/{split[0]}{files.MD}"
            had = before is not None and self.entry_at(before, md) is not None
            changed[split[0]] = (had, self.entry_at(after, md) is not None)
        return changed

    def _diff(
        self, old: str | None, new: str | None, prefix: str
    ) -> dict[str, tuple[bytes | None, bytes | None]]:
        """The files that differ between two trees (``None``: no tree): path → (old
        blob id, new blob id), ``None`` where absent. Equal subtrees are not read."""
        if old == new or prefix.count("/") > _DEPTH_MAX:
            return {}
        before = self.names(old) if old is not None else {}
        after = self.names(new) if new is not None else {}
        found: dict[str, tuple[bytes | None, bytes | None]] = {}
        for name in {*before, *after}:
            a, b = before.get(name), after.get(name)
            if a == b:
                continue
            a_dir = a is not None and a[0] == DIR_MODE
            b_dir = b is not None and b[0] == DIR_MODE
            if a_dir or b_dir:
                found.update(
                    self._diff(
                        a[1].decode() if a is not None and a_dir else None,
                        b[1].decode() if b is not None and b_dir else None,
                        f"{prefix}{name}/",
                    )
                )
            a_file = a[1] if a is not None and not a_dir else None
            b_file = b[1] if b is not None and not b_dir else None
            if a_file != b_file:
                found[prefix + name] = (a_file, b_file)
        return found

    def tree(self, sha: str) -> TreeEntries:
        found = self._trees.get(sha)
        if found is None and sha in self._raw_trees:
            found = _bounded(self._trees)[sha] = self._raw_trees[sha].entries()
        if found is None:
            # straight from the raw tree, in its stored order (git's): no Tree object made
            entries = parsed(self, sha)
            try:
                names = map(bytes.decode, map(names_of, entries))
                found = list(zip(names, map(_MODE, entries), map(_ID, entries), strict=True))
            except ValueError as exc:
                raise StorageError(
                    f"tree {sha} does not parse ({exc}); run `gitmem check`"
                ) from exc
            _bounded(self._trees)[sha] = found
        return found

    def raw(self, sha: str, kind: int) -> bytes:
        """The content of the object ``sha``, which must be of type ``kind``."""
        key = ObjectID(sha.encode())
        store = self.repo.object_store
        with self.lock:
            try:
                packed = self.packs.get(sha)
                try:
                    found, content = packed or store.get_raw(key)
                except KeyError:
                    # a concurrent pack may have moved it: look at the packs afresh
                    _ = store.packs
                    found, content = store.get_raw(key)
            except KeyError:
                raise StorageError(f"object {sha} is missing; run `gitmem check`") from None
            except Exception as exc:  # zlib, format and I/O errors: a damaged object
                raise StorageError(
                    f"object {sha} does not read ({exc}); run `gitmem check`"
                ) from exc
        if found != kind:
            raise StorageError(f"object {sha} is not of the type expected; run `gitmem check`")
        return content

    def forget_packs(self) -> None:
        """Let go of the packs read so far (packs were combined, or the repository closes)."""
        with self.lock:
            self.packs.forget()

    def raw_tree(self, sha: str) -> RawTree:
        """A tree's entries as stored, to build a changed tree from (see ``RawTree``)."""
        found = self._raw_trees.get(sha)
        if found is None:
            content = self.tree_contents.pop(sha, None)
            try:
                found = RawTree.parse(content if content is not None else self.raw(sha, TREE))
            except ValueError as exc:
                raise StorageError(
                    f"tree {sha} does not parse ({exc}); run `gitmem check`"
                ) from exc
            _bounded(self._raw_trees, _RAW_TREES_MAX)[sha] = found
        return found

    def entry(self, tree: str, name: str) -> tuple[int, bytes] | None:
        """The ``(mode, sha)`` of the entry ``name`` of ``tree``, or ``None``."""
        known = self._raw_trees.get(tree)
        if known is not None:
            return known.get(name)
        return self.names(tree).get(name)

    def names(self, sha: str) -> dict[str, tuple[int, bytes]]:
        """A tree's entries by name: ``name → (mode, sha)``."""
        found = self._names.get(sha)
        if found is None:
            found = {name: (mode, entry) for name, mode, entry in self.tree(sha)}
            _bounded(self._names)[sha] = found
        return found

    def entry_at(self, root: str, path: str) -> tuple[int, bytes] | None:
        """The ``(mode, sha)`` at ``path`` (``/``-separated) under tree ``root``, or ``None``."""
        found: tuple[int, bytes] | None = (DIR_MODE, root.encode())
        for name in path.split("/"):
            if found is None or found[0] != DIR_MODE:
                return None
            found = self.entry(found[1].decode(), name)
        return found

    def size(self, sha: bytes) -> int:
        """The size of an object's content in bytes, as its header declares it (nothing
        inflated whole: a file too large to read is passed over unread)."""
        found = self._sizes.get(sha)
        if found is None:
            found = self.packs.size(sha.decode()) or len(self.object(sha).as_raw_string())
            _bounded(self._sizes)[sha] = found
        return found

    def bucket(self, root: str, name: str, *, keep: bool = True) -> dict[str, bytes]:
        """One fan-out folder's file names → blob ids (kept unless a listing reads it)."""
        entry = self.entry(root, name)
        if entry is None or entry[0] != DIR_MODE:
            return {}
        found = self.buckets.get(entry[1])  # by the folder's id: root trees share folders
        if found is None:
            found = _files_by_name(entry[1].decode(), parsed(self, entry[1].decode()))
            if keep:
                _bounded(self.buckets)[entry[1]] = found
        return found

    def memory(self, slug: str, found: MemoryFiles, *, keep: bool = True) -> Memory:
        """The memory ``slug`` of files ``found`` (kept unless a listing reads it)."""
        key = (found, slug)
        memory = self._memories.get(key)
        if memory is None:
            description, body = files.decode_md(slug, self.blob(found.md))
            memory = Memory(
                slug=slug,
                description=description,
                body=body,
                code=self.blob(found.code).decode() if found.code else "",
                on_use=self.blob(found.on_use).decode() if found.on_use else "",
            )
            if keep:
                _bounded(self._memories)[key] = memory
        return memory

    def text(self, sha: bytes) -> str | None:
        """A blob's content as UTF-8 text (``None`` if it is not), cached by id."""
        if sha in self._texts:
            return self._texts[sha]
        try:
            found: str | None = self.blob(sha).decode("utf-8")
        except UnicodeDecodeError:
            found = None
        _bounded(self._texts)[sha] = found
        return found

    def blob(self, sha: bytes) -> bytes:
        return self.raw(sha.decode(), BLOB)

    def heading(self, sha: str) -> tuple[list[str], tuple[Edited, ...] | None]:
        """A commit's parents and the edits its facts record (``None``: not gitmem's), from
        its raw text alone (a history's build reads every commit): else the ordinary path."""
        if sha not in self._commits and sha not in self._facts:
            kind, raw = COMMIT, self._raw_commits.get(sha, b"")
            try:
                if not raw:
                    with self.lock:
                        raw = self.packs.whole(sha, COMMIT) or b""
                        if not raw:
                            packed = self.packs.read(sha)
                            kind, raw = packed or self.repo.object_store.get_raw(
                                ObjectID(sha.encode())
                            )
            except Exception:  # missing, moved by a concurrent pack, damaged
                kind, raw = -1, b""
            if kind == Commit.type_num:
                return _heading(raw)
        facts = self.facts(sha)
        return self.parents(sha), facts.edits if facts is not None else None


def _files_at(reader: ObjectReader, root: str, slug: str) -> MemoryFiles | None:
    """``memory_files(slug, reader.bucket(root, ...))``, found in the raw trees without
    parsing them: a history's blob ids are looked up in a tree per revision."""
    found = files_in(reader.raw(root, TREE), lambda sha: reader.raw(sha, TREE), slug)
    return None if found is None else MemoryFiles(*found)


def _heading(raw: bytes) -> tuple[list[str], tuple[Edited, ...] | None]:
    """A raw commit's parents and its message's edits (``None``: not gitmem's)."""
    if (header := _WRITTEN_HEADER.match(raw)) is not None:
        return [p.decode() for p in header.groups() if p], parse_edits(raw, header.end())
    lines, _, message = raw.partition(b"\n\n")
    return _parents(lines), parse_edits(message)


# a header as gitmem writes one (tree, a parent at most, author, committer): one match
_WRITTEN_HEADER = re.compile(
    rb"tree [0-9a-f]{40}\n(?:parent ([0-9a-f]{40})\n)?author [^\n]*\ncommitter [^\n]*\n\n"
)


def _tree_and_parents(reader: ObjectReader, sha: str) -> tuple[str, list[str]]:
    """A commit's root tree and parents, read from its raw header when it starts as
    git writes one (``tree`` first, named once), else from the parsed commit."""
    raw = reader.raw_commit(sha)
    header = raw[: raw.find(b"\n\n") % (len(raw) + 1)]  # not the message: it may be long
    if header[:5] == b"tree " and header[45:46] == b"\n" and b"\ntree " not in header:
        return header[5:45].decode(), _parents(header)
    commit = reader.commit(sha)
    return commit.tree.decode(), [p.decode() for p in commit.parents]


def _parents(header: bytes) -> list[str]:
    """The parents a raw commit's ``header`` names, in order (one, as usual, by one search)."""
    if header.startswith(b"parent ") or header.count(b"\nparent ") > 1:
        return [h[7:].decode() for h in header.split(b"\n") if h[:7] == b"parent "]
    at = header.find(b"\nparent ")
    if at < 0:
        return []
    end = header.find(b"\n", at + 8)
    return [header[at + 8 : end if end >= 0 else len(header)].decode()]


def packed(reader: ObjectReader, shas: list[str]) -> dict[str, tuple[int, bytes]]:
    """``(type, content)`` of each of ``shas`` the reader's packs hold, in one sweep a
    pack (what they do not hold is the caller's to read one by one)."""
    with reader.lock:
        try:
            return reader.packs.get_many(shas)
        except ValueError as exc:
            raise StorageError(f"{exc}; run `gitmem check`") from exc


def read_memories(reader: ObjectReader, wanted: list[tuple[str, MemoryFiles]]) -> list[Memory]:
    """The memories ``wanted`` (slug and files), in its order: their blobs read from
    the packs in one sweep, in the order they lie there (what the packs do not hold,
    one by one), and none kept in the reader's cache (a whole store would only push
    out what is there)."""
    ids = {sha for _, found in wanted for sha in found if sha}
    found = packed(reader, [sha.decode() for sha in ids])
    blobs: dict[bytes, bytes] = {}
    for sha in ids:
        got = found.get(sha.decode())
        # loose, or in a pack that landed since: read one by one
        blobs[sha] = got[1] if got is not None and got[0] == BLOB else reader.blob(sha)
    return [
        Memory(
            slug,
            *files.decode_md(slug, blobs[found.md]),
            code=blobs[found.code].decode() if found.code else "",
            on_use=blobs[found.on_use].decode() if found.on_use else "",
        )
        for slug, found in wanted
    ]


def differing(reader: ObjectReader, old: bytes | None, new: bytes | None) -> set[bytes]:
    """The names whose entries' ids differ between two trees (hex ids; ``None``:
    no tree). A tree that is the other's with an entry or two changed is not
    parsed whole; what is found is kept in ``reader.trees`` for the next reads."""
    if old == new:
        return set()
    try:
        if new is None:
            assert old is not None
            return set(map(names_of, reader.trees.entries(old, _tree_content(reader))))
        removed, added = reader.trees.differing(old, new, _tree_content(reader))
    except BadTree as exc:
        raise StorageError(
            f"tree {exc.sha.decode()} does not parse ({exc.reason}); run `gitmem check`"
        ) from None
    # a name whose entry changed its mode only holds the same file
    was = {name: sha for name, _, sha in removed}
    found = {name for name, _, sha in added if was.get(name) != sha}
    return found | (was.keys() - set(map(names_of, added)))


def held_bucket(reader: ObjectReader, root: str, name: str) -> dict[str, bytes] | None:
    """``reader.bucket(root, name)`` if that folder was read already (by itself, or by a
    comparison of trees), else ``None``."""
    entry = reader.entry(root, name)
    if entry is None or entry[0] != DIR_MODE:
        return {}
    if entry[1] in reader.buckets or reader.trees.held(entry[1]) is not None:
        return reader.bucket(root, name)
    return None


def parsed(reader: ObjectReader, sha: str) -> Entries:
    """The entries of tree ``sha`` as parsed (a comparison of trees may have found
    them: see :meth:`differing`)."""
    entries = reader.trees.held(sha.encode())
    if entries is None:
        content = reader.raw(sha, TREE)
        # a commit that changes this tree next parses it as a RawTree: spare it the read
        _bounded(reader.tree_contents, _RECENT)[sha] = content
        try:
            entries = list(parse_tree(content, 20))
        except (ObjectFormatException, ValueError) as exc:
            raise StorageError(f"tree {sha} does not parse ({exc}); run `gitmem check`") from exc
    return entries


def _files_by_name(sha: str, entries: Entries) -> dict[str, bytes]:
    """A folder's file names → blob ids, from its parsed entries (no entry list kept)."""
    try:
        names = map(_TEXT, map(names_of, entries))
        return dict(zip(names, map(_ID, entries), strict=True))
    except ValueError as exc:
        raise StorageError(f"tree {sha} does not parse ({exc}); run `gitmem check`") from exc


def _tree_content(reader: ObjectReader) -> Callable[[bytes], bytes]:
    """Reads a tree's content by hex id (as bytes)."""
    return lambda sha: reader.raw(sha.decode(), TREE)


def _bounded(cache: dict[K, V], most: int = _CACHE_MAX) -> dict[K, V]:
    if len(cache) >= most:
        cache.clear()
    return cache
