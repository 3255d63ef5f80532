"""The values gitmem passes around: memories, authors, changes, revisions, totals.

Also the input rules every entry point shares (slugs, ops, text, authors), so that the
library, the holder and the CLI refuse the same things with the same words.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gitmem.errors import InvalidArgument, InvalidAuthor, InvalidPath, InvalidSlug
from gitmem.lean.text import check_text
from gitmem.names import tree_name_problem

__all__ = [
    "AGENT_EMAIL",
    "SYNC_AUTHOR",
    "Author",
    "Change",
    "Edit",
    "FileChange",
    "FileEdit",
    "FileRevision",
    "Memory",
    "Op",
    "Revision",
    "Totals",
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

OP_RE = re.compile(r"[a-z][a-z-]{0,31}")

SLUG_MAX = 64
SLUG_RE = re.compile(r"[A-Za-z0-9._-]{1,64}")


def check_slug(slug: object) -> str:
    """Return ``slug`` if it obeys the slug rules, else raise ``InvalidSlug`` saying why.

    A slug is 1-64 ASCII letters, digits, ``-``, ``_`` and ``.``, is a name a git tree
    may hold (see :mod:`gitmem.names`: not ``.``, ``..``, nor ``.git`` or
    ``.gitmodules`` in any spelling) and does not end in ``.lock``.
    """
    if not isinstance(slug, str) or not slug:
        raise InvalidSlug("a memory name must be a non-empty string of 1-64 characters")
    if len(slug) > SLUG_MAX:
        raise InvalidSlug(
            f"memory name {slug[:20]!r}... is {len(slug)} characters; use at most {SLUG_MAX}"
        )
    if not SLUG_RE.fullmatch(slug):
        bad = sorted({c for c in slug if not (c.isascii() and (c.isalnum() or c in "._-"))})
        shown = " ".join(repr(c) for c in bad[:5])
        raise InvalidSlug(
            f"memory name {slug!r} has characters a name may not hold ({shown}); "
            "use ASCII letters, digits, '-', '_' and '.'"
        )
    problem = tree_name_problem(slug)
    if problem is not None:
        raise InvalidSlug(f"memory name {slug!r} {problem}; choose another name")
    if slug.endswith(".lock"):
        raise InvalidSlug(f"memory name {slug!r} may not end in '.lock'; choose another name")
    return slug


PATH_MAX = 1024
PATH_DEPTH = 16


def check_path(path: object) -> str:
    """Return ``path`` if it is a usable file-store path, else raise ``InvalidPath``.

    A path is relative, 1-16 ``/``-separated names, at most 1,024 characters. Each name
    is one a git tree may hold (see :mod:`gitmem.names`: no ``..``, no ``.git`` in any
    spelling, no backslash, at most 255 bytes of UTF-8) and holds no control character
    or line separator (a path is one line of its commit's message); any other character
    is welcome: spaces, accents, any script.
    """
    if not isinstance(path, str) or not path:
        raise InvalidPath("a file path must be a non-empty string such as notes/todo.md")
    if len(path) > PATH_MAX:
        raise InvalidPath(
            f"file path {path[:40]!r}... is {len(path)} characters; use at most {PATH_MAX}"
        )
    segments = path.split("/")
    if len(segments) > PATH_DEPTH:
        raise InvalidPath(
            f"file path {path!r} is {len(segments)} folders deep; use at most {PATH_DEPTH}"
        )
    for segment in segments:
        if not segment:
            raise InvalidPath(
                f"file path {path!r} has an empty segment; write it relative, "
                "with single '/' between names (e.g. notes/todo.md)"
            )
        problem = _file_name_problem(segment)
        if problem is not None:
            raise InvalidPath(f"file path {path!r} is not usable: name {segment!r} {problem}")
    return path


def _file_name_problem(name: str) -> str | None:
    """Why ``name`` may not be one name of a file-store path, or ``None``."""
    control = next((c for c in name if unicodedata.category(c) in _LINE_BREAKING), None)
    if control is not None:
        return f"holds the control character {control!r}; use printable characters"
    return tree_name_problem(name)


# control characters and line or paragraph separators: each could end a message line
_LINE_BREAKING = frozenset(("Cc", "Zl", "Zp"))


def check_op(op: object) -> str:
    """Return ``op`` if it is a usable op name (``[a-z][a-z-]{0,31}``), else raise
    ``InvalidArgument``."""
    if not isinstance(op, str) or not OP_RE.fullmatch(op):
        shown = repr(op[:40]) if isinstance(op, str) else type(op).__name__
        raise InvalidArgument(
            f"op {shown} is not usable; an op is a lowercase word of 1-32 letters and '-' "
            "that starts with a letter (e.g. edit, rename)"
        )
    return op


def count_lines(text: str) -> int:
    """Lines in ``text``: 0 for empty text, and a final line without newline counts."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


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
class Totals:
    """How many memories, body characters and body lines a store holds (or once held)."""

    count: int = 0
    chars: int = 0
    lines: int = 0

    def peak(self, other: Totals) -> Totals:
        return Totals(
            max(self.count, other.count), max(self.chars, other.chars), max(self.lines, other.lines)
        )

    def to_dict(self) -> dict[str, int]:
        """``{"count", "chars", "lines"}``."""
        return {"count": self.count, "chars": self.chars, "lines": self.lines}

    def as_dict(self) -> dict[str, int]:
        """The same as :meth:`to_dict` (the name earlier versions used)."""
        return self.to_dict()


@dataclass(frozen=True)
class Edit:
    """One slug's part of a change: ``memory`` is its new content, ``None`` removes it."""

    op: Op
    slug: str
    memory: Memory | None


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
