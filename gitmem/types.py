"""The values gitmem passes around: memories, authors, changes, revisions, totals.

Also the input rules every entry point shares (slugs, ops, text, authors), so that the
library, the holder and the CLI refuse the same things with the same words: the rules
for names live in :mod:`gitmem.names`, those for text in :mod:`gitmem.lean.text`, and
:class:`Totals` in :mod:`gitmem.lean.totals` (all free of ``dataclasses``, for the
processes that read commits and never load this module), each re-exported here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from gitmem.errors import InvalidAuthor
from gitmem.lean.text import check_line, check_text, count_lines
from gitmem.lean.totals import Totals
from gitmem.names import PATH_DEPTH as PATH_DEPTH
from gitmem.names import PATH_MAX as PATH_MAX
from gitmem.names import SLUG_MAX as SLUG_MAX
from gitmem.names import check_op, check_path, check_slug

OP_RE = re.compile(r"[a-z][a-z-]{0,31}")
"""An op's shape (:func:`gitmem.names.check_op` holds an op to it)."""
SLUG_RE = re.compile(r"[A-Za-z0-9._-]{1,64}")
"""A slug's characters and length (:func:`gitmem.names.check_slug` holds a slug to them)."""

__all__ = [
    "AGENT_EMAIL",
    "SYNC_AUTHOR",
    "Author",
    "Change",
    "Edit",
    "EditParts",
    "FileChange",
    "FileEdit",
    "FileRevision",
    "Memory",
    "MemoryParts",
    "Op",
    "Revision",
    "Totals",
    "check_line",
    "check_op",
    "check_path",
    "check_slug",
    "check_text",
    "count_lines",
]

Op = str
"""What a change did, as named in its commit: a lowercase word such as ``create``,
``edit``, ``delete`` or ``rename`` (see ``check_op``). Whether a change removes a memory
is said by its ``memory`` being ``None``, never by the op's name."""

AGENT_EMAIL = "@agents.gitmem"
"""How the email of an agent instance's commits ends (an operator's is their own)."""


@dataclass(frozen=True)
class Author:
    """Who made a commit: an agent instance or an operator."""

    name: str
    email: str

    def __post_init__(self) -> None:
        for what, value in (("name", self.name), ("email", self.email)):
            if not value or any(c in value for c in "<>\n\r\x00"):
                raise InvalidAuthor(
                    f"author {what} {value!r} must be non-empty with no '<', '>' or newline"
                )
        if self.name != self.name.strip():
            raise InvalidAuthor(f"author name {self.name!r} may not start or end with a space")

    @classmethod
    def agent(cls, instance: str) -> Author:
        """The author of an agent instance's writes."""
        safe = re.sub(r"[^A-Za-z0-9._-]", "-", instance) or "agent"
        return cls(name=instance.strip() or "agent", email=safe + AGENT_EMAIL)

    def ident(self) -> bytes:
        return f"{self.name} <{self.email}>".encode()


SYNC_AUTHOR = Author("gitmem sync", "sync@gitmem.invalid")
"""The author of the merge commits ``gitmem sync`` makes."""


@dataclass(frozen=True)
class Memory:
    """One memory as stored: slug, description, body and the optional code halves."""

    slug: str
    description: str
    body: str
    code: str = ""
    on_use: str = ""

    @property
    def chars(self) -> int:
        """Characters (code points) of the body: what the limits count."""
        return len(self.body)

    @property
    def lines(self) -> int:
        return count_lines(self.body)


@dataclass(frozen=True)
class Edit:
    """One slug's part of a change: ``memory`` is its new content, ``None`` removes it."""

    op: Op
    slug: str
    memory: Memory | None


class MemoryParts(Protocol):
    """What the write screens read of a memory a write makes: a :class:`Memory`, or a
    memory as the push hook reads it from a pushed commit (without this module)."""

    @property
    def slug(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def body(self) -> str: ...
    @property
    def code(self) -> str: ...
    @property
    def on_use(self) -> str: ...


class EditParts(Protocol):
    """What the write screens read of one memory's part of a write: an :class:`Edit`,
    or the push hook's reading of one."""

    @property
    def op(self) -> Op: ...
    @property
    def slug(self) -> str: ...
    @property
    def memory(self) -> MemoryParts | None: ...


@dataclass(frozen=True)
class Change:
    """What a mutation function asks the store to publish as one commit.

    The subject is ``op`` on ``slug``: ``memory`` is the new content, or ``None`` to
    remove the slug. ``also`` holds further slugs changed in the same commit (a rename
    removes one slug and adds another); every slug of a change must be distinct.
    ``trailers`` are extra ``Key: value`` lines for the commit message.
    """

    op: Op
    slug: str
    memory: Memory | None
    trailers: Mapping[str, str] = field(default_factory=lambda: dict[str, str]())
    also: tuple[Edit, ...] = ()

    @property
    def edits(self) -> tuple[Edit, ...]:
        """Every slug's part of the change, the subject first."""
        return (Edit(self.op, self.slug, self.memory), *self.also)


@dataclass(frozen=True)
class FileEdit:
    """One path's part of a file-store change: ``text`` is the file's new content,
    ``None`` removes the file."""

    op: Op
    path: str
    text: str | None


@dataclass(frozen=True)
class FileChange:
    """What a file-store mutation function asks the store to publish as one commit.

    ``edits`` name distinct paths, the subject first; a change of no path publishes
    nothing. ``trailers`` are extra ``Key: value`` lines for the commit message.
    """

    edits: tuple[FileEdit, ...]
    trailers: Mapping[str, str] = field(default_factory=lambda: dict[str, str]())


@dataclass(frozen=True)
class FileRevision:
    """One path's part of a successful file-store mutation, with the file's text as of
    that revision (a removal carries the text it removed)."""

    store: str
    path: str
    revision: int
    op: Op
    text: str
    author: str
    commit: str
    time: int
    totals: Totals
    peaks: Totals
    removed: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The ``file_revision`` telemetry event, as JSON-ready data."""
        return {
            "type": "file_revision",
            "store": self.store,
            "path": self.path,
            "revision": self.revision,
            "op": self.op,
            "text": self.text,
            "removed": self.removed,
            "author": self.author,
            "commit": self.commit,
            "time": self.time,
        }

    def event(self) -> dict[str, Any]:
        """The same as :meth:`to_dict` (the name earlier versions used)."""
        return self.to_dict()


@dataclass(frozen=True)
class Revision:
    """One slug's part of a successful mutation, with the text as of that revision.

    A removal (a delete, or the old name of a rename) carries the text it removed.
    """

    store: str
    slug: str
    revision: int
    op: Op
    description: str
    body: str
    code: str
    on_use: str
    author: str
    commit: str
    time: int
    totals: Totals
    peaks: Totals
    removed: bool = False
    """Whether this revision removed the slug (a delete, or a rename's old name)."""

    def memory(self) -> Memory:
        """The memory as this revision left it (for a removal, as it was removed)."""
        return Memory(self.slug, self.description, self.body, self.code, self.on_use)

    def to_dict(self) -> dict[str, Any]:
        """The ``memory_revision`` telemetry event, as JSON-ready data."""
        return {
            "type": "memory_revision",
            "store": self.store,
            "slug": self.slug,
            "revision": self.revision,
            "op": self.op,
            "description": self.description,
            "body": self.body,
            "code": self.code,
            "on_use": self.on_use,
            "author": self.author,
            "commit": self.commit,
            "time": self.time,
        }

    def event(self) -> dict[str, Any]:
        """The same as :meth:`to_dict` (the name earlier versions used)."""
        return self.to_dict()


@dataclass(frozen=True)
class BlameLine:
    """One line of a memory's files, with the revision that last changed it."""

    file: str
    """Which of the memory's files: ``memory`` (its description and body, as the
    ``.md`` file holds them), ``code`` or ``onUse``."""
    line: int
    """The line's number in that file, from 1."""
    text: str
    slug: str
    """The memory's name in that revision (it may have been renamed since)."""
    revision: int
    commit: str
    author: str
    """The agent instance, the operator, or the git author of a commit gitmem did not make."""
    by: str
    """``agent``, ``operator``, or ``git`` for a commit gitmem did not make."""
    session: str
    """The session (or run) the write came from, as its harness recorded it; ``""``
    where none was."""
    time: int

    def to_dict(self) -> dict[str, Any]:
        """The line as JSON-ready data."""
        return {
            "file": self.file,
            "line": self.line,
            "text": self.text,
            "slug": self.slug,
            "revision": self.revision,
            "commit": self.commit,
            "author": self.author,
            "by": self.by,
            "session": self.session,
            "time": self.time,
        }
