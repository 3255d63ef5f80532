"""Benchmark of the curated strategy (``python bench/curated.py``, well under a minute).

Over 10,000 rows (20 projects, user and host rows, threads, knowledge and logs) joined
by 2,000 links (1,500 supersedes, 500 graduated_to, each kept in both rows):

1. the birth block a compaction rebuilds, and ``get_relevant`` of one project (goal:
   each <= 20 ms), on a holder whose row index follows the head, each measured after a
   new commit lands;
2. the same reads with ``git grep`` over a checkout of the same tree, in the same run;
3. what a first read costs: indexing every row of a head (a holder's first turn does
   it once; later reads follow the new commits only).

The store is written directly in gitmem's layout as one commit (see ``seeding.py``).
"""

from __future__ import annotations

import os
import random
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator

from seeding import write_store

from gitmem import Agent, Capability, Repository
from gitmem.limits import LIMITS
from gitmem.strategies.curated import Row, RowIndex
from gitmem.types import Memory

STORE = "profile/orch"
PROJECTS = [f"p{i:02d}" for i in range(20)]
ROWS = 10_000
GIT_ENV = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
KINDS = {"knowledge": ["Fact", "Decision", "Learning"], "thread": ["Pending"], "log": ["Milestone"]}


def rows() -> Iterator[Memory]:
    rng = random.Random(15)
    made: list[Row] = []
    for i in range(ROWS):
        if i % 100 == 0:
            owner, project = "user", ""
        elif i % 50 == 1:
            owner, project = "host", ""
        else:
            owner, project = "project", PROJECTS[i % len(PROJECTS)]
        role = rng.choices(["knowledge", "thread", "log"], [6, 3, 1])[0]
        status = rng.choices(["live", "closed", "graduated"], [7, 2, 1])[0]
        kind = rng.choice(KINDS[role] if owner != "user" else ["Fact", "Preference"])
        words = " ".join(
            rng.choice(["deploy", "cache", "runner", "schema", "quota"]) for _ in range(6)
        )
        content = f"{words}; measured {i} on 2026-11-{1 + i % 28:02d}.\n" * 3
        made.append(
            Row(f"row-{i:05d}", f"{kind}: {words} {i}", owner, project, role, status, content)
        )
    # 2,000 links between rows of one owner: the newer row points at the older one
    links = 0
    while links < 2_000:
        a, b = sorted(rng.sample(range(ROWS), 2))
        old, new = made[a], made[b]
        kind = "supersedes" if links < 1_500 else "graduated_to"
        if old.whose != new.whose or old.superseded or new.superseded:
            continue
        if kind == "supersedes":
            made[b], made[a] = (
                new.with_link("supersedes", old.name, present=True),
                old.with_link("superseded_by", new.name, present=True),
            )
        else:
            made[a], made[b] = (
                old.with_link("graduated_to", new.name, present=True),
                new.with_link("graduated_from", old.name, present=True),
            )
        links += 1
    for row in made:
        yield row.memory()


def capability() -> Capability:
    params = {"scope": "shared", **dict.fromkeys(LIMITS, 0)}
    return Capability.from_dict({"implementation": "curated", "params": params})


def samples(fn: Callable[[], object], n: int) -> list[float]:
    out: list[float] = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1000)
    return out


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def main() -> None:
    tmp = tempfile.mkdtemp(prefix="gitmem-bench-curated-")
    try:
        path = os.path.join(tmp, "rows.git")
        start = time.perf_counter()
        write_store(path, STORE, rows()).close()
        built = time.perf_counter() - start
        checkout = os.path.join(tmp, "checkout")
        subprocess.run(
            ["git", "clone", "-q", "--branch", STORE, path, checkout], check=True, env=GIT_ENV
        )
        repo = Repository.open(path)
        holder = repo.bind(capability(), Agent("orch", "bench"))
        assert holder is not None
        print(f"curated: 10,000 rows, 2,000 links (built in {built:.1f} s)")

        cold_index = samples(lambda: RowIndex().follow(repo, STORE), 3)
        first_turn = samples(
            lambda: repo.bind(capability(), Agent("orch", "first")).pinned_block(),  # type: ignore[union-attr]
            3,
        )
        assert holder.call("get_relevant", {"project": "p07"}).ok  # the holder's index is built

        counter = iter(range(1_000_000))

        def new_commit() -> None:
            # a write lands, so each read below follows one new commit first
            args = {"name": "row-live", "text": f"entry {next(counter)}"}
            if holder.call("append_row", args).kind == "not-found":
                add = {"name": "row-live", "description": "Pending: the bench thread"}
                add |= {"owner": "host", "role": "thread", "body": "opened\n"}
                assert holder.call("add_row", add).ok

        def birth() -> None:
            holder.compact()  # a boundary: the birth block is built again
            holder.pinned_block()

        births: list[float] = []
        relevants: list[float] = []
        for _ in range(30):
            new_commit()
            births += samples(birth, 1)
            new_commit()
            relevants += samples(lambda: holder.call("get_relevant", {"project": "p07"}), 1)
        birth_ms, relevant_ms = statistics.median(births), statistics.median(relevants)
        answer = holder.call("get_relevant", {"project": "p07"}).text
        pending = answer.count("\n\n`row-")

        def grep_birth() -> None:
            subprocess.run(
                ["git", "grep", "-h", "-e", "^owner: "],
                cwd=checkout, check=True, capture_output=True, env=GIT_ENV,
            )  # fmt: skip

        def grep_relevant() -> None:
            patterns = [
                "-e",
                "^owner: project p07$",
                "-e",
                "^role: thread$",
                "-e",
                "^status: live$",
            ]
            subprocess.run(
                ["git", "grep", "--all-match", "-l", *patterns],
                cwd=checkout, check=True, capture_output=True, env=GIT_ENV,
            )  # fmt: skip

        grep_birth_ms = statistics.median(samples(grep_birth, 10))
        grep_relevant_ms = statistics.median(samples(grep_relevant, 10))
        print("1. on a holder whose row index follows the head (one new commit before each read)")
        print(
            f"   birth block at a compaction median {birth_ms:7.2f} ms   goal <= 20 ms: "
            f"{verdict(birth_ms <= 20)}"
        )
        print(
            f"   get_relevant(p07)           median {relevant_ms:7.2f} ms   goal <= 20 ms: "
            f"{verdict(relevant_ms <= 20)}   ({pending} live pending threads, with bodies)"
        )
        print("2. the same rows read with git grep over a checkout, in this run")
        print(
            f"   git grep '^owner: '         median {grep_birth_ms:7.2f} ms   "
            f"({grep_birth_ms / birth_ms:.1f}x the birth block)"
        )
        print(
            f"   git grep --all-match p07    median {grep_relevant_ms:7.2f} ms   "
            f"({grep_relevant_ms / relevant_ms:.1f}x get_relevant; names only, no bodies)"
        )
        print("3. first reads of a head")
        print(f"   index every row (RowIndex)  median {statistics.median(cold_index):7.0f} ms")
        print(f"   a holder's first pinned block median {statistics.median(first_turn):5.0f} ms")
        repo.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
