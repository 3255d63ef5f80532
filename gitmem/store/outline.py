"""A revision's outline: who made it and when, and its memory's description and size,
without the texts or the store's totals.

A reader that folds every revision of a long history (the console's ledger of every
memory a store ever held) needs no more than this. An outline costs one raw read of its
commit (shared by the commit's revisions) and of its ``.md`` blob, where a full
revision also makes a commit object, reads the code halves and, for a commit gitmem
did not make, counts the store's totals as of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, NamedTuple

from gitmem.errors import StorageError
from gitmem.store.message import parse_message
from gitmem.store.objects import MemoryFiles, ObjectReader

if TYPE_CHECKING:
    from gitmem.store.history import History
    from gitmem.store.rows import Entry

__all__ = ["Outline", "Outlines"]

_COMMIT = 1


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

    def outlines(self, store: str, base: str | None = None) -> list[Outline]:
        """The revisions of a memory store reachable from its head and not from ``base``
        (all of them, with no ``base``; none if ``base`` is not an ancestor of the head),
        in the order of ``revisions``, as outlines."""
        head = self.head(store)
        self._expect(store, head, files=False, doing="its history is `file_revisions`")
        history = self._history(store)
        entries = history.entries(head) if base is None else history.since(base, head) or []
        commits: dict[str, tuple[str, int, tuple[str, str, Mapping[str, str]]]] = {}
        found: list[Outline] = []
        for entry in entries:
            made = commits.get(entry.commit)
            if made is None:
                made = commits[entry.commit] = _made(self._reader, entry.commit)
            description, chars = _measure(self._reader, entry)
            author, when, maker = made
            found.append(
                Outline(
                    entry.slug,
                    entry.revision,
                    entry.removed,
                    description,
                    chars,
                    entry.commit,
                    author,
                    when,
                    maker,
                )
            )
        return found


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


def _made(reader: ObjectReader, sha: str) -> tuple[str, int, tuple[str, str, Mapping[str, str]]]:
    """A commit's author name (as a revision names it), time, and who made it (as
    ``made_by`` says), read from its raw text. Anything unusual takes the commit
    object's path, with its errors."""
    raw = reader.raw(sha, _COMMIT)
    header, _, message = raw.partition(b"\n\n")
    person, when = b"", None
    for line in header.split(b"\n"):
        if line.startswith(b"author "):
            # as git writes it: "author NAME <EMAIL> SECONDS ZONE"
            end = line.rfind(b"> ")
            stamp = line[end + 2 :].split(b" ")
            if end > 0 and len(stamp) == 2 and stamp[0].isdigit():
                person, when = line[7 : end + 1], int(stamp[0])
            break
    if when is None:
        commit = reader.commit(sha)
        person, when = commit.author, commit.author_time
    ident = person.decode("utf-8", "replace")
    name, _, email = ident.partition(" <")
    facts = parse_message(message)
    extra: Mapping[str, str] = facts.extra if facts is not None else {}
    return ident.rsplit(" <", 1)[0], when, (name, email.removesuffix(">"), extra)
