"""Blame of a memory with 1,000 revisions, beside ``git blame`` on the same file
(``make bench``).

The store holds 50 memories; one of them, ``journal``, is rewritten 1,000 times (a
line changed, now and then one added), each revision a commit of gitmem's layout and
trailers written directly with dulwich (as :mod:`seeding` does), so building it takes
seconds. Measured side by side in one run, each the median of several:

1. ``gitmem blame journal`` as a process against ``git blame <its file>`` as a process
   (goal: <= 1.5x), ``gitmem`` as a user's install from the wheel has it (see
   ``installed.py``: the dev venv's editable install adds its import finder to every
   start);
2. ``Repository.blame`` in a warm process (the console's and a harness's case) against
   the same ``git blame`` process;
3. the interpreter's own start (``python -c pass``) of that install, the floor under
   any process of ours: what a process costs past it is imports plus the blame itself.

Wall and CPU time both (CPU from ``getrusage``: steadier on a loaded machine). The two
must agree line for line (checked before timing).
"""

from __future__ import annotations

import os
import re
import resource
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from typing import Any

from dulwich.objects import Blob, ShaFile
from dulwich.refs import Ref
from dulwich.repo import Repo
from installed import install
from seeding import GIT_ENV, gitmem_commit

from gitmem import Memory, Repository, Totals
from gitmem.store import memoryfiles as files
from gitmem.store.message import Edited, Facts

STORE = "bench"
SLUG = "journal"
REVISIONS = 1000
OTHERS = 50
RUNS = 7
GOAL = 1.5
HEADER = re.compile(r"^([0-9a-f]{40}) \d+ (\d+)")


def journal(i: int, lines: list[str]) -> Memory:
    """Revision ``i`` of the journal: line ``i % len`` rewritten, every tenth a line added."""
    if i % 10 == 0:
        lines.append(f"entry {i}: a new finding, written down for later runs")
    else:
        lines[i % len(lines)] = f"line {i % len(lines)} as revised at step {i}"
    return Memory(SLUG, "what the runs found", "\n".join(lines) + "\n")


def build(path: str) -> Repository:
    """The store: 50 memories, then 1,000 revisions of the journal, one commit each."""
    repo = Repository.init(path)
    raw = Repo(path)
    buckets: dict[str, dict[str, bytes]] = {}
    objects: list[ShaFile] = []

    def put(memory: Memory) -> None:
        for name, data in files.encode(memory).items():
            blob = Blob.from_string(data)
            objects.append(blob)
            buckets.setdefault(files.bucket(memory.slug), {})[name] = blob.id

    for n in range(OTHERS):
        put(Memory(f"note-{n}", f"note {n}", f"what note {n} says\n" * 5))
    lines = [f"line {n} as first written" for n in range(40)]
    parent = None
    for i in range(1, REVISIONS + 1):
        put(journal(i, lines))
        op = "create" if i == 1 else "write"
        totals = Totals(OTHERS + 1, 0, 0)
        facts = Facts((Edited(SLUG, op, i),), totals, totals, {})
        commit, more = gitmem_commit(parent, {k: dict(v) for k, v in buckets.items()}, facts)
        objects.extend(more)
        parent = commit.id
    raw.object_store.add_objects([(o, None) for o in objects])
    assert parent is not None
    raw.refs[Ref(b"refs/heads/" + STORE.encode())] = parent
    raw.close()
    return repo


def median(fn: Callable[[], Any]) -> tuple[float, float]:
    """The median wall and CPU seconds of ``fn`` (CPU: this process's and its children's)."""
    walls: list[float] = []
    cpus: list[float] = []
    for _ in range(RUNS):
        before = cpu()
        start = time.perf_counter()
        fn()
        walls.append(time.perf_counter() - start)
        cpus.append(cpu() - before)
    return statistics.median(walls), statistics.median(cpus)


def cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def row(label: str, figures: tuple[float, float], base: tuple[float, float] | None) -> str:
    wall, used = figures
    text = f"  {label:<27}{wall * 1000:8.1f} ms wall {used * 1000:8.1f} ms cpu"
    if base is not None:
        text += f"  {wall / base[0]:.2f}x wall {used / base[1]:.2f}x cpu"
    return text


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        user = install(os.path.join(tmp, "install"))
        print(user.describe())
        path = os.path.join(tmp, "mem.git")
        repo = build(path)
        file = files.memory_path(SLUG)
        git = ["git", f"--git-dir={path}", "blame", "--porcelain", STORE, "--", file]
        ours = [user.gitmem, "--repo", path, "blame", SLUG, "--store", STORE]

        def run(argv: list[str]) -> str:
            done = subprocess.run(argv, env=GIT_ENV, check=True, capture_output=True)
            return done.stdout.decode()

        said: dict[int, str] = {}
        for line in run(git).splitlines():
            found = HEADER.match(line)
            if found:
                said[int(found.group(2))] = found.group(1)
        blamed = [b.commit for b in repo.blame(STORE, SLUG) if b.file == "memory"]
        assert blamed == [said[n] for n in sorted(said)], "gitmem and git disagree"
        run(ours)  # the history index is built once, as any first read builds it
        git_s = median(lambda: run(git))
        cli_s = median(lambda: run(ours))
        lib_s = median(lambda: repo.blame(STORE, SLUG))
        floor_s = median(lambda: run([user.python, "-c", "pass"]))
        repo.close()
    print(f"blame of a memory with {REVISIONS:,} revisions ({OTHERS} other memories)")
    print(row("git blame (process)", git_s, None))
    print(row("gitmem blame (process)", cli_s, git_s))
    print(row("Repository.blame (warm)", lib_s, git_s))
    print(row("python -c pass (floor)", floor_s, git_s))
    ratio = cli_s[1] / git_s[1]
    verdict = "met" if ratio <= GOAL else "MISSED"
    print(f"  process, cpu: {ratio:.2f}x git blame; goal <= {GOAL}x: {verdict}")
    room = GOAL * git_s[1] - floor_s[1] - lib_s[1]
    print(
        f"  within the goal, imports may take {room * 1000:.1f} ms cpu past the floor "
        "and the warm blame"
    )


if __name__ == "__main__":
    main()
