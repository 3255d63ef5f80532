"""Benchmark of ``gitmem sync`` against the git CLI in the same run (``make bench``).

Two replicas of one store diverge by 100 changed memories each (100 commits a side);
one has pushed to a bare origin. Measured:

1. gitmem: ``Repository.open`` + ``repo.sync("origin")`` on the other replica: fetch,
   reconcile memory by memory, one merge commit, push. Printed whole ("sync total")
   and without the push ("fetch + merge part"), since the peer does not push.
2. git CLI, on a work-tree clone in the same state: ``git fetch origin`` + ``git merge``
   of the store branch (no push; the merge also updates its work tree and index).
3. CPU time of both (gitmem's process; git's child processes), steadier than wall time
   on a shared machine, and both as processes: ``gitmem sync`` (interpreter start and
   imports included) against ``git fetch && git merge``, on a copy of the same setup.

Goal: gitmem <= 1.0x the git CLI, and the cost follows the changes, not the store:
10,000 vs 1,000 memories at 100 changes a side <= 1.5x.
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from seeding import AUTHOR, GIT_ENV, write_store

from gitmem import Memory, Repository
from gitmem.store import Storage as StoreRepository
from gitmem.types import Change

STORE = "profile/bench"
CHANGES = 100
RUNS = 3
GITMEM = os.path.join(os.path.dirname(sys.executable), "gitmem")


def body(i: int, salt: str = "") -> str:
    return f"memory {i}{salt}\n" + "lorem ipsum dolor sit amet\n" * 6


def git(cwd: str, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, check=True, capture_output=True)


def edit(repo: Repository, i: int, salt: str) -> None:
    slug = f"m{i:05d}"
    memory = Memory(slug, f"memory number {i}", body(i, salt))
    repo.mutate(STORE, AUTHOR, lambda _: Change("edit", slug, memory))


def setup(work: str, count: int) -> tuple[str, str]:
    """Replica ``b`` (standalone, remote ``origin``) whose peer ``a`` pushed 100 changes,
    and a work-tree clone ``peer`` in the same state for the git CLI."""
    a, b, origin = (os.path.join(work, n) for n in ("a", "b", "origin.git"))
    write_store(
        a, STORE, (Memory(f"m{i:05d}", f"memory number {i}", body(i)) for i in range(count))
    ).close()
    git(work, "clone", "-q", "--bare", a, origin)
    shutil.copytree(a, b)
    peer = os.path.join(work, "peer")
    git(work, "clone", "-q", "--branch", STORE, origin, peer)
    for path in (a, b):
        git(path, "remote", "add", "origin", origin)
    with Repository.open(a) as ra, Repository.open(b) as rb:
        for i in range(CHANGES):
            edit(ra, i, " changed on a")
            edit(rb, count - 1 - i, " changed on b")
        ra.sync("origin")
    # the peer holds b's commits on its branch, as b does
    git(peer, "fetch", "-q", b, f"refs/heads/{STORE}:refs/heads/from-b")
    git(peer, "reset", "-q", "--hard", "from-b")
    return b, peer


@dataclass
class Run:
    """One measured sync: wall and CPU milliseconds, and the part spent pushing."""

    wall: float
    cpu: float
    push: float = 0.0


def gitmem_sync(b: str) -> Run:
    """``Repository.open`` + ``sync``; the push phase timed apart (the git CLI peer
    does not push)."""
    pushed: list[float] = []
    push = StoreRepository.push

    def timed(self: StoreRepository, *args: Any) -> Any:
        start = time.perf_counter()
        try:
            return push(self, *args)
        finally:
            pushed.append(time.perf_counter() - start)

    StoreRepository.push = timed  # type: ignore[method-assign]
    try:
        cpu, start = time.process_time(), time.perf_counter()
        with Repository.open(b) as repo:
            [report] = repo.sync("origin")
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    finally:
        StoreRepository.push = push  # type: ignore[method-assign]
    assert report.merged and report.pushed and not report.conflicts, report
    return Run(wall * 1000, cpu * 1000, sum(pushed) * 1000)


def git_sync(peer: str) -> Run:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    git(peer, "fetch", "-q", "origin")
    git(peer, "merge", "-q", "--no-edit", f"origin/{STORE}")
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return Run(wall * 1000, cpu * 1000)


def cli_sync(b: str) -> float:
    """``gitmem sync`` as a process (interpreter start and imports included)."""
    start = time.perf_counter()
    done = subprocess.run(
        [GITMEM, "--repo", b, "sync", "origin"], env=GIT_ENV, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return (time.perf_counter() - start) * 1000


def twin(work: str, b: str, peer: str) -> tuple[str, str]:
    """A copy of the whole setup (origin included) for a second, independent sync."""
    copy = work + "-twin"
    shutil.copytree(work, copy, symlinks=True)
    for path in (b, peer):
        here = os.path.join(copy, os.path.basename(path))
        git(here, "remote", "set-url", "origin", os.path.join(copy, "origin.git"))
    return os.path.join(copy, os.path.basename(b)), os.path.join(copy, os.path.basename(peer))


def median(runs: list[Run], field: str) -> float:
    return statistics.median(getattr(r, field) for r in runs)


def verdict(ratio: float, goal: float) -> str:
    return f"goal <= {goal}x: {'met' if ratio <= goal else 'MISSED'}"


def main() -> None:
    git_version = subprocess.run(["git", "--version"], capture_output=True, text=True)
    print(f"gitmem sync benchmark ({git_version.stdout.strip()}, median of {RUNS} runs)")
    print(f"{CHANGES} changed memories on each side, 100 commits a side; load average ", end="")
    print(" ".join(f"{x:.1f}" for x in os.getloadavg()), "\n")
    totals: dict[int, tuple[float, float]] = {}
    for count in (1_000, 10_000):
        mine: list[Run] = []
        theirs: list[Run] = []
        processes: list[tuple[float, float]] = []
        for _ in range(RUNS):
            work = tempfile.mkdtemp(prefix="gitmem-bench-sync-")
            try:
                b, peer = setup(work, count)
                b2, peer2 = twin(work, b, peer)
                mine.append(gitmem_sync(b))
                theirs.append(git_sync(peer))
                processes.append((cli_sync(b2), git_sync(peer2).wall))
            finally:
                shutil.rmtree(work, ignore_errors=True)
                shutil.rmtree(work + "-twin", ignore_errors=True)
        m, g = median(mine, "wall"), median(theirs, "wall")
        part = statistics.median(r.wall - r.push for r in mine)
        totals[count] = (m, median(mine, "cpu"))
        print(f"{count:,} memories")
        print(
            f"  sync total            gitmem {m:7.1f} ms   git fetch + merge {g:7.1f} ms"
            f"   {m / g:.2f}x ({verdict(m / g, 1.0)})"
        )
        print(
            f"  fetch + merge part    gitmem {part:7.1f} ms (push {median(mine, 'push'):.1f} ms)"
            f"                 {part / g:.2f}x ({verdict(part / g, 1.0)})"
        )
        mc, gc = median(mine, "cpu"), median(theirs, "cpu")
        print(
            f"  CPU time              gitmem {mc:7.1f} ms   git (children) {gc:7.1f} ms   {mc / gc:.2f}x"
        )
        pm = statistics.median(p[0] for p in processes)
        pg = statistics.median(p[1] for p in processes)
        print(
            f"  as processes          `gitmem sync` {pm:7.1f} ms   `git fetch && git merge` {pg:7.1f} ms"
            f"   {pm / pg:.2f}x"
        )
    growth = totals[10_000][0] / totals[1_000][0]
    cpu_growth = totals[10_000][1] / totals[1_000][1]
    print(
        f"\n10,000 / 1,000 memories: {growth:.2f}x wall ({verdict(growth, 1.5)}), "
        f"{cpu_growth:.2f}x CPU ({verdict(cpu_growth, 1.5)})"
    )


if __name__ == "__main__":
    sys.exit(main())
