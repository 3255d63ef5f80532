"""The commits a holder published to its store, recorded on this replica as it published
them: what its notices leave out as its own.

A commit's author is whatever the commit says, and anyone who can push to a shared
remote can write any name there; a commit id this replica recorded at the moment its
holder published it is something nobody else can make. So a change another holder made
under this holder's name is still told of, and only this holder's own writes are not.

One file per holder instance and store, ``<git dir>/gitmem/written/<SHA-1 of instance
NUL store>``: a commit id (40 hex digits) a line, appended by every process that holds
the instance (an MCP server beside its client's hooks). Kept on this replica only, never
synced: on another replica, this holder's writes are another's. Bounded: past
:data:`KEEP_MAX` lines the oldest half goes (a notice never reaches further back than
the watermark, which each turn moves up). Best effort: a record lost or never written
costs at most a notice of this holder's own write.
"""

from __future__ import annotations

import hashlib
import os
import re

from gitmem.lean.files import append_quietly, replace_quietly

__all__ = ["KEEP_MAX", "Written"]

KEEP_MAX = 4096
"""Commit ids kept per holder instance and store; past it the oldest half goes."""

_LINE = 41  # 40 hex digits and a newline
_ID = re.compile(rb"[0-9a-f]{40}")


class Written:
    """The record of the commits holder ``instance`` published to ``store``, in the
    repository whose git directory is ``directory``."""

    def __init__(self, directory: str, instance: str, store: str) -> None:
        key = hashlib.sha1(f"{instance}\0{store}".encode()).hexdigest()
        self._path = os.path.join(directory, "gitmem", "written", key)

    def add(self, commits: list[str]) -> None:
        """Record ``commits`` (ids this holder has just published)."""
        data = "".join(f"{c}\n" for c in dict.fromkeys(commits) if _ID.fullmatch(c.encode()))
        if not data:
            return
        try:
            os.makedirs(os.path.dirname(self._path), exist_ok=True)
            append_quietly(self._path, data.encode())
            size = os.stat(self._path).st_size
        except OSError:
            return
        if size > KEEP_MAX * _LINE:
            kept = self._read()[-(KEEP_MAX // 2) :]
            replace_quietly(self._path, b"".join(c + b"\n" for c in kept))

    def commits(self) -> set[str]:
        """Every commit id recorded (at most the last :data:`KEEP_MAX` and a few)."""
        return {c.decode() for c in self._read()}

    def _read(self) -> list[bytes]:
        """The ids recorded, oldest first; only the file's last ``2 × KEEP_MAX`` lines
        are read, whatever its size."""
        try:
            with open(self._path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                f.seek(max(size - 2 * KEEP_MAX * _LINE, 0))
                data = f.read(2 * KEEP_MAX * _LINE)
        except OSError:
            return []
        return [line for line in data.split(b"\n") if _ID.fullmatch(line)]
