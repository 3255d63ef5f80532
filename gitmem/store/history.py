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
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass

from gitmem.store.locking import flocked
from gitmem.store.message import Facts
from gitmem.types import OPS, Op

_COMMIT_RE = re.compile(r"[0-9a-f]{40}")


@dataclass(frozen=True)
class Entry:
    """One commit on a store's branch; ``op`` is ``None`` for a foreign commit."""

    commit: str
    revision: int
    op: Op | None
    slug: str


class History:
    """The index of one store's branch.

    ``read`` gives a commit's first parent and facts: ``(parent or None, facts or None)``.
    """

    def __init__(self, path: str, read: Callable[[str], tuple[str | None, Facts | None]]) -> None:
        self._path = path
        self._read = read
        self._mutex = threading.Lock()
        self._entries: list[Entry] = []
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
                return [e for e in self._entries[:end] if e.op is not None]
            positions = self._by_slug.get(slug, [])
            return [self._entries[p] for p in positions[: bisect.bisect_left(positions, end)]]

    def last_revision(self, head: str | None, slug: str) -> int:
        """The revision number ``slug`` last reached at ``head`` (0 if never written)."""
        with self._mutex:
            end = self._catch_up(head)
            positions = self._by_slug.get(slug, [])
            i = bisect.bisect_left(positions, end)
            return self._entries[positions[i - 1]].revision if i else 0

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
            return [e for e in self._entries[start:end] if e.op is not None]

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
            entries = [_parse(line) for line in data[:complete].decode().splitlines()]
        except (ValueError, UnicodeDecodeError):
            # a damaged index is rebuilt from the commits, from scratch
            self._reset()
            return
        for entry in entries:
            self._add(entry)
        self._offset += complete

    def _extend(self, head: str, *, persist: bool) -> None:
        new: list[Entry] = []
        commit: str | None = head
        while commit is not None and commit not in self._pos:
            parent, facts = self._read(commit)
            if facts is None:
                new.append(Entry(commit, 0, None, "-"))
            else:
                new.append(Entry(commit, facts.revision, facts.op, facts.slug))
            commit = parent
        new.reverse()
        keep = 0 if commit is None else self._pos[commit] + 1
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
        for e in new:
            self._add(e)

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

    def _add(self, entry: Entry) -> None:
        self._pos[entry.commit] = len(self._entries)
        if entry.op is not None:
            self._by_slug.setdefault(entry.slug, []).append(len(self._entries))
        self._entries.append(entry)


def _format(e: Entry) -> str:
    return f"{e.commit} {e.revision} {e.op or '-'} {e.slug}\n"


def _parse(line: str) -> Entry:
    commit, revision, op, slug = line.split(" ", 3)
    if not _COMMIT_RE.fullmatch(commit) or not slug:
        raise ValueError(f"not an index line: {line!r}")
    return Entry(commit, int(revision), op if op in OPS else None, slug)
