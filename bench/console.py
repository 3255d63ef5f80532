"""Benchmark of the console's Memories panel (``make bench``): the JSON of
``GET /api/stores/<store>/memories`` for a store of 10,000 memories with 50,000
revisions, beside ``git log --numstat`` on the same branch in the same run.

Goal: the panel's JSON in <= 100 ms. The console keeps a ``Ledger`` per store that
follows the head, so the figure that matters is a request after the store moved
(one new revision); the first request of a process folds every revision once and is
reported too.

The store is written in gitmem's layout by ``git fast-import`` (the same commits, trees
and trailers), so building it takes seconds rather than 50,000 fsynced writes.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

from starlette.testclient import TestClient

from gitmem import Author, Memory, Repository, Totals, ops
from gitmem.adapters.console import Console
from gitmem.store import memoryfiles as files
from gitmem.store.message import Edited, Facts, format_message

STORE = "profile/bench"
MEMORIES = int(os.environ.get("BENCH_MEMORIES", "10000"))
REVISIONS = int(os.environ.get("BENCH_REVISIONS", "50000"))
AUTHOR = Author.agent("bench")


def body(i: int, k: int) -> str:
    return f"memory {i}, revision {k}: " + "lorem ipsum dolor sit amet " * (2 + (i * 7 + k) % 9)


def build(path: str) -> None:
    """``MEMORIES`` creates, then edits and deletes (and re-creates) up to ``REVISIONS``
    revisions, one gitmem commit each, fed to ``git fast-import``."""
    Repository.init(path).close()
    live: dict[str, Memory] = {}
    revision: dict[str, int] = {}
    count = chars = lines = 0
    peaks = Totals()
    now = int(time.time()) - REVISIONS
    ident = AUTHOR.ident()
    importer = subprocess.Popen(
        ["git", f"--git-dir={path}", "fast-import", "--quiet"], stdin=subprocess.PIPE
    )
    assert importer.stdin is not None
    out = importer.stdin
    for n in range(REVISIONS):
        i = n % MEMORIES
        slug = f"m{i:05d}"
        old = live.get(slug)
        if n >= MEMORIES and old is not None and n % 23 == 0:
            op, new = "delete", None
            del live[slug]
        else:
            op = "create" if old is None else "edit"
            new = live[slug] = Memory(slug, f"memory number {i}", body(i, n // MEMORIES))
        count += (new is not None) - (old is not None)
        chars += (new.chars if new else 0) - (old.chars if old else 0)
        lines += (new.lines if new else 0) - (old.lines if old else 0)
        totals = Totals(count, chars, lines)
        peaks = peaks.peak(totals)
        revision[slug] = revision.get(slug, 0) + 1
        message = format_message(Facts((Edited(slug, op, revision[slug]),), totals, peaks, {}))
        where = files.memory_path(slug).encode()
        out.write(b"commit refs/heads/" + STORE.encode() + b"\n")
        stamp = f" {now + n} +0000\n".encode()
        out.write(b"author " + ident + stamp + b"committer " + ident + stamp)
        out.write(b"data %d\n%s\n" % (len(message), message))
        if new is None:
            out.write(b"D " + where + b"\n")
        else:
            data = files.encode(new)[slug + files.MD]
            out.write(b"M 100644 inline " + where + b"\ndata %d\n%s\n" % (len(data), data))
    out.close()
    if importer.wait() != 0:
        raise SystemExit("git fast-import failed")
    # gitmem's own packing stores objects whole; so does this repack (no delta chains)
    subprocess.run(
        ["git", f"--git-dir={path}", "repack", "-a", "-d", "-f", "-q", "--window=0", "--depth=0"],
        check=True,
    )


def ms(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def median(samples: list[float]) -> float:
    return statistics.median(samples)


def main() -> None:
    started = time.perf_counter()
    work = tempfile.mkdtemp(prefix="gitmem-bench-console-")
    try:
        path = os.path.join(work, "console.git")
        print(
            f"gitmem console benchmark: the Memories panel's JSON, {MEMORIES:,} memories, "
            f"{REVISIONS:,} revisions (python {sys.version.split()[0]})"
        )
        t = time.perf_counter()
        build(path)
        print(f"   store built in {time.perf_counter() - t:.1f} s")

        first = Repository.open(path)
        index = ms(lambda: first.revisions(STORE, "m00000"))
        first.close()
        print(f"   history index built from the commits (once per repository): {index:8.1f} ms")

        repo = Repository.open(path)
        console = Console(repo, token="bench", port=8765, author=Author("Bench Operator", "b@x"))
        client = TestClient(
            console.asgi(),
            base_url="http://127.0.0.1:8765",
            headers={"Authorization": "Bearer bench"},
        )
        url = f"/api/stores/{STORE}/memories"
        size = 0

        def get() -> None:
            nonlocal size
            response = client.get(url)
            assert response.status_code == 200, response.text
            size = len(response.content)

        cold = ms(get)
        rows = len(client.get(url).json())
        unchanged = median([ms(get) for _ in range(10)])
        writer = Repository.open(path)
        moved: list[float] = []
        for k in range(10):
            slug = f"m{(k * 997) % MEMORIES:05d}"
            if slug in writer.snapshot(STORE):
                ops.edit(writer, STORE, AUTHOR, slug, body=f"rewritten {k}\n")
            else:
                ops.create(writer, STORE, AUTHOR, slug, "back", f"re-created {k}\n")
            moved.append(ms(get))
        writer.close()
        after_write = median(moved)

        def numstat() -> None:
            subprocess.run(
                ["git", f"--git-dir={path}", "log", "--numstat", "--format=%H %an", STORE],
                capture_output=True,
                check=True,
            )

        peer = median([ms(numstat) for _ in range(3)])
        print(f"   panel rows: {rows:,} memories ever held; JSON {size / 1024:.0f} KiB")
        print(f"   first request of a process (folds {REVISIONS:,} revisions): {cold:8.1f} ms")
        print(f"   request after the store moved by one revision:            {after_write:8.1f} ms")
        print(f"   request with the store unchanged:                         {unchanged:8.1f} ms")
        print(f"   git log --numstat on the same branch:                     {peer:8.1f} ms")
        goal = after_write <= 100
        print(
            f"   ratio after-write / git log --numstat = {after_write / peer:.3f}x; "
            f"cold / git log = {cold / peer:.2f}x   (goal <= 100 ms: "
            f"{'met' if goal else 'MISSED'})"
        )
        client.close()
        repo.close()
        print(f"\ntotal bench time {time.perf_counter() - started:.0f} s")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
