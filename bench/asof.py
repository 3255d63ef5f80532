"""Reading the past: ``gitmem show SLUG --at COMMIT`` beside ``gitmem show SLUG`` at the
head, on a store of 10,000 commits, each a whole process (goal: <= 1.2x the head read).

The moment is a commit half way back (its short id), and a date of that commit; a
``git show COMMIT:PATH`` of the same commit is printed beside them as the plain-git
peer. Medians of alternating runs, after a warm-up of each, so that load on the machine
falls on both alike; wall-clock time with the CPU time (user + system) beside it.
``gitmem`` is a user's install from the wheel (see ``installed.py``: the dev venv's
editable install adds its import finder to every start), and the interpreter's own
start (``python -c pass``) of that install is printed as the floor under both.
"""

from __future__ import annotations

import os
import tempfile
import time
from datetime import UTC, datetime

from cold import RUNS, STORE, line, median, pair, run
from installed import install
from store import build_history

from gitmem import Repository

GOAL = 1.2
PAIRS = 21
"""Runs of each side of a ratio: two processes of about 50 ms each, where one run of
nine moves a median by a tenth."""


def main() -> None:
    with tempfile.TemporaryDirectory() as work:
        user = install(os.path.join(work, "install"))
        print(user.describe())
        path = os.path.join(work, "history.git")
        started = time.perf_counter()
        target = "target"
        build_history(path, 10_000, target)
        with Repository.open(path) as repo:
            commits = list(repo.iter_commits(STORE))
            middle = commits[len(commits) // 2]
            stamp = datetime.fromtimestamp(
                repo.revisions(STORE, target, middle)[-1].time, UTC
            ).strftime("%Y-%m-%dT%H:%M:%SZ")
            memory_path = repo.path(STORE, target)
        print(
            "as-of show at 10,000 commits "
            f"(built in {time.perf_counter() - started:.1f} s; {PAIRS} runs of each side of a ratio)"
        )
        show = [user.gitmem, "--repo", path, "show", "-s", STORE, target]
        run(show)  # the history index, built once as any first read builds it
        head, past = pair(show, [*show, "--at", middle[:12]], PAIRS)
        _ratio("gitmem show SLUG --at COMMIT", past, head)
        head, dated = pair(show, [*show, "--at", stamp], PAIRS)
        _ratio("gitmem show SLUG --at DATE", dated, head)
        git = ["git", f"--git-dir={path}", "show", f"{middle}:{memory_path}"]
        ours, peer = pair([*show, "--at", middle[:12]], git)
        line("gitmem show --at COMMIT", ours, peer, "git show COMMIT:PATH", 120)
        bare = median([run([user.python, "-c", "pass"]) for _ in range(RUNS)])
        print(f"   {'the floor: python -c pass':<34} {bare[0]:8.1f} ms (cpu {bare[1]:7.1f})")


def _ratio(label: str, past: tuple[float, float], head: tuple[float, float]) -> None:
    ratio = past[0] / head[0]
    print(
        f"   {label:<34} {past[0]:8.1f} ms (cpu {past[1]:7.1f})   head show "
        f"{head[0]:8.1f} ms (cpu {head[1]:7.1f})   ratio {ratio:5.2f}x   goal <= {GOAL:g}x: "
        f"{'met' if ratio <= GOAL else 'MISSED'}"
        f" (on cpu: {'met' if past[1] / head[1] <= GOAL else 'MISSED'})"
    )


if __name__ == "__main__":
    main()
