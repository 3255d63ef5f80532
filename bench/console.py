"""Benchmark of the console's Memories panel (``make bench``): the JSON of
``GET /api/stores/<store>/memories`` for a store of 10,000 memories with 50,000
revisions, beside ``git log --numstat`` on the same branch in the same run.

Goals, each printed with its figure, the peer's, the ratio and met/missed:

- the first request of a fresh process, on a store read before (its derived files
  kept beside the objects): <= 1 s;
- the first request of a fresh process after a fresh clone (no derived files): <= 1 s.
  With nothing kept, the panel answers at once from the head's listing while the
  history is read on a thread of its own (the interim form); the time until the
  history is complete (the panel polled until it answers in the completed form) is
  printed beside ``git log --numstat``, which reads as much;
- a request after the store moved by one revision: <= 100 ms.

The machine these run on is shared: CPU time is quoted beside wall time, and is the
steadier figure. A first request is timed inside its own process (the request alone),
and the whole process (interpreter start, imports, opening the store) is timed from
outside, as the peer is.

The store is written in gitmem's layout by ``git fast-import`` (``seeding.write_history``)
and kept in the temporary folder (``BENCH_CACHE`` names another) for the next run; each
run starts from a copy of it with no derived files, which is what a fresh clone has.

``python bench/console.py --profile`` profiles the fold of the first request after a
fresh clone instead (by CPU time, the steadier figure on a shared machine) and prints
where it goes.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

from figures import timed
from seeding import AUTHOR, write_history

STORE = "profile/bench"
MEMORIES = int(os.environ.get("BENCH_MEMORIES", "10000"))
REVISIONS = int(os.environ.get("BENCH_REVISIONS", "50000"))
URL = f"/api/stores/{STORE}/memories"


def body(i: int, k: int) -> str:
    return f"memory {i}, revision {k}: " + "lorem ipsum dolor sit amet " * (2 + (i * 7 + k) % 9)


def cached_store() -> str:
    """The seeded store, built once and kept for later runs (it has no derived files)."""
    folder = os.environ.get("BENCH_CACHE") or os.path.join(
        tempfile.gettempdir(), f"gitmem-bench-console-{MEMORIES}-{REVISIONS}-1"
    )
    path = os.path.join(folder, "console.git")
    if not os.path.exists(os.path.join(folder, "complete")):
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        started = time.perf_counter()
        write_history(path, STORE, MEMORIES, REVISIONS, body)
        open(os.path.join(folder, "complete"), "w").close()
        print(f"   store built in {time.perf_counter() - started:.1f} s (kept in {folder})")
    else:
        print(f"   store kept from an earlier run: {folder}")
    return path


def fresh_clone(source: str, target: str) -> None:
    """A copy of ``source`` as a clone has it: the objects (hard-linked: never written
    in place) and refs, and none of the derived files."""

    def copy(src: str, dst: str) -> object:
        if os.sep + "objects" + os.sep in src:
            os.link(src, dst)
            return dst
        return shutil.copy2(src, dst)

    shutil.copytree(source, target, copy_function=copy)
    derived = os.path.join(target, "gitmem")
    for name in os.listdir(derived):
        found = os.path.join(derived, name)
        if os.path.isdir(found):
            shutil.rmtree(found)
            os.mkdir(found)  # the folder itself is the layout's
        else:
            os.remove(found)


def client_for(path: str) -> tuple[Any, Any, Any]:
    from starlette.testclient import TestClient

    from gitmem import Author, Repository
    from gitmem.adapters.console import Console

    repo = Repository.open(path)
    console = Console(repo, token="bench", port=8765, author=Author("Bench Operator", "b@x"))
    client = TestClient(
        console.asgi(),
        base_url="http://127.0.0.1:8765",
        headers={"Authorization": "Bearer bench"},
    )
    return repo, console, client


POLL = 1.0
"""How often the first process asks again while the panel answers in the interim form
(as the console's page does)."""


def first_request(path: str) -> None:
    """In a process of its own: the first request, timed; then the panel asked again
    until it answers in the completed form, the time until then (from the first
    request's start, CPU of the whole process: the fold's thread too) and the completed
    answer's digest printed."""
    repo, _, client = client_for(path)
    wall0, cpu0 = time.perf_counter(), time.process_time()
    response = client.get(URL)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    assert response.status_code == 200, response.text
    # the interim form is an object, the completed one an array: told by the first byte
    interim = response.content.startswith(b"{")
    polls = 0
    while response.content.startswith(b"{"):
        assert b'"state": "reading"' in response.content[:200], response.content[:200]
        time.sleep(POLL)
        polls += 1
        response = client.get(URL)
        assert response.status_code == 200, response.text
    whole, whole_cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    digest = hashlib.sha256(response.content).hexdigest()
    said = {
        "wall": wall * 1000,
        "cpu": cpu * 1000,
        "interim": interim,
        "complete_wall": whole * 1000,
        "complete_cpu": whole_cpu * 1000,
        "polls": polls,
        "digest": digest,
    }
    print(json.dumps(said))
    client.close()
    repo.close()


def profile() -> None:
    """The fold a first request after a fresh clone runs (``Ledger.follow``: the request
    itself runs on the test client's thread, out of a profiler's sight), profiled by
    CPU time: where the time goes."""
    import cProfile
    import pstats

    from gitmem import Repository, ops

    work = tempfile.mkdtemp(prefix="gitmem-bench-console-")
    try:
        path = os.path.join(work, "clone.git")
        fresh_clone(cached_store(), path)
        repo = Repository.open(path)
        profiler = cProfile.Profile(time.process_time)
        cpu = time.process_time()
        profiler.enable()
        ops.Ledger(STORE).follow(repo)
        profiler.disable()
        cpu = time.process_time() - cpu
        print(f"the fold of a first request after a fresh clone: cpu {fmt(cpu * 1000).strip()}")
        stats = pstats.Stats(profiler)
        stats.sort_stats("tottime").print_stats(20)
        stats.sort_stats("cumulative").print_stats(25)
        repo.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def process(args: list[str]) -> tuple[float, float, str]:
    """Run a process; its wall and CPU milliseconds (from outside), and what it printed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    done = subprocess.run(args, capture_output=True, check=True, text=True)
    wall = time.perf_counter() - wall
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall * 1000, cpu * 1000, done.stdout


def fmt(ms: float) -> str:
    return f"{ms / 1000:7.2f} s " if ms >= 1000 else f"{ms:7.1f} ms"


def main() -> None:
    started = time.perf_counter()
    print(
        f"gitmem console benchmark: the Memories panel's JSON, {MEMORIES:,} memories, "
        f"{REVISIONS:,} revisions (python {sys.version.split()[0]}; a shared machine: "
        "figures are indicative, CPU the steadier)"
    )
    source = cached_store()
    work = tempfile.mkdtemp(prefix="gitmem-bench-console-")
    try:
        path = os.path.join(work, "clone.git")
        fresh_clone(source, path)

        def numstat() -> tuple[float, float, str]:
            git = ["git", f"--git-dir={path}", "log", "--numstat", "--format=%H %an", STORE]
            return process(git)

        peers = [numstat()[:2] for _ in range(3)]
        peer = (statistics.median(p[0] for p in peers), statistics.median(p[1] for p in peers))

        child = [sys.executable, os.path.abspath(__file__), "--first", path]
        firsts: dict[str, tuple[float, float, float, float]] = {}
        completes: dict[str, tuple[float, float, bool]] = {}
        digests: set[str] = set()
        for name in ("fresh clone", "fresh process"):
            # the fresh clone's process leaves the derived files the next one reads
            wall, cpu, out = process(child)
            said = json.loads(out.strip().splitlines()[-1])
            digests.add(said["digest"])
            firsts[name] = (said["wall"], said["cpu"], wall, cpu)
            completes[name] = (said["complete_wall"], said["complete_cpu"], said["interim"])

        repo, _, client = client_for(path)
        rows = len(client.get(URL).json())
        unchanged = [timed(lambda: client.get(URL)) for _ in range(10)]
        digests.add(hashlib.sha256(client.get(URL).content).hexdigest())

        from gitmem import Repository, ops

        writer = Repository.open(path)
        moved: list[tuple[float, float]] = []
        for k in range(10):
            slug = f"m{(k * 997) % MEMORIES:05d}"
            if slug in writer.snapshot(STORE):
                ops.edit(writer, STORE, AUTHOR, slug, body=f"rewritten {k}\n")
            else:
                ops.create(writer, STORE, AUTHOR, slug, "back", f"re-created {k}\n")
            moved.append(timed(lambda: client.get(URL)))
        writer.close()
        client.close()
        repo.close()

        def med(samples: list[tuple[float, float]]) -> tuple[float, float]:
            return statistics.median(s[0] for s in samples), statistics.median(
                s[1] for s in samples
            )

        after, still = med(moved), med(unchanged)
        print(f"   panel rows: {rows:,} memories ever held")
        print(f"   {'':44} {'wall':>10} {'cpu':>10}   whole process (wall / cpu)")
        for name, (wall, cpu, pwall, pcpu) in firsts.items():
            form = "interim form" if completes[name][2] else "completed form"
            print(
                f"   first request, {name + ':':28} {fmt(wall)} {fmt(cpu)}   {fmt(pwall)} / {fmt(pcpu)}"
                f"   ({form})"
            )
            whole = completes[name]
            print(
                f"   {'  history complete, ' + name + ':':44} {fmt(whole[0])} {fmt(whole[1])}"
                "   (from the first request, fold thread included)"
            )
        print(
            f"   {'request after the store moved one revision:':44} {fmt(after[0])} {fmt(after[1])}"
        )
        print(f"   {'request with the store unchanged:':44} {fmt(still[0])} {fmt(still[1])}")
        print(
            f"   {'git log --numstat on the same branch:':44} {fmt(peer[0])} {fmt(peer[1])}   (a process)"
        )
        print(
            "   same JSON from the fresh clone, the fresh process and a warm console: "
            f"{'yes' if len(digests) == 1 else 'NO'}"
        )
        goals = [
            ("first request, fresh process", firsts["fresh process"][:2], 1000.0),
            ("first request, fresh clone", firsts["fresh clone"][:2], 1000.0),
            ("request after a write", after, 100.0),
        ]
        for name, (wall, cpu), goal in goals:
            verdict = "met" if wall <= goal else "MISSED"
            print(
                f"   {name}: {fmt(wall).strip()} (cpu {fmt(cpu).strip()}) vs git log --numstat "
                f"{fmt(peer[0]).strip()} (cpu {fmt(peer[1]).strip()}): {wall / peer[0]:.3f}x wall, "
                f"{cpu / peer[1]:.3f}x cpu; goal <= {fmt(goal).strip()}: {verdict}"
            )
        wall, cpu, _ = completes["fresh clone"]
        print(
            f"   history complete after a fresh clone: {fmt(wall).strip()} (cpu {fmt(cpu).strip()}) "
            f"vs git log --numstat {fmt(peer[0]).strip()} (cpu {fmt(peer[1]).strip()}): "
            f"{wall / peer[0]:.3f}x wall, {cpu / peer[1]:.3f}x cpu"
        )
        print(f"\ntotal bench time {time.perf_counter() - started:.0f} s")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--first"]:
        first_request(sys.argv[2])
    elif sys.argv[1:2] == ["--profile"]:
        profile()
    else:
        main()
