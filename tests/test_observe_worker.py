"""The worker over the spools: a spool whose client stopped midway is closed after a
day, a spool unchanged since the last look is not read again, and ``observe drain``
runs as the one worker of its repository."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from gitmem.observe import Recorder, ScriptedModel
from gitmem.observe import worker as worker_module
from gitmem.observe.capture import observe_dir
from gitmem.observe.worker import Worker, take_runs
from gitmem.repository import Repository


def test_a_spool_untouched_for_a_day_is_closed(tmp_path: Path) -> None:
    """A session stopped mid-run (no final message, no end) keeps no spool forever: a
    day on, its unfinished run is dropped with a log line and the spool removed."""
    folder = observe_dir(str(tmp_path))
    recorder = Recorder(str(tmp_path), "s1", worker=False)
    recorder.prompt("p")
    recorder.tool("Bash", {"command": "ls"}, "out", call_id="t1")
    recorder.close()
    assert take_runs(folder) == []
    spool = os.path.join(folder, "spool")
    assert "s1.jsonl" in os.listdir(spool)
    os.utime(os.path.join(spool, "s1.jsonl"), (0, 0))
    assert take_runs(folder) == [] and os.listdir(spool) == []
    logged = Path(folder, "observer.log").read_text()
    assert "dropped the unfinished runs of session s1 (main): untouched for a day" in logged


def test_a_spool_unchanged_since_the_last_look_is_not_read_again(
    repo: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker polls often: a spool whose size and time are as they were is passed
    over, until one of its runs is done with or it grows."""
    recorder = Recorder(repo.directory, "s1", worker=False)
    recorder.prompt("p")
    recorder.close()
    read: list[str] = []
    take = worker_module._take  # pyright: ignore[reportPrivateUsage]

    def counted(path: str, held: set[int] | None) -> list[tuple[int, worker_module.Run]]:
        read.append(os.path.basename(path))
        return take(path, held)

    monkeypatch.setattr(worker_module, "_take", counted)
    worker = Worker(repo, model=ScriptedModel([""] * 9))
    assert [worker.fill() for _ in range(3)] == [0, 0, 0]
    assert read == ["s1.jsonl"]
    recorder = Recorder(repo.directory, "s1", worker=False)
    recorder.final("f")
    recorder.close()
    assert worker.fill() == 1 and read == ["s1.jsonl"] * 2


def test_drain_waits_for_the_running_worker(repo: Repository) -> None:
    """``observe drain`` runs as the repository's one worker: while another holds the
    lock it waits, so no run is taken twice, then takes what is left."""
    recorder = Recorder(repo.directory, "s1", worker=False)
    recorder.prompt("p")
    recorder.tool("Bash", {"command": "ls"}, "out", call_id="t1")
    recorder.final("f")
    recorder.close()
    model = ScriptedModel([""] * 9)
    counted: list[int] = []
    drain = threading.Thread(target=lambda: counted.append(Worker(repo, model=model).drain()))
    with worker_module._only_one(observe_dir(repo.directory)) as mine:  # pyright: ignore[reportPrivateUsage]
        assert mine
        drain.start()
        drain.join(0.5)
        assert drain.is_alive() and model.calls == []
    drain.join(30)
    assert counted == [1] and model.calls
