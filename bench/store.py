"""Benchmarks of the store engine, measured side by side in one run (``make bench``).

1. Mutation latency on stores of 100, 1,000 and 10,000 memories (goal: 10k <= 1.5x 100).
2. gitmem's commit against pygit2 (libgit2) and the ``git`` CLI making the same commit:
   blob, fan-out subtree, root tree, commit, ref update (goal: <= 1.3x pygit2 with fsync
   on; gitmem writes the objects as one pack, pygit2 as loose objects). The
   content is new to the store, so every peer writes all four objects (checked).
3. History of one slug at 10,000 commits: ``Repository.revisions(store, slug)`` warm and
   cold against ``git log --format=%H -- <path>`` (goal: <= 20 ms).

The big stores are written directly with dulwich in gitmem's layout (one pack), so the
run takes a couple of minutes rather than the time of 10,000 fsynced mutations.
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
from typing import Any

import pygit2
from dulwich.objects import Blob, ShaFile
from dulwich.repo import Repo
from seeding import AUTHOR, GIT_ENV, gitmem_commit, write_store

from gitmem import Memory, Repository, Totals
from gitmem.store import memoryfiles as files
from gitmem.store.message import Edited, Facts
from gitmem.types import Change

STORE = "profile/bench"
REF = b"refs/heads/" + STORE.encode()
WRITES = 40


def body(i: int, salt: str = "") -> str:
    return f"memory {i}{salt}: " + "lorem ipsum dolor sit amet " * 6 + "\n" * 3


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def build_store(path: str, count: int) -> Repository:
    """A gitmem repository whose store holds ``count`` memories, written in one commit."""
    return write_store(
        path, STORE, (Memory(f"m{i:05d}", f"memory number {i}", body(i)) for i in range(count))
    )


def write_change(slug: str, text: str) -> Callable[[Any], Change]:
    memory = Memory(slug, "rewritten", text)
    return lambda _: Change("write", slug, memory)


Writer = Callable[[int], float]  # makes write number k, returns the seconds it took


def slug_for(k: int, count: int) -> str:
    return f"m{(k * 7919) % count:05d}"


def gitmem_writer(repo: Repository, count: int, salt: str = "w") -> Writer:
    def write(k: int) -> float:
        slug = slug_for(k, count)
        fn = write_change(slug, body(k, salt))
        start = time.perf_counter()
        repo.mutate(STORE, AUTHOR, fn)
        return time.perf_counter() - start

    return write


WARMUP = 5


def interleaved(writers: dict[str, Writer], writes: int, warmup: int = WARMUP) -> dict[str, float]:
    """Median milliseconds per writer, taking turns so that disk weather hits all alike."""
    samples: dict[str, list[float]] = {name: [] for name in writers}
    for k in range(warmup + writes):
        for name, write in writers.items():
            elapsed = write(k)
            if k >= warmup:  # the first writes warm caches and the history index
                samples[name].append(elapsed)
    return {name: median_ms(values) for name, values in samples.items()}


# -- peers making the same commit ----------------------------------------------------


def pygit2_writer(path: str, count: int, fsync: bool, salt: str) -> Writer:
    repo = pygit2.Repository(path)
    sig = pygit2.Signature(AUTHOR.name, AUTHOR.email, 0, 0)

    def write(k: int) -> float:
        slug = slug_for(k, count)
        data = files.encode(Memory(slug, "rewritten", body(k, salt)))[slug + files.MD]
        bucket = files.bucket(slug)
        pygit2.option(pygit2.GIT_OPT_ENABLE_FSYNC_GITDIR, int(fsync))
        start = time.perf_counter()
        ref = repo.references[REF.decode()]
        head = ref.target
        root = repo[head].tree
        blob = repo.create_blob(data)
        sub = repo.TreeBuilder(root[bucket])
        sub.insert(slug + files.MD, blob, pygit2.GIT_FILEMODE_BLOB)
        top = repo.TreeBuilder(root)
        top.insert(bucket, sub.write(), pygit2.GIT_FILEMODE_TREE)
        commit = repo.create_commit(None, sig, sig, f"write {slug}\n", top.write(), [head])
        ref.set_target(commit)
        return time.perf_counter() - start

    return write


def git(path: str, *args: str, data: bytes | None = None, config: tuple[str, ...] = ()) -> str:
    cfg = [a for c in config for a in ("-c", c)]
    return subprocess.run(
        ["git", *cfg, f"--git-dir={path}", *args],
        input=data,
        capture_output=True,
        check=True,
        env=GIT_ENV,
    ).stdout.decode()


def git_cli_writer(path: str, count: int, config: tuple[str, ...], salt: str) -> Writer:
    def write(k: int) -> float:
        slug = slug_for(k, count)
        data = files.encode(Memory(slug, "rewritten", body(k, salt)))[slug + files.MD]
        bucket = files.bucket(slug)
        start = time.perf_counter()
        head = git(path, "rev-parse", STORE, config=config).strip()
        blob = git(path, "hash-object", "-w", "--stdin", data=data, config=config).strip()
        sub_entries = [
            line
            for line in git(path, "ls-tree", f"{head}:{bucket}", config=config).splitlines()
            if not line.endswith("\t" + slug + files.MD)
        ]
        sub_entries.append(f"100644 blob {blob}\t{slug}{files.MD}")
        sub = git(path, "mktree", data="\n".join(sub_entries).encode() + b"\n", config=config)
        root_entries = [
            line
            for line in git(path, "ls-tree", head, config=config).splitlines()
            if not line.endswith("\t" + bucket)
        ]
        root_entries.append(f"040000 tree {sub.strip()}\t{bucket}")
        root = git(path, "mktree", data="\n".join(root_entries).encode() + b"\n", config=config)
        message = f"write {slug}"
        commit = git(path, "commit-tree", root.strip(), "-p", head, "-m", message, config=config)
        # update-ref with the old value is git's compare-and-swap
        git(path, "update-ref", REF.decode(), commit.strip(), head, config=config)
        return time.perf_counter() - start

    return write


def loose_objects(path: str) -> int:
    """How many loose objects ``path`` holds (gitmem writes none: a peer wrote them)."""
    objects = os.path.join(path, "objects")
    return sum(
        len(os.listdir(os.path.join(objects, d))) for d in os.listdir(objects) if len(d) == 2
    )


def without_fsync(write: Writer) -> Writer:
    def patched(k: int) -> float:
        real = os.fsync
        os.fsync = lambda fd: None
        try:
            return write(k)
        finally:
            os.fsync = real

    return patched


def cpu_split(write: Writer, writes: int) -> tuple[float, float]:
    """Milliseconds of user and system CPU per write over ``writes`` writes (a write that
    combines packs included, as one in PACK_LIMIT does)."""
    before = os.times()
    for k in range(writes):
        write(k)
    after = os.times()
    return (
        (after.user - before.user) / writes * 1000,
        (after.system - before.system) / writes * 1000,
    )


def load() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


# -- a long history --------------------------------------------------------------------


def build_history(path: str, commits: int, target: str) -> Repository:
    """A store of ``commits`` gitmem commits over 50 slugs; ``target`` every 100th commit."""
    repo = Repository.init(path)
    raw = Repo(path)
    buckets: dict[str, dict[str, bytes]] = {}
    memories: dict[str, Memory] = {}
    revisions: dict[str, int] = {}
    objects: list[ShaFile] = []
    peaks = Totals()
    parent: bytes | None = None
    for i in range(commits):
        slug = target if i % 100 == 0 else f"s{i % 50:02d}"
        op = "edit" if slug in memories else "create"
        memory = Memory(slug, f"{slug} as of commit {i}", body(i))
        memories[slug] = memory
        revisions[slug] = revisions.get(slug, 0) + 1
        blob = Blob.from_string(files.encode(memory)[slug + files.MD])
        objects.append(blob)
        buckets.setdefault(files.bucket(slug), {})[slug + files.MD] = blob.id
        totals = Totals(
            len(memories),
            sum(m.chars for m in memories.values()),
            sum(m.lines for m in memories.values()),
        )
        peaks = peaks.peak(totals)
        facts = Facts((Edited(slug, op, revisions[slug]),), totals, peaks, {})
        commit, more = gitmem_commit(parent, buckets, facts)
        objects.extend(more)
        parent = commit.id
    unique = {o.id: o for o in objects}
    raw.object_store.add_objects([(o, None) for o in unique.values()])
    assert parent is not None
    raw.refs[REF] = parent
    raw.close()
    return repo


# -- the run -----------------------------------------------------------------------------


def main() -> None:
    started = time.perf_counter()
    work = tempfile.mkdtemp(prefix="gitmem-bench-")
    try:
        git_version = subprocess.run(["git", "--version"], capture_output=True, text=True)
        print(
            f"gitmem store benchmark (python {sys.version.split()[0]}, pygit2 "
            f"{pygit2.__version__} / libgit2 {pygit2.LIBGIT2_VERSION}, {git_version.stdout.strip()})"
        )
        print(f"median of {WRITES} writes each, on {work}; load average {load()}\n")

        print("1. mutation latency by store size (writes taking turns across the stores)")
        sizes = (100, 1_000, 10_000)
        repos: dict[int, Repository] = {}
        for count in sizes:
            t = time.perf_counter()
            repos[count] = build_store(os.path.join(work, f"size-{count}.git"), count)
            print(f"   store of {count:,} memories built in {time.perf_counter() - t:.1f} s")
        by_size = interleaved({str(c): gitmem_writer(repos[c], c) for c in sizes}, WRITES)
        for count in sizes:
            print(f"   {count:>6,} memories: {by_size[str(count)]:6.2f} ms/write")
        ratio = by_size["10000"] / by_size["100"]
        print(f"   ratio 10,000 / 100 = {ratio:.2f}x   (goal <= 1.5x: {verdict(ratio <= 1.5)})\n")

        print("2. the same commit by gitmem, pygit2 and the git CLI (store of 1,000 memories)")
        base = os.path.join(work, "size-1000.git")
        copies: dict[str, str] = {}
        for name in ("gitmem", "gitmem-nofsync", "pygit2", "pygit2-fsync", "git", "git-fsync"):
            copies[name] = os.path.join(work, f"peer-{name}.git")
            shutil.copytree(base, copies[name])
        fsync_cfg = ("core.fsync=committed", "core.fsyncMethod=fsync")
        # Section 1 wrote body(k, "w") to this very store, and a peer that finds an
        # object already stored does not write it again: with that content pygit2 and
        # git wrote only the commit, one object where gitmem writes four. A salt no
        # earlier write used makes every peer write the whole commit.
        salt = "peer"
        peers: list[tuple[str, Writer, str]] = [
            (
                "gitmem mutate",
                gitmem_writer(Repository.open(copies["gitmem"]), 1_000, salt),
                "one pack; fsyncs in 3 flushes: pack+index+ref lock, pack dir, ref dir; flock; CAS",
            ),
            (
                "gitmem, fsync patched out",
                without_fsync(
                    gitmem_writer(Repository.open(copies["gitmem-nofsync"]), 1_000, salt)
                ),
                "same code, os.fsync a no-op: the Python cost alone",
            ),
            (
                "pygit2 (libgit2 default)",
                pygit2_writer(copies["pygit2"], 1_000, fsync=False, salt=salt),
                "no fsync at all (libgit2 default)",
            ),
            (
                "pygit2, fsync on",
                pygit2_writer(copies["pygit2-fsync"], 1_000, fsync=True, salt=salt),
                "ENABLE_FSYNC_GITDIR: fsyncs each loose object and its folder, and the ref",
            ),
            (
                "git CLI (default)",
                git_cli_writer(copies["git"], 1_000, (), salt),
                "7 processes; default fsyncs no loose object, no ref",
            ),
            (
                "git CLI, core.fsync=committed",
                git_cli_writer(copies["git-fsync"], 1_000, fsync_cfg, salt),
                "fsyncs loose objects and refs, not directories",
            ),
        ]
        peer_ms = interleaved({name: w for name, w, _ in peers}, WRITES)
        pygit2.option(pygit2.GIT_OPT_ENABLE_FSYNC_GITDIR, 0)
        for name, _, note in peers:
            print(f"   {name:<30} {peer_ms[name]:7.2f} ms   {note}")
        commits = WARMUP + WRITES
        for name in ("pygit2", "pygit2-fsync", "git", "git-fsync"):
            # blob, subtree, root tree and commit: each peer wrote the whole commit
            written = loose_objects(copies[name])
            assert written == 4 * commits, f"{name} wrote {written} objects for {commits} commits"
        print(f"   each peer wrote 4 loose objects for each of its {commits} commits")
        ours = peer_ms["gitmem mutate"]
        vs_pygit2 = ours / peer_ms["pygit2 (libgit2 default)"]
        vs_pygit2_fsync = ours / peer_ms["pygit2, fsync on"]
        print(
            f"   ratio gitmem / pygit2 (no fsync)     = {vs_pygit2:5.2f}x   "
            "(a durable commit beside one that is not: no goal)"
        )
        print(
            f"   ratio gitmem / pygit2 (fsync on)     = {vs_pygit2_fsync:5.2f}x   "
            f"(goal <= 1.3x: {verdict(vs_pygit2_fsync <= 1.3)})"
        )
        nofsync_ratio = peer_ms["gitmem, fsync patched out"] / peer_ms["pygit2 (libgit2 default)"]
        print(f"   ratio gitmem no-fsync / pygit2       = {nofsync_ratio:5.2f}x")
        print(
            f"   ratio gitmem / git CLI (default)     = {ours / peer_ms['git CLI (default)']:5.2f}x"
        )
        print(
            f"   ratio gitmem / git CLI (fsync)       = "
            f"{ours / peer_ms['git CLI, core.fsync=committed']:5.2f}x"
        )
        user, system = cpu_split(
            without_fsync(gitmem_writer(Repository.open(copies["gitmem-nofsync"]), 1_000, "cpu")),
            320,
        )
        print(
            f"   gitmem CPU per commit (fsync patched out, 320 commits, packs combined as due): "
            f"user {user:.2f} ms, system {system:.2f} ms"
        )
        print(f"   load average {load()}\n")

        print("3. history of one slug at 10,000 commits")
        t = time.perf_counter()
        path = os.path.join(work, "history.git")
        target = "target"
        build_history(path, 10_000, target)
        print(f"   (history built in {time.perf_counter() - t:.1f} s)")
        first = Repository.open(path)
        no_index = timed(lambda: first.revisions(STORE, target))
        count = len(first.revisions(STORE, target))
        warm = median_ms([timed(lambda: first.revisions(STORE, target)) for _ in range(20)])
        cold_samples, cold_open_samples = [], []
        for _ in range(10):
            t = time.perf_counter()
            fresh = Repository.open(path)
            opened = time.perf_counter()
            fresh.revisions(STORE, target)
            cold_samples.append(time.perf_counter() - opened)
            cold_open_samples.append(time.perf_counter() - t)
            fresh.close()
        memory_path = first.path(STORE, target)
        log = median_ms(
            [
                timed(lambda: git(path, "log", "--format=%H", STORE, "--", memory_path))
                for _ in range(5)
            ]
        )
        git_count = len(git(path, "log", "--format=%H", STORE, "--", memory_path).split())
        cold = median_ms(cold_samples)
        print(
            f"   revisions({target!r}) returns {count} revisions; git log finds {git_count} commits"
        )
        print(
            f"   gitmem, index not yet built (walks 10,000 commits once): {no_index * 1000:8.2f} ms"
        )
        print(f"   gitmem warm (same Repository object):                    {warm:8.2f} ms")
        print(
            f"   gitmem cold (fresh Repository, index file present):      {cold:8.2f} ms"
            f"   (with Repository.open: {median_ms(cold_open_samples):.2f} ms)"
        )
        print(f"   git log --format=%H -- <path>:                           {log:8.2f} ms")
        worst = max(warm, cold)
        print(
            f"   ratio gitmem cold / git log = {cold / log:.2f}x   "
            f"(goal <= 20 ms: {verdict(worst <= 20)})"
        )
        print(f"\ntotal bench time {time.perf_counter() - started:.0f} s")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
