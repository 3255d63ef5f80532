"""The history index's rows: what one line of the index file says, and how it is
written and read (see :mod:`gitmem.store.history` for the file and its order).

It reads no git and loads neither the store nor ``urllib`` for a slug (which reads as
itself), so the lean read path reads rows as the store does."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NamedTuple

    from gitmem.types import Op
else:
    from gitmem.lean.tuples import NamedTuple

FOREIGN = "-"
MERGE = "^"


class Entry(NamedTuple):
    """One slug a commit changed (one gitmem made, or one made by hand)."""

    commit: str
    revision: int
    op: Op
    slug: str
    blobs: tuple[str, str, str]
    """The blob ids of the memory's ``.md``, code and onUse files ("-" where absent) as of
    this revision; for a removal, the text it removed."""
    removed: bool = False
    """Whether the commit removed the slug (stored as ``~`` before the ``.md`` blob id)."""


Row = tuple[str, str, str, str, str, str, str]
"""commit, revision, op, slug, md blob, code blob, onUse blob: one line of the file."""

MARKS = (FOREIGN, MERGE)
"""The ops of rows that stand for no revision: a commit that changed no memory, a merge."""

LATER = "?"
"""Stands for the blob ids of a row the walk wrote without reading trees."""
LATER3 = (LATER, LATER, LATER)

REMOVED = "~"
"""Marks the ``.md`` blob id of a revision that removed its slug."""

_PLAIN = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~/")


def field_of(name: str) -> str:
    """A slug or a file-store path as one field of a line: ASCII with no space, so a
    path of any characters keeps the line's shape. Names of letters, digits, ``-``,
    ``_``, ``.``, ``~`` and ``/`` (every slug) read as themselves; others are %-escaped."""
    if _PLAIN.issuperset(name):
        return name
    from urllib.parse import quote

    return quote(name, safe="/")


def name_of(field: str) -> str:
    """The slug or path a line's field stands for."""
    if "%" not in field:
        return field
    from urllib.parse import unquote

    return unquote(field, errors="strict")


def format_row(row: Row) -> str:
    return " ".join((*row[:3], field_of(row[3]), *row[4:])) + "\n"


def format_rows(rows: list[Row]) -> str:
    """``format_row`` of each of ``rows``, joined (one loop: a build writes every row)."""
    plain = _PLAIN.issuperset
    return "".join(
        [
            f"{c} {n} {o} {s if plain(s) else field_of(s)} {md} {code} {on_use}\n"
            for c, n, o, s, md, code, on_use in rows
        ]
    )


def parse_row(line: str) -> Row:
    row = line.split(" ")
    # cheap checks only: a commit id that is wrong anyway never matches the branch,
    # and the walk that follows rewrites the index from the commits
    if len(row) != 7 or len(row[0]) != 40 or not (row[1].isascii() and row[1].isdigit()):
        raise ValueError(f"not an index line: {line!r}")
    return row[0], row[1], row[2], name_of(row[3]), row[4], row[5], row[6]


def lines_with(data: bytes, word: str, field: int) -> list[bytes]:
    """The complete lines of ``data`` whose ``field``-th space-separated field is
    ``word``: found by searching the bytes for it where few lines hold it, by taking
    the lines that hold it from all of them where many do (one C-level pass then
    costs less than a search per line)."""
    needle = b" " + field_of(word).encode() + b" "
    word_bytes = needle[1:-1]
    if data.count(needle) * _DENSE <= data.count(b"\n"):
        return _searched(data, needle, word_bytes, field)
    complete = data[: data.rfind(b"\n") + 1].split(b"\n")
    return [
        line
        for line in complete
        if needle in line
        for fields in [line.split(b" ", field + 1)]
        if len(fields) > field + 1 and fields[field] == word_bytes
    ]


_DENSE = 8  # a word on more than one line in this many: take the lines from all of them


def _searched(data: bytes, needle: bytes, word: bytes, field: int) -> list[bytes]:
    """:func:`lines_with`, by a search of the bytes for ``needle`` (`` word ``)."""
    found: list[bytes] = []
    at = data.find(needle)
    while at >= 0:
        start = data.rfind(b"\n", 0, at) + 1
        end = data.find(b"\n", at)
        if end < 0:
            break
        line = data[start:end]
        fields = line.split(b" ", field + 1)
        if len(fields) > field + 1 and fields[field] == word:
            found.append(line)
        at = data.find(needle, end)
    return found


def numbered(entries: list[Entry]) -> list[Entry]:
    """``entries`` (in index order) each numbered by its place among its slug's:
        a revision's number is its place in its memory's history as the index orders it,
    so every revision has a number of its own, a merge's sides included."""
    places: dict[str, int] = {}
    found: list[Entry] = []
    for entry in entries:
        place = places[entry.slug] = places.get(entry.slug, 0) + 1
        found.append(entry if entry.revision == place else entry._replace(revision=place))
    return found


def entry_of(row: Row) -> Entry:
    commit, revision, op, slug, md, code, on_use = row
    removed = md.startswith(REMOVED)
    return Entry(commit, int(revision), op, slug, (md.lstrip(REMOVED), code, on_use), removed)
