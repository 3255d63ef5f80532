"""The process pool: sharing between sandboxes, release when idle, and the shipped runtime."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest
from conftest import gone

from gitmem.sandbox import Pool, Sandbox
from gitmem.sandbox import pool as pool_module
from gitmem.sandbox import process as process_module
from gitmem.sandbox.launch import _deno_binary, runtime_file  # pyright: ignore[reportPrivateUsage]
from gitmem.sandbox.pool import BURST_GAP
from gitmem.sandbox.process import Process

SANDBOX = Path(__file__).resolve().parent.parent / "sandbox"


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def echo(name: str, args: dict[str, object]) -> tuple[bool, str]:
    return True, f"{name}:{args.get('n')}"


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def pool(clock: Clock) -> Iterator[Pool]:
    # One process a kind, whatever the pace: what a test reads of a process is then all
    # the calls made. Spreading a burst over two has tests of its own.
    manual = Pool(idle_timeout=10.0, clock=clock, reaper=False, spread=False)
    yield manual
    manual.close()


def test_the_shipped_runtime_is_built_from_the_source_beside_it() -> None:
    """runtime.js names the sha256 of the runtime.ts it was built from, and it is this one."""
    assert runtime_file() == SANDBOX / "runtime.js"
    header = (SANDBOX / "runtime.js").read_text().splitlines()[0]
    found = re.search(r"sha256 ([0-9a-f]{64})", header)
    assert found is not None, header
    source = hashlib.sha256((SANDBOX / "runtime.ts").read_bytes()).hexdigest()
    assert found.group(1) == source, "runtime.ts changed: run `make runtime`"


def test_an_idle_process_is_released_after_the_timeout(pool: Pool, clock: Clock) -> None:
    """Idle past the timeout, the process is killed; the next call starts another."""
    box = Sandbox(time_limit=3.0, memory_mb=64, pool=pool)
    assert box.run("console.log(1)", modules={}, bridge=echo).output == "1\n"
    pid = box.pid
    assert pid is not None
    clock.now += 9.9
    assert pool.reap() == 0
    assert not gone(pid)
    clock.now += 0.2
    assert pool.reap() == 1
    assert gone(pid)
    assert pool.processes() == []
    assert box.run("console.log(2)", modules={}, bridge=echo).output == "2\n"
    assert box.pid not in (None, pid)


def test_a_lent_process_is_never_reaped(pool: Pool, clock: Clock) -> None:
    """However long a call lasts, the reaper leaves its process alone."""
    box = Sandbox(time_limit=3.0, memory_mb=64, pool=pool)
    reaped: list[int] = []

    def slow(name: str, args: dict[str, object]) -> tuple[bool, str]:
        clock.now += 3600
        reaped.append(pool.reap())
        return True, "answer"

    result = box.run(
        'import { memories } from "gitmem";\nconsole.log(memories.wait({}));',
        modules={},
        bridge=slow,
    )
    assert result.output == "answer\n", result
    assert reaped == [0]


def test_the_reaper_thread_releases_idle_processes() -> None:
    """With the thread on, an idle holder soon holds no process at all."""
    pool = Pool(idle_timeout=0.2)
    try:
        box = Sandbox(time_limit=3.0, memory_mb=64, pool=pool)
        assert box.run("console.log(1)", modules={}, bridge=echo).ok
        pid = box.pid
        assert pid is not None
        give_up = time.monotonic() + 30
        while pool.processes() and time.monotonic() < give_up:
            time.sleep(0.05)
        assert pool.processes() == []
        assert gone(pid)
        assert box.run("console.log(3)", modules={}, bridge=echo).output == "3\n"
    finally:
        pool.close()


def test_sandboxes_with_the_same_settings_share_one_process(pool: Pool) -> None:
    """Calls one after another, from five sandboxes, are served by one process."""
    boxes = [Sandbox(time_limit=3.0, memory_mb=64, pool=pool) for _ in range(5)]
    for n, box in enumerate(boxes):
        assert box.run(f"console.log({n})", modules={}, bridge=echo).output == f"{n}\n"
    assert len({box.pid for box in boxes}) == 1
    assert len(pool.processes()) == 1
    other = Sandbox(time_limit=3.0, memory_mb=96, pool=pool)
    assert other.compile("export const a = 1;") is None
    assert other.pid != boxes[0].pid
    assert len(pool.processes()) == 2


def test_nothing_crosses_between_sandboxes_sharing_a_process(pool: Pool) -> None:
    """What one sandbox's program leaves in its worker, the next sandbox's never sees."""
    a = Sandbox(time_limit=3.0, memory_mb=64, pool=pool)
    b = Sandbox(time_limit=3.0, memory_mb=64, pool=pool)
    left = a.run(
        "(globalThis as any).leak = 'L';\n"
        "Object.defineProperty(Object.prototype, 'polluted', { value: 'P' });\n"
        "setTimeout(() => console.log('late'), 50);\n"
        "console.log('set');",
        modules={"secret": "export const s = 'S';"},
        bridge=echo,
    )
    assert left.output == "set\n"
    seen = b.run(
        "console.log(typeof (globalThis as any).leak, ({} as any).polluted);\n"
        "await new Promise((r) => setTimeout(r, 100));\n"
        'import * as all from "gitmem";\nconsole.log(Object.keys(all).sort().join());',
        modules={},
        bridge=echo,
    )
    assert seen.output == "undefined undefined\nmemories,views\n", seen
    assert a.pid == b.pid


def test_a_call_in_progress_has_its_process_to_itself(pool: Pool) -> None:
    """A call made while another sandbox's call is in progress gets another process."""
    outer = Sandbox(time_limit=3.0, memory_mb=64, pool=pool)
    inner = Sandbox(time_limit=3.0, memory_mb=64, pool=pool)
    pids: list[int | None] = []

    def nested(name: str, args: dict[str, object]) -> tuple[bool, str]:
        result = inner.run("console.log('inner')", modules={}, bridge=echo)
        pids.append(inner.pid)
        return True, result.output.strip()

    result = outer.run(
        'import { memories } from "gitmem";\nconsole.log(memories.go({}));',
        modules={},
        bridge=nested,
    )
    assert result.output == "inner\n", result
    assert pids and pids[0] not in (None, outer.pid)


def test_idle_processes_of_one_kind_are_bounded(clock: Clock) -> None:
    """Three processes lent at once; when they come back, only ``keep_idle`` stay."""
    pool = Pool(idle_timeout=10.0, keep_idle=2, clock=clock, reaper=False)
    box = Sandbox(time_limit=3.0, memory_mb=64, pool=pool)
    settings = box._settings  # pyright: ignore[reportPrivateUsage]
    try:
        with contextlib.ExitStack() as stack:
            lent = [stack.enter_context(pool.lend(settings, box.rss_cap_mb)) for _ in range(3)]
            assert len({p.pid for p in lent}) == 3
            assert len(pool.processes()) == 3
        assert len(pool.processes()) == 2
        assert sum(not p.alive() for p in lent) == 1
    finally:
        pool.close()
    assert all(not p.alive() for p in lent)


def test_close_releases_the_idle_process(pool: Pool) -> None:
    """Closing a sandbox kills the process it used if nobody else is using it."""
    box = Sandbox(time_limit=3.0, memory_mb=64, pool=pool)
    box.start()
    pid = box.pid
    assert pid is not None
    box.close()
    assert gone(pid)
    assert pool.processes() == []


def test_a_host_that_exits_leaves_no_process_folder(tmp_path: Path) -> None:
    """Idle processes of every pool are killed at exit, their private folders removed."""
    script = (
        "from gitmem.sandbox import Sandbox\n"
        "box = Sandbox(time_limit=3.0, memory_mb=64)\n"
        "print(box.run('console.log(5)', modules={}, bridge=lambda n, a: (True, '')).output)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, "TMPDIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "5\n\n"
    assert [p.name for p in tmp_path.iterdir()] == []


def test_a_module_is_transpiled_once_and_nothing_else_is_kept(pool: Pool) -> None:
    """A module loaded or imported again reuses its transpiled copy (the file is not
    written again); the copies of programs and of modules the cache let go are deleted."""
    box = Sandbox(pool=pool)
    module = "export function twice(x: number): number { return 2 * x; }\n"
    assert box.load("m", module)[0].signature == "twice(x: number): number"
    process = box._process  # pyright: ignore[reportPrivateUsage]
    assert process is not None
    transpiled = process.root / "deno" / "gen" / "blob"

    def stamps() -> dict[str, tuple[int, int]]:
        pool.tend()
        return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in transpiled.iterdir()}

    first = stamps()
    for n in range(3):
        result = box.run(
            f'import {{ m }} from "gitmem";\nconst n: number = {n};\nconsole.log(m.twice(n));',
            modules={"m": module},
            bridge=echo,
        )
        assert result.output == f"{2 * n}\n", result
        assert box._process is process  # pyright: ignore[reportPrivateUsage]
    box.load("m", module)
    kept = stamps()
    # The module's copy and the workers' warm-up module's, both untouched since the
    # first load; the programs' copies are gone.
    assert kept == first and len(kept) == 2
    other = "export const thrice = (x: number): number => 3 * x;\n"
    box.load("other", other)
    assert len(stamps()) == 3


def test_the_runtime_sets_up_no_node_process_polyfill() -> None:
    """The runtime reads CPU time from Deno itself and removes the global ``process``
    unread: Node's process polyfill, some 20 ms of every start, is never set up (it is
    imported only on a Deno without ``Deno.cpuUsage``)."""
    probe = (
        "const d = Deno as unknown as { cpuUsage?: () => { user: number } };\n"
        "console.log(typeof d.cpuUsage === 'function' && d.cpuUsage().user >= 0);\n"
    )
    deno = _deno_binary()
    found = subprocess.run(
        [deno, "eval", "--quiet", "--no-config", probe], capture_output=True, text=True, timeout=60
    )
    assert found.stdout == "true\n", found.stderr
    source = (SANDBOX / "runtime.ts").read_text()
    assert 'from "node:process"' not in source
    assert "delete g.process" in source


def test_a_run_with_more_modules_than_the_cache_holds_reaches_them_all(pool: Pool) -> None:
    """The module cache never lets go of a module the current run was given."""
    from gitmem.sandbox.runner import CACHED_MODULES

    box = Sandbox(pool=pool)
    count = CACHED_MODULES + 8
    modules = {f"m{i}": f"export const n: number = {i};\n" for i in range(count)}
    names = ", ".join(modules)
    program = (
        f'import {{ {names} }} from "gitmem";\n'
        f"console.log([{', '.join(f'{k}.n' for k in modules)}].join(' '));"
    )
    for _ in range(2):
        result = box.run(program, modules=modules, bridge=echo)
        assert result.output == " ".join(str(i) for i in range(count)) + "\n", result


def test_a_process_called_every_few_hundred_ms_is_not_retired(pool: Pool) -> None:
    """The idle watch counts only windows with no request in them: CPU spent right after a
    call (a worker torn down, the next spare booted) is not a thread left spinning. It
    once counted it, and a holder called every 0.3 s lost its process every 2-3 s."""
    box = Sandbox(pool=pool)
    pids: list[int | None] = []
    for _ in range(16):
        time.sleep(0.3)
        result = box.run("console.log(6 * 7);", modules={}, bridge=echo)
        assert result.output == "42\n", result
        pids.append(box.pid)
    assert len(set(pids)) == 1, pids


def _pong(pool: Pool, process: Process) -> dict[str, object]:
    # Asked once its tending is done: a tending that found a reply waiting would take the
    # process for one retiring.
    pool.tend()
    process.send({"op": "ping"})
    return process.receive(time.monotonic() + 10)


def _spares_booted(pool: Pool, process: Process) -> dict[str, object]:
    """The pong once every spare the runtime keeps is booted."""
    deadline = time.monotonic() + 20
    while (stats := _pong(pool, process))["spares"] != 3:
        assert time.monotonic() < deadline, stats
        time.sleep(0.1)
    return stats


# Each run counts the workers its process ran programs in: 1 in a fresh worker.
_LEAK = "globalThis.leaked = (globalThis.leaked ?? 0) + 1; console.log(globalThis.leaked);"


def test_a_burst_of_two_requests_waits_for_no_worker(pool: Pool) -> None:
    """A program and the onUse script its turn ends with (or a read that loads two code
    memories) come back to back. The runtime keeps three booted spares, and boots a
    replacement at once only when fewer than two are left, so neither waits for a
    worker to be made; each still runs in a worker of its own. With one spare, the
    second request found none (its replacement is made after the first reply) and
    waited 30-60 ms for one."""
    box = Sandbox(pool=pool)
    assert box.run("console.log(1);", modules={}, bridge=echo).output == "1\n"
    (process,) = pool.processes()
    before = _spares_booted(pool, process)
    for _ in range(2):  # back to back: each takes a spare booted before the burst
        assert box.run(_LEAK, modules={}, bridge=echo).output == "1\n"
    assert _pong(pool, process)["cold"] == before["cold"]
    assert _spares_booted(pool, process)["cold"] == before["cold"]
    assert pool.processes() == [process]


def test_a_long_burst_never_waits_for_a_worker_to_be_made(pool: Pool) -> None:
    """Programs back to back with no pause, as an agent's programs may come: once two spares are used, each reply is followed by the next
    spare's boot, before the next request is read, so no request of the burst has its
    worker made on its way (before, every one past the spares did, and waited for the
    whole boot). Each still runs in a worker no other program ran in."""
    box = Sandbox(pool=pool)
    assert box.run("console.log(1);", modules={}, bridge=echo).output == "1\n"
    (process,) = pool.processes()
    before = _spares_booted(pool, process)
    for _ in range(8):
        assert box.run(_LEAK, modules={}, bridge=echo).output == "1\n"
    assert _pong(pool, process)["made"] == before["made"]
    assert pool.processes() == [process]


def test_the_resident_memory_the_pool_reads_is_what_status_reports(pool: Pool) -> None:
    """The resident memory read from ``statm`` (pages) is the ``VmRSS`` of ``status``."""
    box = Sandbox(pool=pool)
    assert box.run("console.log(1);", modules={}, bridge=echo).ok
    process = next(iter(pool.processes()))
    status = Path(f"/proc/{process.pid}/status")

    def vm_rss() -> int:
        found = re.search(r"^VmRSS:\s+(\d+)", status.read_text(), re.MULTILINE)
        assert found is not None
        return int(found.group(1))

    for _ in range(50):
        # Compared only when the memory held still around the read.
        before = vm_rss()
        rss = process.rss_kb()
        if before == vm_rss():
            assert rss == before
            break
        time.sleep(0.05)
    else:
        pytest.fail("the process's memory never held still")


# -- a burst spread over two processes --------------------------------------------


@pytest.fixture
def spreading(clock: Clock) -> Iterator[Pool]:
    manual = Pool(idle_timeout=10.0, clock=clock, reaper=False, spread=True)
    yield manual
    manual.close()


def _settle(pool: Pool) -> None:
    """Wait for the processes being started in the background."""
    for start in list(pool._starting.values()):  # pyright: ignore[reportPrivateUsage]
        start.thread.join(timeout=60)
    assert not pool._starting  # pyright: ignore[reportPrivateUsage]


def _run(box: Sandbox) -> int:
    """Run a program that counts the programs its worker ran; the process that ran it."""
    assert box.run(_LEAK, modules={}, bridge=echo).output == "1\n"
    assert box.pid is not None
    return box.pid


def test_the_third_call_back_to_back_starts_a_second_process_aside(spreading: Pool) -> None:
    """A pair is served by one process; the third call back to back is served by it too,
    while a second process is started in the background; more calls start no third, and
    closing the sandbox stops both."""
    box = Sandbox(pool=spreading)
    first = [_run(box), _run(box)]
    assert not spreading._starting  # pyright: ignore[reportPrivateUsage]
    assert [p.pid for p in spreading.processes()] == first[:1]
    first.append(_run(box))
    assert len(set(first)) == 1
    _settle(spreading)
    assert len(spreading.processes()) == 2
    assert len({_run(box) for _ in range(6)}) == 2
    _settle(spreading)
    pids = [p.pid for p in spreading.processes()]
    assert len(pids) == 2
    box.close()
    assert spreading.processes() == []
    assert all(gone(pid) for pid in pids)


def test_a_burst_alternates_and_spaced_calls_leave_one_to_be_released(
    spreading: Pool, clock: Clock
) -> None:
    """Back to back, each call goes to the process that has rested longest, not to the
    one still booting its next worker after the call before; calls spaced out go to the
    newest, and the other is released when idle long enough."""
    box = Sandbox(pool=spreading)
    a = _run(box)
    assert [_run(box), _run(box)] == [a, a]
    _settle(spreading)
    (b,) = {p.pid for p in spreading.processes()} - {a}
    served: list[int] = []
    for _ in range(6):
        clock.now += 0.01
        served.append(_run(box))
    assert served == [b, a] * 3
    for _ in range(2):
        clock.now += 1.0
        served.append(_run(box))
    assert served[-2:] == [a, a]
    clock.now += 9.5
    assert spreading.reap() == 1
    assert gone(b)
    assert [p.pid for p in spreading.processes()] == [a]


def test_no_second_process_is_started_for_spaced_calls(spreading: Pool, clock: Clock) -> None:
    """Calls more than the burst gap apart are served by one process and start nothing."""
    box = Sandbox(pool=spreading)
    served: list[int] = []
    for _ in range(5):
        served.append(_run(box))
        clock.now += BURST_GAP * 1.01
    assert not spreading._starting  # pyright: ignore[reportPrivateUsage]
    assert len(set(served)) == 1
    assert len(spreading.processes()) == 1


def _private_folders(base: Path) -> list[str]:
    return sorted(p.name for p in base.iterdir() if p.name.startswith("gitmem-sbx-"))


def test_a_failing_background_start_costs_the_calls_nothing(
    spreading: Pool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second process that fails to start is dropped with its folder: the calls are
    served as before, and a call that finds nothing idle starts one on its way."""
    base = tmp_path / "tmp"
    base.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(base))
    box = Sandbox(pool=spreading)
    a = _run(box)
    tried = tmp_path / "tried"
    real = process_module.deno_command
    monkeypatch.setattr(
        process_module,
        "deno_command",
        lambda *_: [sys.executable, "-c", "import sys; open(sys.argv[1], 'a').write('x')", tried],
    )
    assert [_run(box) for _ in range(3)] == [a] * 3
    _settle(spreading)
    assert tried.read_text() != ""
    assert [p.pid for p in spreading.processes()] == [a]
    assert len(_private_folders(base)) == 1
    monkeypatch.setattr(process_module, "deno_command", real)
    settings = box._settings  # pyright: ignore[reportPrivateUsage]
    with (
        spreading.lend(settings, box.rss_cap_mb) as lent,
        spreading.lend(settings, box.rss_cap_mb) as other,
    ):
        assert lent.pid == a and other.pid != a and other.alive()


def test_close_during_a_background_start_kills_it(
    spreading: Pool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pool closed (as at the host's exit) while a process is being started aside ends
    that process too, and removes its private folder."""
    base = tmp_path / "tmp"
    base.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(base))
    box = Sandbox(pool=spreading)
    a = _run(box)
    marks = tmp_path / "pid"
    sleeper = (
        "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(120)"
    )
    monkeypatch.setattr(
        process_module, "deno_command", lambda *_: [sys.executable, "-c", sleeper, marks]
    )
    assert [_run(box) for _ in range(3)] == [a] * 3
    give_up = time.monotonic() + 60
    while not (marks.exists() and marks.read_text()):
        assert time.monotonic() < give_up
        time.sleep(0.02)
    started = int(marks.read_text())
    assert len(_private_folders(base)) == 2
    spreading.close()
    assert gone(started)
    assert gone(a)
    assert spreading.processes() == []
    assert _private_folders(base) == []


def test_checks_back_to_back_stay_on_the_process_that_keeps_their_worker(
    spreading: Pool,
) -> None:
    """A guard's check reuses a worker kept for its module: nothing is booted after it,
    so checks back to back start no second process and go to one process."""
    box = Sandbox(pool=spreading)
    guard = "export function check(change: { n: number }): void {}\n"
    served: set[int | None] = set()
    for n in range(6):
        assert box.check(guard, {"n": n}, scope="s").kind == "accept"
        served.add(box.pid)
    _settle(spreading)
    assert len(served) == 1
    assert len(spreading.processes()) == 1


def _transpiled_name(url: str) -> str:
    return hashlib.sha256(url[len("blob:") :].encode()).hexdigest() + ".js"


def _listed(folder: Path) -> set[str]:
    """The files in ``folder``, one being written counted as the file it will be: the
    warm-up's may be written again at any moment, and Deno writes ``NAME.<hex>.tmp``,
    then renames it over NAME."""
    return {re.sub(r"\.[0-9a-f]+\.tmp$", "", name) for name in os.listdir(folder)}


def test_a_prune_keeps_the_files_of_kept_modules_alone() -> None:
    """Files of the modules the runtime keeps stay, named by the SHA-256 of their URL
    though no prune had to name them before; every other file goes. The runtime lists
    the warm-up module last: a worker booting in the background imports it, and may
    write its file again at any moment."""
    pool = Pool(reaper=False)
    try:
        box = Sandbox(pool=pool)
        box.load("first", "export function f(x: number): number { return x; }")
        box.load("second", "export function g(x: number): number { return x; }")
        settings = box._settings  # pyright: ignore[reportPrivateUsage]
        # Lent, it is out of the tending thread's reach.
        with pool.lend(settings, box.rss_cap_mb) as process:
            _prunes_keep_the_kept_files(process)
    finally:
        pool.close()


def _prunes_keep_the_kept_files(process: Process) -> None:
    """Prunes leave the files of the kept URLs, and only them."""
    kept = [str(url) for url in cast(list[object], process.keep)]
    assert len(kept) >= 3, kept  # the two modules and the warm-up
    folder = process.root / "deno" / "gen" / "blob"
    folder.mkdir(parents=True, exist_ok=True)
    named = {_transpiled_name(url) for url in kept}
    for name in (*named, "stray.js"):
        (folder / name).write_text("//")
    process.prune(kept)
    assert _listed(folder) == named
    warm = _transpiled_name(kept[-1])
    process.prune([kept[0], kept[-1]])
    assert _listed(folder) == {_transpiled_name(kept[0]), warm}
    process.prune([])
    assert _listed(folder) <= {warm}


def test_a_process_that_aborts_leaves_no_core_file(pool: Pool) -> None:
    """A program can abort its process (a full heap): the process may write no core,
    which would keep the programs' text and the memories they read in a file."""
    box = Sandbox(pool=pool)
    box.start()
    assert box.pid is not None
    limits = Path(f"/proc/{box.pid}/limits").read_text().splitlines()
    core = next(line for line in limits if line.startswith("Max core file size"))
    assert core.split()[4:6] == ["0", "0"], core
    box.close()


def test_a_process_found_unfit_as_it_comes_back_is_never_lent_again(
    pool: Pool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tending after a call finds the process unfit (a worker left running, a past
    run's memory): it is killed, and the next call gets a fresh process. The tending
    ends once the process is gone, however long its kill takes."""
    box = Sandbox(pool=pool)
    assert box.run("console.log(1)", modules={}, bridge=lambda n, a: (True, "")).ok
    pool.tend()
    first = box._process  # pyright: ignore[reportPrivateUsage]
    assert first is not None and first.alive()
    monkeypatch.setattr(pool_module, "_tend", lambda process: False)
    kill = Process.kill

    def slow_kill(process: Process) -> None:
        time.sleep(0.3)
        kill(process)

    monkeypatch.setattr(Process, "kill", slow_kill)
    assert box.run("console.log(2)", modules={}, bridge=lambda n, a: (True, "")).ok
    time.sleep(0.1)  # the pool's own tending thread takes it up, most often
    pool.tend()
    assert not first.alive() and first not in pool.processes()
    monkeypatch.undo()
    assert box.run("console.log(3)", modules={}, bridge=lambda n, a: (True, "")).output == "3\n"
    assert box._process is not first  # pyright: ignore[reportPrivateUsage]


def test_every_worker_is_looked_at_once_the_process_has_used_enough(pool: Pool) -> None:
    """Between whole looks at every worker's CPU only the process's own is read: no worker
    can have used more than the process has since. Once that could pass what a worker may
    use, every worker is read again, and one past it makes the process unfit."""
    box = Sandbox(pool=pool, time_limit=0.5)
    box.start()
    with pool.lend(box._settings, box.rss_cap_mb) as process:  # pyright: ignore[reportPrivateUsage]
        looks: list[bool] = []
        threads = process._threads  # pyright: ignore[reportPrivateUsage]

        def counted(every: bool) -> dict[int, tuple[str, int]] | None:
            looks.append(every)
            return threads(every)

        process._threads = counted  # pyright: ignore[reportPrivateUsage]
        process._looked = None  # pyright: ignore[reportPrivateUsage]
        assert process.at_rest() and process.at_rest()
        used = process._ticks()  # pyright: ignore[reportPrivateUsage]
        assert used is not None
        allowed = (process.longest + 1.0) * os.sysconf("SC_CLK_TCK")
        process._ticks = lambda: used + int(allowed)  # pyright: ignore[reportPrivateUsage]
        assert process.at_rest()
        assert looks == [True, False, True]
        process._threads = lambda every: {1: ("worker-99", int(allowed) + 1)}  # pyright: ignore[reportPrivateUsage]
        process._looked = None  # pyright: ignore[reportPrivateUsage]
        assert not process.at_rest()
