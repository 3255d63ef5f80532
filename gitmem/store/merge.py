"""Merging two lines of a store's history: their best common ancestor, what one side
has that the other has not, and the merge commit of both (the rules of which side a
memory takes are :mod:`gitmem.sync`'s)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from itertools import repeat

from dulwich.objects import Blob, ObjectID, ShaFile, Tree

from gitmem.errors import StorageError
from gitmem.store import memoryfiles
from gitmem.store.commit import Built, held_as_before, memory_sizes, totals_after
from gitmem.store.history import History
from gitmem.store.layout import check_store
from gitmem.store.message import Edited, Facts, extra_lines, format_message
from gitmem.store.objects import DIR_MODE, TREE, NewObjects, ObjectReader, object_id
from gitmem.store.screen import Screen, Write, run
from gitmem.store.snapshot import Snapshot
from gitmem.store.trees import BadTree, RawTree, spliced
from gitmem.types import Author, Edit

__all__ = ["build_merge", "merge_base", "revisions_between"]


def merge_base(reader: ObjectReader, history: History, ours: str, theirs: str) -> str | None:
    """A best common ancestor of ``ours`` (a head ``history`` indexes) and ``theirs``
    (``theirs`` itself when it is an ancestor of ``ours``; ``None`` if they share no
    history). Exact, whatever the commit times say: the walk goes back from ``theirs``
    only until it meets ``ours``'s history, which the history index answers."""
    if history.contains(ours, theirs):
        return theirs
    met = _beyond(reader, history, ours, theirs)[1]
    best = [c for c in met if not any(o != c and history.contains(o, c) for o in met)]
    return sorted(best)[0] if best else None


def _beyond(
    reader: ObjectReader, history: History, ours: str, theirs: str
) -> tuple[list[str], set[str]]:
    """The commits reachable from ``theirs`` and not from ``ours`` (``ours`` indexed
    in ``history``), and the commits of ``ours``'s history where that walk stopped."""
    met: set[str] = set()
    seen: set[str] = set()
    beyond: list[str] = []
    stack = [theirs]
    while stack:
        commit = stack.pop()
        if commit in seen:
            continue
        seen.add(commit)
        if history.contains(ours, commit):
            met.add(commit)
            continue
        beyond.append(commit)
        stack.extend(reader.parents(commit))
    return beyond, met


def revisions_between(
    reader: ObjectReader, history: History, ours: str, theirs: str
) -> dict[str, int]:
    """How many revisions each slug has in commits of ``theirs`` that are not in
    ``ours`` (a walk of only those commits, stopping at ``ours``'s history): a merge of
    the two numbers its own after both sides', in the order the history lists them."""
    found: dict[str, int] = {}
    for sha in _beyond(reader, history, ours, theirs)[0]:
        facts = reader.facts(sha)
        for edited in facts.edits if facts else reader.outside(sha):
            found[edited.slug] = found.get(edited.slug, 0) + 1
    return found


def build_merge(
    reader: ObjectReader,
    history: History,
    ours: Snapshot,
    theirs: Snapshot,
    author: Author,
    edits: Sequence[Edit],
    trailers: Mapping[str, str],
) -> tuple[NewObjects, Facts]:
    """The merge commit of ``ours`` (first parent) and ``theirs``: ``ours``'s tree with
    ``edits`` applied, a trailer trio per slug it changes (numbered after both
    sides' revisions), the merged totals and peaks at least both sides'."""
    assert theirs.commit is not None
    olds = [ours.get(edit.slug) for edit in edits]
    if ours.commit is None:
        beyond = {edit.slug: theirs.revision(edit.slug) for edit in edits}
    else:
        beyond = revisions_between(reader, history, ours.commit, theirs.commit) if edits else {}
    root, objects = _merge_tree(reader, ours, theirs, edits)
    totals = totals_after(ours.totals, memory_sizes(edits, olds))
    facts = Facts(
        edits=tuple(
            Edited(e.slug, e.op, ours.revision(e.slug) + beyond.get(e.slug, 0) + 1) for e in edits
        ),
        totals=totals,
        peaks=ours.peaks.peak(theirs.peaks).peak(totals),
        extra=held_as_before(ours, theirs, trailers=trailers),
    )
    new = NewObjects()
    for obj in objects:
        if isinstance(obj, tuple):
            new.add_tree_content(*obj)
        elif isinstance(obj, RawTree):
            new.add_tree(obj)
        elif isinstance(obj, Blob):
            new.add_blob(obj.as_raw_string())
        else:
            new.add_tree(RawTree.parse(obj.as_raw_string()))
    new.add_commit(
        root,
        # a store with no commit yet takes the other line as its first parent
        [ours.commit, theirs.commit] if ours.commit else [theirs.commit],
        author.ident(),
        int(time.time()),
        format_message(facts),
    )
    return new, facts


def _merge_tree(
    reader: ObjectReader, ours: Snapshot, theirs: Snapshot, edits: Sequence[Edit]
) -> tuple[ObjectID, list[ShaFile | RawTree | tuple[bytes, bytes]]]:
    """The root tree of ``ours`` with a merge's ``edits`` applied, and its new
    objects (a fan-out folder as its raw content and binary id). A memory taken as ``theirs`` holds
    it keeps their blobs, and a fan-out folder that comes out as either side has it
    is that side's tree, not written again (most of a merge takes one side's memories)."""
    objects: list[ShaFile | RawTree | tuple[bytes, bytes]] = []
    changes: dict[str, dict[bytes, bytes | None]] = {}
    for edit in edits:
        changed = changes.setdefault(memoryfiles.bucket(edit.slug), {})
        names = [(edit.slug + suffix).encode() for suffix in memoryfiles.SUFFIXES]
        changed.update(zip(names, repeat(None)))
        if edit.memory is None:
            continue
        if theirs.root and theirs.get(edit.slug) == edit.memory:
            held = theirs.memory_files(edit.slug)
            assert held is not None
            changed.update((n, sha) for n, sha in zip(names, held, strict=True) if sha)
            continue
        for filename, data in memoryfiles.encode(edit.memory).items():
            blob = Blob.from_string(data)
            objects.append(blob)
            changed[filename.encode()] = blob.id
    root = Tree()
    mine = reader.names(ours.root) if ours.root else {}
    other = reader.names(theirs.root) if theirs.root else {}
    for name, (mode, sha) in mine.items():
        if name not in changes:
            root.add(name.encode(), mode, ObjectID(sha))
    for name, changed in changes.items():
        was = mine.get(name)
        content = _merged_folder(reader, ours, name, was, changed)
        if not content:
            continue
        sides = [entry[1] for entry in (was, other.get(name)) if entry is not None]
        # a folder that comes out as a side holds it is known by its bytes, compared
        # with that side's as the sync read them (from this repository, or checked
        # against their id), not by hashing it
        sha = next((side for side in sides if reader.trees.kept_content(side) == content), None)
        if sha is None:
            binary = object_id(TREE, content)
            sha = binary.hex().encode()
            if sha not in sides:
                objects.append((content, binary))
                # the push that follows copies it as it is here, hashed already
                reader.trees.keep(sha, content, checked=True)
        root.add(name.encode(), DIR_MODE, ObjectID(sha))
    if ours.root and root.id.decode() == ours.root:
        return root.id, objects
    objects.append(root)
    return root.id, objects


def _merged_folder(
    reader: ObjectReader,
    ours: Snapshot,
    name: str,
    was: tuple[int, bytes] | None,
    changed: Mapping[bytes, bytes | None],
) -> bytes:
    """The raw content of fan-out folder ``name`` of ``ours`` (``was``: its entry in
    the root) with ``changed`` set (file name → blob id, ``None``: removed): spliced
    into the folder's bytes where it reads as git writes it, else encoded whole."""
    if was is not None and was[0] == DIR_MODE:

        def read(sha: bytes) -> bytes:
            return reader.raw(sha.decode(), TREE)

        try:
            content = reader.trees.content(was[1], read)
            starts = reader.trees.starts(was[1], read)
        except BadTree as exc:
            raise StorageError(
                f"tree {exc.sha.decode()} does not parse ({exc.reason}); run `gitmem check`"
            ) from None
        found = spliced(content, starts, changed) if starts is not None else None
        if found is not None:
            return found
    entries = dict(reader.bucket(ours.root, name)) if ours.root else {}
    for filename, sha in changed.items():
        if sha is None:
            entries.pop(filename.decode(), None)
        else:
            entries[filename.decode()] = sha
    return _files_tree(entries).content() if entries else b""


def _files_tree(entries: Mapping[str, bytes]) -> RawTree:
    """A tree of files (name → blob id), each a plain file, as dulwich writes one: in
    git's order, which for files alone is their names' (UTF-8 keeps the order of
    code points), each mode spelled ``100644``."""
    names = sorted(entries)
    hexes = [entries[n] for n in names]
    # the names and ids converted at once, not one by one (a fan-out folder of a large
    # store holds hundreds); anything but plain names and ids goes one by one
    encoded = "\0".join(names).encode().split(b"\0")
    ids = bytes.fromhex(b"".join(hexes).decode()) if set(map(len, hexes)) <= {40} else b""
    if len(encoded) == len(names) and len(ids) == 20 * len(names):
        chunks = list(
            map(b"".join, zip(repeat(b"100644 "), encoded, repeat(b"\0"), _twenties(ids)))
        )
    else:
        chunks = [
            b"100644 " + n.encode() + b"\0" + bytes.fromhex(h.decode())
            for n, h in zip(names, hexes, strict=True)
        ]
    return RawTree(chunks, {n: i for i, n in enumerate(names)})


def _twenties(ids: bytes) -> list[bytes]:
    """``ids`` cut into 20-byte object ids."""
    return [ids[at : at + 20] for at in range(0, len(ids), 20)]


class Merging:
    """The part of a repository that publishes merges (a base of ``Storage``)."""

    screens: list[Screen]
    _reader: ObjectReader

    def snapshot(self, store: str, commit: str | None = None) -> Snapshot:
        raise NotImplementedError

    def _history(self, store: str) -> History:
        raise NotImplementedError

    def _refuse_past(self, store: str | None = None) -> None:
        raise NotImplementedError

    def _swap(
        self, store: str, old: str | None, new: str, doing: str, objects: NewObjects | None = None
    ) -> bool:
        raise NotImplementedError

    def _maybe_pack(self) -> None:
        raise NotImplementedError

    def merge(
        self,
        store: str,
        author: Author,
        ours: str | None,
        theirs: str,
        edits: Sequence[Edit],
        trailers: Mapping[str, str],
    ) -> str | None:
        """Publish one merge commit of ``ours`` (the branch's head, first parent; ``None``
        for a store with no commit yet) and ``theirs`` with ``edits`` applied (see
        :func:`gitmem.store.merge.build_merge`). Returns the commit, or ``None`` if the
        branch moved off ``ours``."""
        built = self.merge_commit(store, author, ours, theirs, edits, trailers)
        # published as a commit is: the ref re-read under its lock file, the pack and
        # that lock file made durable in one flush
        if not self._swap(store, ours, built.commit, f"merging {store}", built.new):
            return None
        self._reader.remember(built.new, built.facts)
        self._maybe_pack()
        return built.commit

    def merge_commit(
        self,
        store: str,
        author: Author,
        ours: str | None,
        theirs: str,
        edits: Sequence[Edit],
        trailers: Mapping[str, str],
    ) -> Built:
        """The merge commit :meth:`merge` publishes, held to the screens, built and not
        yet published (it can be read back before it is)."""
        check_store(store)
        self._refuse_past(store)
        snapshot = self.snapshot(store, ours)
        chosen = "\n".join(extra_lines(trailers))
        run(self.screens, Write(store, author.name, edits, None, snapshot.meta, chosen))
        other = self.snapshot(store, theirs)
        history = self._history(store)
        new, facts = build_merge(self._reader, history, snapshot, other, author, edits, trailers)
        self._reader.remember(new, facts)
        return Built(new, facts)
