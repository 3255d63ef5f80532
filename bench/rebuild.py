"""Part 2 of ``bench/scale.py``: a store's derived indexes rebuilt from scratch, in a
fresh process (``python bench/rebuild.py PATH STORE together|apart`` prints the figures
as JSON).

``together`` builds them as a fresh clone's first sync keeps them
(``gitmem.sync.keep_derived``: the search index, and the listing its sweep makes, here,
the history index in a forked child on the other core); ``apart`` builds each alone, as
the first command that needs it would, one after the other: what each costs.

A clone's first commands build them in a process of their own; measured in the bench's
process instead, grown by the parts before it, the same build takes longer, its
collections and its forked helper's copied pages going over that heap.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable

from figures import Figure

from gitmem import Repository

HISTORY = "history index (every commit + one slug's blobs)"
TOGETHER = "all of them, as a clone's first sync keeps them"


def forget_derived(path: str) -> None:
    """Leave ``path`` as a fresh clone has it: none of the derived files gitmem keeps."""
    meta = os.path.join(path, "gitmem")
    for name in os.listdir(meta):
        at = os.path.join(meta, name)
        shutil.rmtree(at) if os.path.isdir(at) else os.remove(at)


def rebuild(path: str, store: str, how: str) -> dict[str, Figure]:
    """The derived indexes built from scratch ``how`` (``together`` or ``apart``), in a
    fresh process (as a fresh clone's first commands build them: not in this one, whose
    heap the earlier parts have grown and whose collector they have aged)."""
    forget_derived(path)
    done = subprocess.run(
        [sys.executable, __file__, path, store, how], capture_output=True, text=True
    )
    if done.returncode:
        sys.exit(f"the rebuild of {path} failed:\n{done.stderr}")
    return {label: (wall, cpu) for label, wall, cpu in json.loads(done.stdout)}


def _spent(fn: Callable[[], object]) -> tuple[float, float]:
    """``fn``'s wall-clock time and CPU time in ms, a forked helper's CPU counted in."""
    before, start = os.times(), time.perf_counter()
    fn()
    after = os.times()
    cpu = sum(after[:4]) - sum(before[:4])  # user and system, this process's and children's
    return (time.perf_counter() - start) * 1000, cpu * 1000


def rebuilt_here(path: str, store: str, how: str) -> list[tuple[str, float, float]]:
    """``rebuild`` in this process."""
    from gitmem.search import stored_index
    from gitmem.sync import keep_derived

    found: list[tuple[str, float, float]] = []
    with Repository.open(path) as repo:
        if how == "together":
            found.append((TOGETHER, *_spent(lambda: keep_derived(repo, store))))
            return found
        found.append((HISTORY, *_spent(lambda: repo.revisions(store, "m00000"))))
        found.append(
            (
                "search index (every memory, written to disk)",
                *_spent(lambda: stored_index(repo, store)),
            )
        )
        found.append(
            ("listing and summaries (every memory, kept)", *_spent(lambda: repo.summaries(store)))
        )
    return found


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[3] not in ("together", "apart"):
        sys.exit("usage: rebuild.py PATH STORE together|apart")
    print(json.dumps(rebuilt_here(*sys.argv[1:])))
