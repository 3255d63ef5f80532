"""The per-store history index: every commit of a branch, in order, with its facts.

It is derived data, rebuilt from the commits whenever it is missing or does not match
the branch, and kept as append-only lines in ``<repo>/gitmem/history/<hash>``::

    <commit> <revision> <op> <slug>

(``<commit> 0 - -`` for a commit gitmem did not make). It lets a mutation learn a
slug's last revision number, and ``revisions()`` answer for one slug, without walking
the history: catching up walks only the commits made since the index last looked.
"""

from __future__ import annotations

import bisect
import hashlib
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass

from gitmem.store.locking import flocked
from gitmem.store.message import Facts
from gitmem.types import OPS, Op


@dataclass(frozen=True)
class Entry:
    """One commit on a store's branch; ``op`` is ``None`` for a foreign commit."""

    commit: str
    revision: int
    op: Op | None
    slug: str
    blobs: tuple[str, str, str]
    """The blob ids of the memory's ``.md``, code and onUse files ("-" where absent) as of
    this revision; for a delete, the text it removed."""


Row = tuple[str, str, str, str, str, str, str]
"""commit, revision, op, slug, md blob, code blob, onUse blob: one line of the file."""
Reader = Callable[[str], tuple[str | None, "Facts | None", tuple[str, str, str] | None]]
_NONE = ("-", "-", "-")


class History:
    """The index of one store's branch.

    ``read`` gives a commit's first parent, its facts and the blob ids of the slug it
    changed: ``(parent or None, facts or None, (md, code, on_use) or None)``.
    """

    def __init__(self, path: str, read: Reader) -> None:
        self._path = path
        self._read = read
        self._mutex = threading.Lock()
        # rows as stored; Entry objects are made on demand
        self._entries: list[Row] = []
        self._pos: dict[str, int] = {}
        self._by_slug: dict[str, list[int]] = {}
        self._offset = 0
        # derived data: after a disk error the index goes on in memory for this process
        self._persisted = True

    @staticmethod
    def file_for(directory: str, store: str) -> str:
        return os.path.join(directory, hashlib.sha1(store.encode()).hexdigest())

    def entries(self, head: str | None, slug: str | None = None) -> list[Entry]:
        """Gitmem's commits up to ``head``, oldest first (only ``slug``'s, if given)."""
        with self._mutex:
            end = self._catch_up(head)
            if slug is None:
                return [_entry(row) for row in self._entries[:end] if row[2] in OPS]
            positions = self._by_slug.get(slug, [])
            return [
                _entry(self._entries[p]) for p in positions[: bisect.bisect_left(positions, end)]
            ]

    def last_revision(self, head: str | None, slug: str) -> int:
        """The revision number ``slug`` last reached at ``head`` (0 if never written)."""
        with self._mutex:
            end = self._catch_up(head)
            positions = self._by_slug.get(slug, [])
            i = bisect.bisect_left(positions, end)
            return int(self._entries[positions[i - 1]][1]) if i else 0

    def since(self, base: str | None, head: str | None) -> list[Entry] | None:
        """Gitmem's commits after ``base`` up to ``head``; ``None`` if ``base`` is not on it."""
        with self._mutex:
            end = self._catch_up(head)
            if base is None:
                start = 0
            elif base in self._pos and self._pos[base] < end:
                start = self._pos[base] + 1
            else:
                return None
            return [_entry(row) for row in self._entries[start:end] if row[2] in OPS]

    # -- keeping the index in step with the branch --------------------------------

    def _catch_up(self, head: str | None) -> int:
        """Make the index cover ``head``; return the end of ``head``'s prefix."""
        if head is None:
            return 0
        if head not in self._pos and self._persisted:
            try:
                self._load()
                if head not in self._pos:
                    with flocked(self._path + ".lock"):
                        self._load()
                        if head not in self._pos:
                            self._extend(head, persist=True)
            except OSError:
                self._persisted = False
        if head not in self._pos:
            self._extend(head, persist=False)
        return self._pos[head] + 1

    def _load(self) -> None:
        """Read what other processes appended since we last looked."""
        try:
            with open(self._path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                if size < self._offset:
                    self._reset()
                f.seek(self._offset)
                data = f.read()
        except FileNotFoundError:
            self._reset()
            return
        complete = data.rfind(b"\n") + 1
        try:
            rows = [_parse(line) for line in data[:complete].decode().splitlines()]
        except (ValueError, UnicodeDecodeError):
            # a damaged index is rebuilt from the commits, from scratch
            self._reset()
            return
        for row in rows:
            self._add(row)
        self._offset += complete

    def _extend(self, head: str, *, persist: bool) -> None:
        walked: list[tuple[str, Facts | None, tuple[str, str, str] | None]] = []
        commit: str | None = head
        while commit is not None and commit not in self._pos:
            parent, facts, blobs = self._read(commit)
            walked.append((commit, facts, blobs))
            commit = parent
        keep = 0 if commit is None else self._pos[commit] + 1
        new: list[Row] = []
        for sha, facts, blobs in reversed(walked):
            if facts is None:
                new.append((sha, "0", "-", "-", *_NONE))
                continue
            if blobs is None:
                # a delete carries the text it removed: the slug's previous blobs
                blobs = self._last_blobs(facts.slug, new, keep)
            new.append((sha, str(facts.revision), facts.op, facts.slug, *blobs))
        data = "".join(_format(e) for e in new).encode()
        rewound = keep < len(self._entries)
        if rewound:
            # the branch was rewound or rewritten under us
            del self._entries[keep:]
            self._reindex()
        if persist and not rewound:
            with open(self._path, "ab") as f:
                # a line a killed writer left half-written would corrupt the next one
                f.truncate(self._offset)
                f.write(data)
            self._offset += len(data)
        elif persist:
            tmp = f"{self._path}.{os.getpid()}.tmp"
            with open(tmp, "wb") as f:
                f.write("".join(_format(e) for e in self._entries).encode() + data)
            os.replace(tmp, self._path)
            self._offset = os.path.getsize(self._path)
        for row in new:
            self._add(row)

    def _last_blobs(self, slug: str, new: list[Row], keep: int) -> tuple[str, str, str]:
        for row in reversed(new):
            if row[3] == slug and row[2] in OPS:
                return row[4], row[5], row[6]
        positions = self._by_slug.get(slug, [])
        i = bisect.bisect_left(positions, keep)
        if i:
            row = self._entries[positions[i - 1]]
            return row[4], row[5], row[6]
        return _NONE

    def _reindex(self) -> None:
        kept = list(self._entries)
        self._reset()
        for e in kept:
            self._add(e)

    def _reset(self) -> None:
        self._entries.clear()
        self._pos.clear()
        self._by_slug.clear()
        self._offset = 0

    def _add(self, row: Row) -> None:
        self._pos[row[0]] = len(self._entries)
        if row[2] in OPS:
            self._by_slug.setdefault(row[3], []).append(len(self._entries))
        self._entries.append(row)


def _format(row: Row) -> str:
    return " ".join(row) + "\n"


def _parse(line: str) -> Row:
    row = line.split(" ")
    # cheap checks only: a commit id that is wrong anyway never matches the branch,
    # and the walk that follows rewrites the index from the commits
    if len(row) != 7 or len(row[0]) != 40 or not row[1].isdigit():
        raise ValueError(f"not an index line: {line!r}")
    return row[0], row[1], row[2], row[3], row[4], row[5], row[6]


def _entry(row: Row) -> Entry:
    commit, revision, op, slug, md, code, on_use = row
    return Entry(commit, int(revision), op if op in OPS else None, slug, (md, code, on_use))
