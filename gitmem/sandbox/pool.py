"""Deno processes shared between sandboxes, lent for one call at a time, released when idle.

A process serves one call at a time and every call runs in a fresh worker, so the
process holds nothing of a call once it has answered: it can serve the next call of
any sandbox with the same settings. A :class:`Pool` lends a process for exactly one
call (:meth:`Pool.lend`); while lent, nobody else can reach it, so a watchdog kill only
ever ends the call that caused it. Returned processes wait, newest first, to be lent
again; one idle longer than ``idle_timeout`` is killed, and more than ``keep_idle`` idle
processes of one kind are never kept. A process that died, retired itself or still
holds a past run's memory is never lent out again.

The reaper is a daemon thread that runs only while something is idle; it never touches
a lent process, so nothing is killed mid-call. :meth:`Pool.reap` does its work on demand,
against the pool's clock, so tests can drive it without waiting.
"""

from __future__ import annotations

import atexit
import json
import threading
import time
import weakref
from collections.abc import Callable, Generator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from gitmem.sandbox.process import Process

__all__ = ["IDLE_TIMEOUT", "KEEP_IDLE", "Pool", "shared_pool"]

IDLE_TIMEOUT = 60.0
"""Seconds an unused process is kept before it is killed."""
KEEP_IDLE = 2
"""Idle processes of one kind kept at most; more are killed as they come back."""


@dataclass
class _Idle:
    process: Process
    since: float


class Pool:
    """Deno processes lent one call at a time; see the module docstring."""

    def __init__(
        self,
        *,
        idle_timeout: float = IDLE_TIMEOUT,
        keep_idle: int = KEEP_IDLE,
        clock: Callable[[], float] = time.monotonic,
        reaper: bool = True,
    ) -> None:
        self.idle_timeout = idle_timeout
        self.keep_idle = keep_idle
        self._clock = clock
        self._reaper = reaper
        self._cond = threading.Condition()
        self._idle: dict[str, list[_Idle]] = {}
        self._lent: set[Process] = set()
        # Taken out of the pool and being killed, outside the lock.
        self._dying: set[Process] = set()
        self._thread: threading.Thread | None = None
        self._closed = False
        _pools.add(self)

    @contextmanager
    def lend(self, settings: Mapping[str, object], rss_cap_mb: int) -> Generator[Process]:
        """A process with ``settings`` for one call, taken back after it.

        A borrower that found the process unfit kills it; a dead process is never kept.
        """
        process = self._take(settings, rss_cap_mb)
        try:
            yield process
        finally:
            self._give_back(process)

    def _take(self, settings: Mapping[str, object], rss_cap_mb: int) -> Process:
        key = _key(settings, rss_cap_mb)
        while True:
            with self._cond:
                waiting = self._idle.get(key)
                if not waiting:
                    break
                process = waiting.pop().process
                self._lent.add(process)
            # Checked outside the lock: reading /proc is slow next to a list pop.
            if _healthy(process):
                return process
            with self._cond:
                self._lent.discard(process)
            self._kill([process])
        process = Process(settings=settings, rss_cap_mb=rss_cap_mb, kind=key)
        with self._cond:
            self._lent.add(process)
        return process

    def _give_back(self, process: Process) -> None:
        spent: list[Process] = []
        with self._cond:
            self._lent.discard(process)
            if self._closed or not process.alive():
                spent.append(process)
            else:
                waiting = self._idle.setdefault(process.kind, [])
                waiting.append(_Idle(process, self._clock()))
                while len(waiting) > self.keep_idle:
                    spent.append(waiting.pop(0).process)
                self._wake()
        self._kill(spent)

    def _wake(self) -> None:
        # Called with the lock held.
        if not self._reaper:
            return
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._reap_forever, daemon=True)
            self._thread.start()
        self._cond.notify_all()

    def _reap_forever(self) -> None:
        while True:
            with self._cond:
                if self._closed or not any(self._idle.values()):
                    self._thread = None
                    return
                oldest = min(e.since for entries in self._idle.values() for e in entries)
                wait = oldest + self.idle_timeout - self._clock()
                if wait > 0:
                    self._cond.wait(timeout=wait)
                    continue
            self.reap()

    def reap(self) -> int:
        """Kill every process idle longer than ``idle_timeout``; how many went."""
        now = self._clock()
        spent: list[Process] = []
        with self._cond:
            for entries in self._idle.values():
                fresh = [e for e in entries if now - e.since < self.idle_timeout]
                spent.extend(e.process for e in entries if now - e.since >= self.idle_timeout)
                entries[:] = fresh
        self._kill(spent)
        return len(spent)

    def forget(self, process: Process) -> bool:
        """Kill ``process`` if it is idle here; whether it was."""
        with self._cond:
            entries = self._idle.get(process.kind, [])
            found = [e for e in entries if e.process is process]
            if not found:
                return False
            entries.remove(found[0])
        self._kill([process])
        return True

    def processes(self) -> list[Process]:
        """Every process the pool holds, idle or lent."""
        with self._cond:
            idle = [e.process for entries in self._idle.values() for e in entries]
            return idle + list(self._lent) + list(self._dying)

    def close(self) -> None:
        """Kill every idle process; lent ones are killed as they come back."""
        with self._cond:
            self._closed = True
            spent = [e.process for entries in self._idle.values() for e in entries]
            self._idle.clear()
            self._cond.notify_all()
        self._kill(spent)

    def _kill(self, spent: list[Process]) -> None:
        with self._cond:
            self._dying.update(spent)
        for process in spent:
            try:
                process.kill()
            finally:
                with self._cond:
                    self._dying.discard(process)


def _key(settings: Mapping[str, object], rss_cap_mb: int) -> str:
    return json.dumps([dict(settings), rss_cap_mb], sort_keys=True)


def _healthy(process: Process) -> bool:
    # A process that said something while idle is retiring. One whose ended workers
    # are not gone, or with a worker left spinning, would take the next call's CPU
    # and memory. One that still holds a past run's memory would fail an innocent
    # call: half the cap, so the next run has room to reach its own limits.
    return process.quiet() and process.at_rest() and 2 * process.rss_kb() <= process.rss_cap_kb


_shared: Pool | None = None
_shared_lock = threading.Lock()
_pools: weakref.WeakSet[Pool] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    # Idle processes would outlive the host by a moment and leave their private folders
    # behind; a process lent at exit is its borrower's to end.
    for pool in list(_pools):
        pool.close()


def shared_pool() -> Pool:
    """The pool every :class:`~gitmem.sandbox.Sandbox` uses unless given its own."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = Pool()
        return _shared
