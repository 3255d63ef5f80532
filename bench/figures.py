"""What the benchmarks time: a process from start to exit, or a call in this process,
each as wall-clock and CPU (user + system) milliseconds, and the median of several."""

from __future__ import annotations

import resource
import statistics
import subprocess
import time
from collections.abc import Callable, Mapping

from seeding import GIT_ENV

Figure = tuple[float, float]
"""Wall-clock and CPU (user + system) milliseconds."""


def run(args: list[str], stdin: str | None = None, env: Mapping[str, str] = GIT_ENV) -> Figure:
    """One process, start to exit (it must succeed); ``stdin``: a file to read from."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    if stdin is None:
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL, env=env)
    else:
        with open(stdin, "rb") as handle:
            subprocess.run(args, check=True, stdin=handle, stdout=subprocess.DEVNULL, env=env)
    wall = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000


def timed(fn: Callable[[], object]) -> Figure:
    """One call of ``fn`` in this process."""
    start, cpu = time.perf_counter(), time.process_time()
    fn()
    return (time.perf_counter() - start) * 1000, (time.process_time() - cpu) * 1000


def median(figures: list[Figure]) -> Figure:
    """The median wall-clock time and the median CPU time, each on its own."""
    return statistics.median(f[0] for f in figures), statistics.median(f[1] for f in figures)


def pair(
    ours: list[str],
    peer: list[str],
    runs: int = 9,
    stdin: str | None = None,
    env: Mapping[str, str] = GIT_ENV,
) -> tuple[Figure, Figure]:
    """Medians of ``ours`` (given ``stdin`` and ``env``) and ``peer`` run alternately,
    after one warm-up run each, so that load on the machine falls on both alike."""
    run(ours, stdin, env)
    run(peer)
    a: list[Figure] = []
    b: list[Figure] = []
    for _ in range(runs):
        a.append(run(ours, stdin, env))
        b.append(run(peer))
    return median(a), median(b)
