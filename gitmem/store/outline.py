"""A revision's outline: who made it and when, and its memory's description and size,
without the texts or the store's totals.

A reader that folds every revision of a long history (the console's ledger of every
memory a store ever held) needs no more than this. An outline costs one raw read of its
commit (shared by the commit's revisions) and of its ``.md`` blob, where a full
revision also makes a commit object, reads the code halves and, for a commit gitmem
did not make, counts the store's totals as of it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, NamedTuple

from gitmem.errors import StorageError
from gitmem.store import memoryfiles as files
from gitmem.store.message import Facts
from gitmem.store.objects import DIR_MODE, REMOVED, TREE, MemoryFiles, ObjectReader
from gitmem.store.rows import LATER
from gitmem.store.treefind import find_entry

if TYPE_CHECKING:
    from gitmem.store.history import History
    from gitmem.store.rows import Entry

__all__ = ["Outline", "Outlines", "Progress"]

_COMMIT = 1

Progress = Callable[[int, int, "int | None"], None]
"""Told now and then how far a reading of revisions has gone: the commits walked, the
revisions read, and of how many (``None`` while the commits are walked). It may raise
to stop the reading."""

_EVERY = 256
"""How many revisions are read between two calls of a ``Progress``."""


class Outline(NamedTuple):
    """One revision of a memory, as :meth:`Outlines.outlines` reads it."""

    slug: str
    revision: int
    removed: bool
    description: str
    chars: int
    """The characters of the memory's body (for a removal, of the body it removed)."""
    commit: str
    author: str
    """The commit's author's name, as a revision names it."""
    time: int
    made_by: tuple[str, str, Mapping[str, str]]
    """Who made the commit, as :meth:`Storage.made_by` says: author name and email, and
    the extra trailers its message records."""


class Outlines:
    """The part of a repository that reads revisions as outlines (a base of
    ``Storage``)."""

    _reader: ObjectReader

    def _history(self, store: str) -> History:
        """A store's history index (``Storage`` gives it)."""
        raise NotImplementedError

    def head(self, store: str) -> str | None:
        """A store's head (``Storage`` gives it)."""
        raise NotImplementedError

    def _expect(self, store: str, head: str | None, *, files: bool, doing: str) -> None:
        """Refuse a store of the other kind (``Storage`` gives it)."""
        raise NotImplementedError

    def outlines(
        self,
        store: str,
        base: str | None = None,
        *,
        at: str | None = None,
        progress: Progress | None = None,
    ) -> list[Outline]:
        """The revisions of a memory store reachable from its head (or from commit
        ``at``) and not from ``base`` (all of them, with no ``base``; none if ``base`` is
        not an ancestor of the head), in the order of ``revisions``, as outlines;
        ``progress`` is told how far the reading has gone as it goes. A reader that
        records which head it read up to passes it as ``at``: a write landing
        meanwhile is then left to its next reading, not read twice."""
        head = self.head(store) if at is None else at
        self._expect(store, head, files=False, doing="its history is `file_revisions`")
        history = self._history(store)
        if progress is not None and base is None:
            # a kept index says how long the reading is before it is parsed (a while, at
            # 100,000 revisions): a reader that will not wait that long may stop here
            size = history.size(head)
            if size is not None:
                progress(0, 0, size)
        walked = 0

        def walking(commits: int) -> None:
            nonlocal walked
            walked = commits
            if progress is not None:
                progress(commits, 0, None)

        # the blob ids are found here, in one pass that reads each object once (with no
        # ``base``: every row, numbered as ``entries`` numbers them)
        entries = history.since(base, head, lookup=False, walked=walking) or []
        reader = self._reader
        commits: dict[str, _Made] = {}
        found: list[Outline] = []
        for entry in entries:
            if progress is not None and not len(found) % _EVERY:
                progress(walked, len(found), len(entries))
            made = commits.get(entry.commit)
            if made is None:
                made = commits[entry.commit] = _made(reader, entry.commit)
            if entry.blobs[0] == LATER:
                entry = _located(reader, commits, made, entry)
            description, chars = _measure(reader, entry)
            found.append(
                Outline(
                    entry.slug,
                    entry.revision,
                    entry.removed,
                    description,
                    chars,
                    entry.commit,
                    made.author,
                    made.time,
                    made.made_by,
                )
            )
        if progress is not None:
            progress(walked, len(found), len(entries))
        return found


class _Made(NamedTuple):
    """What an outline reads of a commit: who made it and when, and where its tree is."""

    author: str
    time: int
    made_by: tuple[str, str, Mapping[str, str]]
    tree: str
    parent: str | None
    """The first parent (``None``: a root commit)."""
    facts: Facts | None


def _located(reader: ObjectReader, commits: dict[str, _Made], made: _Made, entry: Entry) -> Entry:
    """``entry`` with its ``.md`` blob id found in its commit's tree, as a walk's step
    finds it (``ObjectReader.step``): where the memory is absent, the one its first
    parent held, marked removed. A commit gitmem did not make, or a file store's, takes
    the step itself."""
    facts = made.facts
    if facts is None or facts.paths:
        step = reader.step(entry.commit)
        edits = step.facts.edits if step.facts is not None else ()
        for edit, blobs in zip(edits, step.blobs, strict=True):
            if edit.slug == entry.slug:
                md = blobs[0]
                removed = md.startswith(REMOVED)
                return entry._replace(blobs=(md.lstrip(REMOVED), *blobs[1:]), removed=removed)
        return entry._replace(blobs=("-", "-", "-"))
    md = _md_at(reader, made.tree, entry.slug)
    if md is not None:
        return entry._replace(blobs=(md, LATER, LATER))
    md = "-"
    if made.parent is not None:
        parent = commits.get(made.parent)
        if parent is None:
            parent = commits[made.parent] = _made(reader, made.parent)
        md = _md_at(reader, parent.tree, entry.slug) or "-"
    return entry._replace(blobs=(md, LATER, LATER), removed=made.parent is not None)


def _md_at(reader: ObjectReader, root: str, slug: str) -> str | None:
    """The blob id of ``slug``'s ``.md`` file in root tree ``root``, if it is there."""
    folder = find_entry(reader.raw(root, TREE), files.bucket(slug).encode())
    if folder is None or folder[0] != DIR_MODE:
        return None
    found = find_entry(reader.raw(folder[1], TREE), (slug + files.MD).encode())
    return None if found is None else found[1]


def _measure(reader: ObjectReader, entry: Entry) -> tuple[str, int]:
    """The description and body length of the memory a history entry records."""
    md = entry.blobs[0]
    if md == "-":
        raise StorageError(
            f"commit {entry.commit[:12]} says it changed {entry.slug!r}, but the "
            "memory is not in its tree; run `gitmem check`"
        )
    # the code halves are not read: an outline has no use for them
    memory = reader.memory(entry.slug, MemoryFiles(md.encode(), None, None))
    return memory.description, len(memory.body)


def _made(reader: ObjectReader, sha: str) -> _Made:
    """A commit's author name (as a revision names it), time, who made it (as
    ``made_by`` says), tree, first parent and facts, read from its raw text. Anything
    unusual takes the commit object's path, with its errors."""
    raw = reader.raw(sha, _COMMIT)
    header, _, message = raw.partition(b"\n\n")
    person, when = b"", None
    lines = header.split(b"\n")
    tree = lines[0][5:].decode("ascii", "replace") if lines[0].startswith(b"tree ") else ""
    parent = (
        lines[1][7:].decode("ascii", "replace")
        if lines[1:2] and lines[1].startswith(b"parent ")
        else None
    )
    for line in lines:
        if line.startswith(b"author "):
            # as git writes it: "author NAME <EMAIL> SECONDS ZONE"
            end = line.rfind(b"> ")
            stamp = line[end + 2 :].split(b" ")
            if end > 0 and len(stamp) == 2 and stamp[0].isdigit():
                person, when = line[7 : end + 1], int(stamp[0])
            break
    if when is None or len(tree) != 40 or (parent is not None and len(parent) != 40):
        commit = reader.commit(sha)
        person, when = commit.author, commit.author_time
        tree = commit.tree.decode()
        parent = commit.parents[0].decode() if commit.parents else None
    ident = person.decode("utf-8", "replace")
    name, _, email = ident.partition(" <")
    facts = reader.facts(sha, message)
    extra: Mapping[str, str] = facts.extra if facts is not None else {}
    return _Made(
        ident.rsplit(" <", 1)[0], when, (name, email.removesuffix(">"), extra), tree, parent, facts
    )
