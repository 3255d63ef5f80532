"""The per-store history index: every commit reachable from a branch's head, in order.

It is derived data, rebuilt from the commits whenever it is missing or does not match
the branch, and kept as append-only lines in ``<repo>/gitmem/history/<hash>``::

    <commit> <revision> <op> <slug> <md blob> <code blob> <onUse blob>
    <commit> 0 - - - - -
    <commit> <n> ^ - - - -

A commit has one line per slug it changed (a removal carries the blob ids of the text
it removed): a gitmem commit names them in its trailers; for a commit gitmem did not
make (a person's ``git commit``), they are the memories its tree changed, numbered 0.
A commit that changed no memory has the ``0 - -`` line; a merge commit starts with a
``^`` line saying that the ``n`` lines before its own came in through its other
parents. One commit's lines are consecutive. A revision's number is its line's place
among its slug's lines (see :func:`gitmem.store.rows.numbered`), not the number a
line records.

**Cost.** Building the index reads commits only: the slugs, ops and revisions come from
the commit's trailers (``gitmem.store.message``), and the blob ids are written as ``?``;
only a commit gitmem did not make has its trees compared with its parents'.
They are looked up in the commit's tree when a row is first read, and kept in a side
file ``<index>.blobs`` (``<commit> <slug> <md> <code> <onUse>`` lines, appended; a line
that does not read is passed over and looked up again), so a slug's history costs its
own rows' lookups once, in any process. A fresh process whose index file ends with the
head's rows answers one slug's history by searching the file's bytes for that slug's
lines, without parsing the others (``historyfile.cold_rows``); anything else reads the whole file.

**Order.** Commits come parents first, as a depth-first walk from the head that visits
a commit's parents in order emits them: a commit's first-parent ancestry, then what
its other parents add, then the commit. So for a commit on the head's *first-parent
line* (the head, its first parent, that one's first parent, ...) the lines up to its
own are exactly its ancestry, and answers about it are slices of the index. For a
commit off that line (one a merge brought in) they are the slice up to where its own
first-parent line joins the head's, plus what a walk of its ancestry beyond that
finds: right, but not free. The ``^`` lines are what let the index tell the two apart
without reading commits.

The index follows the head it is asked about: a head whose first-parent line meets
the index on its own first-parent line extends it from there (appending, in the common
case of new commits on the tip); any other head (a branch rewritten under us) rebuilds
it from the commits. An index built bit by bit equals one built from scratch.
"""

from __future__ import annotations

import _thread
import bisect
import os
from collections.abc import Callable, Sequence

from gitmem.errors import GitmemError
from gitmem.store.blobids import BlobIds
from gitmem.store.collector import uncollected
from gitmem.store.historyfile import (
    MERGE_FIELD,
    cold_commits,
    cold_count,
    cold_file,
    cold_holds,
    cold_newest,
    cold_rows,
    ends_with,
    expected,
)
from gitmem.store.rows import (
    FOREIGN,
    LATER,
    LATER3,
    MARKS,
    MERGE,
    Entry,
    Row,
    entry_of,
    format_rows,
    numbered,
    parse_row,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from hashlib import sha1
else:
    from gitmem.lean.light import sha1

if TYPE_CHECKING:
    from typing import TypeGuard

    from gitmem.store.historyfile import Edit, Source


class _Frame:
    """A merge on the walk's stack, how far the walk has gone through its parents
    (``edits``: those its facts record; ``None`` for a commit gitmem did not make), and
    the line of one-parent commits the walk came down to reach it (``run``, the child
    first), whose rows follow the merge's."""

    __slots__ = ("edits", "mark", "next", "parents", "run", "sha")

    def __init__(
        self, sha: str, parents: list[str], edits: Sequence[Edit] | None, run: list[_Step]
    ) -> None:
        self.sha = sha
        self.parents = parents
        self.edits = edits
        self.run = run
        self.next = 0
        self.mark = 0


_Step = tuple[str, "Sequence[Edit] | None"]
"""A one-parent (or root) commit on the walk's way down, and the edits its facts record."""


class _Reach:
    """A commit's ancestry as index positions: every row before ``end``, plus ``extra``
    (sorted positions after ``end``; empty for a commit on the head's first-parent line)."""

    __slots__ = ("end", "extra")

    def __init__(self, end: int, extra: list[int] | None = None) -> None:
        self.end = end
        self.extra = extra or []

    def __contains__(self, position: int) -> bool:
        if position < self.end:
            return True
        i = bisect.bisect_left(self.extra, position)
        return i < len(self.extra) and self.extra[i] == position

    def positions(self) -> list[int]:
        return [*range(self.end), *self.extra]


class History:
    """The index of one store's branch, read from and written to ``path``."""

    def __init__(self, path: str, source: Source) -> None:
        self._path = path
        self._source = source
        self._mutex = _thread.allocate_lock()  # threading's Lock, without loading threading
        # rows as stored; Entry objects are made on demand
        self._rows: list[Row] = []
        self._pos: dict[str, int] = {}  # commit → its last row
        self._by_slug: dict[str, list[int]] = {}  # slug → positions of its rows
        # disjoint, sorted [start, end) position ranges off the head's first-parent line
        self._side_start: list[int] = []
        self._merges: list[int] = []  # positions of merge rows
        self._side_end: list[int] = []
        self._offset = 0
        self._file: tuple[int, int] | None = None
        # a process that wrote without reading the index reads it whole from then on:
        # a cold read per commit would read the whole file each time
        self._wrote_cold = False
        # derived data: after a disk error the index goes on in memory for this process
        # (the side file holds that flag and no reference back: no cycle keeps the index)
        self._blob_ids = BlobIds(path, source)

    @staticmethod
    def file_for(directory: str, store: str) -> str:
        # the suffix names the row format: a file of an older format is rebuilt
        return os.path.join(directory, sha1(store.encode()).hexdigest() + ".4")

    # -- answers ---------------------------------------------------------------------

    def entries(self, head: str | None, slug: str | None = None) -> list[Entry]:
        """The rows of every commit reachable from ``head``, in index order (only
        ``slug``'s, if given), each numbered by its place among its slug's rows (see
        :func:`numbered`)."""
        with self._mutex:
            if slug is not None:
                cold = self._cold_rows(head, slug)
                if cold is not None:
                    return numbered(self._blob_ids.entries(cold, slug))
            reach = self._reach(head)
            rows = self._rows  # as the reach left them
            if slug is None:
                kept = [rows[p] for p in reach.positions() if rows[p][2] not in MARKS]
                return numbered(self._blob_ids.entries(kept))
            found = [rows[p] for p in self._slug_positions(slug, reach)]
            return numbered(self._blob_ids.entries(found, slug))

    def changes(self, head: str | None, slug: str) -> list[str]:
        """The commits whose rows name ``slug`` in ``head``'s history, in index order
        (their blob ids are not looked up)."""
        with self._mutex:
            cold = self._cold_rows(head, slug)
            if cold is not None:
                return [row[0] for row in cold]
            return [self._rows[p][0] for p in self._slug_positions(slug, self._reach(head))]

    def linear(self, head: str | None) -> bool:
        """Whether ``head``'s history holds no merge: then each row's commit has the
        row before it (of the same slug) in its ancestry, with nothing between."""
        with self._mutex:
            if self._cold(head):
                # a fresh process: the file's rows of head's ancestry, searched for a merge
                data = cold_file(self._path, self._source, head)
                if data is not None:
                    return data.find(MERGE_FIELD) < 0
            reach = self._reach(head)
            return not reach.extra and (not self._merges or self._merges[0] >= reach.end)

    def last_revision(self, head: str | None, slug: str) -> int:
        """The number of ``slug``'s latest revision in ``head``'s history (0 if none):
        how many rows it has there, so the next revision's number is its place."""
        with self._mutex:
            cold = self._cold_rows(head, slug)
            if cold is not None:
                return len(cold)
            return len(self._slug_positions(slug, self._reach(head)))

    def since(
        self,
        base: str | None,
        head: str | None,
        lookup: bool = True,
        walked: Callable[[int], None] | None = None,
    ) -> list[Entry] | None:
        """The rows reachable from ``head`` and not from ``base``, in index order,
        numbered as in ``entries(head)``; ``None`` if ``base`` is not an ancestor of
        ``head``. Without ``lookup``, blob ids not yet looked up are left ``?``. A walk
        of commits the index does not hold yet calls ``walked`` with how many it has
        read, now and then as it goes (it may raise to stop the walk)."""
        with self._mutex:
            reach = self._reach(head, walked)
            if base is None:
                kept = reach.positions()
            elif base in self._pos and self._pos[base] in reach:
                before = self._reach(base)
                if not reach.extra and not before.extra:
                    kept = list(range(before.end, reach.end))
                else:
                    kept = [p for p in reach.positions() if p not in before]
            else:
                return None
            rows = self._rows
            kept = [p for p in kept if rows[p][2] not in MARKS]
            places = [_place(rows, self._by_slug, rows[p][3], p, reach) for p in kept]
            entries = (self._blob_ids.entries if lookup else _as_written)([rows[p] for p in kept])
            return [e._replace(revision=n) for e, n in zip(entries, places, strict=True)]

    def size(self, head: str | None) -> int | None:
        """How many revisions ``head``'s history holds, if the file's bytes tell it with
        nothing in memory (:func:`~gitmem.store.historyfile.cold_count`), else ``None``."""
        with self._mutex:
            return cold_count(self._path, self._source, head) if self._cold(head) else None

    def contains(self, head: str | None, commit: str) -> bool:
        """Whether ``commit`` is ``head`` or one of its ancestors."""
        with self._mutex:
            held = cold_holds(self._path, self._source, head, commit) if self._cold(head) else None
            if held is not None:
                return held
            reach = self._reach(head)
            position = self._pos.get(commit)
            return position is not None and position in reach

    def newest_at(self, head: str, limit: int, commit_time: Callable[[str], int]) -> str | None:
        """The newest commit of ``head``'s first-parent line made at or before ``limit``
        (``None``: none), by halving the line, or when cold, the file (:func:`~gitmem.store.historyfile.cold_newest`)."""
        with self._mutex:
            if self._cold(head):
                found = cold_newest(self._path, self._source, head, limit, commit_time)
                if found is not None:
                    return found[0]
            rows, reach = self._rows, self._reach(head)
            whole = not reach.extra and not any(s < reach.end for s in self._side_start)
            line = [row[0] for row in rows[: reach.end]] if whole else None
        line = self.commits(head, line=True) if line is None else line
        at = bisect.bisect_right(line, limit, key=commit_time)
        return line[at - 1] if at else None

    def commits(self, head: str | None, *, line: bool = False, prefix: str = "") -> list[str]:
        """Every commit reachable from ``head``, each once, in index order (with ``line``,
        only its first-parent line's, for a ``head`` on the index's own line; with
        ``prefix``, only those whose ids start with it)."""
        with self._mutex:
            if not line and self._cold(head):
                cold = cold_commits(self._path, self._source, head, prefix)
                if cold is not None:
                    return cold
            rows, pos, reach = self._rows, self._pos, self._reach(head)
            found = [p for p in reach.positions() if pos[rows[p][0]] == p]
            if line and not reach.extra:
                found = [p for p in found if self._on_line(p)]
            return [rows[p][0] for p in found if rows[p][0].startswith(prefix)]

    def _slug_positions(self, slug: str, reach: _Reach) -> list[int]:
        positions = self._by_slug.get(slug, [])
        found = positions[: bisect.bisect_left(positions, reach.end)]
        rows = self._rows
        found += [p for p in reach.extra if rows[p][3] == slug and rows[p][2] not in MARKS]
        return found

    def _reach(self, head: str | None, walked: Callable[[int], None] | None = None) -> _Reach:
        if head is None:
            return _Reach(0)
        self._catch_up(head, walked)
        pos = self._pos[head]
        if self._on_line(pos):
            return _Reach(pos + 1)
        # off the head's first-parent line: its ancestry is the slice up to where its
        # own first-parent line joins the head's, plus what lies beyond it
        join: str | None = head
        while join is not None and not self._on_line(self._pos[join]):
            parents = self._source.parents(join)
            join = parents[0] if parents and parents[0] in self._pos else None
        end = self._pos[join] + 1 if join is not None else 0
        found = {head}
        stack = [head]
        while stack:
            for parent in self._source.parents(stack.pop()):
                # the index holds every ancestor of what it holds; -1 only guards
                if parent not in found and self._pos.get(parent, -1) >= end:
                    found.add(parent)
                    stack.append(parent)
        extra: list[int] = []
        for sha in found:
            last = self._pos[sha]
            first = last
            while first > end and self._rows[first - 1][0] == sha:
                first -= 1
            extra.extend(range(first, last + 1))
        return _Reach(end, sorted(extra))

    def _on_line(self, position: int) -> bool:
        i = bisect.bisect_right(self._side_start, position)
        return not i or position >= self._side_end[i - 1]

    def _cold(self, head: str | None) -> TypeGuard[str]:
        """Whether a read of ``head`` takes the file's bytes as they are (see
        :mod:`~gitmem.store.historyfile`): nothing is in memory, nor written here."""
        kept = self._blob_ids.persisted
        return head is not None and not self._rows and kept and not self._wrote_cold

    def _cold_rows(self, head: str | None, slug: str) -> list[Row] | None:
        """A cold read (see :func:`~gitmem.store.historyfile.cold_rows`) when nothing is in memory yet."""
        return cold_rows(self._path, self._source, head, slug) if self._cold(head) else None

    # -- keeping the index in step with the branch --------------------------------

    def record(self, parent: str | None, rows: list[Row]) -> None:
        """Add the rows of a commit this process just published on ``parent`` (the head
        it replaced), so that no later read walks to it; their blob ids are kept in
        memory and in the side file, and the index file gets the rows a walk would
        write (an index built bit by bit equals one built from scratch). Passed over
        when the index does not end at ``parent`` or another process wrote to the file
        meanwhile: the next read catches up as ever. A process that has not read the
        index (a command-line write) appends when the file ends with ``parent``'s rows,
        without reading the rest, so the next process's cold read finds them."""
        with self._mutex:
            if not self._blob_ids.persisted:
                return
            written: list[Row] = [(*row[:4], *LATER3) for row in rows]
            data = format_rows(written).encode()
            loaded = bool(self._rows)
            self._wrote_cold = self._wrote_cold or not loaded
            try:
                if loaded:
                    if parent is None:
                        return  # the index holds another history: the next read rebuilds it
                    self._catch_up(parent)
                    if self._rows[-1][0] != parent:
                        return
                from gitmem.store.locking import flocked  # a write: a reader never locks

                with flocked(self._path + ".lock"):
                    fd = os.open(self._path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
                    try:
                        stat = os.fstat(fd)
                        here = (stat.st_dev, stat.st_ino)
                        if loaded:
                            if stat.st_size != self._offset or self._file not in (None, here):
                                return
                        elif not ends_with(self._source, fd, stat.st_size, parent):
                            return
                        if os.write(fd, data) != len(data):
                            return  # a short write: the next load reads what landed
                    finally:
                        os.close(fd)
            except (OSError, GitmemError):
                return  # derived data: the next read catches up from the commits
            if loaded:
                self._file = here
                self._offset += len(data)
                self._add(written)
            self._blob_ids.keep({(row[0], row[3]): (row[4], row[5], row[6]) for row in rows})

    def _catch_up(self, head: str, walked: Callable[[int], None] | None = None) -> None:
        """Make the index cover ``head`` (``walked``: see ``since``)."""
        if head not in self._pos and self._blob_ids.persisted:
            try:
                self._load()
                if head not in self._pos:
                    from gitmem.store.locking import flocked  # a write: a reader never locks

                    with flocked(self._path + ".lock"):
                        self._load()
                        if head not in self._pos:
                            self._extend(head, persist=True, walked=walked)
            except OSError:
                self._blob_ids.persisted = False
        if head not in self._pos:
            self._extend(head, persist=False, walked=walked)

    def _load(self) -> None:
        """Read what other processes wrote since we last looked."""
        try:
            with open(self._path, "rb") as f:
                stat = os.fstat(f.fileno())
                if (stat.st_dev, stat.st_ino) != self._file or stat.st_size < self._offset:
                    # rewritten by another process since (a rebuild replaces the file)
                    self._reset()
                    self._file = (stat.st_dev, stat.st_ino)
                f.seek(self._offset)
                data = f.read()
        except FileNotFoundError:
            self._reset()
            return
        complete = data.rfind(b"\n") + 1
        try:
            text = data[:complete].decode("ascii")
            lines = text.split("\n")[:-1]
            rows = [parse_row(line) for line in lines]
            kept = self._complete(rows)
            self._add(rows[:kept], check=True)
        except (ValueError, UnicodeDecodeError):
            # a damaged index is rebuilt from the commits, from scratch
            self._reset()
            return
        self._offset += complete - sum(len(line) + 1 for line in lines[kept:])

    def _complete(self, rows: list[Row]) -> int:
        """How many of ``rows`` to take: all but the last commit's, unless that commit
        has all its rows (a writer may have been killed, or be writing, between them)."""
        if not rows:
            return 0
        last = rows[-1][0]
        first = len(rows)
        while first and rows[first - 1][0] == last:
            first -= 1
        if not first and self._rows and self._rows[-1][0] == last:
            raise ValueError(f"commit {last} has rows in two places")
        try:
            held = expected(self._source, last)
        except GitmemError:
            return first  # not a commit here: the next writer rewrites this part
        return len(rows) if len(rows) - first == held else first

    def _extend(
        self, head: str, *, persist: bool, walked: Callable[[int], None] | None = None
    ) -> None:
        join: str | None = head if self._rows else None
        while join is not None and join not in self._pos:
            parents = self._source.parents(join)
            join = parents[0] if parents else None
        # keep the index up to where head's first-parent line joins the head's line;
        # anywhere else (a rewritten branch) the index is rebuilt from the commits
        keep = self._pos[join] + 1 if join is not None and self._on_line(self._pos[join]) else 0
        with uncollected():  # the walk makes objects for every commit and frees none
            new = _walk(self._source, self._pos, head, keep, walked)
            data = format_rows(new).encode()
        rewound = keep < len(self._rows)
        if persist and not rewound:
            with open(self._path, "ab") as f:
                # a line a killed writer left half-written would corrupt the next one
                f.truncate(self._offset)
                f.write(data)
                stat = os.fstat(f.fileno())
            self._file = (stat.st_dev, stat.st_ino)
            self._offset += len(data)
        elif persist:
            tmp = f"{self._path}.{os.getpid()}.tmp"
            with open(tmp, "wb") as f:
                f.write(format_rows(self._rows[:keep]).encode() + data)
                stat = os.fstat(f.fileno())
            os.replace(tmp, self._path)
            self._file = (stat.st_dev, stat.st_ino)
            self._offset = stat.st_size
        if rewound:
            new = self._rows[:keep] + new
            self._clear()
        with uncollected():  # a row per commit, filed by commit and by slug
            self._add(new)

    def _reset(self) -> None:
        self._clear()
        self._offset = 0

    def _clear(self) -> None:
        self._rows.clear()
        self._pos.clear()
        self._by_slug.clear()
        self._side_start.clear()
        self._merges.clear()
        self._side_end.clear()

    def _add(self, rows: list[Row], *, check: bool = False) -> None:
        """Append ``rows`` to the index in memory; with ``check``, rows read from the file
        that break the shape of the index raise ``ValueError``. (One loop with locals:
        a fresh process runs it over every line of the file.)"""
        entries, pos, by_slug = self._rows, self._pos, self._by_slug
        starts, ends = self._side_start, self._side_end
        last, last_op = (entries[-1][0], entries[-1][2]) if entries else ("", "")
        at = len(entries)
        for row in rows:
            commit, number, op = row[0], row[1], row[2]
            same = commit == last
            if check and (
                (not same and commit in pos)
                or (same and (last_op == FOREIGN or (op == FOREIGN and last_op != MERGE)))
                or (op == MERGE and (same or int(number) > at))
            ):
                raise ValueError(f"index rows of commit {commit} are out of order")
            if op == MERGE:
                self._merges.append(at)
                start = at - int(number)
                while starts and starts[-1] >= start:
                    starts.pop()
                    ends.pop()
                if start < at:
                    starts.append(start)
                    ends.append(at)
            elif op != FOREIGN:
                positions = by_slug.get(row[3])
                if positions is None:
                    by_slug[row[3]] = [at]
                else:
                    positions.append(at)
            pos[commit] = at
            entries.append(row)
            last, last_op = commit, op
            at += 1


def _place(
    rows: list[Row], by_slug: dict[str, list[int]], slug: str, position: int, reach: _Reach
) -> int:
    """The place (from 1) of the row at ``position`` among ``slug``'s rows in ``reach``
    (``by_slug``: each slug's positions in ``rows``)."""
    place = bisect.bisect_right(by_slug.get(slug, []), min(position, reach.end - 1))
    return place + sum(
        1 for p in reach.extra if p <= position and rows[p][3] == slug and rows[p][2] not in MARKS
    )


def _as_written(rows: list[Row]) -> list[Entry]:
    """Entries for ``rows`` with their blob ids as the index holds them (``?``: not
    looked up)."""
    return [entry_of(row) for row in rows]


_WALKED_EVERY = 256
"""How many commits a walk reads between two calls of its ``walked``."""


def _walk(
    source: Source,
    pos: dict[str, int],
    head: str,
    keep: int,
    walked: Callable[[int], None] | None = None,
) -> list[Row]:
    """Rows for every commit reachable from ``head`` that the first ``keep`` rows (whose
    positions ``pos`` gives) do not hold, parents first (an iterative depth-first walk:
    histories are deep); ``walked`` is told how many commits it has read, every
    :data:`_WALKED_EVERY` and at the end. The walk goes down each line of one-parent
    commits in one loop, and stacks only the merges it meets. (Loops with locals: a
    build from scratch runs them once per commit.)"""
    new: list[Row] = []
    append = new.append
    seen = {head}
    heading = source.heading
    later = LATER

    def emit(sha: str, edits: Sequence[Edit] | None) -> None:
        """The rows of a commit of at most one parent that changes no memory gitmem
        recorded: what its tree changed, or its place in the order."""
        found = source.outside(sha) if edits is None else edits
        if not found:
            append((sha, "0", FOREIGN, "-", "-", "-", "-"))
        for edit in found:
            append((sha, str(edit.revision), edit.op, edit.slug, later, later, later))

    stack: list[_Frame] = []
    down: str | None = head  # the commit to go down from next
    while True:
        if down is not None:
            run: list[_Step] = []
            sha = down
            down = None
            while True:
                parents, edits = heading(sha)
                if len(parents) > 1:
                    stack.append(_Frame(sha, parents, edits, run))
                    run = []
                    break
                run.append((sha, edits))
                if not parents:
                    break
                sha = parents[0]
                if sha in seen or pos.get(sha, keep) < keep:
                    break
                seen.add(sha)
                if walked is not None and not len(seen) % _WALKED_EVERY:
                    walked(len(seen))
        elif not stack:
            break
        else:
            frame = stack[-1]
            parents = frame.parents
            at = frame.next
            if at < len(parents):
                if at == 1:
                    frame.mark = keep + len(new)  # the first parent's ancestry is in
                parent = parents[at]
                frame.next = at + 1
                if parent not in seen and pos.get(parent, keep) >= keep:
                    seen.add(parent)
                    if walked is not None and not len(seen) % _WALKED_EVERY:
                        walked(len(seen))
                    down = parent
                continue
            stack.pop()
            sha, edits = frame.sha, frame.edits
            append((sha, str(keep + len(new) - frame.mark), MERGE, "-", "-", "-", "-"))
            if edits is None:
                # a merge gitmem did not make: its own changes, or its place in the order
                emit(sha, None)
            else:  # gitmem's merge: the edits it records (a sync's may record none)
                for edit in edits:
                    append((sha, str(edit.revision), edit.op, edit.slug, later, later, later))
            run = frame.run
        # the line walked down, its oldest commit first: what lies below is in
        for sha, edits in reversed(run):
            if edits:  # the usual commit: gitmem's, changing memories
                for edit in edits:
                    append((sha, str(edit.revision), edit.op, edit.slug, later, later, later))
            else:
                emit(sha, edits)
    if walked is not None:
        walked(len(seen))
    return new
