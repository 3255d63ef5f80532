"""The store under crashes and a full disk: nothing acknowledged is lost, nothing half-written shows."""

from __future__ import annotations

import errno
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import helpers_store
import pytest
from conftest import assert_fsck

from gitmem import Author, DiskFull, Memory, Repository
from gitmem.types import Change

STORE = "instance/abc"
HELPER = str(Path(helpers_store.__file__))
ALICE = Author.agent("alice")


def _write(repo: Repository, slug: str, body: str) -> None:
    repo.mutate(STORE, ALICE, lambda _: Change("write", slug, Memory(slug, "d", body)))


@pytest.mark.parametrize(("mode", "rounds"), [("forever", 12), ("packing", 8)])
def test_kill_9_at_any_instant_loses_no_acknowledged_write(
    repo: Repository, mode: str, rounds: int
) -> None:
    """After each SIGKILL (of a writer that packs now and then, or after every write):
    fsck passes, every acknowledged write is present, the next write lands."""
    rng = random.Random(20240607)
    acknowledged: list[tuple[str, str]] = []
    for round_ in range(rounds):
        name = f"k{round_}"
        proc = subprocess.Popen(
            [sys.executable, HELPER, mode, repo.directory, STORE, name],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert proc.stdout is not None
        assert proc.stdout.readline() == b"ready\n", proc.stderr.read()  # type: ignore[union-attr]
        # the kill lands while writes are under way, however slow a loaded machine is
        first = proc.stdout.readline()
        time.sleep(rng.uniform(0, 0.3))
        proc.send_signal(signal.SIGKILL)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == -signal.SIGKILL, err.decode()
        for line in (
            (first + out).decode().split("\n")[:-1]
        ):  # a last line without newline is not acknowledged
            i = int(line.rsplit("-", 1)[1])
            acknowledged.append((line, helpers_store.body_of(name, i)))

        assert_fsck(repo.directory)
        fresh = Repository.open(repo.directory)
        snapshot = fresh.snapshot(STORE)
        for slug, body in acknowledged:
            memory = snapshot.get(slug)
            assert memory is not None and memory.body == body, f"round {round_}: {slug} lost"
        _write(fresh, f"after-{round_}", "still writable")
        assert fresh.snapshot(STORE).get(f"after-{round_}") is not None
        assert len(fresh.revisions(STORE)) == len(list(fresh.iter_commits(STORE)))
        # an index whose pack is gone would break every reader
        names = set(os.listdir(os.path.join(repo.directory, "objects", "pack")))
        assert [n for n in names if n.endswith(".idx") and n[:-4] + ".pack" not in names] == []
    assert len(acknowledged) > rounds
    assert_fsck(repo.directory)


def test_stale_dulwich_locks_are_recovered(repo: Repository) -> None:
    """A lock file a killed writer left on the ref does not block the next write."""
    _write(repo, "a", "one")
    ref_lock = Path(repo.directory, "refs", "heads", *STORE.split("/")).with_suffix(".lock")
    ref_lock.write_bytes(b"")
    memory = Memory("b", "d", "two")
    repo.mutate(STORE, ALICE, lambda _: Change("create", "b", memory))
    assert repo.snapshot(STORE).get("b") == memory
    assert not ref_lock.exists()
    assert_fsck(repo.directory)


# -- a full disk -----------------------------------------------------------------


class Fault:
    """Make the n-th call of an ``os`` function (counting from 1) fail with ENOSPC."""

    def __init__(self, real: Callable[..., Any], fail_at: int, only: Callable[..., bool]) -> None:
        self.real, self.fail_at, self.only, self.calls = real, fail_at, only, 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.only(*args, **kwargs):
            self.calls += 1
            if self.calls == self.fail_at:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return self.real(*args, **kwargs)


def _creates(path: Any, flags: int, *_: Any, **__: Any) -> bool:
    # only a file that does not exist yet needs space to be created
    return bool(flags & os.O_CREAT) and not os.path.exists(path)


FAULTS: dict[str, tuple[str, Callable[..., bool]]] = {
    "fsync": ("fsync", lambda *_: True),
    "create": ("open", _creates),
}
# the calls before the ref moves, each of which must refuse the write: creating the ref's
# lock file, the pack and its index; fsyncing the pack, its index, the lock file and the
# pack folder
BEFORE_THE_REF = {"fsync": 4, "create": 3}


def _count_calls(repo: Repository, monkeypatch: pytest.MonkeyPatch, name: str) -> int:
    function, only = FAULTS[name]
    counter = Fault(getattr(os, function), 0, only)
    with monkeypatch.context() as m:
        m.setattr(os, function, counter)
        _write(repo, "probe", "counting calls")
    return counter.calls


def _outcome_matches_state(repo: Repository, head: str | None, slug: str, failed: bool) -> None:
    """A DiskFull means nothing was published; a return means the write is there."""
    snapshot = Repository.open(repo.directory).snapshot(STORE)
    if failed:
        assert repo.head(STORE) == head, "DiskFull was raised, yet the write was published"
        assert slug not in snapshot
    else:
        assert repo.head(STORE) != head and slug in snapshot
    assert_fsck(repo.directory)


@pytest.mark.parametrize("name", sorted(FAULTS))
def test_full_disk_publishes_nothing_and_recovers(
    repo: Repository, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """ENOSPC at each file creation or fsync of a write: DiskFull only if nothing was published; then writes work."""
    _write(repo, "kept", "before the disk filled")
    total = _count_calls(repo, monkeypatch, name)
    assert total >= BEFORE_THE_REF[name]
    function, only = FAULTS[name]
    refused = 0
    for fail_at in range(1, total + 1):
        head = repo.head(STORE)
        slug = f"m{fail_at}"
        failed = False
        with monkeypatch.context() as m:
            m.setattr(os, function, Fault(getattr(os, function), fail_at, only))
            try:
                _write(repo, slug, f"body {fail_at}")
            except DiskFull as exc:
                failed = True
                assert "disk is full" in str(exc) and "Free some space" in str(exc)
        refused += failed
        _outcome_matches_state(repo, head, slug, failed)
        _write(repo, slug, f"body {fail_at}")  # the same objects again: meets any lock left behind
        assert repo.snapshot(STORE).get(slug) == Memory(slug, "d", f"body {fail_at}")
    assert refused >= BEFORE_THE_REF[name]  # every fault before the ref moves is refused
    assert repo.snapshot(STORE).get("kept").body == "before the disk filled"  # type: ignore[union-attr]


def test_full_disk_while_the_history_index_is_first_written(
    repo: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ENOSPC creating the derived history index (the first write records its rows) gives DiskFull or a good write, never a raw OSError."""
    history = os.path.join(repo.directory, "gitmem", "history")
    fault = Fault(os.open, 1, lambda p, f, *_, **__: _creates(p, f) and str(p).startswith(history))
    with monkeypatch.context() as m:
        m.setattr(os, "open", fault)
        try:
            _write(repo, "first", "x")
            failed = False
        except DiskFull:
            failed = True
    assert fault.calls >= 1
    _outcome_matches_state(repo, None, "first", failed)
    _write(repo, "second", "y")
    _write(repo, "third", "z")
    assert [r.slug for r in Repository.open(repo.directory).revisions(STORE)][-1] == "third"
    assert [r.slug for r in repo.revisions(STORE)][-2:] == ["second", "third"]
