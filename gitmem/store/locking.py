"""The repository's write lock, stale-lock recovery and directory fsync.

Every gitmem writer publishes under one exclusive ``fcntl.flock`` on
``<repo>/gitmem/write.lock``. The kernel drops a flock when its holder dies, so a writer
killed with ``kill -9`` never blocks the next one through it. dulwich's own ``.lock``
files are different: a killed writer leaves them behind and they would block that ref
or object forever. While we hold the flock no other gitmem writer is between creating
and renaming such a file, so any we meet is stale and is removed.
"""

from __future__ import annotations

import _thread
import errno
import fcntl
import os
import threading
from collections.abc import Generator
from contextlib import contextmanager, suppress

from gitmem.errors import DiskFull, StorageError

_FULL = {errno.ENOSPC, errno.EDQUOT}


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
    """fsync several files (or folders) at once: the filesystem's journal commits them in
    one flush, where one after the other costs a flush each."""
    failed: list[OSError] = []
    done: list[_thread.LockType] = []

    def other(fd: int, lock: _thread.LockType) -> None:
        try:
            os.fsync(fd)
        except OSError as exc:
            failed.append(exc)
        finally:
            lock.release()

    try:
        for fd in fds[1:]:
            lock = _thread.allocate_lock()
            lock.acquire()
            # a bare thread per call: threading.Thread.start waits until the thread
            # runs, a scheduling round on a loaded machine; a pool's workers would not
            # survive a fork
            try:
                _thread.start_new_thread(other, (fd, lock))
            except RuntimeError:  # no thread to be had: do it here
                other(fd, lock)
            done.append(lock)
        os.fsync(fds[0])
    finally:
        for lock in done:
            lock.acquire()
    if failed:
        raise failed[0]


def storage_error(exc: OSError, doing: str) -> StorageError:
    """Translate an OS error into gitmem's words."""
    if exc.errno in _FULL:
        return DiskFull(
            f"the disk is full while {doing}; nothing was published. Free some space and try again"
        )
    return StorageError(f"{doing} failed: {exc.strerror or exc}")
