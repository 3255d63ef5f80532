"""The store under concurrency: races between threads, writers in several processes."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import helpers_store
import pytest
from conftest import assert_fsck, git

from gitmem import AlreadyExists, Author, Memory, Repository, Revision
from gitmem.store import Snapshot
from gitmem.types import Change

STORE = "instance/abc"
HELPER = str(Path(helpers_store.__file__))


def _writers(repo: Repository, count: int, writes: int) -> list[subprocess.Popen[str]]:
    return [
        subprocess.Popen(
            [sys.executable, HELPER, "shared", repo.directory, STORE, f"p{n}", str(writes)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(count)
    ]


def _wait_all(procs: list[subprocess.Popen[str]]) -> None:
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err


def _check_shared_writes(repo: Repository, count: int, writes: int) -> None:
    revisions = repo.revisions(STORE)
    assert len(revisions) == count * writes
    assert git(repo.directory, "rev-list", "--count", STORE).stdout.strip() == str(count * writes)
    for k in range(helpers_store.SHARED):
        slug = helpers_store.shared_slug(k)
        mine = repo.revisions(STORE, slug)
        assert [r.revision for r in mine] == list(range(1, len(mine) + 1))
    bodies = {(r.slug, r.body) for r in revisions}
    for n in range(count):
        for i in range(writes):
            assert (helpers_store.shared_slug(i), helpers_store.body_of(f"p{n}", i)) in bodies
    assert_fsck(repo.directory)


class Recorder:
    """A mutation function that records every head it ran against."""

    def __init__(self, slug: str, body: str, barrier: threading.Barrier, op: str) -> None:
        self.slug, self.body, self.barrier, self.op = slug, body, barrier, op
        self.seen: list[tuple[str | None, Memory | None]] = []

    def __call__(self, snapshot: Snapshot) -> Change:
        self.seen.append((snapshot.commit, snapshot.get(self.slug)))
        if len(self.seen) == 1:
            self.barrier.wait(timeout=30)  # both writers now hold the same head
        return Change(self.op, self.slug, Memory(self.slug, "d", self.body))  # type: ignore[arg-type]


def _race(
    repos: list[Repository], fns: list[Recorder]
) -> tuple[list[Revision | None], list[BaseException | None]]:
    results: list[Revision | None] = [None, None]
    errors: list[BaseException | None] = [None, None]

    def run(i: int) -> None:
        try:
            results[i] = repos[i].mutate(STORE, Author.agent(f"w{i}"), fns[i])
        except BaseException as exc:
            errors[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    return results, errors


@pytest.mark.parametrize("separate", [False, True], ids=["one object", "two objects"])
def test_two_writers_from_one_head_both_land_in_order(repo: Repository, separate: bool) -> None:
    """Two writers that computed from the same head both land; the loser re-ran on the winner."""
    repo.mutate(
        STORE, Author.agent("seed"), lambda _: Change("create", "seed", Memory("seed", "d", "s"))
    )
    start = repo.head(STORE)
    barrier = threading.Barrier(2)
    fns = [Recorder("note", f"from w{i}", barrier, "write") for i in range(2)]
    repos = [repo, Repository.open(repo.directory) if separate else repo]
    results, errors = _race(repos, fns)
    assert errors == [None, None]
    assert all(fn.seen[0] == (start, None) for fn in fns)
    loser = max((0, 1), key=lambda i: len(fns[i].seen))
    winner = 1 - loser
    won, lost = results[winner], results[loser]
    assert won is not None and lost is not None
    assert len(fns[winner].seen) == 1 and len(fns[loser].seen) == 2
    assert fns[loser].seen[1] == (won.commit, Memory("note", "d", f"from w{winner}"))
    assert (won.revision, lost.revision) == (1, 2)
    assert [r.commit for r in repo.revisions(STORE, "note")] == [won.commit, lost.commit]
    assert repo.head(STORE) == lost.commit
    assert git(repo.directory, "rev-parse", f"{lost.commit}^").stdout.strip() == won.commit
    assert git(repo.directory, "rev-parse", f"{won.commit}^").stdout.strip() == start
    assert_fsck(repo.directory)


class Guarded(Recorder):
    """A create that refuses by itself when the slug exists."""

    def __call__(self, snapshot: Snapshot) -> Change:
        change = super().__call__(snapshot)
        if self.slug in snapshot:
            raise AlreadyExists(f"{self.slug} exists (seen by the function)")
        return change


@pytest.mark.parametrize("who", ["function", "store"])
def test_race_where_revalidation_refuses(repo: Repository, who: str) -> None:
    """When the re-run finds the change no longer valid, exactly one lands and the other wrote nothing."""
    barrier = threading.Barrier(2)
    kind = Guarded if who == "function" else Recorder
    fns = [kind("only", f"from w{i}", barrier, "create") for i in range(2)]
    results, errors = _race([repo, repo], fns)
    landed = [r for r in results if r is not None]
    assert len(landed) == 1
    refused = [e for e in errors if e is not None]
    assert len(refused) == 1 and isinstance(refused[0], AlreadyExists)
    loser = results.index(None)
    assert len(fns[loser].seen) == 2
    assert [r.commit for r in repo.revisions(STORE)] == [landed[0].commit]
    unreachable = git(repo.directory, "fsck", "--unreachable", "--no-reflogs")
    assert unreachable.returncode == 0 and unreachable.stdout == "", unreachable.stdout
    assert repo.snapshot(STORE).get("only") == Memory("only", "d", landed[0].body)


def test_four_processes_forty_writes_each(repo: Repository) -> None:
    """4 processes x 40 writes on one store: 160 commits, every write present, revisions contiguous."""
    _wait_all(_writers(repo, 4, 40))
    _check_shared_writes(repo, 4, 40)
    for k in range(helpers_store.SHARED):
        assert repo.revisions(STORE, helpers_store.shared_slug(k))[-1].revision == 40


def test_packing_while_others_write_loses_nothing(repo: Repository) -> None:
    """Writers in other processes lose nothing while this one packs again and again."""
    procs = _writers(repo, 2, 40)
    packs = 0
    while any(p.poll() is None for p in procs):
        repo.pack()
        packs += 1
    _wait_all(procs)
    repo.pack()
    assert packs > 0
    assert os.listdir(os.path.join(repo.directory, "objects", "pack"))
    _check_shared_writes(Repository.open(repo.directory), 2, 40)
