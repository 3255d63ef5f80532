"""The repository's write lock, stale-lock recovery, directory fsync and whole-file replace.

Every gitmem writer publishes under one exclusive ``fcntl.flock`` on
``<repo>/gitmem/write.lock``. The kernel drops a flock when its holder dies, so a writer
killed with ``kill -9`` never blocks the next one through it. dulwich's own ``.lock``
files are different: a killed writer leaves them behind and they would block that ref
or object forever. While we hold the flock no other gitmem writer is between creating
and renaming such a file, so any we meet is stale and is removed.
"""

from __future__ import annotations

import errno
import fcntl
import os
import threading
from collections.abc import Generator
from contextlib import contextmanager, suppress

from gitmem.errors import DiskFull, StorageError

_FULL = {errno.ENOSPC, errno.EDQUOT}
_ADVISE = getattr(os, "posix_fadvise", None)
_DONTNEED: int = getattr(os, "POSIX_FADV_DONTNEED", 4)


@contextmanager
def flocked(path: str, *, blocking: bool = True) -> Generator[bool]:
    """Hold an exclusive flock on ``path`` (yields False if non-blocking and taken)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


class WriteLock:
    """The per-repository writer lock; re-entrant within one thread."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._local = threading.local()

    @contextmanager
    def held(self) -> Generator[None]:
        depth: int = getattr(self._local, "depth", 0)
        if depth:
            self._local.depth = depth + 1
            try:
                yield
            finally:
                self._local.depth = depth
            return
        with flocked(self._path):
            self._local.depth = 1
            try:
                yield
            finally:
                self._local.depth = 0


def remove_stale(lockfile: str) -> None:
    """Remove a ``.lock`` file a dead writer left; call only while holding the write lock."""
    with suppress(FileNotFoundError):
        os.unlink(lockfile)
    fsync_dir(os.path.dirname(lockfile))


def fsync_dir(path: str) -> None:
    """Make a rename or create inside ``path`` durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_together(*fds: int) -> None:
    """fsync several files (or folders) so that the filesystem's journal can commit
    them in one flush: the writeback of every file is started first, then each is
    fsynced, and the fsyncs after the first find their data on its way or written.
    (fsyncs from threads at once were measured and did not share a flush.)"""
    if _ADVISE is not None:
        for fd in fds:
            with suppress(OSError):  # advice only: a folder, or a filesystem that declines
                # on Linux, DONTNEED starts writing a file's dirty pages back at once
                # (pages under writeback stay cached)
                _ADVISE(fd, 0, 0, _DONTNEED)
    for fd in fds:
        os.fsync(fd)


def storage_error(exc: OSError, doing: str) -> StorageError:
    """Translate an OS error into gitmem's words."""
    if exc.errno in _FULL:
        return DiskFull(
            f"the disk is full while {doing}; nothing was published. Free some space and try again"
        )
    return StorageError(f"{doing} failed: {exc.strerror or exc}")
