"""Deno processes shared between sandboxes, lent for one call at a time, released when idle.

A process serves one call at a time and every call runs in a fresh worker, so the
process holds nothing of a call once it has answered: it can serve the next call of
any sandbox with the same settings. A :class:`Pool` lends a process for exactly one
call (:meth:`Pool.lend`); while lent, nobody else can reach it, so a watchdog kill only
ever ends the call that caused it. Returned processes wait, newest first, to be lent
again; one idle longer than ``idle_timeout`` is killed, and more than ``keep_idle`` idle
processes of one kind are never kept. A process that died, retired itself or still
holds a past run's memory is never lent out again.

After each reply a process boots its next worker, which blocks its one thread for some
10 ms, so one process serves a burst of calls no faster than a run and a boot each. On
a host with more than one core, the third call of a kind back to back has a second
process started for that kind on a thread of its own (the call itself never waits for
it), and during a burst the pool lends the idle process that has rested longest: while
one boots its next worker, the other serves. Calls spaced out go to the newest process
that has rested, so the other is left idle and soon released.

A process that comes back is tended at once, on a thread of the pool's own: its stale
transpiled files are deleted, and it is checked fit to serve again (its ended workers
gone, none left spinning, no past run's memory still held). A call that finds it
tended only asks whether it is still alive and has said nothing since; one that
finds it being tended waits for that; one that comes first tends it itself. The
caller of a call never waits for its own process's tending.

The reaper is a daemon thread that runs only while something is idle; it never touches
a lent process, so nothing is killed mid-call. :meth:`Pool.reap` does its work on demand,
against the pool's clock, so tests can drive it without waiting.
"""

from __future__ import annotations

import atexit
import json
import math
import os
import threading
import time
import weakref
from collections.abc import Callable, Generator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from gitmem.sandbox.process import Process

__all__ = ["BURST_GAP", "IDLE_TIMEOUT", "KEEP_IDLE", "REST", "SPREAD_AFTER", "Pool", "shared_pool"]

IDLE_TIMEOUT = 60.0
"""Seconds an unused process is kept before it is killed."""
KEEP_IDLE = 2
"""Idle processes of one kind kept at most; more are killed as they come back."""
REST = 0.05
"""Seconds a process back from a call may still spend booting its next worker."""
BURST_GAP = 0.05
"""A call lent within this many seconds of the last return of its kind is back to back."""
SPREAD_AFTER = 2
"""Calls back to back before the one that has a second process started in the background:
a pair (a program and its onUse script) is served by one process's booted spares."""


@dataclass
class _Idle:
    process: Process
    since: float
    """When it came back, for the reaper."""
    rested: float
    """When it last served a request (minus infinity if never): lent and given back
    unused, as after :meth:`~gitmem.sandbox.Sandbox.start`, it kept on resting."""
    tended: bool = False
    """Pruned and found fit since it came back."""


@dataclass
class _Lent:
    sent: int
    """Frames it had sent: more when it comes back means it served a request."""
    rested: float
    fresh: bool
    """Whether the call takes a fresh worker, after which the process boots another."""


@dataclass
class _Start:
    """A process being started in the background; ``cancel`` calls its start off."""

    thread: threading.Thread
    cancel: threading.Event


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class Pool:
    """Deno processes lent one call at a time; see the module docstring."""

    def __init__(
        self,
        *,
        idle_timeout: float = IDLE_TIMEOUT,
        keep_idle: int = KEEP_IDLE,
        clock: Callable[[], float] = time.monotonic,
        reaper: bool = True,
        spread: bool | None = None,
    ) -> None:
        self.idle_timeout = idle_timeout
        self.keep_idle = keep_idle
        self.spread = _cores() > 1 if spread is None else spread
        """Whether a burst of calls of one kind is spread over two processes (by default,
        on a host with more than one core: on one, the second would only take turns)."""
        self._clock = clock
        self._reaper = reaper
        self._cond = threading.Condition()
        self._idle: dict[str, list[_Idle]] = {}
        # Lent processes, each with what the pool knew of it as it was lent.
        self._lent: dict[Process, _Lent] = {}
        # Taken out of the pool and being killed, outside the lock.
        self._dying: set[Process] = set()
        self._thread: threading.Thread | None = None
        # The thread that tends processes as they come back, and the one it tends now.
        self._tender: threading.Thread | None = None
        self._tending: Process | None = None
        self._closed = False
        # Per kind: when a process last came back, how many calls in a row were lent
        # back to back, and the process being started in the background.
        self._returned: dict[str, float] = {}
        self._streak: dict[str, int] = {}
        self._starting: dict[str, _Start] = {}
        self._kinds: dict[int, tuple[dict[str, object], int, str]] = {}
        _pools.add(self)

    @contextmanager
    def lend(
        self, settings: Mapping[str, object], rss_cap_mb: int, *, fresh: bool = True
    ) -> Generator[Process]:
        """A process with ``settings`` for one call, taken back after it.

        ``fresh`` says the call takes a fresh worker, after which the process boots
        another: only such calls are spread over two processes. A guard's check reuses
        a worker kept for its module, so it goes to the newest process, which keeps it.
        A borrower that found the process unfit kills it; a dead process is never kept.
        """
        process = self._take(settings, rss_cap_mb, fresh)
        try:
            yield process
        finally:
            self._give_back(process)

    def _kind(self, settings: Mapping[str, object], rss_cap_mb: int) -> str:
        # A sandbox lends with the same settings every call: the key made for them last
        # time stands while they are equal, so it is not serialised again.
        known = self._kinds.get(id(settings))
        if known is not None and known[1] == rss_cap_mb and known[0] == settings:
            return known[2]
        key = _key(settings, rss_cap_mb)
        with self._cond:
            if len(self._kinds) >= 64:
                self._kinds.clear()
            self._kinds[id(settings)] = (dict(settings), rss_cap_mb, key)
        return key

    def _take(self, settings: Mapping[str, object], rss_cap_mb: int, fresh: bool) -> Process:
        key = self._kind(settings, rss_cap_mb)
        with self._cond:
            returned = self._returned.get(key)
            back_to_back = returned is not None and self._clock() - returned < BURST_GAP
            if fresh:
                self._streak[key] = self._streak.get(key, 0) + 1 if back_to_back else 0
        process = self._take_idle(key, fresh)
        if process is None:
            process = Process(settings=settings, rss_cap_mb=rss_cap_mb, kind=key)
            with self._cond:
                # Until it serves a request, a process counts as rested: a call right
                # after Sandbox.start finds the one it started.
                self._lent[process] = _Lent(process.sent, -math.inf, fresh)
        with self._cond:
            if fresh and self._streak.get(key, 0) >= SPREAD_AFTER and self._may_start_aside(key):
                self._start_aside(key, settings, rss_cap_mb)
        return process

    def _take_idle(self, key: str, fresh: bool) -> Process | None:
        while True:
            with self._cond:
                waiting = self._idle.get(key)
                if not waiting:
                    return None
                # Oldest first. The newest that has rested, else the one rested longest:
                # one that served a request a moment ago may still be booting its next
                # worker.
                now = self._clock()
                rested = [e for e in waiting if not fresh or now - e.rested >= REST]
                entry = rested[-1] if rested else min(waiting, key=lambda e: e.rested)
                process = entry.process
                if process is self._tending:
                    self._cond.wait()
                    continue
                waiting.remove(entry)
                self._lent[process] = _Lent(process.sent, entry.rested, fresh)
            # Checked outside the lock: reading /proc is slow next to a list pop.
            if process.quiet() if entry.tended else _tend(process):
                return process
            with self._cond:
                self._lent.pop(process, None)
            self._kill([process])

    def _may_start_aside(self, key: str) -> bool:
        # Called with the lock held: only when nothing of the kind waits idle, nothing is
        # being started for it, and a new one would not pass ``keep_idle`` of the kind.
        if not self.spread or self._closed or key in self._starting or self._idle.get(key):
            return False
        lent = sum(p.kind == key for p in self._lent)
        return lent < self.keep_idle

    def _start_aside(self, key: str, settings: Mapping[str, object], rss_cap_mb: int) -> None:
        # Called with the lock held.
        cancel = threading.Event()
        thread = threading.Thread(
            target=self._started_aside,
            args=(key, dict(settings), rss_cap_mb, cancel),
            daemon=True,
        )
        self._starting[key] = _Start(thread, cancel)
        thread.start()

    def _started_aside(
        self, key: str, settings: dict[str, object], rss_cap_mb: int, cancel: threading.Event
    ) -> None:
        try:
            process = Process(settings=settings, rss_cap_mb=rss_cap_mb, kind=key, cancel=cancel)
        except Exception:
            # No call waits for it: a lend that finds nothing idle starts one as always.
            with self._cond:
                self._starting.pop(key, None)
            return
        spent: list[Process] = []
        with self._cond:
            self._starting.pop(key, None)
            if self._closed:
                spent.append(process)
            else:
                self._rest(process, -math.inf, spent)
        self._kill(spent)

    def _give_back(self, process: Process) -> None:
        spent: list[Process] = []
        with self._cond:
            lent = self._lent.pop(process)
            rested = lent.rested
            if lent.fresh and process.sent > lent.sent:
                rested = self._clock()
                self._returned[process.kind] = rested
            if self._closed or not process.alive():
                spent.append(process)
            else:
                self._rest(process, rested, spent)
        self._kill(spent)

    def _rest(self, process: Process, rested: float, spent: list[Process]) -> None:
        # Called with the lock held; those past ``keep_idle`` go to ``spent``.
        waiting = self._idle.setdefault(process.kind, [])
        waiting.append(_Idle(process, self._clock(), rested))
        while len(waiting) > self.keep_idle:
            spent.append(waiting.pop(0).process)
        # The tending thread lives while anything is idle, so a call's return does not
        # start a thread.
        if self._tender is None:
            self._tender = threading.Thread(target=self._tend_forever, daemon=True)
            self._tender.start()
        self._cond.notify_all()
        self._wake()

    def tend(self) -> None:
        """Tend every idle process not yet tended, now, after the one being tended:
        what the next call finds (a process's private folder, say) is then as its
        tending left it."""
        while True:
            with self._cond:
                while self._tending is not None:
                    self._cond.wait()
                entry = self._untended()
                if entry is None:
                    return
            self._tend_one(entry)

    def _tend_forever(self) -> None:
        while True:
            with self._cond:
                while True:
                    if self._closed or not any(self._idle.values()):
                        self._tender = None
                        return
                    entry = self._untended()
                    if entry is not None:
                        break
                    self._cond.wait()
            self._tend_one(entry)

    def _untended(self) -> _Idle | None:
        # Called with the lock held: the newest idle process not yet tended, now marked
        # as being tended (nothing else tends it or lends it meanwhile).
        if self._tending is not None:
            return None
        for entry in reversed([e for each in self._idle.values() for e in each]):
            if not entry.tended:
                self._tending = entry.process
                return entry
        return None

    def _tend_one(self, entry: _Idle) -> None:
        fit = False
        try:
            fit = _tend(entry.process)
        except Exception:
            pass  # a process whose tending fails is not fit: it is replaced
        finally:
            spent: list[Process] = []
            with self._cond:
                entry.tended = True
                waiting = self._idle.get(entry.process.kind, [])
                if not fit and entry in waiting:
                    waiting.remove(entry)
                    spent.append(entry.process)
            # The tending ends once an unfit process is gone: ``tend`` returns to a pool
            # that no longer holds it.
            try:
                self._kill(spent)
            finally:
                with self._cond:
                    self._tending = None
                    self._cond.notify_all()

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
            self._cond.notify_all()
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
            self._cond.notify_all()
        self._kill([process])
        return True

    def processes(self) -> list[Process]:
        """Every process the pool holds, idle or lent."""
        with self._cond:
            idle = [e.process for entries in self._idle.values() for e in entries]
            return idle + list(self._lent) + list(self._dying)

    def close(self) -> None:
        """Kill every idle process and any being started; lent ones are killed as they
        come back."""
        with self._cond:
            self._closed = True
            spent = [e.process for entries in self._idle.values() for e in entries]
            self._idle.clear()
            starting = list(self._starting.values())
            self._cond.notify_all()
        for start in starting:
            start.cancel.set()
        self._kill(spent)
        # A start called off kills its process and removes its folder before it ends.
        for start in starting:
            start.thread.join()

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


def _tend(process: Process) -> bool:
    """Prune ``process``; whether it is fit to serve again.

    A process that said something while idle is retiring. One whose ended workers are
    not gone, or with a worker left spinning, would take the next call's CPU and
    memory. One that still holds a past run's memory would fail an innocent call: half
    the cap, so the next run has room to reach its own limits.
    """
    process.prune(process.keep)
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
