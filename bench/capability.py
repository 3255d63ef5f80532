"""Benchmarks of the memories capability (``python bench/capability.py``, well under 2 min).

1. Bind and render the index of a 1,000-memory markdown store (goal: <= 20 ms).
2. ``search_memories`` over 10,000 memories of about 500 characters (goal: median <= 5 ms),
   beside ``git grep -i -c`` over a checkout of the same tree (goal: >= 10x faster).
3. ``notices()`` for a holder 100 commits behind.

The big stores are written directly with dulwich in gitmem's layout, as one commit with
gitmem's trailers, so building them takes seconds rather than thousands of fsynced
mutations; the notice benchmark makes its 100 commits through the holder.
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
from gitmem.types import Memory

STORE = "profile/bench"
WORDS = [
    "alpha",
    "bravo",
    "cluster",
    "deploy",
    "staging",
    "rollout",
    "config",
    "secret",
    "token",
    "parser",
    "vendor",
    "export",
    "column",
    "header",
    "quote",
    "retry",
    "backoff",
    "queue",
    "worker",
    "cache",
    "index",
    "shard",
    "replica",
    "leader",
    "follower",
    "latency",
    "budget",
    "error",
    "envelope",
    "cursor",
    "page",
    "limit",
    "offset",
    "schema",
    "migration",
    "table",
    "column",
    "trigger",
    "lambda",
    "bucket",
    "region",
    "zone",
    "subnet",
    "gateway",
    "proxy",
    "route",
    "policy",
]
GIT_ENV = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}


def capability(implementation: str, scope: str = "shared") -> Capability:
    params = {
        "scope": scope,
        "maxCount": 0,
        "maxLenPerMemory": 0,
        "maxTotalLen": 0,
        "maxLenIndex": 0,
        "maxLenDescription": 0,
        "maxResults": 25,
    }
    return Capability.from_dict(
        {"id": "memories", "enabled": True, "implementation": implementation, "params": params}
    )


def text(rng: random.Random, size: int) -> str:
    words: list[str] = []
    length = 0
    while length < size:
        word = rng.choice(WORDS)
        words.append(word)
        length += len(word) + 1
    return " ".join(words)[:size]


def build_store(path: str, count: int, body_chars: int, *, named: bool = False) -> Repository:
    """A repository whose store ``STORE`` holds ``count`` memories, in one gitmem commit
    (naming each memory if ``named``: see ``seeding.write_store``)."""
    rng = random.Random(count)

    def memories() -> Iterator[Memory]:
        for i in range(count):
            body = text(rng, body_chars)
            # two rare words, in about 1% of memories each, for a selective query
            for word, every in (("canary", 97), ("pagination", 89)):
                if i % every == 0:
                    at = rng.randrange(body_chars // 2)
                    body = (body[:at] + f" {word} " + body[at:])[:body_chars]
            yield Memory(f"note-{i:05d}", f"{rng.choice(WORDS)} notes, number {i}", body)

    return write_store(path, STORE, memories(), named=named)


def samples(fn: Callable[[], object], n: int) -> list[float]:
    out: list[float] = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1000)
    return out


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def bench_index(tmp: str) -> None:
    path = os.path.join(tmp, "index.git")
    build_store(path, 1_000, 300).close()
    cap = capability("markdown")
    counter = iter(range(1_000_000))

    def cold() -> None:
        with Repository.open(path) as repo:
            holder = repo.bind(cap, Agent("bench", f"reader-{next(counter)}"))
            assert holder is not None
            block = holder.pinned_block()
            assert block.count("\n") == 999

    repo = Repository.open(path)
    binds: list[float] = []
    renders: list[float] = []
    for _ in range(16):
        start = time.perf_counter()
        holder = repo.bind(cap, Agent("bench", f"reader-{next(counter)}"))
        bound = time.perf_counter()
        assert holder is not None
        holder.pinned_block()
        binds.append((bound - start) * 1000)
        renders.append((time.perf_counter() - bound) * 1000)
    repo.close()
    cold_ms = statistics.median(samples(cold, 15))
    bind_ms, render_ms = statistics.median(binds[1:]), statistics.median(renders[1:])
    print("1. bind + render the index of a 1,000-memory markdown store")
    print(f"   fresh Repository.open + bind + pinned_block   median {cold_ms:7.2f} ms")
    print(f"   on an open repository: bind                   median {bind_ms:7.2f} ms")
    print(f"   on an open repository: pinned_block           median {render_ms:7.2f} ms")
    total = bind_ms + render_ms
    print(
        f"   bind + render on an open repository           {total:7.2f} ms   goal <= 20 ms: {verdict(total <= 20)}"
    )


def bench_search(tmp: str) -> None:
    path = os.path.join(tmp, "search.git")
    start = time.perf_counter()
    repo = build_store(path, 10_000, 500)
    built = time.perf_counter() - start
    holder = repo.bind(capability("keyword-search"), Agent("bench", "searcher"))
    assert holder is not None
    queries = {
        "selective (2 rare keywords, ~200 hits)": ["Canary", "pagination"],
        "broad (2 common keywords, ~all 10,000 match)": ["rollout", "envelope"],
    }
    checkout = os.path.join(tmp, "checkout")
    subprocess.run(
        ["git", "clone", "-q", "--branch", STORE, path, checkout], check=True, env=GIT_ENV
    )
    print(f"2. search_memories over 10,000 memories of ~500 characters (built in {built:.1f} s)")
    first = True
    for label, keywords in queries.items():

        def search(keywords: list[str] = keywords) -> None:
            result = holder.call("search_memories", {"keywords": keywords})
            assert result.ok and result.text.count("\n- `") == 25, result.text[:200]

        def grep(keywords: list[str] = keywords) -> None:
            args = [a for k in keywords for a in ("-e", k)]
            subprocess.run(
                ["git", "grep", "-i", "-c", *args],
                cwd=checkout,
                check=True,
                capture_output=True,
                env=GIT_ENV,
            )

        if first:
            cold_ms = samples(search, 1)[0]
            print(f"   first call on a new head (reads and lowers the corpus) {cold_ms:8.2f} ms")
            first = False
        ms = statistics.median(samples(search, 50))
        grep()
        grep_ms = statistics.median(samples(grep, 15))
        ratio = grep_ms / ms
        print(f"   {label}")
        print(f"     search_memories        median {ms:7.2f} ms   goal <= 5 ms: {verdict(ms <= 5)}")
        print(f"     git grep -i -c         median {grep_ms:7.2f} ms")
        print(
            f"     git grep / search      {ratio:7.1f}x       goal >= 10x: {verdict(ratio >= 10)}"
        )
    repo.close()


def bench_notices(tmp: str) -> None:
    path = os.path.join(tmp, "notices.git")
    cap = capability("markdown")
    timings: list[float] = []
    lines = 0
    with Repository.init(path) as repo:
        writer = repo.bind(cap, Agent("team", "writer"))
        assert writer is not None
        for i in range(20):
            assert writer.call(
                "create_memory", {"name": f"base-{i}", "description": "d", "body": "x"}
            ).ok
        for round_ in range(3):
            reader = repo.bind(cap, Agent("team", f"reader-{round_}"))
            assert reader is not None and reader.notices() is None
            for i in range(100):
                if i % 2:
                    args = {"name": f"r{round_}-{i}", "description": f"new {i}", "body": "b"}
                    assert writer.call("create_memory", args).ok
                else:
                    slug = f"base-{i % 20}"
                    args = {"name": slug, "old_text": "x", "new_text": "x", "description": f"v{i}"}
                    assert writer.call("edit_memory", args).ok
            start = time.perf_counter()
            notice = reader.notices()
            timings.append((time.perf_counter() - start) * 1000)
            assert notice is not None
            lines = sum(1 for line in notice.split("\n") if line.startswith("- "))
    print("3. notices() for a holder 100 commits behind (markdown, shared store)")
    print(
        f"   notices()                              median {statistics.median(timings):7.2f} ms"
        f"   ({lines} lines for 100 commits)"
    )


def main() -> None:
    tmp = tempfile.mkdtemp(prefix="gitmem-bench-capability-")
    try:
        bench_index(tmp)
        bench_search(tmp)
        bench_notices(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
