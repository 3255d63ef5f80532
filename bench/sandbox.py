"""The sandbox beside mini-racer (a bare V8 isolate in this process), in the same run.

Run with gitmem importable: ``python bench/sandbox.py``. Each goal line prints gitmem's
figure, the peer's, the ratio and whether the goal is met. Times are medians.

- process start: a new Deno process to a runtime that answers (spawn, connect,
  greeting), beside a new mini-racer context. Goal ≤ 50 ms. Also Deno's own floor in
  the same run: ``deno run`` of an empty file, and of a file that only imports
  ``node:worker_threads`` (which brings up Deno's Node layer; the runtime's workers are
  Deno's own, so it no longer pays for that layer).
- first program in a fresh process: from an empty pool to a trivial program's output,
  so the process start, its first worker and that worker's first TypeScript module,
  beside a new mini-racer context running the same code. No goal; it is what a holder
  waits after an idle release or after an attack got its process killed.
- a 32 KB module load, compiled and evaluated in a fresh worker, with a pause between
  loads as between an agent's turns, beside mini-racer evaluating the same module
  (types removed) in a fresh context. Goal ≤ 8 ms. Twice: a text never loaded before
  (transpiled), and a text loaded before (a read that loads the memory again, as
  markdown and keyword-search do: its transpiled JavaScript is cached). The new text
  is also loaded by Deno alone, the same binary with no gitmem around it, driven as a
  host drives it: one warm process asked over a pipe, the text in each request, a
  booted worker importing it as a blob module, as the runtime does. That is the floor
  any Deno sandbox pays, and it shows what gitmem adds. Deno alone also imports the
  same functions as JavaScript (no types, nothing to transpile): the difference is
  Deno's transpile, which no Deno option turns off. The three take turns, round by
  round, each timed from this process by wall and by CPU (this process's and the Deno
  process's: the steadier figure on a loaded machine), and the ratio is the median of
  the rounds' ratios, so that the machine's drift reaches both sides alike.
- a trivial program end to end through ``Holder.run_program``, with a pause between
  programs as between an agent's turns, beside mini-racer making a fresh context and
  running the same code. Goal ≤ 15 ms. Also two programs back to back after such a
  pause, as a program and the onUse script its turn ends with.
- memory: 20 holders that each just ran a program, the resident memory of every Deno
  process they hold, per holder (RSS, and PSS, which shares the binary's pages among
  the processes that map it), beside 20 live mini-racer contexts. Goal ≤ 30 MB RSS.
- idle holders: the Deno processes left once the pool's idle timeout has passed. Goal 0.
- a bridge call's round trip, beside a mini-racer call from Python.
- 50 trivial programs back to back with no pause, as an agent's programs and the
  guard checks of a burst of writes come: median and 95th percentile, beside
  mini-racer making a fresh context for each. Goals: median ≤ 15 ms, p95 ≤ 25 ms.
- 200 writes back to back to a store whose guard accepts everything, beside the same
  writes to a store without a guard. Goal ≤ 2x.
- a new 32 KB TypeScript module's load beside Deno alone importing the same text (the
  figures above), by CPU and by wall. Goal ≤ 1.2x.

``python bench/sandbox.py --only PART`` runs one of the last three alone, with its goal
lines and the load average: ``load`` (the new module's load beside Deno alone), ``back``
(the programs back to back beside mini-racer) or ``writes`` (the guarded writes beside
unguarded ones).
"""

from __future__ import annotations

import functools
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from py_mini_racer import MiniRacer  # pyright: ignore[reportMissingTypeStubs]

from gitmem import Agent, Author, Capability, Holder, Repository
from gitmem.sandbox import Pool, Sandbox
from gitmem.sandbox.launch import _deno_binary  # pyright: ignore[reportPrivateUsage]
from gitmem.sandbox.runner import CALLS_MAX

ROUNDS = 15
CALLS = CALLS_MAX  # the most one run may make
HOLDERS = 20
TRIVIAL = "console.log(6 * 7);"
BACK_TO_BACK = 50
WRITES = 200
ACCEPT_ALL = "export function check(change: unknown): undefined { return undefined; }\n"


FASTEST: dict[str, float] = {}


def median_ms(action: Callable[[], object], rounds: int = ROUNDS, pause: float = 0.0) -> float:
    """The median in ms; the fastest round is kept in FASTEST under the action's name."""
    times: list[float] = []
    for _ in range(rounds):
        time.sleep(pause)
        started = time.perf_counter()
        action()
        times.append((time.perf_counter() - started) * 1000)
    FASTEST[getattr(action, "__qualname__", "")] = min(times)
    return statistics.median(times)


def module_32k(typed: bool = True, exported: bool = True) -> str:
    parts: list[str] = []
    n = 0
    export = "export " if exported else ""
    while sum(map(len, parts)) < 32 * 1024 - 200:
        if typed:
            head = f"{export}function helper{n}(rows: string[][], column: number): string[] {{\n"
        else:
            head = f"{export}function helper{n}(rows, column) {{\n"
        parts.append(
            head
            + f"  return rows.map((row) => row[column] ?? '').filter((cell) => cell.length > {n % 7});\n"
            "}\n"
        )
        n += 1
    return "".join(parts)


def status_kb(pid: int, field: str, name: str = "status") -> int:
    try:
        text = Path(f"/proc/{pid}/{name}").read_text()
    except OSError:
        return 0
    found = re.search(rf"^{field}:\s+(\d+)", text, re.MULTILINE)
    return int(found.group(1)) if found else 0


def deno_pids() -> list[int]:
    """The Deno processes this process started (they lead their own sessions)."""
    me = os.getpid()
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me and fields[0] != "Z":
            found.append(int(entry.name))
    return found


def bind(repo: Repository, n: int, pool: Pool) -> Holder:
    limits = ("maxCount", "maxLenPerMemory", "maxTotalLen", "maxLenIndex", "maxLenDescription")
    params: dict[str, object] = dict.fromkeys((*limits, "maxResults"), 0)
    cap = Capability.from_dict(
        {"implementation": "markdown", "params": {"scope": "isolated", **params}}
    )
    holder = repo.bind(cap, Agent("bench", f"agent-{n}"))
    assert holder is not None
    holder.use_sandbox(Sandbox(pool=pool))
    return holder


def on_a_fresh_pool(name: str, action: Callable[[Sandbox], object]) -> float:
    """The median of ``action`` on a new sandbox over an empty pool; teardown untimed."""
    times: list[float] = []
    for _ in range(ROUNDS):
        pool = Pool(reaper=False)
        box = Sandbox(pool=pool)
        started = time.perf_counter()
        action(box)
        times.append((time.perf_counter() - started) * 1000)
        pool.close()
        time.sleep(0.1)  # let the last process's teardown leave the cores
    FASTEST[name] = min(times)
    return statistics.median(times)


def gitmem_start() -> float:
    """From a new sandbox on an empty pool to a runtime that answers."""
    return on_a_fresh_pool("gitmem_start", Sandbox.start)


def gitmem_first_program() -> float:
    """From a new sandbox on an empty pool to a trivial program's output."""

    def first(box: Sandbox) -> None:
        result = box.run(TRIVIAL, modules={}, bridge=lambda name, args: (True, ""))
        assert result.output == "42\n", result

    return on_a_fresh_pool("gitmem_first_program", first)


TS, JS = "application/typescript", "application/javascript"
LOAD_ROUNDS = 45
"""Rounds of the module-load comparison: each round loads once in gitmem, once in Deno
alone (TypeScript) and once in Deno alone as JavaScript, in turn (each round starting
one later than the round before), so that the machine's drift reaches all three alike."""

# Deno alone, driven as a host would drive it: one process, asked over a pipe for each
# load, the text of the module in the request (as gitmem's host sends it over its
# socket). It keeps a booted worker, its first TypeScript module already imported, as the
# runtime's spare has; the worker imports the text as a blob module, as the runtime's
# does, and the answer comes once it has loaded. A fresh worker is booted for the next.
DENO_DRIVEN = r"""
const blob = (text, type) => URL.createObjectURL(new Blob([text], { type }));
const script = `self.onmessage = async (e) => {
  await import(e.data);
  postMessage(0);
};`;
let worker = null;
const answered = () => new Promise((resolve) => (worker.onmessage = resolve));
const boot = async () => {
  worker = new Worker(blob(script, "application/javascript"), { type: "module" });
  worker.postMessage(blob("export const warm: number = 1;", "application/typescript"));
  await answered();
};
const encoder = new TextEncoder();
await boot();
await Deno.stdout.write(encoder.encode("ready\n"));
let pending = "";
for await (const chunk of Deno.stdin.readable.pipeThrough(new TextDecoderStream())) {
  pending += chunk;
  for (let end = pending.indexOf("\n"); end >= 0; end = pending.indexOf("\n")) {
    const { source, media } = JSON.parse(pending.slice(0, end));
    pending = pending.slice(end + 1);
    worker.postMessage(blob(source, media));
    await answered();
    await Deno.stdout.write(encoder.encode("done\n"));
    worker.terminate();
    await boot();
  }
}
"""


def cpu_seconds(pid: int) -> float:
    """The CPU time process ``pid`` has used, every thread's (ended ones too), in seconds:
    Linux's clock for a process's CPU, named by its pid."""
    return time.clock_gettime((~pid << 3) | 2)


class DenoAlone:
    """A Deno process that imports the module texts it is sent; see DENO_DRIVEN."""

    def __init__(self, folder: Path) -> None:
        script = folder / "drive.js"
        script.write_text(DENO_DRIVEN)
        deno_dir = folder / "deno"
        # As the runtime's private folder has them: in-memory caches, no code cache.
        for name in ("dep_analysis_cache_v2", "node_analysis_cache_v2", "v8_code_cache_v2"):
            (deno_dir / name).mkdir(parents=True)
        self.proc = subprocess.Popen(
            [_deno_binary(), "run", "--quiet", "--no-config", "--no-code-cache", str(script)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={"DENO_DIR": str(deno_dir), "NO_COLOR": "1", "DENO_NO_UPDATE_CHECK": "1"},
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout
        assert self.stdout.readline() == b"ready\n"

    def load(self, source: str, media: str) -> None:
        self.stdin.write(json.dumps({"source": source, "media": media}).encode() + b"\n")
        self.stdin.flush()
        assert self.stdout.readline() == b"done\n"

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


@dataclass
class Timed:
    """Each round's wall time and CPU time (this process's and the Deno process's), ms."""

    wall: list[float] = field(default_factory=list[float])
    cpu: list[float] = field(default_factory=list[float])
    host: list[float] = field(default_factory=list[float])

    def add(self, action: Callable[[], object], pid: int) -> None:
        host, deno = time.process_time(), cpu_seconds(pid)
        started = time.perf_counter()
        action()
        wall = time.perf_counter() - started
        host, deno = time.process_time() - host, cpu_seconds(pid) - deno
        self.wall.append(wall * 1000)
        self.cpu.append((host + deno) * 1000)
        self.host.append(host * 1000)


def load_in_turn(typed: str, plain: str) -> tuple[Timed, Timed, Timed]:
    """A new module's load in gitmem, in Deno alone, and in Deno alone as JavaScript, in
    turn, each timed from this process, with a pause before each as between turns."""
    ours, alone, alone_js = Timed(), Timed(), Timed()
    pool = Pool(reaper=False)
    box = Sandbox(pool=pool)
    box.compile("1")
    with tempfile.TemporaryDirectory() as tmp:
        deno = DenoAlone(Path(tmp))
        for i in range(LOAD_ROUNDS):
            # A fresh comment each round so no cache can answer for the transpiler.
            new_typed, new_plain = f"// {i}\n{typed}", f"// {i}\n{plain}"
            turns: list[tuple[Timed, Callable[[], object], int]] = [
                (ours, functools.partial(box.load, "bench", new_typed), box.pid or 0),
                (alone, functools.partial(deno.load, new_typed, TS), deno.proc.pid),
                (alone_js, functools.partial(deno.load, new_plain, JS), deno.proc.pid),
            ]
            for timed, action, pid in turns[i % 3 :] + turns[: i % 3]:
                time.sleep(0.3)
                timed.add(action, pid)
        deno.close()
    pool.close()
    return ours, alone, alone_js


def ratio(ours: list[float], peer: list[float]) -> float:
    """The median of the round-by-round ratios."""
    return statistics.median(a / b for a, b in zip(ours, peer, strict=True))


def gitmem_reload(source: str) -> float:
    pool = Pool(reaper=False)
    box = Sandbox(pool=pool)
    box.load("bench", source)

    def reload() -> None:
        box.load("bench", source)

    figure = median_ms(reload, pause=0.3)
    pool.close()
    return figure


def gitmem_program(holder: Holder) -> float:
    def run() -> None:
        result = holder.run_program(TRIVIAL)
        assert result.output == "42\n", result

    run()
    return median_ms(run, rounds=3 * ROUNDS, pause=0.3)


def gitmem_burst(holder: Holder) -> tuple[float, float]:
    """Two programs back to back after a pause, as a program and the onUse script its
    turn ends with: the median of the first and of the second."""
    first: list[float] = []
    second: list[float] = []
    for _ in range(ROUNDS):
        time.sleep(0.3)
        for times in (first, second):
            started = time.perf_counter()
            result = holder.run_program(TRIVIAL)
            times.append((time.perf_counter() - started) * 1000)
            assert result.output == "42\n", result
    return statistics.median(first), statistics.median(second)


def percentiles(times: list[float]) -> tuple[float, float]:
    """The median and the 95th percentile."""
    ordered = sorted(times)
    return statistics.median(ordered), ordered[max(0, round(0.95 * len(ordered)) - 1)]


def gitmem_back_to_back(holder: Holder) -> tuple[float, float]:
    """BACK_TO_BACK trivial programs with no pause between them."""
    times: list[float] = []
    for _ in range(BACK_TO_BACK):
        started = time.perf_counter()
        result = holder.run_program(TRIVIAL)
        times.append((time.perf_counter() - started) * 1000)
        assert result.output == "42\n", result
    return percentiles(times)


def racer_back_to_back() -> tuple[float, float]:
    times: list[float] = []
    for _ in range(BACK_TO_BACK):
        started = time.perf_counter()
        ctx = MiniRacer()
        ctx.eval("const out = []; out.push(String(6 * 7)); out.join('\\n')")
        ctx.close()
        times.append((time.perf_counter() - started) * 1000)
    return percentiles(times)


def writes_ms(repo: Repository, n: int, guard: str | None) -> float:
    """WRITES creates back to back by a fresh holder, in ms per write."""
    pool = Pool(reaper=False)
    holder = bind(repo, n, pool)
    if guard is not None:
        repo.set_guard(holder.store_id, guard, Author.agent("bench"))
    holder.call("create_memory", {"name": "warm", "description": "d", "body": "b"})
    started = time.perf_counter()
    for i in range(WRITES):
        result = holder.call("create_memory", {"name": f"w{i}", "description": "d", "body": "b"})
        assert result.ok, result
    took = (time.perf_counter() - started) * 1000 / WRITES
    holder.close()
    pool.close()
    repo.guards.close()  # its process would count among the idle holders' below
    return took


def gitmem_call(box: Sandbox) -> float:
    program = (
        'import { memories } from "gitmem";\n'
        "const started = performance.now();\n"
        f"for (let i = 0; i < {CALLS}; i++) memories.ping({{}});\n"
        f"console.log(((performance.now() - started) * 1000) / {CALLS});\n"
    )
    figures: list[float] = []
    for _ in range(3):
        result = box.run(program, modules={}, bridge=lambda name, args: (True, "pong"))
        assert result.ok, result
        figures.append(float(result.output) / 1000)
    return statistics.median(figures)


def gitmem_memory(repo: Repository) -> tuple[float, float, int, int]:
    """Per holder RSS and PSS in MB, processes while active, processes once idle."""
    pool = Pool(idle_timeout=2.0)
    holders = [bind(repo, n, pool) for n in range(HOLDERS)]
    for holder in holders:
        assert holder.run_program(TRIVIAL).output == "42\n"
    pids = deno_pids()
    rss = sum(status_kb(pid, "VmRSS") for pid in pids) / 1024 / HOLDERS
    pss = sum(status_kb(pid, "Pss", "smaps_rollup") for pid in pids) / 1024 / HOLDERS
    give_up = time.monotonic() + 30
    while pool.processes() and time.monotonic() < give_up:
        time.sleep(0.1)
    idle = len(deno_pids())
    for holder in holders:
        holder.close()
    pool.close()
    return rss, pss, len(pids), idle


def deno_run(text: str) -> float:
    """A whole ``deno run`` of ``text``, to its exit, as the runtime is run (no config,
    no code cache, a private DENO_DIR)."""
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "start.js"
        script.write_text(text)
        command = [_deno_binary(), "run", "--quiet", "--no-config", "--no-code-cache", str(script)]
        env = {"DENO_DIR": str(Path(tmp) / "deno"), "NO_COLOR": "1", "DENO_NO_UPDATE_CHECK": "1"}
        subprocess.run(command, env=env, check=True)  # the first run fills the caches

        def run() -> None:
            subprocess.run(command, env=env, check=True)

        return median_ms(run, pause=0.1)


def racer_start() -> float:
    return median_ms(lambda: MiniRacer().eval("1"), pause=0.1)


def racer_load(source: str) -> float:
    counter = iter(range(1_000_000))

    def load() -> None:
        MiniRacer().eval(f"// {next(counter)}\n{source}")

    return median_ms(load, pause=0.3)


def racer_program() -> float:
    code = (
        "const out = []; const console = { log: (...a) => out.push(a.join(' ')) };\n"
        f"{TRIVIAL}\nout.join('\\n')"
    )

    def run() -> None:
        assert MiniRacer().eval(code) == "42"

    run()
    return median_ms(run, rounds=3 * ROUNDS, pause=0.3)


def racer_memory() -> float:
    """Per context, the growth of this process's RSS for 20 live contexts, in MB."""
    before = status_kb(os.getpid(), "VmRSS")
    contexts = [MiniRacer() for _ in range(HOLDERS)]
    for ctx in contexts:
        ctx.eval(TRIVIAL.replace("console.log", "String"))
    grown = status_kb(os.getpid(), "VmRSS") - before
    del contexts
    return grown / 1024 / HOLDERS


def racer_call() -> float:
    ctx = MiniRacer()
    ctx.eval("function ping(x) { return 'pong'; }")
    started = time.perf_counter()
    for _ in range(CALLS):
        ctx.call("ping", {})
    return (time.perf_counter() - started) * 1000 / CALLS


def line(what: str, ours: float, peer: float, unit: str, goal: float | None) -> str:
    ratio = f"{ours / peer:7.2f}x" if peer else "      -"
    verdict = ""
    if goal is not None:
        verdict = f"goal <= {goal:g} {unit}: " + ("met" if ours <= goal else "MISSED")
    return f"{what:<36}{ours:9.2f} {unit:<3} mini-racer {peer:9.2f} {unit:<3} {ratio}   {verdict}"


def report_new_load(ours: Timed, alone: Timed, alone_js: Timed) -> None:
    """The new module's load beside Deno alone, by wall and by CPU, and the goal lines."""
    med = statistics.median
    print(
        f"{'  the same in Deno alone':<36}{med(alone.wall):9.2f} ms  (a booted worker importing "
        f"it, asked over a pipe; wall, medians of {LOAD_ROUNDS} rounds in turn)"
    )
    print(
        f"{'  the same as JavaScript, Deno alone':<36}{med(alone_js.wall):9.2f} ms  (no "
        f"transpile: Deno's transpile of the TypeScript {med(alone.wall) - med(alone_js.wall):.2f} ms)"
    )
    print(
        f"{'  CPU, gitmem / Deno alone / as JS':<36}{med(ours.cpu):9.2f} / {med(alone.cpu):.2f} / "
        f"{med(alone_js.cpu):.2f} ms  (host and Deno process; gitmem's host {med(ours.host):.2f} ms)"
    )
    for what, figure in (
        ("CPU", ratio(ours.cpu, alone.cpu)),
        ("wall", ratio(ours.wall, alone.wall)),
    ):
        print(
            f"{f'  new text, gitmem / Deno alone, {what}':<36}{figure:9.2f}x     goal <= 1.2x: "
            + ("met" if figure <= 1.2 else "MISSED")
            + "  (the median of the rounds' ratios)"
        )


def report_back_to_back(back: tuple[tuple[float, float], tuple[float, float]]) -> None:
    """The programs back to back beside mini-racer: median and 95th percentile."""
    (ours_median, ours_p95), (racer_median, racer_p95) = back
    print(
        line(f"{BACK_TO_BACK} programs back to back, median", ours_median, racer_median, "ms", 15)
    )
    print(line("  the same, 95th percentile", ours_p95, racer_p95, "ms", 25))


def report_writes(guarded: float, unguarded: float) -> None:
    """The writes to a store whose guard accepts everything, beside the same unguarded."""
    print(
        f"{f'{WRITES} writes, accept-all guard':<36}{guarded:9.2f} ms  without a guard "
        f"{unguarded:9.2f} ms  {guarded / unguarded:7.2f}x   goal <= 2x: "
        + ("met" if guarded / unguarded <= 2 else "MISSED")
        + "  (per write)"
    )


def only_load() -> None:
    report_new_load(*load_in_turn(module_32k(), module_32k(typed=False)))


def only_back() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        repo = Repository.init(str(Path(tmp) / "mem.git"))
        pool = Pool(reaper=False)
        holder = bind(repo, 999, pool)
        assert holder.run_program(TRIVIAL).output == "42\n"
        time.sleep(0.3)  # as in the full run, the spares boot once the runtime idles
        report_back_to_back((gitmem_back_to_back(holder), racer_back_to_back()))
        holder.close()
        pool.close()
        repo.close()


def only_writes() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        repo = Repository.init(str(Path(tmp) / "mem.git"))
        unguarded = writes_ms(repo, 1_001, None)
        report_writes(writes_ms(repo, 1_002, ACCEPT_ALL), unguarded)
        repo.close()


PARTS: dict[str, Callable[[], None]] = {
    "load": only_load,
    "back": only_back,
    "writes": only_writes,
}


def load_average() -> str:
    return " / ".join(f"{figure:.2f}" for figure in os.getloadavg())


def main() -> None:
    if sys.argv[1:2] == ["--only"]:
        if len(sys.argv) != 3 or sys.argv[2] not in PARTS:
            sys.exit(f"usage: sandbox.py [--only {'|'.join(PARTS)}]")
        PARTS[sys.argv[2]]()
        print(f"load average {load_average()}")
        return
    typed, plain = module_32k(), module_32k(typed=False, exported=False)
    with tempfile.TemporaryDirectory() as tmp:
        repo = Repository.init(str(Path(tmp) / "mem.git"))
        pool = Pool(reaper=False)
        holder = bind(repo, 999, pool)
        start = gitmem_start(), racer_start()
        bare = (
            deno_run(""),
            deno_run('import { Worker } from "node:worker_threads";\nString(Worker);\n'),
        )
        first = gitmem_first_program()
        # the same functions with no types, as JavaScript: all but the transpile
        ours, alone, alone_js = load_in_turn(typed, module_32k(typed=False))
        load = statistics.median(ours.wall), racer_load(plain)
        reload = gitmem_reload(typed), load[1]
        program = gitmem_program(holder), racer_program()
        burst = gitmem_burst(holder)
        back = gitmem_back_to_back(holder), racer_back_to_back()
        call = gitmem_call(holder.sandbox), racer_call()
        unguarded = writes_ms(repo, 1_001, None)
        guarded = writes_ms(repo, 1_002, ACCEPT_ALL)
        holder.close()
        pool.close()
        rss, pss, active, idle = gitmem_memory(repo)
        racer_mb = racer_memory()
        repo.close()
    print(line("sandbox process start", *start, "ms", 50))
    print(
        f"{'  deno run of an empty file':<36}{bare[0]:9.2f} ms  "
        f"(of one importing node:worker_threads {bare[1]:.2f} ms)"
    )
    print(line("first program in a fresh process", first, program[1], "ms", None))
    print(line(f"load a {len(typed) // 1024} KB module, new text", *load, "ms", 8))
    report_new_load(ours, alone, alone_js)
    print(line(f"load a {len(typed) // 1024} KB module again", *reload, "ms", 8))
    print(line("trivial program via run_program", *program, "ms", 15))
    print(
        f"{'  two back to back, first / second':<36}{burst[0]:9.2f} / {burst[1]:.2f} ms  "
        "(each in its own worker: two spares wait booted)"
    )
    report_back_to_back(back)
    report_writes(guarded, unguarded)
    print(line(f"RSS per active holder ({HOLDERS})", rss, racer_mb, "MB", 30))
    print(line("  the same as PSS", pss, racer_mb, "MB", None))
    print(f"{'  Deno processes for them':<36}{active:9d}")
    print(
        f"{'Deno processes of idle holders':<36}{idle:9d}        goal 0: "
        + ("met" if idle == 0 else "MISSED")
    )
    print(line("bridge call round trip", call[0] * 1000, call[1] * 1000, "us", None))
    fastest = ", ".join(f"{name.split('.')[0]} {ms:.2f} ms" for name, ms in FASTEST.items())
    print(f"fastest rounds: {fastest}")
    print(f"load average {load_average()}")


if __name__ == "__main__":
    main()
