"""The cold process: what a fresh ``gitmem`` costs, beside ``git`` in the same run.

1. ``gitmem ls`` / ``show`` / ``log SLUG`` / ``state`` on a 10,000-memory store, each a
   whole process (goal: <= 120 ms each), beside ``git ls-tree -r``, ``git show
   BRANCH:PATH`` and ``git log -- PATH``; with what the interpreter and the imports alone
   cost, and one ``ls`` of a store changed since its listing was kept.
2. ``gitmem search`` on the same store as a process (goal: <= 150 ms), beside
   ``git grep -i -c`` over the branch.
   Each command of 1 and 2 is also run beside ``python -c pass``, the interpreter alone
   (goal: <= 4x): the interpreter of a plain venv with the wheel installed, as a user
   has it (see ``installed.py``), whose ``gitmem`` is the one measured; and the first
   ``ls`` and ``search`` of a copy with none of the derived files (the kept listing
   and summaries, the search index: a copy of the objects never synced), beside the
   same command once they are kept (no goal: every clone gets them from its first
   sync, see 5.); and ``search`` after one more write, whose index is then behind the
   head.
3. A cold ``Repository.open`` + one slug's history at 10,000 commits, in this process
   after its imports (goal: <= 20 ms), beside ``git log --format=%H -- PATH``.
4. Building the derived indexes (history and search) from scratch at 10,000 commits
   (goal: <= 1 s), beside ``git rev-list --count`` and ``git log --name-only``.
5. A fresh clone as a teammate makes one: ``git clone`` of a project whose repository
   keeps the 10,000-memory store, then ``gitmem sync``, which makes the store local
   and keeps its listing and search index; the first ``ls`` and first ``search`` after
   it, each in a clone of its own, beside the same once warm (goal: <= 3x), and each
   beside the interpreter (goal: <= 4x).

Each line prints gitmem's figure, the peer's, their ratio, the goal and met/missed.
Medians; the processes alternate so that load on the machine falls on both alike. Each
figure is wall-clock time with the CPU time (user + system) beside it: on a machine
shared with other work the wall time can be many times the CPU time, for git too.
"""

from __future__ import annotations

import glob
import os
import shutil
import tempfile
import time

from capability import build_store
from figures import Figure, median, pair, run, timed
from installed import Installed, install
from seeding import AUTHOR
from store import build_history
from teammate import firsts, project_holding

from gitmem import Repository
from gitmem.search import stored_index
from gitmem.types import Change, Memory

STORE = "profile/bench"
RUNS = 9


def line(label: str, ours: Figure, peer: Figure, peer_name: str, goal: float) -> None:
    """The figures, the ratio of wall times, and the goal judged on the wall time (and,
    for a machine under load, on CPU time too)."""
    print(
        f"   {label:<34} {ours[0]:8.1f} ms (cpu {ours[1]:7.1f})   {peer_name:<28} "
        f"{peer[0]:8.1f} ms (cpu {peer[1]:7.1f})   ratio {ours[0] / peer[0]:6.2f}x   "
        f"goal <= {goal:g} ms: {'met' if ours[0] <= goal else 'MISSED'}"
        f" (on cpu: {'met' if ours[1] <= goal else 'MISSED'})"
    )


def floor(label: str, ours: list[str], python: list[str]) -> None:
    """``ours`` beside the bare interpreter in the same run (goal: <= 4x)."""
    a, b = pair(ours, python)
    ratio = a[0] / b[0]
    print(
        f"   {label:<34} {a[0]:8.1f} ms (cpu {a[1]:7.1f})   {'python -c pass':<28} "
        f"{b[0]:8.1f} ms (cpu {b[1]:7.1f})   ratio {ratio:6.2f}x   goal <= 4x: "
        f"{'met' if ratio <= 4 else 'MISSED'} (on cpu: {'met' if a[1] <= 4 * b[1] else 'MISSED'})"
    )


def first(label: str, cold: Figure, warm: Figure, *, goal: bool = True) -> None:
    """A fresh clone's first run of a command beside its warm figure (goal: <= 3x; or,
    without ``goal``, the ratio alone)."""
    ratio = cold[0] / warm[0]
    judged = (
        f"goal <= 3x: {'met' if ratio <= 3 else 'MISSED'}"
        f" (on cpu: {'met' if cold[1] <= 3 * warm[1] else 'MISSED'})"
        if goal
        else "no goal: a clone's first sync keeps them (see 5.)"
    )
    print(
        f"   {label:<34} {cold[0]:8.1f} ms (cpu {cold[1]:7.1f})   {'the same, warm':<28} "
        f"{warm[0]:8.1f} ms (cpu {warm[1]:7.1f})   ratio {ratio:6.2f}x   {judged}"
    )


def fresh_clone(path: str) -> None:
    """Leave ``path`` as a fresh clone has it: the store's objects and refs, and none of
    the derived files gitmem keeps beside them (its folder for them is left empty)."""
    meta = os.path.join(path, "gitmem")
    for name in os.listdir(meta):
        at = os.path.join(meta, name)
        shutil.rmtree(at) if os.path.isdir(at) else os.remove(at)


def note(label: str, figure: Figure) -> None:
    print(f"   {label:<58} {figure[0]:8.1f} ms (cpu {figure[1]:7.1f})")


def bench_commands(work: str, user: Installed) -> None:
    path = os.path.join(work, "cold.git")
    t = time.perf_counter()
    repo = build_store(path, 10_000, 500)
    slug = "note-04242"
    for i in range(10):  # a few revisions for `log SLUG` to list
        memory = Memory(slug, "a memory with a history", f"revision {i}\n")
        repo.mutate(STORE, AUTHOR, lambda _, m=memory: Change("edit", slug, m))
    memory_path = repo.path(STORE, slug)
    repo.close()
    print(
        f"1. commands as processes on a 10,000-memory store (built in {time.perf_counter() - t:.1f} s)"
    )
    gitmem = [user.gitmem, "--repo", path]
    git = ["git", f"--git-dir={path}"]
    branch = f"refs/heads/{STORE}"
    cases = [
        (
            "gitmem ls",
            [*gitmem, "ls", "-s", STORE],
            [*git, "ls-tree", "-r", "--name-only", branch],
            "git ls-tree -r",
        ),
        (
            "gitmem show SLUG",
            [*gitmem, "show", "-s", STORE, slug],
            [*git, "show", f"{branch}:{memory_path}"],
            "git show BRANCH:PATH",
        ),
        (
            "gitmem log SLUG",
            [*gitmem, "log", "-s", STORE, slug],
            [*git, "log", branch, "--", memory_path],
            "git log -- PATH",
        ),
    ]
    cases.append(
        (
            "gitmem state",
            [*gitmem, "state", "-s", STORE],
            [*git, "ls-tree", "-r", "-l", branch],
            "git ls-tree -r -l",
        )
    )
    python = [user.python, "-c"]
    note(
        "python -c pass (the interpreter alone)",
        median([run([*python, "pass"]) for _ in range(RUNS)]),
    )
    note(
        "python -c 'import gitmem.cli' (the interpreter and the imports)",
        median([run([*python, "import gitmem.cli"]) for _ in range(RUNS)]),
    )
    fresh_clone(path)
    cold_ls = run(cases[0][1])
    note("first gitmem ls (reads every memory, keeps summaries and listing)", cold_ls)
    for label, ours, peer, peer_name in cases:
        a, b = pair(ours, peer)
        line(label, a, b, peer_name, 120)
    for label, ours, _, _ in cases:
        floor(label, ours, [*python, "pass"])
    first(
        "first gitmem ls, nothing kept",
        cold_ls,
        median([run(cases[0][1]) for _ in range(RUNS)]),
        goal=False,
    )
    repo = Repository.open(path)
    memory = Memory("note-00007", "changed since the listing", "a new body\n")
    repo.mutate(STORE, AUTHOR, lambda _: Change("edit", memory.slug, memory))
    repo.close()
    note("gitmem ls after one more write (walks the new tree)", run(cases[0][1]))

    print("2. search as a process on the same store (25 hits)")
    search = [*gitmem, "search", "-s", STORE, "--limit", "25"]
    fresh_clone(path)
    cold_search = run([*search, "rollout"])
    note("first search (builds and writes the stored index)", cold_search)
    grep = [*git, "grep", "-i", "-c"]
    for label, keywords in (
        ("selective", ["canary", "pagination"]),
        ("broad", ["rollout", "envelope"]),
    ):
        a, b = pair(
            [*search, *keywords], [*grep, *(x for k in keywords for x in ("-e", k)), branch]
        )
        line(f"gitmem search ({label})", a, b, "git grep -i -c BRANCH", 150)
        floor(f"gitmem search ({label})", [*search, *keywords], [user.python, "-c", "pass"])
    warm = median([run([*search, "rollout"]) for _ in range(RUNS)])
    first("first gitmem search, nothing kept", cold_search, warm, goal=False)
    repo = Repository.open(path)
    memory = Memory("note-00011", "changed since the index", "a rollout of a new body\n")
    repo.mutate(STORE, AUTHOR, lambda _: Change("edit", memory.slug, memory))
    repo.close()
    after = median([run([*search, "rollout"]) for _ in range(RUNS)])
    note("gitmem search after one more write (catches the index up)", after)


def bench_history(work: str) -> None:
    path = os.path.join(work, "history.git")
    t = time.perf_counter()
    target = "target"
    build_history(path, 10_000, target)
    print(
        f"3. cold open + one slug's history at 10,000 commits (built in {time.perf_counter() - t:.1f} s)"
    )
    with Repository.open(path) as repo:
        count = len(repo.revisions(STORE, target))  # the index, built once
        memory_path = repo.path(STORE, target)
    samples: list[Figure] = []
    for _ in range(RUNS):

        def cold() -> None:
            with Repository.open(path) as fresh:
                fresh.revisions(STORE, target)

        samples.append(timed(cold))
    git = ["git", f"--git-dir={path}"]
    branch = f"refs/heads/{STORE}"
    peer = median(
        [run([*git, "log", "--format=%H", branch, "--", memory_path]) for _ in range(RUNS)]
    )
    print(f"   ({count} revisions)")
    line(
        "Repository.open + revisions(slug)",
        median(samples),
        peer,
        "git log --format=%H -- PATH",
        20,
    )

    print("4. building the derived indexes from scratch at 10,000 commits")
    builds: list[Figure] = []
    searches: list[Figure] = []
    for _ in range(3):
        for name in glob.glob(os.path.join(path, "gitmem", "history", "*")):
            os.remove(name)
        shutil.rmtree(os.path.join(path, "gitmem", "search"), ignore_errors=True)
        with Repository.open(path) as fresh:
            builds.append(timed(lambda fresh=fresh: fresh.revisions(STORE, target)))
            searches.append(timed(lambda fresh=fresh: stored_index(fresh, STORE)))
    history = median(builds)
    search = median(searches)
    rev_list = median([run([*git, "rev-list", "--count", branch]) for _ in range(3)])
    names = median([run([*git, "log", "--name-only", branch]) for _ in range(3)])
    note("history index (walk of 10,000 commits + one slug's blobs)", history)
    note("search index (the head's memories, written to disk)", search)
    both = (history[0] + search[0], history[1] + search[1])
    line("both, from scratch", both, rev_list, "git rev-list --count", 1000)
    line("both, from scratch", both, names, "git log --name-only", 1000)


def bench_clone(work: str, user: Installed) -> None:
    """A teammate's clone (see ``teammate.py``): its first ``ls`` and first ``search``,
    each in a clone of its own, beside the same once warm (goal: <= 3x), and the warm
    ones beside the interpreter (goal: <= 4x)."""
    source = os.path.join(work, "source.git")
    t = time.perf_counter()
    repo = build_store(source, 10_000, 500, named=True)
    memory = Memory("note-00003", "a store in use", "its head names one memory\n")
    repo.mutate(STORE, AUTHOR, lambda _: Change("edit", memory.slug, memory))
    repo.close()
    project = project_holding(source, STORE, os.path.join(work, "project"))
    print(
        "5. a teammate's clone: git clone of a project holding the store, then gitmem sync "
        f"(built in {time.perf_counter() - t:.1f} s)"
    )
    commands = {
        "ls": ["ls", "-s", STORE],
        "search": ["search", "-s", STORE, "--limit", "25", "rollout"],
    }
    sync, found, last = firsts(user, project, work, commands, RUNS)
    note("gitmem sync (the store received whole, its listing and index kept)", sync)
    python = [user.python, "-c", "pass"]
    for name, (cold, warm) in found.items():
        first(f"first gitmem {name} after the sync", cold, warm)
        floor(f"gitmem {name} in the clone", [user.gitmem, "--repo", last, *commands[name]], python)


def main() -> None:
    started = time.perf_counter()
    work = tempfile.mkdtemp(prefix="gitmem-cold-")
    try:
        user = install(os.path.join(work, "install"))
        print(user.describe())
        bench_commands(work, user)
        bench_history(work)
        bench_clone(work, user)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\ntotal bench time {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
