"""Flat to 100,000 memories and 100,000 commits (``make bench``), each figure beside its
reference at a smaller size in the same run, as a ratio.

1. A write (``Repository.mutate``) on stores of 100, 10,000 and 100,000 memories, the
   writes taking turns (goal: 100,000 <= 1.5x 100), wall-clock and CPU time.
2. The derived indexes rebuilt from scratch on a store of 100,000 memories and 100,000
   commits, one memory created by each commit (goal: <= 5 s): the history index, the
   search index, and the kept listing and summaries, as a fresh clone's first sync keeps
   them (the history index in a forked child beside the rest), in a fresh process;
   then each alone, one after the other, in another; beside the same at 10,000 / 10,000.
3. ``Repository.open`` + ``sync`` of 100 changes a side on 100,000 memories, beside the
   same on 10,000 (goal: <= 1.5x).
4. ``gitmem ls``, ``state``, ``show SLUG``, ``log SLUG`` and ``search`` as processes,
   and the console's first request of the Memories panel, at 100,000 beside 10,000
   (reported); each process at 100,000 beside ``python -c pass`` run in turn with it
   (goal: <= 4x), both from the wheel installed in a plain venv (see ``installed.py``:
   the development venv's editable install slows every start).
5. A teammate's clone at 100,000 memories beside 10,000: ``git clone`` of a project
   whose own repository keeps the store, then ``gitmem sync`` (reported), then the
   first ``ls`` and ``search`` in the clone beside the same once warm (goal: <= 3x).

``python bench/scale.py --only PART`` runs one part alone, a few runs of each size on
copies of the stores: part 1 (``writes``), part 2 whole, once (``indexes``), a line of
it (``search``, ``listing`` or ``history``, the history beside git's walk of every
commit and the paths it changed), ``sync`` (part 3), ``reads`` (part 4's processes) or
``clone`` (part 5).

The stores are built once into ``$GITMEM_BENCH_FIXTURES`` (a folder in the temporary
directory unless set), one folder per builder and its parameters, and reused by later
runs: every measurement that writes works on a copy. A history is written as one pack
in gitmem's layout and trailers, each tree a delta of the one before (as ``git gc``
stores them; gitmem stores objects whole: reading deltas costs more, not less). On a
quiet machine the stores of 100,000 take under a minute each to build (CPU: the
history about 40 s, the others about 20 s). Medians; the machine may be loaded, so
CPU time is printed beside wall time.
"""

from __future__ import annotations

import bisect
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

from capability import text
from dulwich.objects import ObjectID
from dulwich.refs import Ref
from dulwich.repo import Repo
from figures import Figure, median, run, timed
from installed import install
from rebuild import TOGETHER, forget_derived, rebuild
from seeding import AUTHOR, GIT_ENV, write_store
from teammate import firsts, project_holding

from gitmem import Memory, Repository, Totals
from gitmem.store import memoryfiles as files
from gitmem.store.message import Edited, Facts, format_message
from gitmem.store.objects import BLOB, COMMIT, TREE, object_id
from gitmem.store.packing import Record, write_pack
from gitmem.types import Change

STORE = "profile/bench"
FIXTURES = os.environ.get(
    "GITMEM_BENCH_FIXTURES", os.path.join(tempfile.gettempdir(), "gitmem-bench-fixtures")
)


# -- fixtures, built once and kept -------------------------------------------------------


def fixture(name: str, build: Callable[[str], None]) -> str:
    """The folder of fixture ``name`` (its builder's parameters and version), built by ``build(folder)`` unless a complete one
    is kept from an earlier run (a build cut short is built again)."""
    path = os.path.join(FIXTURES, name)
    if os.path.exists(os.path.join(path, ".complete")):
        return path
    shutil.rmtree(path, ignore_errors=True)
    building = f"{path}.building-{os.getpid()}"
    shutil.rmtree(building, ignore_errors=True)
    os.makedirs(building)
    wall, cpu = time.perf_counter(), _cpu()
    build(building)
    print(
        f"   (fixture {name} built in {time.perf_counter() - wall:.1f} s, "
        f"cpu {_cpu() - cpu:.1f} s; kept in {FIXTURES})"
    )
    open(os.path.join(building, ".complete"), "w").close()
    os.rename(building, path)
    return path


def _cpu() -> float:
    """CPU seconds of this process and its finished children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def copy(source: str, work: str, name: str) -> str:
    """A copy of a fixture's repository to measure on (measuring writes)."""
    target = os.path.join(work, name)
    shutil.copytree(source, target, symlinks=True)
    return target


def body(i: int, salt: str = "") -> str:
    return f"memory {i}{salt}: " + "lorem ipsum dolor sit amet " * 6 + "\n" * 3


def flat_store(count: int) -> str:
    """A store of ``count`` memories written in one commit (as ``bench/store.py``)."""

    def build(folder: str) -> None:
        memories = (Memory(f"m{i:05d}", f"memory number {i}", body(i)) for i in range(count))
        write_store(os.path.join(folder, "repo.git"), STORE, memories).close()

    return os.path.join(fixture(f"flat-{count}-v1", build), "repo.git")


def named_store(count: int) -> str:
    """A store of ``count`` memories written in one commit that names each of them (as a
    sync's checks ask of a store it receives), then one edit: a store a project holds."""

    def build(folder: str) -> None:
        memories = (Memory(f"m{i:05d}", f"memory number {i}", body(i)) for i in range(count))
        with write_store(os.path.join(folder, "repo.git"), STORE, memories, named=True) as repo:
            _edit(repo, 0, " edited once")

    return os.path.join(fixture(f"named-{count}-v1", build), "repo.git")


def history_store(count: int, body_chars: int = 500) -> str:
    """A store whose ``count`` commits each create one memory of about ``body_chars``
    characters (``count`` memories and ``count`` commits); ``m00000`` is edited every
    100th commit instead, so it has a history. Written as one pack, in gitmem's layout
    and trailers, each tree stored as a delta of the tree it replaced (as ``git gc``
    and ``git fast-import`` store them: chains of at most ``DEPTH``), so that a
    history of 100,000 trees of 100,000 memories takes megabytes, not gigabytes."""

    def build(folder: str) -> None:
        path = os.path.join(folder, "repo.git")
        Repository.init(path).close()
        rng = random.Random(count)
        ident = AUTHOR.ident()
        now = int(time.time()) - count
        root = _Tree()
        buckets: dict[bytes, _Tree] = {}
        records: list[Record] = []
        revisions: dict[str, int] = {}
        sizes: dict[str, tuple[int, int]] = {}
        live = chars = lines = 0
        peaks = Totals()
        parent = b""
        for n in range(count):
            slug = "m00000" if n and n % 100 == 0 else f"m{n:05d}"
            memory = Memory(slug, f"notes, number {n}", text(rng, body_chars))
            revisions[slug] = revisions.get(slug, 0) + 1
            op = "create" if revisions[slug] == 1 else "edit"
            live += op == "create"
            old_chars, old_lines = sizes.get(slug, (0, 0))
            sizes[slug] = (memory.chars, memory.lines)
            chars, lines = chars + memory.chars - old_chars, lines + memory.lines - old_lines
            peaks = peaks.peak(Totals(live, chars, lines))
            facts = Facts(
                (Edited(slug, op, revisions[slug]),), Totals(live, chars, lines), peaks, {}
            )
            data = files.encode(memory)[slug + files.MD]
            blob = object_id(BLOB, data)
            records.append((BLOB, data, blob, None))
            name = files.bucket(slug).encode()
            bucket = buckets.setdefault(name, _Tree())
            sub = bucket.put(b"100644 " + slug.encode() + files.MD.encode() + b"\0" + blob, records)
            top = root.put(b"40000 " + name + b"\0" + sub, records)
            stamp = b" %d +0000\n" % (now + n)
            commit = b"".join(
                [
                    b"tree " + top.hex().encode() + b"\n",
                    b"parent " + parent.hex().encode() + b"\n" if parent else b"",
                    b"author " + ident + stamp + b"committer " + ident + stamp + b"\n",
                    format_message(facts),
                ]
            )
            parent = object_id(COMMIT, commit)
            records.append((COMMIT, commit, parent, None))
        with Repo(path) as raw:
            write_pack(os.path.join(path, "objects"), records, len(records), level=1)
            raw.refs[Ref(b"refs/heads/" + STORE.encode())] = ObjectID(parent.hex().encode())

    return os.path.join(fixture(f"history-{count}-{body_chars}-v2", build), "repo.git")


DEPTH = 50
"""The longest chain of tree deltas a fixture writes (git's default)."""


class _Tree:
    """A tree being changed one entry at a time (entries of one mode, so git's order is
    the names' order), each version added as a delta of the one before."""

    def __init__(self) -> None:
        self.names: list[bytes] = []
        self.entries: list[bytes] = []
        self.content = b""
        self.id = b""
        self.depth = 0

    def put(self, entry: bytes, records: list[Record]) -> bytes:
        """Add or replace ``entry`` (``<mode> <name>\\0<id>``); returns the new tree's id."""
        name = entry[entry.index(b" ") + 1 : entry.index(b"\0")]
        i = bisect.bisect_left(self.names, name)
        at = sum(map(len, self.entries[:i]))
        if i < len(self.names) and self.names[i] == name:
            old = len(self.entries[i])
            self.entries[i] = entry
        else:
            old = 0
            self.names.insert(i, name)
            self.entries.insert(i, entry)
        base, base_id = self.content, self.id
        self.content = b"".join(self.entries)
        self.id = object_id(TREE, self.content)
        if not base_id or self.depth >= DEPTH:
            self.depth = 0
            records.append((TREE, self.content, self.id, None))
        else:
            self.depth += 1
            delta = [_varint(len(base)), _varint(len(self.content))]
            if at:
                delta.append(_copy(0, at))
            delta.append(bytes([len(entry)]) + entry)
            if len(base) > at + old:
                delta.append(_copy(at + old, len(base) - at - old))
            records.append((TREE, b"".join(delta), self.id, base_id))
        return self.id


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _copy(offset: int, size: int) -> bytes:
    """A git delta's copy instruction (``size`` below 64 KiB: a tree of a fixture)."""
    assert 0 < size < 0x10000
    command, args = 0x80, bytearray()
    for i in range(4):
        if (offset >> (8 * i)) & 0xFF:
            command |= 1 << i
            args.append((offset >> (8 * i)) & 0xFF)
    for i in range(2):
        if (size >> (8 * i)) & 0xFF:
            command |= 0x10 << i
            args.append((size >> (8 * i)) & 0xFF)
    return bytes([command]) + args


def sync_setup(count: int, changes: int = 100) -> str:
    """Replica ``b`` (remote ``origin``) of a store of ``count`` memories, ``changes``
    memories changed on it, one commit each, while replica ``a`` pushed as many others
    to ``origin``: ``b``'s next sync fetches, merges and pushes. The folder holds ``a``,
    ``b`` and ``origin.git``."""

    def build(folder: str) -> None:
        a, b, origin = (os.path.join(folder, n) for n in ("a", "b", "origin.git"))
        memories = (Memory(f"m{i:05d}", f"memory number {i}", body(i)) for i in range(count))
        write_store(a, STORE, memories).close()
        _git(folder, "clone", "-q", "--bare", a, origin)
        shutil.copytree(a, b)
        for path in (a, b):
            _git(path, "remote", "add", "origin", origin)
        with Repository.open(a) as ra, Repository.open(b) as rb:
            for i in range(changes):
                _edit(ra, i, " changed on a")
                _edit(rb, count - 1 - i, " changed on b")
            ra.sync("origin")

    return fixture(f"sync-{count}-{changes}-v1", build)


def _git(cwd: str, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, env=GIT_ENV, check=True, capture_output=True, text=True
    ).stdout


def _edit(repo: Repository, i: int, salt: str) -> None:
    slug = f"m{i:05d}"
    memory = Memory(slug, f"memory number {i}", body(i, salt))
    repo.mutate(STORE, AUTHOR, lambda _: Change("edit", slug, memory))


# -- measuring ----------------------------------------------------------------------------


def show(label: str, figure: Figure) -> str:
    return f"{label} {figure[0]:9.1f} ms (cpu {figure[1]:8.1f})"


def judged(ours: Figure, reference: Figure, goal: float) -> str:
    """The ratio of wall times and of CPU times, and the goal judged on each."""
    wall, cpu = ours[0] / reference[0], ours[1] / reference[1]
    return (
        f"ratio {wall:5.2f}x (cpu {cpu:5.2f}x)   goal <= {goal:g}x: "
        f"{'met' if wall <= goal else 'MISSED'} (on cpu: {'met' if cpu <= goal else 'MISSED'})"
    )


def load() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


# -- 1. writes ------------------------------------------------------------------------------

WRITES = 40
WARMUP = 5


def bench_writes(work: str) -> None:
    sizes = (100, 10_000, 100_000)
    print(f"1. a write by store size (median of {WRITES}, the stores taking turns)")
    repos = {n: Repository.open(copy(flat_store(n), work, f"flat-{n}.git")) for n in sizes}
    samples: dict[int, list[Figure]] = {n: [] for n in sizes}
    for k in range(WARMUP + WRITES):
        for n in sizes:
            slug = f"m{(k * 7919) % n:05d}"
            memory = Memory(slug, "rewritten", body(k, "w"))
            figure = timed(
                lambda r=repos[n], s=slug, m=memory: r.mutate(
                    STORE, AUTHOR, lambda _: Change("write", s, m)
                )
            )
            if k >= WARMUP:
                samples[n].append(figure)
    for repo in repos.values():
        repo.close()
    figures = {n: median(samples[n]) for n in sizes}
    for n in sizes:
        print(f"   {n:>7,} memories: {show('', figures[n])}")
    print(f"   100,000 / 100: {judged(figures[100_000], figures[100], 1.5)}")
    print(f"   load average {load()}\n")


# -- 2. the derived indexes from scratch -----------------------------------------------------


def bench_indexes(work: str) -> dict[int, str]:
    """Part 2 on copies of the stores, so that no run leaves derived files (a kept fold,
    a search index) in the fixtures for the next run to find: every derived index as a
    fresh clone's first sync keeps them (judged), then each alone, as the first command
    that needs it builds it (what each costs), each way in a fresh process."""
    sizes = (10_000, 100_000)
    print("2. the derived indexes rebuilt from scratch (N memories, each created by a commit)")
    paths = {n: copy(history_store(n), work, f"indexes-{n}.git") for n in sizes}
    together = {n: rebuild(paths[n], STORE, "together")[TOGETHER] for n in sizes}
    apart = {n: rebuild(paths[n], STORE, "apart") for n in sizes}
    for n in sizes:
        print(f"   {n:,} memories / {n:,} commits")
        print(f"      {show(f'{TOGETHER:<52}', together[n])}")
        for label, figure in apart[n].items():
            print(f"      {show(f'  {label:<50}', figure)}")
        one_by_one = (
            sum(f[0] for f in apart[n].values()),
            sum(f[1] for f in apart[n].values()),
        )
        print("      " + show(f"{'  each alone, one after the other':<52}", one_by_one))
    for label, figure in peers(paths[100_000]).items():
        print("   " + show(f"{label + ' (100,000)':<55}", figure))
    wall, cpu = together[100_000]
    growth = wall / together[10_000][0], cpu / together[10_000][1]
    print(
        f"   100,000 from scratch: {wall / 1000:.2f} s (cpu {cpu / 1000:.2f} s, over both cores)"
        f"   goal <= 5 s: {'met' if wall <= 5000 else 'MISSED'};"
        f" 100,000 / 10,000: {growth[0]:.2f}x (cpu {growth[1]:.2f}x)"
    )
    print(f"   load average {load()}\n")
    return paths


LISTING_RUNS = 3


def bench_listing(work: str) -> None:
    """Only the listing's line of 2: ``Repository.summaries`` with nothing kept."""
    sizes = (10_000, 100_000)
    print(f"2. the listing and summaries built from scratch (median of {LISTING_RUNS})")
    paths = {n: copy(history_store(n), work, f"listing-{n}.git") for n in sizes}
    samples: dict[int, list[Figure]] = {n: [] for n in sizes}
    for _ in range(LISTING_RUNS):
        for n in sizes:
            forget_derived(paths[n])
            with Repository.open(paths[n]) as repo:
                samples[n].append(timed(lambda repo=repo: repo.summaries(STORE)))
    figures = {n: median(samples[n]) for n in sizes}
    for n in sizes:
        print(f"   {n:>7,} memories / {n:,} commits: {show('', figures[n])}")
    big, small = figures[100_000], figures[10_000]
    print(f"   100,000 / 10,000: {big[0] / small[0]:.2f}x (cpu {big[1] / small[1]:.2f}x)")
    print(f"   load average {load()}\n")


def peers(path: str) -> dict[str, Figure]:
    """git on the same store: counting its commits, listing its tree, and walking every
    commit with the paths it changed (what a history index from scratch does at most)."""
    branch = f"refs/heads/{STORE}"
    git = ["git", f"--git-dir={path}"]
    return {
        "git rev-list --count": median([run([*git, "rev-list", "--count", branch])]),
        "git ls-tree -r": median([run([*git, "ls-tree", "-r", branch])]),
        "git log --raw --no-renames": median([run([*git, "log", "--raw", "--no-renames", branch])]),
    }


def _linked(source: str, target: str) -> None:
    """A file of a fixture in a copy: linked (no writer changes a file in place), or
    copied across file systems."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


HISTORY_RUNS = 3


def bench_history(work: str) -> None:
    """Only the history index from scratch (``--only history``), on copies of the stores
    (their objects linked, not copied), several runs each, beside git's walks."""
    print(f"2. the history index rebuilt from scratch (median of {HISTORY_RUNS})")
    for n in (10_000, 100_000):
        source = history_store(n)
        samples: list[Figure] = []
        for k in range(HISTORY_RUNS):
            path = os.path.join(work, f"history-{n}-{k}.git")
            shutil.copytree(source, path, copy_function=_linked)
            forget_derived(path)
            with Repository.open(path) as repo:
                samples.append(timed(lambda repo=repo: repo.revisions(STORE, "m00000")))
            shutil.rmtree(path)
        print(f"   {n:,} memories / {n:,} commits: {show('', median(samples))}")
    ours = median(samples)
    for label, figure in peers(history_store(100_000)).items():
        print(
            "   "
            + show(f"{label + ' (100,000)':<40}", figure)
            + f"   history index / this: {ours[0] / figure[0]:5.2f}x (cpu {ours[1] / figure[1]:5.2f}x)"
        )
    print(f"   load average {load()}\n")


# -- 3. sync --------------------------------------------------------------------------------

SYNC_RUNS = 7


def bench_sync(work: str) -> None:
    sizes = (10_000, 100_000)
    print(f"3. Repository.open + sync of 100 changes a side (median of {SYNC_RUNS})")
    setups = {n: sync_setup(n) for n in sizes}
    samples: dict[int, list[Figure]] = {n: [] for n in sizes}
    for k in range(SYNC_RUNS):
        for n in sizes:
            folder = copy(setups[n], work, f"sync-{n}-{k}")
            b = os.path.join(folder, "b")
            _git(b, "remote", "set-url", "origin", os.path.join(folder, "origin.git"))

            def sync(b: str = b) -> None:
                with Repository.open(b) as repo:
                    [report] = repo.sync("origin")
                assert report.merged and report.pushed and not report.conflicts, report

            samples[n].append(timed(sync))
            shutil.rmtree(folder)
    figures = {n: median(samples[n]) for n in sizes}
    for n in sizes:
        print(f"   {n:>7,} memories: {show('', figures[n])}")
    print(f"   100,000 / 10,000: {judged(figures[100_000], figures[10_000], 1.5)}")
    print(f"   load average {load()}\n")


# -- 4. reported: processes and the console's first request ----------------------------------

PROCESS_RUNS = 5


def bench_reads(paths: dict[int, str], work: str) -> None:
    print(
        "4. reads at 100,000 beside 10,000 (warm derived files), reported; and at 100,000 "
        "beside python -c pass, run in turn with them (goal: <= 4x)"
    )
    user = install(os.path.join(work, "install"))
    print(f"   {user.describe()}")
    commands = {
        "gitmem ls": ["ls", "-s", STORE],
        "gitmem state": ["state", "-s", STORE],
        "gitmem show SLUG": ["show", "-s", STORE, "m00042"],
        "gitmem log SLUG": ["log", "-s", STORE, "m00042"],
        "gitmem search": ["search", "-s", STORE, "--limit", "25", "rollout", "envelope"],
    }
    floor = [user.python, "-c", "pass"]
    for label, args in commands.items():
        samples: dict[int, list[Figure]] = {n: [] for n in paths}
        floors: list[Figure] = []
        for path in paths.values():
            for _ in range(2):  # warm: the derived files the first runs keep exist
                run([user.gitmem, "--repo", path, *args])
        for _ in range(PROCESS_RUNS):
            for n, path in paths.items():
                samples[n].append(run([user.gitmem, "--repo", path, *args]))
            floors.append(run(floor))
        small, big = (median(samples[n]) for n in sorted(paths))
        print(
            f"   {label:<18} {show('10,000:', small)}   {show('100,000:', big)}   "
            f"ratio {big[0] / small[0]:5.2f}x (cpu {big[1] / small[1]:5.2f}x)"
        )
        print(
            f"   {'':<18} {show('python -c pass:', median(floors))}   100,000 / floor: "
            f"{judged(big, median(floors), 4)}"
        )
    firsts = {n: console_first(path) for n, path in paths.items()}
    small, big = (firsts[n] for n in sorted(paths))
    print(
        f"   {'console, first':<18} {show('10,000:', small)}   {show('100,000:', big)}   "
        f"ratio {big[0] / small[0]:5.2f}x (cpu {big[1] / small[1]:5.2f}x)"
    )
    print("   (console: the Memories panel's first request in a fresh Repository)")
    print(f"   load average {load()}\n")


# -- 5. a teammate's clone ----------------------------------------------------------------

CLONE_RUNS = 3


def bench_clone(work: str) -> None:
    """A teammate's clone of a project holding the store (see ``teammate.py``), at
    100,000 memories beside 10,000: the sync that makes the store local (reported), and
    the first ``ls`` and ``search`` after it beside the same once warm (goal: <= 3x)."""
    print(
        "5. a teammate's clone: git clone of a project holding the store, gitmem sync, "
        "then the first ls and search beside the same warm (goal: <= 3x)"
    )
    user = install(os.path.join(work, "install-clone"))
    commands = {
        "ls": ["ls", "-s", STORE],
        "search": ["search", "-s", STORE, "--limit", "25", "ipsum"],
    }
    for n in (10_000, 100_000):
        project = project_holding(named_store(n), STORE, os.path.join(work, f"project-{n}"))
        sync, found, last = firsts(user, project, work, commands, CLONE_RUNS)
        print(f"   {n:>7,} memories: {show('gitmem sync', sync)}")
        for name, (cold, warm) in found.items():
            print(
                f"   {'':>16} {show(f'first {name}', cold)}   {show('warm', warm)}   "
                f"{judged(cold, warm, 3)}"
            )
        shutil.rmtree(last)
        shutil.rmtree(project)
    print(f"   load average {load()}\n")


def console_first(path: str) -> Figure:
    from starlette.testclient import TestClient

    from gitmem import Author
    from gitmem.adapters.console import Console

    with Repository.open(path) as repo:
        console = Console(repo, token="bench", port=8765, author=Author("Bench", "b@x"))
        client = TestClient(
            console.asgi(),
            base_url="http://127.0.0.1:8765",
            headers={"Authorization": "Bearer bench"},
        )

        def get() -> None:
            response = client.get(f"/api/stores/{STORE}/memories")
            assert response.status_code == 200, response.text

        figure = timed(get)
        client.close()
    return figure


SEARCH_RUNS = 3


def bench_search_rebuild() -> None:
    """Only the search index of part 2, built from scratch (``--only search``), a few
    times at each size, on copies of the fixtures (whose derived files stay as kept)."""
    from gitmem.search import stored_index

    sizes = (10_000, 100_000)
    print(f"2. the search index rebuilt from scratch (median of {SEARCH_RUNS})")
    work = tempfile.mkdtemp(prefix="gitmem-bench-search-")
    try:
        figures: dict[int, Figure] = {}
        for n in sizes:
            path = copy(history_store(n), work, f"history-{n}.git")
            samples: list[Figure] = []
            for _ in range(SEARCH_RUNS):
                forget_derived(path)
                with Repository.open(path) as repo:
                    repo.head(STORE)
                    samples.append(timed(lambda repo=repo: stored_index(repo, STORE)))
            figures[n] = median(samples)
            print(f"   {n:>7,} memories: {show('', figures[n])}")
        growth = [figures[100_000][i] / figures[10_000][i] for i in (0, 1)]
        print(f"   100,000 / 10,000: {growth[0]:.2f}x (cpu {growth[1]:.2f}x)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"   load average {load()}\n")


def only(part: str) -> None:
    """One part alone (``--only PART``)."""
    work = tempfile.mkdtemp(prefix="gitmem-bench-scale-")
    try:
        PARTS[part](work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def bench_reads_alone(work: str) -> None:
    """Only part 4's processes (``--only reads``), on copies of the stores."""
    sizes = (10_000, 100_000)
    bench_reads({n: copy(history_store(n), work, f"reads-{n}.git") for n in sizes}, work)


def bench_indexes_alone(work: str) -> None:
    """Only part 2 (``--only indexes``): every derived index from scratch, with the
    peers' figures."""
    bench_indexes(work)


PARTS: dict[str, Callable[[str], None]] = {
    "writes": bench_writes,
    "indexes": bench_indexes_alone,
    "search": lambda work: bench_search_rebuild(),
    "listing": bench_listing,
    "history": bench_history,
    "sync": bench_sync,
    "reads": bench_reads_alone,
    "clone": bench_clone,
}


def main() -> None:
    if sys.argv[1:2] == ["--only"]:
        if len(sys.argv) != 3 or sys.argv[2] not in PARTS:
            sys.exit(f"usage: scale.py [--only {'|'.join(PARTS)}]")
        only(sys.argv[2])
        return
    started = time.perf_counter()
    print(
        f"gitmem at 100,000 memories and 100,000 commits (python {sys.version.split()[0]}); "
        f"load average {load()}\n"
    )
    work = tempfile.mkdtemp(prefix="gitmem-bench-scale-")
    try:
        bench_writes(work)
        paths = bench_indexes(work)
        bench_sync(work)
        bench_reads(paths, work)
        bench_clone(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"total bench time {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
