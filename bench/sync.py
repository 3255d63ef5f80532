"""Benchmark of ``gitmem sync`` against the git CLI in the same run (``make bench``).

Two replicas of one store diverge by 100 changed memories each (100 commits a side);
one has pushed to a bare origin. Measured:

1. gitmem: ``Repository.open`` + ``repo.sync("origin")`` on the other replica: fetch,
   reconcile memory by memory, one merge commit, push.
2. git CLI, on a work-tree clone in the same state: ``git fetch origin`` + ``git merge``
   of the store branch (no push).

Goal: gitmem <= 1.0x the git CLI, and the cost follows the changes, not the store:
10,000 vs 1,000 memories at 100 changes a side <= 1.5x.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from seeding import AUTHOR, write_store

from gitmem import Memory, Repository
from gitmem.types import Change

STORE = "profile/bench"
CHANGES = 100
RUNS = 3
GIT_ENV = {
    **os.environ,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": AUTHOR.name,
    "GIT_AUTHOR_EMAIL": AUTHOR.email,
    "GIT_COMMITTER_NAME": AUTHOR.name,
    "GIT_COMMITTER_EMAIL": AUTHOR.email,
}


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


def gitmem_sync(b: str) -> float:
    start = time.perf_counter()
    with Repository.open(b) as repo:
        [report] = repo.sync("origin")
    elapsed = time.perf_counter() - start
    assert report.merged and report.pushed and not report.conflicts, report
    return elapsed


def git_sync(peer: str) -> float:
    start = time.perf_counter()
    git(peer, "fetch", "-q", "origin")
    git(peer, "merge", "-q", "--no-edit", f"origin/{STORE}")
    return time.perf_counter() - start


def main() -> None:
    git_version = subprocess.run(["git", "--version"], capture_output=True, text=True)
    print(f"gitmem sync benchmark ({git_version.stdout.strip()}, median of {RUNS} runs)")
    print(f"{CHANGES} changed memories on each side, 100 commits a side\n")
    results: dict[int, tuple[float, float]] = {}
    for count in (1_000, 10_000):
        mine: list[float] = []
        theirs: list[float] = []
        for _ in range(RUNS):
            work = tempfile.mkdtemp(prefix="gitmem-bench-sync-")
            try:
                b, peer = setup(work, count)
                mine.append(gitmem_sync(b))
                theirs.append(git_sync(peer))
            finally:
                shutil.rmtree(work, ignore_errors=True)
        results[count] = (statistics.median(mine) * 1000, statistics.median(theirs) * 1000)
        m, g = results[count]
        print(
            f"{count:>6,} memories: gitmem sync {m:7.1f} ms   git fetch + merge {g:7.1f} ms"
            f"   ratio {m / g:.2f}x (goal <= 1.0x: {'met' if m <= g else 'MISSED'})"
        )
    growth = results[10_000][0] / results[1_000][0]
    print(
        f"\n10,000 / 1,000 memories: {growth:.2f}x "
        f"(goal <= 1.5x: {'met' if growth <= 1.5 else 'MISSED'})"
    )


if __name__ == "__main__":
    sys.exit(main())
