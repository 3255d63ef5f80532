"""Benchmark of approving a proposal against ``gitmem sync`` of the same changes, in the
same run (``make bench``).

A store of 1,000 memories; a holder whose writes await review edits 20 of them (20
proposal commits), and another holder writes one memory to the store meanwhile, so the
approval is a true merge. Its peer: a replica whose store has that one local write,
syncing the same 20 edits (20 commits) from a bare origin that another replica pushed
them to: fetch, one merge commit, push.

1. In one process: ``Repository.open`` + ``repo.approve(proposal)`` against
   ``Repository.open`` + ``repo.sync("origin")``.
2. As processes (interpreter start and imports included): ``gitmem approve`` against
   ``gitmem sync``, on a copy of the same setup.

Goal: approving <= 2x the sync of the same changes. The machine is shared: the figures
are indicative, the ratio is what to read.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from seeding import AUTHOR, GIT_ENV, write_store

from gitmem import Agent, Author, Capability, Memory, Repository
from gitmem.types import Change

STORE = "profile/bench"
COUNT = 1_000
CHANGES = 20
RUNS = 5
GITMEM = os.path.join(os.path.dirname(sys.executable), "gitmem")
REVIEWER = Author("Reviewer", "reviewer@example.org")
PROPOSAL = f"{STORE}/proposer"


def body(i: int, salt: str = "") -> str:
    return f"memory {i}{salt}\n" + "lorem ipsum dolor sit amet\n" * 6


def git(cwd: str, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, check=True, capture_output=True)


def reviewed() -> Capability:
    params = {"scope": "shared", "maxCount": 0, "maxLenPerMemory": 0, "maxTotalLen": 0}
    params |= {"maxLenIndex": 0, "maxLenDescription": 0, "maxResults": 25}
    return Capability.from_dict(
        {"implementation": "markdown", "params": params, "features": {"review": True}}
    )


def edited(i: int) -> Memory:
    return Memory(f"m{i:05d}", f"memory number {i}", body(i, " changed"))


def local_write(repo: Repository) -> None:
    memory = Memory("local", "written here meanwhile", "local\n")
    repo.mutate(STORE, AUTHOR, lambda _: Change("create", "local", memory))


def setup(work: str) -> tuple[str, str]:
    """Replica ``r`` holding a 20-memory proposal, and replica ``b`` about to sync the
    same 20 edits (pushed to ``origin`` by replica ``a``)."""
    a, b, r, origin = (os.path.join(work, n) for n in ("a", "b", "r", "origin.git"))
    memories = (Memory(f"m{i:05d}", f"memory number {i}", body(i)) for i in range(COUNT))
    write_store(a, STORE, memories).close()
    git(work, "clone", "-q", "--bare", a, origin)
    shutil.copytree(a, b)
    shutil.copytree(a, r)
    for path in (a, b):
        git(path, "remote", "add", "origin", origin)
    with Repository.open(a) as ra:
        for i in range(CHANGES):
            memory = edited(i)
            ra.mutate(STORE, AUTHOR, lambda _, m=memory: Change("update", m.slug, m))
        ra.sync("origin")
    with Repository.open(b) as rb:
        local_write(rb)
    with Repository.open(r) as rr:
        holder = rr.bind(reviewed(), Agent("bench", "proposer"))
        assert holder is not None
        for i in range(CHANGES):
            memory = edited(i)
            result = holder.call(
                "edit_memory",
                {"name": memory.slug, "old_text": body(i), "new_text": memory.body},
            )
            assert result.ok, result.text
        local_write(rr)
    return r, b


def approve(r: str) -> float:
    start = time.perf_counter()
    with Repository.open(r) as repo:
        decision = repo.approve(PROPOSAL, author=REVIEWER)
    assert len(decision.slugs) == CHANGES and not decision.pending, decision
    return (time.perf_counter() - start) * 1000


def sync(b: str) -> float:
    start = time.perf_counter()
    with Repository.open(b) as repo:
        [report] = repo.sync("origin")
    assert report.merged and len(report.changed) == CHANGES, report
    return (time.perf_counter() - start) * 1000


def process(*args: str) -> float:
    start = time.perf_counter()
    done = subprocess.run([GITMEM, *args], env=GIT_ENV, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return (time.perf_counter() - start) * 1000


def main() -> None:
    print(f"gitmem approve benchmark (median of {RUNS} runs; load average ", end="")
    print(" ".join(f"{x:.1f}" for x in os.getloadavg()) + ")")
    print(f"{COUNT:,} memories; a proposal of {CHANGES} edited memories against a sync of")
    print(f"the same {CHANGES} edits, each a merge with one local write\n")
    mine: list[float] = []
    theirs: list[float] = []
    processes: list[tuple[float, float]] = []
    for _ in range(RUNS):
        work = tempfile.mkdtemp(prefix="gitmem-bench-review-")
        twin = work + "-twin"
        try:
            r, b = setup(work)
            shutil.copytree(work, twin, symlinks=True)
            r2, b2 = (os.path.join(twin, os.path.basename(p)) for p in (r, b))
            git(b2, "remote", "set-url", "origin", os.path.join(twin, "origin.git"))
            mine.append(approve(r))
            theirs.append(sync(b))
            processes.append(
                (
                    process("--repo", r2, "approve", PROPOSAL, "--author", "Reviewer <r@x.org>"),
                    process("--repo", b2, "sync", "origin"),
                )
            )
        finally:
            shutil.rmtree(work, ignore_errors=True)
            shutil.rmtree(twin, ignore_errors=True)
    m, s = statistics.median(mine), statistics.median(theirs)
    ratio = m / s
    print(
        f"  in one process   approve {m:7.1f} ms   sync {s:7.1f} ms   {ratio:.2f}x "
        f"(goal <= 2.0x: {'met' if ratio <= 2.0 else 'MISSED'})"
    )
    pm = statistics.median(p[0] for p in processes)
    ps = statistics.median(p[1] for p in processes)
    print(
        f"  as processes     `gitmem approve` {pm:7.1f} ms   `gitmem sync` {ps:7.1f} ms   {pm / ps:.2f}x"
    )


if __name__ == "__main__":
    main()
