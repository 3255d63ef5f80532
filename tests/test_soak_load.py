"""Load: agents in many processes write one shared store through their tools; nothing
is lost, the history stays linear and valid, and maxCount holds at every commit."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import helpers_soak
import pytest
from conftest import assert_fsck, git
from helpers_soak import PROFILE, load_capability, report, size
from helpers_store import body_of

from gitmem import Agent, Repository

HELPER = str(Path(helpers_soak.__file__))
STORE = f"profile/{PROFILE}"

pytestmark = pytest.mark.soak


def _counts_per_commit(directory: str) -> list[int]:
    """How many memory files each commit's tree holds, oldest first, read by git alone."""
    log = git(
        directory, "log", "--reverse", "--no-renames", "--format=C %H", "--name-status", STORE
    )
    assert log.returncode == 0, log.stderr
    present: set[str] = set()
    counts: list[int] = []
    for line in log.stdout.splitlines():
        if line.startswith("C "):
            counts.append(len(present))  # the previous commit's count, then this one's
        elif line:
            status, path = line.split("\t", 1)
            if path.endswith(".md"):
                (present.discard if status == "D" else present.add)(path)
            counts[-1] = len(present)
    return counts


def test_writers_in_processes_lose_nothing_and_never_pass_max_count(repo: Repository) -> None:
    """N processes x W tool writes on one shared store: N*W commits, every write
    present, fsck clean, the memory count within maxCount at every commit."""
    processes, writes = size(4, 8), size(15, 250)
    names = [f"p{n}" for n in range(processes)]
    max_count = processes + 2  # the homes and the pinned memory leave one free place
    seeder = repo.bind(load_capability(max_count), Agent(PROFILE, "seed", started_as="root"))
    assert seeder is not None
    for slug in [f"home-{name}" for name in names] + ["pinned"]:
        name = slug.removeprefix("home-")
        body = body_of(name, -1)
        assert seeder.call("create_memory", {"name": slug, "description": "h", "body": body}).ok
    seeded = len(repo.revisions(STORE))

    started = time.monotonic()
    children = [
        subprocess.Popen(
            [sys.executable, HELPER, "load", repo.directory, name, str(writes), str(max_count)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in names
    ]
    acknowledged: Counter[tuple[str, str, str | None]] = Counter()
    refused = 0
    for name, child in zip(names, children, strict=True):
        out, err = child.communicate(timeout=size(300, 1800))
        assert child.returncode == 0, err
        records = [json.loads(line) for line in out.splitlines()]
        mine = [r for r in records if "op" in r]
        assert len(mine) == writes, f"{name}: {len(mine)} writes acknowledged"
        refused += sum(r.get("refused") == "limit-exceeded" for r in records)
        acknowledged.update((r["op"], r["slug"], r["body"]) for r in mine)
    elapsed = time.monotonic() - started

    fresh = Repository.open(repo.directory)
    revisions = fresh.revisions(STORE)[seeded:]
    landed = Counter((r.op, r.slug, None if r.removed else r.body) for r in revisions)
    assert landed == acknowledged  # every acknowledged write, and nothing else
    total = seeded + processes * writes
    assert git(repo.directory, "rev-list", "--count", STORE).stdout.strip() == str(total)
    assert git(repo.directory, "rev-list", "--merges", "--count", STORE).stdout.strip() == "0"
    counts = _counts_per_commit(repo.directory)
    assert len(counts) == total
    assert max(counts) == max_count  # the limit was reached...
    assert refused > 0  # ...and creates were refused at it
    assert all(r.totals.count <= max_count for r in revisions)
    assert_fsck(repo.directory)
    report(
        f"load: {processes} processes x {writes} writes = {processes * writes} acknowledged, "
        f"{total} commits with {seeded} seeded, 0 lost; peak {max(counts)} memories under "
        f"maxCount {max_count} ({refused} creates refused at the limit); fsck --strict "
        f"clean; {elapsed:.1f} s"
    )
