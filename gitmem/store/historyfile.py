"""The history index's file read as bytes: what a fresh process learns from it without
parsing its rows (see :mod:`gitmem.store.history` for the format).

Whether the file ends with a head's rows, the rows of one slug found by a search of
the bytes, a head's commits and whether it holds one, the newest commit at a moment
found by halving them, and how many rows a commit holds, which is what tells a file
that is whole from one cut short.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence

from gitmem.errors import GitmemError
from gitmem.store.rows import FOREIGN, MARKS, MERGE, Row, lines_with, parse_row

__all__ = [
    "MERGE_FIELD",
    "cold_commits",
    "cold_count",
    "cold_file",
    "cold_holds",
    "cold_newest",
    "cold_rows",
    "ends_with",
    "expected",
]

TYPE_CHECKING = False
if TYPE_CHECKING:
    # what the index reads, described for the type checker only: loading ``typing``'s
    # protocols would cost a fresh process more than its read of the index
    from typing import Protocol

    from gitmem.store.objects import Step

    class Edit(Protocol):
        """What a commit says of one slug it changed (as :class:`~gitmem.store.message.Edited`)."""

        @property
        def slug(self) -> str: ...

        @property
        def op(self) -> str: ...

        @property
        def revision(self) -> int: ...

    class Said(Protocol):
        """What a commit gitmem made says of itself, as far as its history is concerned (as
        :class:`~gitmem.store.message.Facts`)."""

        @property
        def edits(self) -> Sequence[Edit]: ...

        @property
        def paths(self) -> bool: ...

        @property
        def extra(self) -> Mapping[str, str]: ...

    class Source(Protocol):
        """What the index reads of the commits."""

        def parents(self, sha: str) -> list[str]: ...

        def facts(self, sha: str) -> Said | None: ...

        def step(self, sha: str) -> Step: ...

        def heading(self, sha: str) -> tuple[list[str], Sequence[Edit] | None]: ...

        def outside(self, sha: str) -> Sequence[Edit]: ...


_TAIL = 65536  # bytes of the index read to see what it ends with
MERGE_FIELD = b" " + MERGE.encode() + b" "  # a merge row's op, found in the file's bytes
FOREIGN_END = b" 0 " + b" ".join([FOREIGN.encode()] * 5) + b"\n"
"""How the row of a commit that changed no memory ends, and no other row: its op is
the only one of its kind, and a row has seven fields."""


def ends_with(source: Source, fd: int, size: int, parent: str | None) -> bool:
    """Whether the index file (open as ``fd``, ``size`` bytes) holds exactly
    ``parent``'s ancestry: it ends with ``parent``'s rows, all of them (the last
    64 KB are read). ``None``: whether it is empty."""
    if parent is None or not size:
        return parent is None and not size
    start = max(0, size - _TAIL)
    tail = os.pread(fd, size - start, start)
    if not tail.endswith(b"\n"):
        return False
    lines = tail[:-1].split(b"\n")
    if start:
        lines = lines[1:]  # the first may be cut
    key = parent.encode()
    rows = 0
    while rows < len(lines) and lines[-1 - rows][:40] == key:
        rows += 1
    if rows == len(lines) and start:
        return False  # the window holds nothing but parent's rows: too many to tell
    return rows == expected(source, parent)


def cold_rows(path: str, source: Source, head: str, slug: str) -> list[Row] | None:
    """``slug``'s rows at ``head`` read straight from the file (see :func:`cold_file`),
    by a scan of its bytes for ``slug`` that parses no other row. ``None``: take the
    full path (which also repairs or rebuilds a file that does not read)."""
    data = cold_file(path, source, head)
    if data is None:
        return None
    lines = lines_with(data, slug, 3)
    if not lines:
        return []
    try:
        found = [parse_row(line) for line in b"\n".join(lines).decode("ascii").split("\n")]
    except (ValueError, UnicodeDecodeError):
        return None
    return [row for row in found if row[2] not in MARKS]


def cold_file(path: str, source: Source, head: str) -> bytes | None:
    """The index file's rows up to ``head``'s last, when those are exactly ``head``'s
    ancestry, read without parsing them: the file ends with ``head``'s rows, all of
    them (then every row of it is), or it holds no merge (then its rows are one line,
    each commit's ancestry the rows up to its own) and ``head``'s rows, all of them.
    ``None``: neither, or the file does not read."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    end = data.rfind(b"\n") + 1
    key = head.encode()
    if data[data.rfind(b"\n", 0, end - 1) + 1 : end].startswith(key):
        stop = end
    else:
        if data.find(MERGE_FIELD, 0, end) >= 0:
            return None
        last = data.rfind(b"\n" + key, 0, end) + 1
        if not last and not data.startswith(key):
            return None
        stop = data.find(b"\n", last) + 1
    start = stop - 1
    rows = 0
    while start > 0:
        before = data.rfind(b"\n", 0, start - 1) + 1
        if data[before : before + 40] != key:
            break
        start, rows = before, rows + 1
    try:
        if rows != expected(source, head):
            return None
    except GitmemError:
        return None
    return data[:stop]


def cold_count(path: str, source: Source, head: str) -> int | None:
    """How many revisions ``head``'s history holds: the rows of :func:`cold_file` less
    its marks, counted in the bytes (a merge's op is the one field ``^`` stands alone
    in: a file store's path escapes it). ``None``: take the full path."""
    data = cold_file(path, source, head)
    if data is None:
        return None
    return data.count(b"\n") - data.count(FOREIGN_END) - data.count(MERGE_FIELD)


def cold_holds(path: str, source: Source, head: str, commit: str) -> bool | None:
    """Whether the commit ``commit`` (a full id) is ``head`` or one of its ancestors,
    found by a search of the index file's bytes for a row of it (see :func:`cold_file`);
    ``None``: take the full path."""
    data = cold_file(path, source, head)
    if data is None or len(commit) != 40:
        return None
    key = commit.encode() + b" "
    return data.startswith(key) or data.find(b"\n" + key) >= 0


def cold_commits(path: str, source: Source, head: str, prefix: str = "") -> list[str] | None:
    """Every commit of ``head``'s history (those whose ids start with ``prefix``), each
    once, in the index file's order, read from its rows' first fields (see
    :func:`cold_file`); ``None``: take the full path."""
    data = cold_file(path, source, head)
    if data is None:
        return None
    try:
        if not prefix:
            lines = data.decode("ascii").split("\n")[:-1]
        else:  # a search of the bytes for rows that start with it: no list of every row
            lines: list[str] = []
            key, text = b"\n" + prefix.encode(), b"\n" + data
            at = text.find(key)
            while at >= 0:
                lines.append(text[at + 1 : at + 41].decode("ascii"))
                at = text.find(key, at + 1)
    except UnicodeDecodeError:
        return None
    return list(dict.fromkeys([line[:40] for line in lines if line[:40].startswith(prefix)]))


def cold_newest(
    path: str, source: Source, head: str, limit: int, commit_time: Callable[[str], int]
) -> tuple[str | None] | None:
    """The newest commit of ``head``'s history made at or before ``limit`` (in a 1-tuple:
    ``None`` inside when there is none), found by halving the index file's bytes when
    it holds no merge; ``None``: take the full path."""
    data = cold_file(path, source, head)
    if data is None or data.find(MERGE_FIELD) >= 0:
        return None
    low, high = 0, len(data)
    try:
        while low < high:
            mid = (low + high) // 2
            start = max(low, data.rfind(b"\n", low, mid) + 1)
            stop = data.index(b"\n", start) + 1
            if commit_time(data[start : start + 40].decode("ascii")) <= limit:
                low = stop
            else:
                high = start
    except (ValueError, UnicodeDecodeError):
        return None
    if not low:
        return (None,)
    start = data.rfind(b"\n", 0, low - 1) + 1
    return (data[start : start + 40].decode("ascii"),)


def _edits(source: Source, sha: str, facts: Said | None) -> Sequence[Edit]:
    """The edits a commit's rows record: its facts', or for a commit gitmem did not
    make, what its tree changed (numbered 0: a row's place is its number)."""
    return facts.edits if facts is not None else source.outside(sha)


def expected(source: Source, sha: str) -> int:
    """How many rows the index holds for commit ``sha``."""
    facts = source.facts(sha)
    merge = len(source.parents(sha)) > 1
    edits = _edits(source, sha, facts)
    return merge + (len(edits) if edits or (facts is not None and merge) else 1)
