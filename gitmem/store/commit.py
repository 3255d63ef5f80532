"""Building a commit: checking a change's edits, the new trees, the commit with its
trailers (totals, peaks, per-name revisions), the rows the history index keeps, and
the revisions a write returns; and reading a revision back from the history index.

Memory stores and file stores build the same way and differ only in their trees (a
fan-out folder per slug, or the paths a client names) and in what a revision holds.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Generic, NamedTuple, TypeVar

from gitmem.errors import AlreadyExists, InvalidArgument, NotFound, StorageError
from gitmem.lean.heads import CAPABILITY_TRAILER, authored, message_of
from gitmem.store import memoryfiles
from gitmem.store.filestore import FileSnapshot, build_tree
from gitmem.store.message import KEYS, Edited, Facts, as_read, extra_lines, format_message
from gitmem.store.objects import (
    DIR_MODE,
    FILE_MODE,
    REMOVED,
    Blobs,
    MemoryFiles,
    NewObjects,
    ObjectReader,
    blob_ids,
)
from gitmem.store.rows import Entry, Row
from gitmem.store.screen import Screen, Write, run
from gitmem.store.snapshot import Snapshot, readable_memory
from gitmem.store.trees import EMPTY_TREE, RawTree
from gitmem.store.view import StoreView
from gitmem.types import (
    Author,
    Change,
    Edit,
    FileChange,
    FileEdit,
    FileRevision,
    Memory,
    Revision,
    Totals,
    check_op,
    check_path,
    check_slug,
    check_text,
    count_lines,
)

__all__ = [
    "CARRIED",
    "Attempt",
    "Built",
    "build_files",
    "build_memories",
    "check_change",
    "check_file_change",
    "file_revision",
    "file_write",
    "held_as_before",
    "memory_revision",
    "memory_write",
    "meta_write",
    "record_write",
    "revision_of",
    "totals_after",
]

T = TypeVar("T")

_TRAILER_KEY_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,63}")
# the ops that write a memory or file, so their edits must carry one (a delete must not)
_WRITES = frozenset({"create", "write", "update", "edit"})


class Attempt(NamedTuple, Generic[T]):
    """What one attempt at a mutation built: the result to return, the commit and its
    objects to publish (``new`` ``None``: nothing to publish), and what the reader and
    the history index keep of it once published."""

    result: T
    new: NewObjects | None
    what: str
    facts: Facts | None = None
    """The commit's facts, as a reader parses them from its message."""
    rows: list[Row] | None = None
    """The commit's rows in the history index, blob ids included."""


class Built(NamedTuple):
    """A commit built and not yet published: its new objects and its facts."""

    new: NewObjects
    facts: Facts | None

    @property
    def commit(self) -> str:
        return self.new.commit


# -- checking a change -------------------------------------------------------------


def check_change(change: Change) -> tuple[Edit, ...]:
    """The change's edits, if every one obeys the input rules; else raise."""
    seen: set[str] = set()
    for edit in change.edits:
        slug = check_slug(edit.slug)
        _check_edit(slug, check_op(edit.op), edit.memory, seen, "memory")
        memory = edit.memory
        if memory is not None:
            if memory.slug != slug:
                raise InvalidArgument(f"change for {slug!r} carries memory {memory.slug!r}")
            check_text(memory.description, "description")
            check_text(memory.body, "body")
            check_text(memory.code, "code")
            check_text(memory.on_use, "onUse script")
    _check_trailers(change.trailers)
    return change.edits


def check_file_change(change: FileChange) -> tuple[FileEdit, ...]:
    """The change's edits, if every one obeys the input rules; else raise."""
    seen: set[str] = set()
    for edit in change.edits:
        path = check_path(edit.path)
        _check_edit(path, check_op(edit.op), edit.text, seen, "file")
        if edit.text is not None:
            check_text(edit.text, f"text of {path}")
    _check_trailers(change.trailers)
    return change.edits


def _check_edit(name: str, op: str, written: object, seen: set[str], kind: str) -> None:
    if name in seen:
        raise InvalidArgument(f"a change names {name!r} twice; name each {kind} once")
    seen.add(name)
    what = "memory" if kind == "memory" else "text"
    if op == "delete" and written is not None:
        raise InvalidArgument(f"a delete of {name!r} carries no {what}")
    if op in _WRITES and written is None:
        raise InvalidArgument(f"a {op} of {name!r} carries the {what} it writes")


def _check_trailers(trailers: Mapping[str, str]) -> None:
    for key in trailers:
        if not _TRAILER_KEY_RE.fullmatch(key) or key in KEYS:
            raise InvalidArgument(
                f"trailer key {key[:70]!r} is not usable; use letters, digits and '-', "
                "and none of gitmem's own Gitmem-Slug, Gitmem-Op, ... keys"
            )


# -- one attempt at a write, on the head it applies to ------------------------------


def memory_write(
    reader: ObjectReader,
    snapshot: Snapshot,
    change: Change,
    author: Author,
    screens: Sequence[Screen],
    *,
    also_on: str | None = None,
) -> Attempt[list[Revision]]:
    """The commit of a memory store's ``change`` on ``snapshot``, once the change obeys
    the input rules, passes the screens, and names memories that exist (or, for a
    create, do not); ``also_on`` is a second parent (a proposal the commit carries on)."""
    edits = check_change(change)
    chosen = "\n".join(extra_lines(change.trailers))
    run(screens, Write(snapshot.store, author.name, edits, None, snapshot.meta, chosen))
    # a memory that does not read as text (a hand commit's) is replaced, measured as
    # far as it reads: the write repairs it
    olds = [snapshot.readable(edit.slug) for edit in edits]
    for edit, old in zip(edits, olds, strict=True):
        if edit.memory is None and old is None:
            raise NotFound(f"there is no memory named {edit.slug!r} to {edit.op}")
        if edit.op == "create" and old is not None:
            raise AlreadyExists(f"a memory named {edit.slug!r} already exists")
    return build_memories(reader, snapshot, change, edits, olds, author, also_on=also_on)


def file_write(
    reader: ObjectReader,
    snapshot: FileSnapshot,
    change: FileChange,
    author: Author,
    screens: Sequence[Screen],
) -> Attempt[list[FileRevision]]:
    """The commit of a file store's ``change`` on ``snapshot`` (none for a change of no
    path), as ``memory_write`` judges a memory store's."""
    edits = check_file_change(change)
    if not edits:
        return Attempt([], None, "")
    written = [(e.path, e.text) for e in edits if e.text is not None]
    chosen = "\n".join(extra_lines(change.trailers))
    run(screens, Write(snapshot.store, author.name, (), written, _no_meta, chosen))
    olds: list[str | None] = []
    for edit in edits:
        old = snapshot.read(edit.path)
        if edit.text is None and old is None:
            raise NotFound(f"there is no file {edit.path!r} to {edit.op}")
        if edit.op == "create" and (old is not None or snapshot.is_dir(edit.path)):
            raise AlreadyExists(f"{edit.path!r} already exists")
        olds.append(old)
    return build_files(reader, snapshot, change, edits, olds, author)


def _no_meta(name: str) -> str | None:
    return None  # a file store keeps no root files of its own


def meta_write(
    reader: ObjectReader,
    snapshot: Snapshot,
    name: str,
    trailer: str,
    text: str | None,
    author: Author,
) -> Attempt[str | None]:
    """The commit that sets (``None``: removes) the store's root file ``name`` and
    changes no memory, recorded as ``trailer: set`` (or ``remove``); nothing if the
    file already holds exactly that."""
    if snapshot.meta(name) == text:
        return Attempt(None, None, "")
    new = NewObjects()
    base = reader.raw_tree(snapshot.root) if snapshot.root else EMPTY_TREE
    entry = None if text is None else (FILE_MODE, new.add_blob(text.encode(), text))
    root = new.add_tree(base.replaced({name: entry}))
    verb = "remove" if text is None else "set"
    facts = Facts(
        (), snapshot.totals, snapshot.peaks, held_as_before(snapshot, trailers={trailer: verb})
    )
    subject = f"{verb} {name}"
    message = subject.encode() + format_message(facts)[len(b"merge") :]
    parents = [snapshot.commit] if snapshot.commit else []
    sha = new.add_commit(root, parents, author.ident(), int(time.time()), message)
    return Attempt(sha, new, subject)


CARRIED = (CAPABILITY_TRAILER,)
"""What a commit carries forward of the heads it builds on, a merge (a sync's, an
approval's) included: what binds the store, the strategy and limits it is held to.
Who wrote those heads (agent, session, client, tool) and what one write did (a
widening, a proposal's part) stay with the commits that did it."""


def held_as_before(*views: StoreView, trailers: Mapping[str, str]) -> dict[str, str]:
    """``trailers``, with what :data:`CARRIED` names carried forward from the first of
    ``views`` (the heads a commit builds on) that records it, unless ``trailers``
    record their own: whatever gitmem commits, the store stays held to what it was held
    to, as the push hook holds it."""
    carried: dict[str, str] = {}
    for key in CARRIED:
        kept = next((v.trailers[key] for v in views if key in v.trailers), None)
        if kept is not None and key not in trailers:
            carried[key] = kept
    return {**carried, **trailers}


def record_write(
    reader: ObjectReader,
    snapshot: Snapshot,
    subject: str,
    trailers: Mapping[str, str],
    author: Author,
) -> Attempt[str]:
    """The commit that changes nothing in the store's tree and records ``trailers``
    (an operator's deliberate record, such as the limits the store is held to)."""
    new = NewObjects()
    root = new.add_tree(reader.raw_tree(snapshot.root) if snapshot.root else EMPTY_TREE)
    facts = Facts((), snapshot.totals, snapshot.peaks, held_as_before(snapshot, trailers=trailers))
    message = subject.encode() + format_message(facts)[len(b"merge") :]
    parents = [snapshot.commit] if snapshot.commit else []
    sha = new.add_commit(root, parents, author.ident(), int(time.time()), message)
    return Attempt(sha, new, subject)


# -- building ----------------------------------------------------------------------

Size = tuple[int, int] | None
"""A memory's or file's characters and lines (``None``: absent)."""


def totals_after(before: Totals, sizes: Iterable[tuple[Size, Size]]) -> Totals:
    """``before`` with each ``(new, old)`` size pair applied."""
    count, chars, lines = before.count, before.chars, before.lines
    for new, old in sizes:
        count += (new is not None) - (old is not None)
        chars += (new[0] if new else 0) - (old[0] if old else 0)
        lines += (new[1] if new else 0) - (old[1] if old else 0)
    return Totals(count, chars, lines)


def memory_sizes(edits: Sequence[Edit], olds: Sequence[Memory | None]) -> list[tuple[Size, Size]]:
    """Each memory edit's size after and before."""
    return [
        (_memory_size(edit.memory), _memory_size(old))
        for edit, old in zip(edits, olds, strict=True)
    ]


def _memory_size(memory: Memory | None) -> Size:
    return (memory.chars, memory.lines) if memory is not None else None


def _text_size(text: str | None) -> Size:
    return (len(text), count_lines(text)) if text is not None else None


def _commit(
    new: NewObjects,
    view: StoreView,
    root: bytes,
    named: Sequence[tuple[str, str]],
    totals: Totals,
    extra: Mapping[str, str],
    author: Author,
    revision: Mapping[str, int],
    *,
    paths: bool = False,
    also_on: str | None = None,
) -> tuple[str, Facts, int]:
    """Add to ``new`` the commit of ``root`` on ``view``'s head for the edits
    ``named`` (name, op), each numbered after its last revision; returns the commit,
    its facts and its time."""
    facts = Facts(
        edits=tuple(Edited(name, op, revision[name] + 1) for name, op in named),
        totals=totals,
        peaks=view.peaks.peak(totals),
        extra=held_as_before(view, trailers=extra),
        paths=paths,
    )
    when = int(time.time())
    parents = [view.commit] if view.commit else []
    if also_on is not None:
        parents.append(also_on)
    sha = new.add_commit(root, parents, author.ident(), when, format_message(facts))
    return sha, facts, when


def build_memories(
    reader: ObjectReader,
    snapshot: Snapshot,
    change: Change,
    edits: tuple[Edit, ...],
    olds: list[Memory | None],
    author: Author,
    *,
    also_on: str | None = None,
) -> Attempt[list[Revision]]:
    """The commit that applies a memory store's ``edits`` to ``snapshot`` (with
    ``also_on`` as a second parent, if given)."""
    new = NewObjects()
    root, blobs = new_tree(reader, snapshot, edits, new)
    totals = totals_after(snapshot.totals, memory_sizes(edits, olds))
    revision = {e.slug: snapshot.revision(e.slug) for e in edits}
    named = [(e.slug, e.op) for e in edits]
    sha, facts, when = _commit(
        new, snapshot, root, named, totals, change.trailers, author, revision, also_on=also_on
    )
    revisions: list[Revision] = []
    rows: list[Row] = []
    for edit, old, edited, ids in zip(edits, olds, facts.edits, blobs, strict=True):
        shown = edit.memory or old
        assert shown is not None
        rows.append((sha, str(edited.revision), edited.op, edited.slug, *ids))
        revisions.append(
            revision_of(
                snapshot.store, sha, edited, facts, shown, author.name, when, edit.memory is None
            )
        )
    return Attempt(revisions, new, f"{change.op} {change.slug}", as_read(facts), rows)


def build_files(
    reader: ObjectReader,
    snapshot: FileSnapshot,
    change: FileChange,
    edits: tuple[FileEdit, ...],
    olds: list[str | None],
    author: Author,
) -> Attempt[list[FileRevision]]:
    """The commit that applies a file store's ``edits`` to ``snapshot``."""
    new = NewObjects()
    blobs: dict[str, bytes | None] = {}
    for edit in edits:
        text = edit.text
        blobs[edit.path] = None if text is None else new.add_blob(text.encode(), text)
    root = build_tree(reader, snapshot.root, blobs, new)
    sizes = [(_text_size(e.text), _text_size(old)) for e, old in zip(edits, olds, strict=True)]
    totals = totals_after(snapshot.totals, sizes)
    revision = {e.path: snapshot.revision(e.path) for e in edits}
    named = [(e.path, e.op) for e in edits]
    sha, facts, when = _commit(
        new, snapshot, root, named, totals, change.trailers, author, revision, paths=True
    )
    revisions: list[FileRevision] = []
    rows: list[Row] = []
    for edit, old, edited in zip(edits, olds, facts.edits, strict=True):
        blob = blobs[edit.path]
        if blob is None:
            gone = reader.entry_at(snapshot.root, edit.path) if snapshot.root else None
            blob_id = REMOVED + (gone[1].decode() if gone else "-")
        else:
            blob_id = blob.decode()
        rows.append((sha, str(edited.revision), edited.op, edited.slug, blob_id, "-", "-"))
        revisions.append(
            FileRevision(
                store=snapshot.store,
                path=edit.path,
                revision=edited.revision,
                op=edit.op,
                text=edit.text if edit.text is not None else old or "",
                author=author.name,
                commit=sha,
                time=when,
                totals=totals,
                peaks=facts.peaks,
                removed=edit.text is None,
            )
        )
    subject = f"{change.edits[0].op} {change.edits[0].path}"
    return Attempt(revisions, new, subject, as_read(facts), rows)


def new_tree(
    reader: ObjectReader, snapshot: Snapshot, edits: Sequence[Edit], new: NewObjects
) -> tuple[bytes, list[Blobs]]:
    """The root tree of ``snapshot`` with ``edits`` applied, every new object added
    to ``new``, and for each edit the blob ids the history index keeps (for a
    removal, the files it removed). Only the changed fan-out trees and the root are
    encoded again, each from its stored entries (see ``RawTree``)."""
    root = snapshot.root
    base_root = reader.raw_tree(root) if root else EMPTY_TREE
    buckets: dict[str, tuple[RawTree, dict[str, tuple[int, bytes] | None]]] = {}
    blobs: list[Blobs] = []
    for edit in edits:
        slug = edit.slug
        name = memoryfiles.bucket(slug)
        if name not in buckets:
            entry = base_root.get(name)
            tree = reader.raw_tree(entry[1].decode()) if entry and entry[0] == DIR_MODE else None
            buckets[name] = (tree or EMPTY_TREE, {})
        base, changes = buckets[name]
        before = [base.get(slug + suffix) for suffix in memoryfiles.SUFFIXES]
        for suffix, found in zip(memoryfiles.SUFFIXES, before, strict=True):
            if found is not None:
                changes[slug + suffix] = None
        memory = edit.memory
        if memory is None:
            ids = [f[1].decode() if f else "-" for f in before]
            blobs.append((REMOVED + ids[0], ids[1], ids[2]))
            continue
        written: dict[str, bytes] = {}
        for filename, data in memoryfiles.encode(memory).items():
            written[filename] = new.add_blob(data)
            changes[filename] = (FILE_MODE, written[filename])
        kept = MemoryFiles(
            written[slug + memoryfiles.MD],
            written.get(slug + memoryfiles.CODE),
            written.get(slug + memoryfiles.ON_USE),
        )
        new.memories.append((kept, memory))
        blobs.append(blob_ids(kept))
    root_changes: dict[str, tuple[int, bytes] | None] = {}
    for name, (base, changes) in buckets.items():
        tree = base.replaced(changes)
        root_changes[name] = (DIR_MODE, new.add_tree(tree)) if tree.chunks else None
    return new.add_tree(base_root.replaced(root_changes)), blobs


# -- revisions -----------------------------------------------------------------------


def revision_of(
    store: str,
    commit: str,
    edited: Edited,
    facts: Facts,
    memory: Memory,
    author: str,
    time: int,
    removed: bool,
) -> Revision:
    """The revision ``edited`` of ``memory`` made by ``commit``."""
    return Revision(
        store=store,
        slug=edited.slug,
        revision=edited.revision,
        op=edited.op,
        description=memory.description,
        body=memory.body,
        code=memory.code,
        on_use=memory.on_use,
        author=author,
        commit=commit,
        time=time,
        totals=facts.totals,
        peaks=facts.peaks,
        removed=removed,
    )


Measured = Callable[[str], tuple[Totals, Totals]]
"""The totals and peaks of a store as of a commit gitmem did not make (it records none)."""


def _recorded(
    reader: ObjectReader, entry: Entry, what: str, measured: Measured | None
) -> tuple[Facts, str, int]:
    """The facts, author name and time of the commit a history entry names; refuses an
    entry whose first blob is missing from that commit's tree. A commit gitmem did not
    make is its git author's, with the totals ``measured`` counts."""
    if entry.blobs[0] == "-":
        raise StorageError(
            f"commit {entry.commit[:12]} says it changed {entry.slug!r}, but the "
            f"{what} is not in its tree; run `gitmem check`"
        )
    raw = reader.raw_commit(entry.commit)  # read once: the header and the message
    author, when = authored(raw)
    facts = reader.facts(entry.commit, message_of(raw))
    if facts is None:
        totals, peaks = measured(entry.commit) if measured else (Totals(), Totals())
        facts = Facts((), totals, peaks, {})
    return facts, author, when


def memory_revision(
    reader: ObjectReader, store: str, entry: Entry, measured: Measured | None = None
) -> Revision:
    """The memory revision a history entry records."""
    facts, author, when = _recorded(reader, entry, "memory", measured)
    md, code, on_use = (None if b == "-" else b.encode() for b in entry.blobs)
    assert md is not None
    # a revision a hand commit made that does not read as text reads as far as it goes
    # (as a file revision does): the memory's history stays readable, and restorable
    memory = readable_memory(reader, entry.slug, MemoryFiles(md, code, on_use))
    edited = Edited(entry.slug, entry.op, entry.revision)
    return revision_of(store, entry.commit, edited, facts, memory, author, when, entry.removed)


def file_revision(
    reader: ObjectReader, store: str, entry: Entry, measured: Measured | None = None
) -> FileRevision:
    """The file revision a history entry records."""
    facts, author, when = _recorded(reader, entry, "file", measured)
    text = reader.blob(entry.blobs[0].encode()).decode("utf-8", "replace")
    return FileRevision(
        store=store,
        path=entry.slug,
        revision=entry.revision,
        op=entry.op,
        text=text,
        author=author,
        commit=entry.commit,
        time=when,
        totals=facts.totals,
        peaks=facts.peaks,
        removed=entry.removed,
    )
