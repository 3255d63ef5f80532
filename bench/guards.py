"""Benchmark of the write guards (``make bench``), each beside its peer in the same run.

1. Secret scanning: the scan of a 4 KB note (``gitmem.secrets.scan``) beside the
   write it guards (``repo.mutate`` of that note, fsynced). Goal: the scan <= 0.5 ms.
   A note made only of words the detectors start at shows the slow path.
2. The pre-receive hook: ``git push`` of 1,000 store commits to a bare repository
   with gitmem's hook installed, beside the same push to one without (``git
   receive-pack`` alone). Goal: the hook adds at most as much as receive-pack takes
   (ratio <= 2.0x), by wall-clock time and by CPU time (user + system of every
   process the push runs: on a machine shared with other work the CPU ratio is the
   steadier one). The store's last 500 commits pushed onto a server that has the rest
   show a push onto a published store, whose fan-out folders are there before it; 50
   commits pushed onto a store of 10,000, whose line the push before them kept (see
   ``gitmem.store.lineage``), show what a push costs on a store with a long history. A
   push of the project's own ``main`` shows what the hook costs a ref
   that is not a store's (it does not load gitmem). The hook is installed by, and runs
   in, a user's install of the wheel (``installed.py``: the development venv's
   editable-install finder would add its own start to every hook process).
"""

from __future__ import annotations

import compileall
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from figures import median
from installed import Installed, install
from seeding import AUTHOR, GIT_ENV
from store import build_history

import gitmem
from gitmem import Memory, Repository
from gitmem.secrets import scan
from gitmem.types import Change

COMMITS = 1_000
LATER = 500
"""The store's last commits pushed onto a server that has the rest."""
LONG = 10_000
"""Commits of the long store a few more are pushed onto."""
LAST = 50
"""Commits of each push onto it."""
RUNS = 9
PLAIN = [
    *[
        "the",
        "deploy",
        "staging",
        "cluster",
        "rolls",
        "nodes",
        "one",
        "at",
        "a",
        "time",
        "drain",
        "pool",
        "check",
        "health",
    ],
    *[
        "then",
        "restore",
        "traffic",
        "rotation",
        "happens",
        "monthly",
        "see",
        "runbook",
        "commit",
        "3f5a0c9e",
    ],
    "123e4567-e89b-12d3-a456-426614174000",
    "`x=foo(bar)`",
    "def parse(rows): return rows[1:]",
    "sha256 9b2a7c4d3e1f0a8b6c5d4e3f2a1b0c9d",
    "release-1.2.3",
    "handleAccountRenewalEvent",
]
# every word an anchor or keyword of a detector: the scanner's slow path on every word
DENSE = [
    *[
        "password",
        "token",
        "secret",
        "api_key",
        "access_key",
        "credential",
        "ghost",
        "glass",
        "xoxo",
    ],
    "https://example.com/docs",
    "sk-learn",
    "AKIA-prefix",
    "eyJ-less",
    "npm_",
    "pypi-",
]


def body_4k(seed: int, words: list[str]) -> str:
    rng = random.Random(seed)
    chosen: list[str] = []
    while sum(len(w) + 1 for w in chosen) < 4096:
        chosen.append(rng.choice(words))
    return " ".join(chosen)[:4096]


def git(cwd: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args], cwd=cwd, env=GIT_ENV, check=True, capture_output=True, text=True
    )


def scan_ms(bodies: list[str]) -> float:
    """Median ms of one scan of one of ``bodies``."""
    runs: list[float] = []
    for _ in range(5):
        start = time.perf_counter()
        for text in bodies:
            if list(scan(text)):
                raise AssertionError("the benchmark bodies must hold no secret")
        runs.append((time.perf_counter() - start) / len(bodies))
    return statistics.median(runs) * 1000


def bench_scan(work: str) -> tuple[float, float, float]:
    """Median ms of one scan of a 4 KB note (typical, and dense with the detectors'
    anchors), and of one write of such a note."""
    plain = [body_4k(i, PLAIN) for i in range(200)]
    dense = [body_4k(i, DENSE) for i in range(200)]
    writes: list[float] = []
    with Repository.init(os.path.join(work, "scan.git")) as repo:
        for i, text in enumerate(plain[:100]):
            memory = Memory(f"m{i:03d}", "a note", text)
            start = time.perf_counter()
            repo.mutate("notes", AUTHOR, lambda _, m=memory: Change("create", m.slug, m))
            writes.append(time.perf_counter() - start)
    return scan_ms(plain), scan_ms(dense), statistics.median(writes) * 1000


def setup_push(work: str) -> str:
    """A project whose store ``notes`` has 1,000 commits, none pushed yet."""
    project = os.path.join(work, "project")
    git(work, "init", "-q", "-b", "main", "project")
    with open(os.path.join(project, "README.md"), "w") as f:
        f.write("# project\n")
    git(project, "add", "README.md")
    git(project, "commit", "-q", "-m", "first")
    with Repository.init(project) as repo:
        for i in range(COMMITS):
            slug = f"m{i % 200:03d}"
            memory = Memory(slug, f"memory {i % 200}", f"revision {i}\n" + "lorem ipsum\n" * 8)
            repo.mutate("notes", AUTHOR, lambda _, m=memory: Change("write", m.slug, m))
    return project


Figure = tuple[float, float]
"""Wall-clock and CPU (user + system of the push's processes) seconds."""


def timed_push(project: str, server: str, *refs: str) -> Figure:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    git(project, "push", "-q", server, *refs)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu


Figures = tuple[Figure, Figure, Figure, Figure, Figure, Figure]


def guard(user: Installed, server: str, *options: str) -> None:
    """Install the user's pre-receive hook into the bare repository ``server``."""
    subprocess.run(
        [user.gitmem, "hooks", "install", "--server", server, *options],
        check=True,
        capture_output=True,
    )


def push_line(label: str, hooked: Figure, plain: Figure) -> str:
    """A push with the hook beside the same push without: the figures, both ratios."""
    return (
        f"{label}: with pre-receive {hooked[0] * 1000:7.0f} ms (CPU {hooked[1] * 1000:.0f} ms)"
        f"   git receive-pack alone {plain[0] * 1000:7.0f} ms (CPU {plain[1] * 1000:.0f} ms)"
        f"   ratio {hooked[0] / plain[0]:.2f}x, CPU {hooked[1] / plain[1]:.2f}x"
    )


def bench_hook(work: str, project: str, user: Installed) -> Figures:
    """Median figures, with the hook and without: the store's push to a new server; a
    push of the project's main; the store's last ``LATER`` commits pushed onto a
    server that has the rest already (every fan-out folder the push writes is there)."""
    figures: dict[str, list[Figure]] = {}
    for run in range(RUNS):
        for kind in ("plain", "hooked"):
            server = os.path.join(work, f"{kind}-{run}.git")
            git(work, "init", "-q", "--bare", server)
            later = os.path.join(work, f"{kind}-{run}-later.git")
            git(work, "init", "-q", "--bare", later)
            git(project, "push", "-q", later, f"gitmem/notes~{LATER}:refs/heads/gitmem/notes")
            if kind == "hooked":
                guard(user, server)
                guard(user, later)
            figures.setdefault(f"{kind} store", []).append(
                timed_push(project, server, "gitmem/notes")
            )
            figures.setdefault(f"{kind} main", []).append(timed_push(project, server, "main"))
            figures.setdefault(f"{kind} later", []).append(
                timed_push(project, later, "gitmem/notes")
            )
            shutil.rmtree(server, ignore_errors=True)
            shutil.rmtree(later, ignore_errors=True)
    store, main, later = (
        (median(figures[f"hooked {name}"]), median(figures[f"plain {name}"]))
        for name in ("store", "main", "later")
    )
    return (*store, *main, *later)


def bench_long(work: str, user: Installed) -> tuple[Figure, Figure]:
    """Median figures, with the hook and without: ``LAST`` commits pushed onto a
    standalone store of ``LONG`` commits, on a server that received the ``LAST`` before
    them by an earlier push (through the hook, on the hooked server)."""
    source = os.path.join(work, "long.git")
    build_history(source, LONG + 2 * LAST, "target").close()
    branch = "profile/bench"
    hooked: list[Figure] = []
    plain: list[Figure] = []
    for run in range(RUNS):
        for kind in ("plain", "hooked"):
            server = os.path.join(work, f"long-{kind}-{run}.git")
            git(work, "init", "-q", "--bare", server)
            git(source, "push", "-q", server, f"{branch}~{2 * LAST}:refs/heads/{branch}")
            if kind == "hooked":
                guard(user, server, "--standalone")
            git(source, "push", "-q", server, f"{branch}~{LAST}:refs/heads/{branch}")
            (hooked if kind == "hooked" else plain).append(timed_push(source, server, branch))
            shutil.rmtree(server, ignore_errors=True)
    return median(hooked), median(plain)


def main() -> None:
    git_version = subprocess.run(["git", "--version"], capture_output=True, text=True)
    print(f"gitmem guards benchmark ({git_version.stdout.strip()})\n")
    # as an installed package is: its modules compiled once (PYTHONDONTWRITEBYTECODE
    # would otherwise make every hook process compile them again)
    compileall.compile_dir(os.path.dirname(gitmem.__file__), quiet=1)
    work = tempfile.mkdtemp(prefix="gitmem-bench-guards-")
    try:
        plain_ms, dense_ms, write_ms = bench_scan(work)
        print(
            f"secret scan of a 4 KB note {plain_ms:6.3f} ms   the write itself {write_ms:6.2f} ms"
            f"   scan / write {plain_ms / write_ms:.3f}x"
            f"   (goal scan <= 0.5 ms: {'met' if plain_ms <= 0.5 else 'MISSED'})"
        )
        print(
            f"the same, every word an anchor or keyword {dense_ms:6.3f} ms"
            f"   scan / write {dense_ms / write_ms:.3f}x"
        )
        project = setup_push(work)
        user = install(os.path.join(work, "install"))
        print(user.describe())
        hooked, plain, main_hooked, main_plain, later_hooked, later_plain = bench_hook(
            work, project, user
        )
        met = "met" if hooked[0] / plain[0] <= 2.0 else "MISSED"
        print(
            push_line(f"push of {COMMITS:,} store commits", hooked, plain)
            + f" (goal <= 2.0x: {met})"
        )
        label = f"push of its last {LATER} commits onto the store published before them"
        print(push_line(label, later_hooked, later_plain))
        long_hooked, long_plain = bench_long(work, user)
        print(
            push_line(f"push of {LAST} commits onto a store of {LONG:,}", long_hooked, long_plain)
        )
        print(
            f"push of the project's main: with pre-receive {main_hooked[0] * 1000:7.0f} ms   "
            f"without {main_plain[0] * 1000:7.0f} ms   ratio {main_hooked[0] / main_plain[0]:.2f}x"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
