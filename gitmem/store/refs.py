"""Refs: reading a ref, listing refs under a prefix, and the one compare-and-swap that
moves a ref, as git does it.

A move is done under the ref's ``.lock`` file (git's own): the lock is created
exclusively, the ref re-read under it and compared with what the caller expects, the
new commit written to it, and the lock renamed over the ref. A durable move makes each
step durable before the next; a commit's new objects ride along, so that the pack, its
index and the lock file reach the disk in one flush of the filesystem's journal and
their names before any ref names what they hold. A remote-tracking ref, which only
records where a remote was, moves without fsync, as ``git fetch`` moves it.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Sequence
from contextlib import suppress

from dulwich.file import FileLocked
from dulwich.refs import Ref
from dulwich.repo import Repo

from gitmem.errors import InvalidArgument
from gitmem.store import packing
from gitmem.store.locking import fsync_dir, fsync_together, remove_stale
from gitmem.store.objects import Record

__all__ = ["BranchBeside", "Refs"]

_HEX_RE = re.compile(rb"[0-9a-f]{40}")
# a server reads the same few refs (a store's branch, a notice watermark) at every call
_PATHS_MAX = 1024


class BranchBeside(InvalidArgument):
    """A new ref that git cannot keep beside one that is there: a store named ``team``
    beside a store ``team/x``, or the other way round."""

    kind = "invalid-argument"

    def __init__(self, ref: str, other: str) -> None:
        super().__init__(
            f"{ref} cannot be made beside {other}: git keeps no branch whose name is a "
            "folder of another branch's; give the store another name"
        )


def _shown(ref: str) -> str:
    """A ref as a person names it: a branch without ``refs/heads/``."""
    return ref.removeprefix("refs/heads/")


class Refs:
    """The refs of the repository at ``directory`` (its git directory)."""

    def __init__(self, directory: str, repo: Repo, read_lock: threading.RLock) -> None:
        self.directory = directory
        self._repo = repo
        self._read_lock = read_lock
        self._objects = os.path.join(directory, "objects")
        self._paths: dict[Ref, str] = {}

    def read(self, ref: Ref) -> str | None:
        """The commit ``ref`` names, or ``None``."""
        # the common case, a loose ref, read directly: a ref moves by an atomic rename,
        # so a read sees the old commit or the new one (symbolic and packed refs, or
        # anything odd, go through dulwich)
        path = self._paths.get(ref)
        if path is None:
            path = os.path.join(self.directory, os.fsdecode(ref))
            if len(self._paths) < _PATHS_MAX:
                self._paths[ref] = path
        try:
            fd = os.open(path, os.O_RDONLY)
            try:
                data = os.read(fd, 42)
            finally:
                os.close(fd)
            if len(data) == 41 and data[40:] == b"\n" and _HEX_RE.fullmatch(data[:40]):
                return data[:40].decode()
        except OSError:
            pass
        with self._read_lock:
            try:
                return self._repo.refs[ref].decode()
            except KeyError:
                return None

    def names(self, base: str) -> list[str]:
        """The names (after ``base``) of every ref under ``base``, sorted."""
        with self._read_lock:
            keys = self._repo.refs.keys(base=Ref(base.encode()))
        return sorted(k.decode() for k in keys)

    def beside(self, ref: Ref) -> str | None:
        """A ref git cannot keep beside ``ref``: one whose name is a folder of ``ref``'s
        (``a/b`` beside ``a/b/c``), or one in the folder ``ref``'s name would be
        (``a/b/c`` beside ``a/b``), loose or packed; ``None`` if ``ref`` may be made."""
        name = ref.decode()
        parts = name.split("/")
        for depth in range(3, len(parts)):  # below refs/<kind>/
            above = "/".join(parts[:depth])
            if self.read(Ref(above.encode())) is not None:
                return above
        under = self.names(name + "/")
        return f"{name}/{under[0]}" if under else None

    def refuse_beside(self, ref: Ref) -> None:
        """Raise :class:`BranchBeside` if :meth:`beside` finds a ref beside ``ref``."""
        other = self.beside(ref)
        if other is not None:
            raise BranchBeside(_shown(ref.decode("utf-8", "replace")), _shown(other))

    def swap(
        self,
        ref: Ref,
        old: str | None,
        new: str,
        records: Sequence[Record] = (),
        *,
        durable: bool = True,
        shared: bool = False,
        flush_with: Sequence[str] = (),
    ) -> bool:
        """Move ``ref`` from ``old`` (``None``: absent) to ``new`` by compare-and-swap,
        writing the new objects ``records`` as one pack on the way; ``False`` if the ref
        no longer names ``old`` (nothing written). Must hold the write lock, unless
        ``shared``: the repository is another's (a remote on this disk), whose other
        writers may hold the ref's lock, so a lock file found there raises
        ``FileLocked`` instead of being taken for one a killed writer left.

        Durable, in three flushes: the lock file (``new`` written to it) and the staged
        pack and index, or the folders ``flush_with`` names (where objects just landed),
        together; the pack folder once a staged pack is renamed into place; the ref's
        folder (and any folder the move created) once the lock is renamed over it.
        """
        if old is None:
            self.refuse_beside(ref)
        path = os.path.join(self.directory, os.fsdecode(ref))
        folder = os.path.dirname(path)
        created = not os.path.isdir(folder)
        if created:
            if self.read(ref) != old:
                return False  # moved already: no folder made for nothing
            os.makedirs(folder, exist_ok=True)
        lock = path + ".lock"
        fd = -1
        for _ in range(2):
            try:
                fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                break
            except FileExistsError:
                if shared:
                    raise FileLocked(path, lock) from None
                # we hold the write lock: a lock file left by a killed writer
                remove_stale(lock)
        if fd < 0:
            return False
        staged: packing.Staged | None = None
        try:
            if self.read(ref) != old:
                os.close(fd)
                fd = -1
                os.unlink(lock)
                return False
            os.write(fd, new.encode() + b"\n")
            if records:
                pack_dir = packing.pack_folder(self._objects)
                staged = packing.stage(pack_dir, list(records), len(records))
                fsync_together(*staged.fds, fd)
                os.close(fd)
                fd = -1
                staged.install()
                fsync_dir(pack_dir)
            elif flush_with:
                _flush_with(fd, flush_with)
            elif durable:
                os.fsync(fd)
            if fd >= 0:
                os.close(fd)
                fd = -1
            os.rename(lock, path)
        except BaseException:
            if fd >= 0:
                os.close(fd)
            if staged is not None:
                staged.discard()
            with suppress(FileNotFoundError):
                os.unlink(lock)
            raise
        if durable:
            with suppress(OSError):
                # the ref has moved and readers see the write: it is published, and
                # refusing it now would invite a retry that publishes it twice
                self._sync_folders(ref, deep=created or old is None)
        return True

    def swap_all(
        self, moves: Sequence[tuple[Ref, str | None, str | None]], records: Sequence[Record] = ()
    ) -> bool:
        """Move every ref of ``moves`` (``(ref, old, new)``) by one compare-and-swap:
        each ref's lock file taken (in the order of their names, so that two callers
        cannot hold one each), every ref re-read under its lock, and only if each still
        names its ``old`` are they all moved; ``False`` (nothing written) otherwise. A
        move whose ``new`` is its ``old`` only holds the ref still (absent, for ``None``)
        while the others move.
        The new objects ``records`` ride in one pack, made durable with the lock files
        before any ref names what they hold. Must hold the write lock."""
        moves = sorted(moves, key=lambda move: move[0])
        for ref, old, new in moves:
            if old is None and new is not None:
                self.refuse_beside(ref)
        paths = [os.path.join(self.directory, os.fsdecode(ref)) for ref, _, _ in moves]
        held: list[tuple[str, int]] = []
        staged: packing.Staged | None = None
        try:
            for (ref, old, _), path in zip(moves, paths, strict=True):
                if not os.path.isdir(os.path.dirname(path)):
                    if self.read(ref) != old:
                        return False
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                lock = path + ".lock"
                try:
                    fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                except FileExistsError:
                    remove_stale(lock)  # we hold the write lock: a killed writer's
                    fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                held.append((lock, fd))
            if any(self.read(ref) != old for ref, old, _ in moves):
                return False
            fds = [fd for _, fd in held]
            for (_, old, new), fd in zip(moves, fds, strict=True):
                if new != old:
                    if new is None:
                        raise ValueError("swap_all moves refs; it removes none")
                    os.write(fd, new.encode() + b"\n")
            if records:
                pack_dir = packing.pack_folder(self._objects)
                staged = packing.stage(pack_dir, list(records), len(records))
                fsync_together(*staged.fds, *fds)
                staged.install()
                staged = None
                fsync_dir(pack_dir)
            else:
                fsync_together(*fds)
            for (lock, fd), (_, old, new), path in zip(held, moves, paths, strict=True):
                os.close(fd)
                if new == old:
                    os.unlink(lock)
                else:
                    os.rename(lock, path)
            held.clear()
        finally:
            if staged is not None:
                staged.discard()
            for lock, fd in held:
                with suppress(OSError):
                    os.close(fd)
                with suppress(FileNotFoundError):
                    os.unlink(lock)
        with suppress(OSError):
            # the refs have moved and readers see them: refusing now would invite a
            # retry that makes the move twice
            for ref, old, new in moves:
                if new != old:
                    self._sync_folders(ref, deep=old is None)
        return True

    def track(self, ref: Ref, commit: str) -> None:
        """Point the remote-tracking ``ref`` at ``commit`` (must hold the write lock),
        without fsync: it only records where the remote was, so a crash that loses it
        costs the next fetch, and what it names is in a durable pack already."""
        current = self.read(ref)
        if current != commit:
            # another program setting it at once: where the remote was, either way
            self.swap(ref, current, commit, durable=False)

    def _sync_folders(self, ref: Ref, *, deep: bool) -> None:
        """Make the ref's rename durable: its folder, and with ``deep`` each folder above
        it up to ``refs/`` (a new ref may have created them)."""
        parts = ref.decode().split("/")
        lowest = 1 if deep else len(parts) - 1
        for depth in range(len(parts) - 1, lowest - 1, -1):
            fsync_dir(os.path.join(self.directory, *parts[:depth]))


def _flush_with(fd: int, folders: Sequence[str]) -> None:
    """The lock file ``fd`` and ``folders`` to the disk in one flush."""
    opened = [os.open(folder, os.O_RDONLY | os.O_DIRECTORY) for folder in folders]
    try:
        fsync_together(fd, *opened)
    finally:
        for folder_fd in opened:
            os.close(folder_fd)
