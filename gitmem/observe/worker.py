"""The background worker: finished runs from the spool through the model steps.

One worker runs per repository: it holds an exclusive lock on ``observe/worker.lock``
and writes its pid to ``observe/worker.pid`` (a capture hook starts one when no worker
holds that lock; a second one started in a race finds the lock taken and leaves). It reads
each session's spool from where it last stopped (``<session>.state``), assembles the
events into runs per agent (a run ends at the agent's final message or at the
session's end), and offers each finished run to a bounded queue: when the queue is
full the run is dropped with a log line, never waited for. A thread takes runs off the
queue through :func:`gitmem.observe.pipeline.observe_run`. A run is done with in its
spool only once processed (or dropped): a worker killed midway leaves it to the next
one, which takes it again. With no new run for a few seconds the worker leaves; a
session's spool is removed once its end is processed, or once untouched for a day (a
run in it that never finished is then dropped). A spool unchanged since the worker's
last look is not read again.

Everything it reads and writes in its folder is a regular file of its own: a symbolic
link or a FIFO someone placed there is passed over, never followed nor waited on.

``python -m gitmem.observe.worker GIT_DIR`` runs it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import queue
import sys
import threading
import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from typing import Any, cast

from gitmem.errors import GitmemError
from gitmem.observe.blocks import index_of
from gitmem.observe.capture import SPOOL_MAX, log_line, observe_dir, open_own
from gitmem.observe.config import ObserverConfig, read_config
from gitmem.observe.logbook import ObservationLog
from gitmem.observe.model import Model
from gitmem.observe.pipeline import Run, ToolCall, observe_run
from gitmem.repository import Repository
from gitmem.store import Storage

__all__ = ["IDLE_SECONDS", "Worker", "main", "settle", "take_runs"]

IDLE_SECONDS = 3.0
"""How long the worker waits for a new run before it leaves."""
ABANDONED_SECONDS = 24 * 3600
"""A spool untouched this long is closed: a run in it not finished is dropped (its
client stopped midway), and it is removed once its finished runs are done with."""
_STATE_MAX = 1 << 16
_TIME_MAX = 253402300800.0  # 10000-01-01T00:00:00Z


@dataclass
class _Progress:
    """How far a session's spool has been taken: every run before ``offset``, and
    the runs ending at ``done`` (byte positions past it)."""

    offset: int = 0
    done: list[int] = field(default_factory=lambda: list[int]())


def _load(path: str) -> _Progress:
    try:
        fd = open_own(path, os.O_RDONLY)
        with os.fdopen(fd, "rb") as handle:
            data = json.loads(handle.read(_STATE_MAX))
        kept = cast(dict[str, Any], data)
        done = [int(d) for d in cast(list[Any], kept.get("done") or [])]
        return _Progress(max(int(kept.get("offset") or 0), 0), done)
    except (OSError, ValueError, TypeError, AttributeError):
        return _Progress()


def _save(path: str, progress: _Progress) -> None:
    tmp = path + ".tmp"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)  # made anew: never written through what someone left there
    fd = open_own(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump({"offset": progress.offset, "done": progress.done}, handle)
    os.replace(tmp, path)


def _records(path: str, offset: int) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """The spool's records from ``offset``: (start, end, record); a line not yet ended
    (a write in flight) is left for the next time. A spool that is not a regular file
    of its own (a link, a FIFO) has none."""
    try:
        fd = open_own(path, os.O_RDONLY)
    except OSError:
        return
    with os.fdopen(fd, "rb") as handle:
        handle.seek(offset)
        data = handle.read(SPOOL_MAX * 2)
    at = 0
    while True:
        end = data.find(b"\n", at)
        if end < 0:
            return
        try:
            record = json.loads(data[at:end])
        except ValueError:
            record = None
        if isinstance(record, dict):
            yield offset + at, offset + end + 1, cast(dict[str, Any], record)
        at = end + 1


def _moment(value: object) -> float:
    """A record's time: seconds since the epoch up to the year 9999 (0 for anything
    else a line may hold)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    return float(value) if 0 <= value < _TIME_MAX else 0.0


def take_runs(
    folder: str,
    held: dict[str, set[int]] | None = None,
    seen: dict[str, tuple[int, int]] | None = None,
) -> list[Run]:
    """Every finished run waiting in the spools under ``folder``, oldest first; each is
    taken once. A spool whose session ended, or untouched for a day, is removed once
    wholly taken.

    With ``held`` (a worker's own, spool path → the runs it holds), a run taken is not
    settled until :func:`settle` says so: until then it is in ``held`` and not taken
    again, and a worker that dies first leaves it to the next one to take. With ``seen``
    (a worker's own, spool path → its size and time when last taken), a spool unchanged
    since is not read again; forget a spool there when a run of it is settled."""
    spool = os.path.join(folder, "spool")
    try:
        names = sorted(n for n in os.listdir(spool) if n.endswith(".jsonl"))
    except OSError:
        return []
    runs: list[Run] = []
    for name in names:
        path = os.path.join(spool, name)
        mine = None if held is None else held.setdefault(path, set())
        try:
            if seen is not None:
                status = os.lstat(path)
                stamp = (status.st_size, status.st_mtime_ns)
                if seen.get(path) == stamp and not _untouched(status):
                    continue
                seen[path] = stamp
            for key, run in _take(path, mine):
                if mine is not None:
                    mine.add(key)
                    run.mark = (path, key)
                runs.append(run)
        except OSError as exc:  # one spool that cannot be taken holds up no other
            log_line(folder, f"spool {name} was passed over: {exc}")
    runs.sort(key=lambda r: r.ended)
    return runs


def settle(held: dict[str, set[int]], run: Run) -> None:
    """Record in its spool that ``run``, taken with ``held``, is done with."""
    if run.mark is None:
        return
    path, key = run.mark
    held.get(path, set()).discard(key)
    state = path[: -len(".jsonl")] + ".state"
    progress = _load(state)
    if key > progress.offset and key not in progress.done:
        _save(state, _Progress(progress.offset, sorted([*progress.done, key])))


def _untouched(status: os.stat_result) -> bool:
    """Whether a spool is untouched for a day (its session never said it ended, nor its
    last run: a crash, a killed client)."""
    return time.time() - status.st_mtime > ABANDONED_SECONDS


def _take(path: str, held: set[int] | None) -> list[tuple[int, Run]]:
    """The finished runs of one spool not yet done with, each with its key (where it
    ends), less those in ``held``; with ``held`` ``None`` they are settled at once."""
    state = path[: -len(".jsonl")] + ".state"
    progress = _load(state)
    open_runs: dict[str, tuple[int, Run]] = {}
    finished: list[tuple[int, int, Run]] = []  # (where it begins, its key, the run)
    consumed = progress.offset
    ended = False
    for start, stop, record in _records(path, progress.offset):
        consumed = stop
        event, agent = record.get("e"), str(record.get("a") or "main")
        session, when = str(record.get("s") or ""), _moment(record.get("t"))
        if event == "end":
            ended = True
            for begin, run in open_runs.values():
                run.ended = when
                finished.append((begin, stop, run))
            open_runs.clear()
            continue
        begin, run = open_runs.get(agent) or (start, Run(session, agent))
        if event == "prompt":
            if run.prompt or run.tools:
                run.ended = when
                finished.append((begin, start, run))
                begin, run = start, Run(session, agent)
            run.prompt = str(record.get("text") or "")
        elif event == "tool":
            run.tools.append(
                ToolCall(
                    str(record.get("tool") or ""),
                    str(record.get("input") or ""),
                    str(record.get("output") or ""),
                    str(record.get("id") or ""),
                )
            )
        elif event == "stop":
            run.final = str(record.get("text") or "")
            run.ended = when
            finished.append((begin, stop, run))
            open_runs.pop(agent, None)
            continue
        open_runs[agent] = (begin, run)
    untouched = _untouched(os.lstat(path))
    if untouched and open_runs:
        runs = ", ".join(sorted(f"{run.session} ({run.agent})" for _, run in open_runs.values()))
        log_line(
            os.path.dirname(os.path.dirname(path)),
            f"dropped the unfinished runs of session {runs}: untouched for a day",
        )
        open_runs.clear()
    unsettled = [(begin, key, run) for begin, key, run in finished if key not in progress.done]
    taken = [(key, run) for _, key, run in unsettled if held is None or key not in held]
    waiting = [] if held is None else unsettled
    settled = {*progress.done, *(key for _, key, _ in unsettled if held is None)}
    begins = [begin for begin, _ in open_runs.values()] + [begin for begin, _, _ in waiting]
    offset = min(begins, default=consumed)
    done = sorted(key for key in settled if key > offset)
    if (ended or untouched) and not begins:
        for leftover in (path, state):
            with contextlib.suppress(OSError):
                os.unlink(leftover)
    elif done != progress.done or offset != progress.offset:
        _save(state, _Progress(offset, done))
    return taken


class Worker:
    """Takes finished runs of one repository through the pipeline. ``model``: the
    model of every step (default: the one the repository's configuration names)."""

    def __init__(
        self,
        repo: Storage,
        *,
        model: Model | None = None,
        config: ObserverConfig | None = None,
        user_repo: str | None = None,
    ) -> None:
        self.repo = repo
        self.folder = observe_dir(repo.directory)
        self.config = config or read_config(repo)
        self.model = model
        self.user_repo = user_repo
        self.queue: queue.Queue[Run] = queue.Queue(self.config.queue)
        self.log = ObservationLog(repo)
        self.held: dict[str, set[int]] = {}
        """The runs taken and not yet done with, by spool (see :func:`take_runs`)."""
        self.seen: dict[str, tuple[int, int]] = {}
        """Each spool's size and time when last taken (see :func:`take_runs`)."""
        self._spools = threading.Lock()

    def say(self, message: str) -> None:
        """One line in the observer's log."""
        log_line(self.folder, message)

    def offer(self, run: Run) -> bool:
        """Queue ``run``; a full queue drops it with a log line."""
        try:
            self.queue.put_nowait(run)
        except queue.Full:
            self.say(f"queue full: dropped the run of session {run.session} ({run.agent})")
            self.done_with(run)
            return False
        return True

    def fill(self) -> int:
        """Offer every finished run in the spools; returns how many there were. Each is
        done with in its spool only once processed (or dropped): a worker that dies
        before leaves it to the next one."""
        with self._spools:
            runs = take_runs(self.folder, self.held, self.seen)
        for run in runs:
            self.offer(run)
        return len(runs)

    def done_with(self, run: Run) -> None:
        """Record in its spool that ``run`` was processed (or dropped)."""
        with self._spools:
            if run.mark is not None:
                self.seen.pop(run.mark[0], None)  # read it again: it may now be done with
            try:
                settle(self.held, run)
            except OSError as exc:
                self.say(f"the spool of session {run.session} could not be updated: {exc}")

    def process(self, run: Run) -> None:
        """Run the steps over one run (nothing when observing is off or no model is
        configured, which the log says)."""
        if not self.config.enabled:
            return
        model = self.model or self.config.model()
        if model is None:
            self.say(f"no model configured: the run of session {run.session} is not observed")
            return
        observe_run(self.log, model, run, self.config, say=self.say, user_repo=self.user_repo)
        index_of(self.log.repo, self.log.store)  # up to date here, so no search waits for it

    def drain(self) -> int:
        """Process every finished run waiting in the spools, here, as the repository's
        one worker: a worker running already is waited for, so no run is taken twice.
        Returns how many runs it processed."""
        count = 0
        with _only_one(self.folder, wait=True):
            while self.fill():
                while True:
                    try:
                        run = self.queue.get_nowait()
                    except queue.Empty:
                        break
                    self._guarded(run)
                    count += 1
        return count

    def serve(self, idle: float = IDLE_SECONDS) -> int:
        """Fill from the spools and process on a thread until idle for ``idle`` s;
        returns how many runs it took."""
        stop = threading.Event()
        taken = 0

        def consume() -> None:
            while not (stop.is_set() and self.queue.empty()):
                try:
                    run = self.queue.get(timeout=0.1)
                except queue.Empty:
                    continue
                self._guarded(run)
                self.queue.task_done()

        thread = threading.Thread(target=consume, name="gitmem-observer", daemon=True)
        thread.start()
        quiet_since = time.monotonic()
        while time.monotonic() - quiet_since < idle:
            found = self.fill()
            if found:
                taken += found
                quiet_since = time.monotonic()
            time.sleep(0.1)
        self.queue.join()
        stop.set()
        thread.join()
        return taken

    def _guarded(self, run: Run) -> None:
        try:
            self.process(run)
        except GitmemError as exc:
            self.say(f"the run of session {run.session} failed: {exc}")
        except Exception as exc:  # a defect must not stop the worker: log it and go on
            self.say(f"the run of session {run.session} failed: {type(exc).__name__}: {exc}")
        finally:
            self.done_with(run)


@contextlib.contextmanager
def _only_one(folder: str, *, wait: bool = False) -> Generator[bool]:
    """Whether this process is the repository's one worker (holding ``worker.lock``
    and named in ``worker.pid``) until the block ends; with ``wait``, it waits to be."""
    os.makedirs(folder, exist_ok=True)
    fd = open_own(os.path.join(folder, "worker.lock"), os.O_RDWR | os.O_CREAT)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        pid = os.path.join(folder, "worker.pid")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(pid)  # made anew: never written through what someone left there
        with os.fdopen(open_own(pid, os.O_WRONLY | os.O_CREAT | os.O_EXCL), "w") as handle:
            handle.write(str(os.getpid()))
        try:
            yield True
        finally:
            with contextlib.suppress(OSError):
                os.unlink(pid)
    finally:
        os.close(fd)


def _waiting(folder: str) -> bool:
    """Whether a spool holds a finished run not yet taken (a hook that saw the last
    worker still alive started none)."""
    spool = os.path.join(folder, "spool")
    with contextlib.suppress(OSError):
        for name in os.listdir(spool):
            if name.endswith(".jsonl"):
                path = os.path.join(spool, name)
                state = _load(path[: -len(".jsonl")] + ".state")
                for _, stop, record in _records(path, state.offset):
                    if record.get("e") in ("stop", "end") and stop not in state.done:
                        return True
    return False


def main(argv: list[str]) -> int:
    """Run the worker for the repository whose git directory is ``argv[0]``."""
    if len(argv) != 1:
        sys.stderr.write("usage: python -m gitmem.observe.worker GIT_DIR\n")
        return 2
    folder = observe_dir(argv[0])
    idle = float(os.environ.get("GITMEM_OBSERVER_IDLE") or IDLE_SECONDS)
    while True:
        with _only_one(folder) as mine:
            if not mine:
                return 0
            try:
                with Repository.open(argv[0]) as repo:
                    taken = Worker(repo).serve(idle)
            except GitmemError as exc:
                log_line(folder, f"the worker stopped: {exc}")
                return 1
        # once more for a run that came after its last look; not for one it cannot take
        if not taken or not _waiting(folder):
            return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
