"""The background worker: finished runs from the spool through the model steps.

One worker runs per repository: it holds an exclusive lock on ``observe/worker.lock``
and writes its pid to ``observe/worker.pid`` (a capture hook starts one when that pid is
not alive; a second one started in a race finds the lock taken and leaves). It reads
each session's spool from where it last stopped (``<session>.state``), assembles the
events into runs per agent (a run ends at the agent's final message or at the
session's end), and offers each finished run to a bounded queue: when the queue is
full the run is dropped with a log line, never waited for. A thread takes runs off the
queue through :func:`gitmem.observe.pipeline.observe_run`. With no new run for a few
seconds the worker leaves; a session's spool is removed once its end is processed.

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
from gitmem.observe.capture import SPOOL_MAX, log_line, observe_dir
from gitmem.observe.config import ObserverConfig, read_config
from gitmem.observe.logbook import ObservationLog
from gitmem.observe.model import Model
from gitmem.observe.pipeline import Run, ToolCall, observe_run
from gitmem.repository import Repository
from gitmem.store import Storage

__all__ = ["IDLE_SECONDS", "Worker", "main", "take_runs"]

IDLE_SECONDS = 3.0
"""How long the worker waits for a new run before it leaves."""
ABANDONED_SECONDS = 24 * 3600
"""A spool wholly taken and untouched this long is removed."""
_STATE_MAX = 1 << 16


@dataclass
class _Progress:
    """How far a session's spool has been taken: every run before ``offset``, and
    the runs ending at ``done`` (byte positions past it)."""

    offset: int = 0
    done: list[int] = field(default_factory=lambda: list[int]())


def _load(path: str) -> _Progress:
    try:
        with open(path, "rb") as handle:
            data = json.loads(handle.read(_STATE_MAX))
        kept = cast(dict[str, Any], data)
        done = [int(d) for d in cast(list[Any], kept.get("done") or [])]
        return _Progress(int(kept.get("offset") or 0), done)
    except (OSError, ValueError, TypeError, AttributeError):
        return _Progress()


def _save(path: str, progress: _Progress) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump({"offset": progress.offset, "done": progress.done}, handle)
    os.replace(tmp, path)


def _records(path: str, offset: int) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """The spool's records from ``offset``: (start, end, record); a line not yet ended
    (a write in flight) is left for the next time."""
    with open(path, "rb") as handle:
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


def take_runs(folder: str) -> list[Run]:
    """Every finished run waiting in the spools under ``folder``, oldest first; each is
    taken once. A spool whose session ended is removed once wholly taken."""
    spool = os.path.join(folder, "spool")
    try:
        names = sorted(n for n in os.listdir(spool) if n.endswith(".jsonl"))
    except OSError:
        return []
    runs: list[Run] = []
    for name in names:
        runs.extend(_take(os.path.join(spool, name)))
    runs.sort(key=lambda r: r.ended)
    return runs


def _abandoned(path: str, offset: int) -> bool:
    """Whether a spool is wholly taken and untouched for a day (its session never said
    it ended: a crash, a killed client)."""
    try:
        status = os.stat(path)
    except OSError:
        return False
    return status.st_size <= offset and time.time() - status.st_mtime > ABANDONED_SECONDS


def _take(path: str) -> list[Run]:
    state = path[: -len(".jsonl")] + ".state"
    progress = _load(state)
    open_runs: dict[str, tuple[int, Run]] = {}
    finished: list[tuple[int, Run]] = []
    consumed = progress.offset
    ended = False
    for start, stop, record in _records(path, progress.offset):
        consumed = stop
        event, agent = record.get("e"), str(record.get("a") or "main")
        session, when = str(record.get("s") or ""), float(record.get("t") or 0)
        if event == "end":
            ended = True
            for _, run in open_runs.values():
                run.ended = when
                finished.append((stop, run))
            open_runs.clear()
            continue
        begin, run = open_runs.get(agent) or (start, Run(session, agent))
        if event == "prompt":
            if run.prompt or run.tools:
                run.ended = when
                finished.append((start, run))
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
            finished.append((stop, run))
            open_runs.pop(agent, None)
            continue
        open_runs[agent] = (begin, run)
    taken = [run for at, run in finished if at not in progress.done]
    offset = min((begin for begin, _ in open_runs.values()), default=consumed)
    done = sorted(
        {at for at, _ in finished if at > offset} | {d for d in progress.done if d > offset}
    )
    if (ended or _abandoned(path, offset)) and not open_runs:
        for leftover in (path, state):
            with contextlib.suppress(OSError):
                os.unlink(leftover)
    elif taken or offset != progress.offset:
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

    def say(self, message: str) -> None:
        """One line in the observer's log."""
        log_line(self.folder, message)

    def offer(self, run: Run) -> bool:
        """Queue ``run``; a full queue drops it with a log line."""
        try:
            self.queue.put_nowait(run)
        except queue.Full:
            self.say(f"queue full: dropped the run of session {run.session} ({run.agent})")
            return False
        return True

    def fill(self) -> int:
        """Offer every finished run in the spools; returns how many there were."""
        runs = take_runs(self.folder)
        for run in runs:
            self.offer(run)
        return len(runs)

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
        """Fill the queue and process it until empty, here; returns runs processed."""
        self.fill()
        count = 0
        while True:
            try:
                run = self.queue.get_nowait()
            except queue.Empty:
                return count
            self._guarded(run)
            count += 1

    def serve(self, idle: float = IDLE_SECONDS) -> None:
        """Fill from the spools and process on a thread until idle for ``idle`` s."""
        stop = threading.Event()

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
            if self.fill():
                quiet_since = time.monotonic()
            time.sleep(0.1)
        self.queue.join()
        stop.set()
        thread.join()

    def _guarded(self, run: Run) -> None:
        try:
            self.process(run)
        except GitmemError as exc:
            self.say(f"the run of session {run.session} failed: {exc}")
        except Exception as exc:  # a defect must not stop the worker: log it and go on
            self.say(f"the run of session {run.session} failed: {type(exc).__name__}: {exc}")


@contextlib.contextmanager
def _only_one(folder: str) -> Generator[bool]:
    os.makedirs(folder, exist_ok=True)
    fd = os.open(os.path.join(folder, "worker.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        pid = os.path.join(folder, "worker.pid")
        with open(pid, "w", encoding="utf-8") as handle:
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
                    Worker(repo).serve(idle)
            except GitmemError as exc:
                log_line(folder, f"the worker stopped: {exc}")
                return 1
        if not _waiting(folder):
            return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
