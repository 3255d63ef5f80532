"""The observation log's entries: observations and session summaries, their ids, the
blocks of a session file and the rows of the index.

An id is the entry's kind and the first six hex digits of a sha256 over its defining
fields, so the same content always gets the same id and a duplicate is recognised:

    obs-9f3a1b   sha256(session | title | narrative)
    sum-2c4d5e   sha256(session | "summary" | learned | completed)

A session file holds one block per entry, a ``##`` heading, metadata lines, a blank
line and the narrative::

    ## obs-9f3a1b [bugfix] Fixed auth token refresh — 2026-10-03T14:28:37Z
    - subtitle: 401 on expired refresh tokens
    - files: internal/auth/token.go
    - keywords: auth, tokens
    - facts:
      - refresh endpoint returned 401 on expired refresh tokens
    - session: a1b2c3d4
    - agent: main
    - source: toolu_01
    - hash: 9f3a1b…

    The refresh endpoint rejected expired refresh tokens with a 401. …

The index holds one row per entry: ``ID | Date | Type | Title | Keywords | File``, its
cells sanitized so a title can never add a column or a row.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field

__all__ = [
    "SUMMARY_FIELDS",
    "TYPES",
    "Entry",
    "IndexRow",
    "entry_id",
    "parse_index",
    "printable",
    "sanitize",
    "split_blocks",
    "unheaded",
]

TYPES = (
    "bugfix",
    "feature",
    "refactor",
    "change",
    "discovery",
    "decision",
    "gotcha",
    "pattern",
    "config",
)
"""The kinds of observation; a summary's type is ``summary``."""
SUMMARY_FIELDS = ("request", "investigated", "learned", "completed", "next_steps", "notes")
TITLE_MAX = 120
FIELD_MAX = 600
NARRATIVE_MAX = 2000
FACTS_MAX = 12


_CONTROLS: dict[int, int | None] = {
    **dict.fromkeys((*range(9), 11, 12, *range(14, 32), 0x7F, *range(0x80, 0xA0))),
    13: 10,
}


def printable(text: str) -> str:
    """``text`` without control characters: tab and newline stay, a carriage return is
    a newline, the rest go (an escape sequence a model or a tool's output carried would
    recolour, hide or retitle what an operator's terminal shows of it)."""
    return text.replace("\r\n", "\n").translate(_CONTROLS)


def sanitize(text: str, limit: int = TITLE_MAX) -> str:
    """One line of at most ``limit`` characters with no ``|`` and no control
    character: an index cell."""
    flat = " ".join(printable(text).replace("|", "/").split())
    return flat[:limit]


def _hash(*parts: str) -> str:
    return hashlib.sha256(" | ".join(parts).encode("utf-8", "replace")).hexdigest()


def entry_id(session: str, kind: str, title: str, narrative: str, fields: dict[str, str]) -> str:
    """The entry's id (see the module's docstring)."""
    if kind == "summary":
        digest = _hash(session, "summary", fields.get("learned", ""), fields.get("completed", ""))
        return "sum-" + digest[:6]
    return "obs-" + _hash(session, title, narrative)[:6]


@dataclass(frozen=True)
class Entry:
    """One observation (``kind`` one of :data:`TYPES`) or session summary (``kind``
    ``summary``, its fields in ``fields``)."""

    kind: str
    title: str
    session: str
    agent: str = "main"
    narrative: str = ""
    subtitle: str = ""
    files: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    facts: tuple[str, ...] = ()
    source: str = ""
    fields: dict[str, str] = field(default_factory=lambda: dict[str, str]())
    time: str = ""
    """When it was stored, ``YYYY-MM-DDTHH:MM:SSZ``."""

    @property
    def id(self) -> str:
        return entry_id(self.session, self.kind, self.title, self.narrative, self.fields)

    @property
    def digest(self) -> str:
        """The full hash the id's six digits begin."""
        if self.kind == "summary":
            return _hash(
                self.session,
                "summary",
                self.fields.get("learned", ""),
                self.fields.get("completed", ""),
            )
        return _hash(self.session, self.title, self.narrative)

    @property
    def date(self) -> str:
        return self.time[:10]

    def block(self) -> str:
        """The entry as a session file's block (ending in a newline)."""
        heading = f"## {self.id} [{self.kind}] {sanitize(self.title)} — {self.time}"
        lines = [heading]
        if self.kind == "summary":
            lines += [f"- {name}: {_line(self.fields.get(name, ''))}" for name in SUMMARY_FIELDS]
        else:
            if self.subtitle:
                lines.append(f"- subtitle: {_line(self.subtitle)}")
            if self.files:
                lines.append(f"- files: {', '.join(_line(f) for f in self.files)}")
            if self.keywords:
                lines.append(f"- keywords: {', '.join(_line(k) for k in self.keywords)}")
            if self.facts:
                lines.append("- facts:")
                lines += [f"  - {_line(f)}" for f in self.facts]
        lines.append(f"- session: {_line(self.session)}")
        lines.append(f"- agent: {_line(self.agent)}")
        if self.source:
            lines.append(f"- source: {_line(self.source)}")
        lines.append(f"- hash: {self.digest}")
        text = "\n".join(lines) + "\n"
        narrative = _body(self.narrative)
        return text + ("\n" + narrative + "\n" if narrative else "")

    def row(self, file: str) -> str:
        """The entry's index row."""
        keywords = ", ".join(self.keywords)
        title = "Session summary" if self.kind == "summary" else self.title
        cells = [self.id, self.time[:16], self.kind, sanitize(title), sanitize(keywords), file]
        return " | ".join(cells)


def _line(text: str) -> str:
    return " ".join(printable(text).split())[:FIELD_MAX]


def _body(text: str) -> str:
    """A narrative that cannot open a block of its own: no line starts with ``## ``."""
    return unheaded(printable(text).strip())[:NARRATIVE_MAX]


def unheaded(text: str, also: tuple[str, ...] = ()) -> str:
    """``text`` with a backslash before each line that starts (spaces aside) with ``#``
    or with one of ``also`` (in any case): what a model wrote, quoting anything, cannot
    open a heading of the file or panel it is placed in, nor repeat a line of its own."""
    starts = ("#", *(s.lower() for s in also))
    lines = [
        ("\\" + ln if ln.lstrip()[:200].lower().startswith(starts) else ln)
        for ln in text.splitlines()
    ]
    return "\n".join(lines)


@dataclass(frozen=True)
class IndexRow:
    """One row of the index."""

    id: str
    date: str
    kind: str
    title: str
    keywords: str
    file: str


def parse_index(text: str) -> Iterator[IndexRow]:
    """The index's rows, in file order (a malformed line is passed over)."""
    for line in text.splitlines():
        cells = [c.strip() for c in line.split(" | ")]
        if len(cells) == 6 and cells[0][:4] in ("obs-", "sum-"):
            yield IndexRow(*cells)


def split_blocks(text: str) -> Iterator[tuple[str, str]]:
    """A session file's blocks as ``(id, block text)``, in file order."""
    current: list[str] = []
    for line in text.split("\n"):
        if line.startswith("## "):
            if current:
                yield _block(current)
            current = [line]
        elif current:
            current.append(line)
    if current:
        yield _block(current)


def _block(lines: list[str]) -> tuple[str, str]:
    return lines[0][3:].split(" ", 1)[0], "\n".join(lines).rstrip("\n")
