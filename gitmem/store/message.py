"""Commit messages: a subject line, a blank line, then ``Gitmem-*`` trailers.

A change of one slug reads::

    edit deploy-runbook

    Gitmem-Slug: deploy-runbook
    Gitmem-Op: edit
    Gitmem-Revision: 3
    Gitmem-Count: 12
    ... Gitmem-Chars, Gitmem-Lines, Gitmem-Peak-Count, Gitmem-Peak-Chars, Gitmem-Peak-Lines
    <extra trailers>

A change of several slugs names them all in its subject (``delete old-name, create
new-name``; ``rename a, b``: an op is repeated only where it changes; past three slugs,
`` (+N more)``) and repeats the ``Gitmem-Slug``/``Gitmem-Op``/``Gitmem-Revision`` trio
once per slug, in order, before the totals and peaks, which come once. The trailers
carry the running totals and peaks, so the head commit alone answers "what is the state
and what were the peaks".

A file store's commit names paths instead of slugs: its trio is ``Gitmem-Path``,
``Gitmem-Op``, ``Gitmem-Revision`` (``create notes/todo.md`` ... ``Gitmem-Path:
notes/todo.md``), and its totals count files and their characters and lines. That key
is how a store says it is a file store: its head commit names paths. A message naming
both slugs and paths is not gitmem's.
"""

from __future__ import annotations

import re
from types import MappingProxyType

from gitmem.errors import InvalidPath
from gitmem.lean.heads import TOTAL_KEYS, names_gitmem
from gitmem.lean.shapes import op_shape, slug_shape
from gitmem.lean.totals import Totals, totals_of
from gitmem.lean.tuples import made
from gitmem.names import check_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import NamedTuple

    from gitmem.types import Op
else:
    from gitmem.lean.tuples import NamedTuple


class Edited(NamedTuple):
    """What a commit says about one slug (or, in a file store, one path) it changed."""

    slug: str
    op: Op
    revision: int


class Facts(NamedTuple):
    """What one gitmem commit says about itself: the slugs it changed (the subject
    first), the totals and peaks after it, and any extra trailers. Only a merge made by
    a sync may change no slug (its tree is its first parent's)."""

    edits: tuple[Edited, ...]
    totals: Totals
    peaks: Totals
    extra: Mapping[str, str]
    paths: bool = False
    """Whether the commit is a file store's: its edits name paths, not slugs."""

    @property
    def slug(self) -> str:
        """The subject's slug."""
        return self.edits[0].slug

    @property
    def op(self) -> Op:
        """The subject's op."""
        return self.edits[0].op

    @property
    def revision(self) -> int:
        """The subject's revision number."""
        return self.edits[0].revision


EDIT_KEYS = ("Gitmem-Slug", "Gitmem-Op", "Gitmem-Revision")
PATH_KEY = "Gitmem-Path"
FILES = "files"
MEMORIES = "memories"
KEYS = frozenset((*EDIT_KEYS, PATH_KEY, *TOTAL_KEYS))
"""The trailer keys gitmem itself writes; an extra trailer may not use them."""
_SHOWN = 3
_NO_EXTRA: Mapping[str, str] = MappingProxyType({})


def subject(edits: Sequence[tuple[str, Op]]) -> str:
    """The first line of a commit changing ``edits`` (``(slug, op)`` pairs)."""
    parts: list[str] = []
    previous = ""
    for slug, op in edits[:_SHOWN]:
        parts.append(slug if op == previous else f"{op} {slug}")
        previous = op
    more = len(edits) - _SHOWN
    return ", ".join(parts) + (f" (+{more} more)" if more > 0 else "")


def format_message(facts: Facts) -> bytes:
    lines = [subject([(e.slug, e.op) for e in facts.edits]) or "merge", ""]
    key = PATH_KEY if facts.paths else "Gitmem-Slug"
    for edit in facts.edits:
        lines += [
            f"{key}: {edit.slug}",
            f"Gitmem-Op: {edit.op}",
            f"Gitmem-Revision: {edit.revision}",
        ]
    lines += [
        f"Gitmem-Count: {facts.totals.count}",
        f"Gitmem-Chars: {facts.totals.chars}",
        f"Gitmem-Lines: {facts.totals.lines}",
        f"Gitmem-Peak-Count: {facts.peaks.count}",
        f"Gitmem-Peak-Chars: {facts.peaks.chars}",
        f"Gitmem-Peak-Lines: {facts.peaks.lines}",
    ]
    lines += extra_lines(facts.extra)
    return ("\n".join(lines) + "\n").encode()


MESSAGE_SLACK = 64 * 1024
"""How many bytes a store commit's message may hold beyond the trailers gitmem writes
for what it says (the whole message, for a commit gitmem did not make). Every read of a
store reads its head's message, so a push or a sync refuses a longer one where it would
come in, rather than every read paying for it."""


def overlong(message: bytes, facts: Facts | None) -> str | None:
    """Why ``message`` (whose trailers say ``facts``) is longer than a store commit's
    may be (see ``MESSAGE_SLACK``), or ``None``."""
    size = len(message)
    if size <= MESSAGE_SLACK:
        return None
    # what the trailers gitmem writes come to, its slugs' twice: a sync merge names its
    # conflicts, slugs it edits, in one more trailer; any other trailer a message holds
    # beyond them (a harness's, or one made up) is held to the slack like its prose
    core = len(format_message(facts._replace(extra={}))) if facts is not None else 0
    allowed = MESSAGE_SLACK + 2 * core
    if size <= allowed:
        return None
    return (
        f"its message holds {size:,} bytes, past the {MESSAGE_SLACK // 1024} KiB a store's "
        "commit message may hold beyond the trailers gitmem writes for it"
    )


_CONTROLS = dict.fromkeys((*range(0x20), *range(0x7F, 0xA0)), " ")
"""Control characters (NUL among them, which git refuses in a commit) as spaces."""


def trailer_value(value: str) -> str:
    """A trailer's value as a message holds it: control characters read as spaces,
    whitespace collapsed to single spaces (one line, whatever a caller handed over)."""
    return " ".join(value.translate(_CONTROLS).split())


def extra_lines(extra: Mapping[str, str]) -> list[str]:
    """Extra trailers as a message holds them: one ``Key: value`` line each, a value's
    control characters and whitespace collapsed to single spaces."""
    return [f"{key}: {trailer_value(value)}" for key, value in extra.items()]


def as_read(facts: Facts) -> Facts:
    """The facts ``parse_message`` reads from ``format_message(facts)``, made without
    formatting and parsing: extra trailers as :func:`trailer_value` makes them, and only
    the ``Gitmem-`` ones (the parser reads no other)."""
    extra = {
        key: trailer_value(value)
        for key, value in facts.extra.items()
        if key.startswith("Gitmem-") and key not in KEYS
    }
    paths = facts.paths and bool(facts.edits)  # no path named: nothing says it is a file store
    return Facts(facts.edits, facts.totals, facts.peaks, MappingProxyType(extra), paths)


def kind_of(facts: Facts | None) -> str:
    """What a store is as of a commit whose standing facts are ``facts`` (those of its
    nearest gitmem commit): ``"files"`` when they name paths, else ``"memories"``. The
    one rule the store, the hooks and sync read a store's kind by."""
    return FILES if facts is not None and facts.paths else MEMORIES


def parse_message(message: bytes) -> Facts | None:
    """The facts of a gitmem commit, or ``None`` for a commit gitmem did not make.

    Only the trailer block is read: the paragraph after the subject line and a blank
    line, as gitmem writes it. A ``Gitmem-`` line anywhere else (the subject, a
    paragraph after the block) is text. (A message as gitmem writes it is read by one
    match: see :func:`parse_edits`.)"""
    written = _as_written(message)
    if written is not None:
        edits, match, stop = written
        extra = _NO_EXTRA  # read-only: one empty map serves every message that has none
        # as the full reading takes them: the lines of the decoded text (a block with
        # no "Gitmem-" in its bytes has none, nor has its text: the key is ASCII)
        if message.find(b"Gitmem-", match.end(), stop) >= 0:
            found: dict[str, str] = {}
            for line in message[match.end() : stop].decode("utf-8", "replace").splitlines():
                if line.startswith("Gitmem-"):
                    key, sep, value = line.partition(": ")
                    if sep:
                        found[key] = value
            extra = MappingProxyType(found)
        said, held = match.group(6, 7, 8), match.group(9, 10, 11)
        a, b, c = map(int, said)
        totals = totals_of(a, b, c)
        # a store that only grows has its peaks at its totals: one value serves both
        # (most often spelled alike, so read once)
        if held == said:
            peaks = totals
        else:
            d, e, f = map(int, held)
            peaks = totals if (a, b, c) == (d, e, f) else totals_of(d, e, f)
        return made(Facts, (edits, totals, peaks, extra, False))
    read = _trailers(message)
    if read is None:
        return None
    edits, numbers, trailers, paths = read
    return Facts(
        edits=edits,
        totals=Totals(*numbers[0:3]),
        peaks=Totals(*numbers[3:6]),
        # read-only: readers share one Facts per commit
        extra=MappingProxyType({k: v for k, v in trailers.items() if k not in KEYS}),
        paths=paths,
    )


def parse_edits(message: bytes, start: int = 0) -> tuple[Edited, ...] | None:
    """``parse_message(message[start:]).edits`` (``None`` for a commit gitmem did not
    make), without making the rest of the facts: what a walk of a whole history reads
    (a raw commit and where its message starts, whose bytes a message as gitmem writes
    it is read in without copying them out)."""
    written = _as_written(message, start)
    if written is not None:
        return written[0]
    read = _trailers(message[start:] if start else message)
    return read[0] if read is not None else None


def _as_written(
    message: bytes, start: int = 0
) -> tuple[tuple[Edited, ...], re.Match[bytes], int] | None:
    """The edits of the message that starts at ``start``, when it reads exactly as
    gitmem writes one (the trios, then the totals and peaks in their order, then
    trailers of other names), the match that read them, and where the trailer block
    ends; ``None``: any other message, for the full reading. Both read such a message
    alike: every line the match takes is one the full reading takes the same way, and
    the rest names none of the trailers that decide the edits, the totals or whether
    the message is gitmem's. The match reads bytes: its patterns are ASCII, which UTF-8
    (bad bytes replaced) decodes as itself, so it takes the lines a match of the
    decoded text would."""
    match = _WRITTEN.match(message, start)
    if match is None:
        return None
    if not match[1].decode("utf-8", "replace").strip():  # as text: str's whitespace
        return None
    end = match.end()
    stop = message.find(b"\n\n", end)
    if stop < 0:
        stop = len(message)
    # past the match, most often only its last line's newline: too short for a trailer
    if stop - end >= _DECIDING_SHORTEST and _DECIDING.search(message, end, stop):
        return None
    if match[2] is None:
        return (), match, stop
    edits = (made(Edited, (match[2].decode(), match[3].decode(), int(match[4]))),)
    if match[5]:
        edits += tuple(
            Edited(s.decode(), o.decode(), int(r)) for s, o, r in re.findall(_TRIO_TEXT, match[5])
        )
        if len({edit.slug for edit in edits}) < len(edits):
            return None  # a slug named twice: the full reading refuses it
    return edits, match, stop


# a trio as gitmem writes it: a slug, an op, a revision of plain digits, a line each
_TRIO_TEXT = (
    rb"Gitmem-Slug: ([A-Za-z0-9._-]{1,64})\n"
    rb"Gitmem-Op: ([a-z][a-z-]{0,31})\n"
    rb"Gitmem-Revision: ([0-9]+)\n"
)
_WRITTEN = re.compile(
    rb"([^\n]*)\n\n(?:"
    + _TRIO_TEXT
    + rb"((?:"
    + _TRIO_TEXT.replace(b"(", b"(?:")
    + rb")*))?"
    + b"".join(key.encode() + rb": ([0-9]+)\n" for key in TOTAL_KEYS[:-1])
    + TOTAL_KEYS[-1].encode()
    + rb": ([0-9]+)(?=\n|\Z)"
)
# a trailer that decides the edits, or whether a message is gitmem's
_DECIDING = re.compile(rb"Gitmem-(?:Slug|Path|Op|Revision|Count|Chars|Lines|Peak-)")
_DECIDING_SHORTEST = len(b"Gitmem-Op")


def _trailers(
    message: bytes,
) -> tuple[tuple[Edited, ...], list[int], dict[str, str], bool] | None:
    """A gitmem message's edits, totals and peaks, every other trailer and whether it
    names paths; ``None`` if it is not a gitmem message."""
    trailers: dict[str, str] = {}
    slugs: list[str] = []
    paths: list[str] = []
    ops: list[str] = []
    revisions: list[str] = []
    if not names_gitmem(message):
        return None
    subject, sep, rest = message.decode("utf-8", "replace").partition("\n\n")
    if not sep or not subject.strip() or "\n" in subject:
        return None
    for line in rest.split("\n\n", 1)[0].splitlines():
        if not line.startswith("Gitmem-"):
            continue
        key, sep, value = line.partition(": ")
        if not sep:
            continue
        if key == "Gitmem-Slug":
            slugs.append(value)
        elif key == PATH_KEY:
            paths.append(value)
        elif key == "Gitmem-Op":
            ops.append(value)
        elif key == "Gitmem-Revision":
            revisions.append(value)
        else:
            trailers[key] = value
    if slugs and paths:
        return None
    named = slugs or paths
    # no slug at all is a merge that changed nothing; the totals below still must be there
    if not len(named) == len(ops) == len(revisions) or len(set(named)) < len(named):
        return None
    try:
        edits: list[Edited] = []
        for slug, op, revision in zip(named, ops, revisions, strict=True):
            # the history index stores these: no spaces, a number it can read back
            number = int(revision)
            if number < 0 or not op_shape(op):
                return None
            if paths:
                check_path(slug)
            elif not slug_shape(slug):
                return None
            edits.append(Edited(slug, op, number))
        numbers = [int(trailers[k]) for k in TOTAL_KEYS]
    except (KeyError, ValueError, InvalidPath):
        return None
    return tuple(edits), numbers, trailers, bool(paths)
