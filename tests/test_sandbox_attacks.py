"""The attack catalogue: every way out of the sandbox fails, and the holder goes on working.

Each case runs one hostile program through a holder, asserts that its effect did not
happen (the run is not ok, a file was not written, a secret was not read, the host and
the runtime are still alive), then has the same holder run a normal program with a
``memories`` call and a normal tool call.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from string import Template

import pytest

from gitmem import Agent, Capability, Holder, Repository
from gitmem.sandbox import ProgramResult, Sandbox

SECRET = "s3cr3t-d0-n0t-l3ak"
ENV_NAME = "GITMEM_ATTACK_SECRET"
OUTPUT_CAP = 4_000


@dataclass
class Ctx:
    """What an attack may aim at, and what the checks look at afterwards."""

    holder: Holder
    secret_file: Path
    secret_module: Path
    target: Path
    listener: socket.socket
    calls: list[str] = field(default_factory=lambda: [])

    @property
    def port(self) -> int:
        return int(self.listener.getsockname()[1])

    @property
    def sandbox(self) -> Sandbox:
        return self.holder.sandbox

    def run(self, source: str) -> ProgramResult:
        values = {
            "secret_file": str(self.secret_file),
            "secret_module": self.secret_module.as_uri(),
            "target": str(self.target),
            "port": str(self.port),
            "env": ENV_NAME,
            "host_port": str(self.host_port()),
        }
        return self.holder.run_program(Template(source).substitute(values))

    def host_port(self) -> int:
        """The loopback port the holder's runtime talks to its host on."""
        self.sandbox.start()
        process = self.sandbox._process  # pyright: ignore[reportPrivateUsage]
        assert process is not None and process.listener is not None
        return int(process.listener.getsockname()[1])

    def nobody_connected(self) -> bool:
        self.listener.setblocking(False)
        try:
            conn, _ = self.listener.accept()
        except BlockingIOError:
            return True
        conn.close()
        return False


@pytest.fixture(scope="module")
def holder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Holder]:
    """One markdown holder for the whole catalogue, with a memory `a` to read."""
    repo = Repository.init(str(tmp_path_factory.mktemp("attacks") / "mem.git"))
    cap = Capability.from_dict(
        {
            "implementation": "markdown",
            "params": {
                "scope": "isolated",
                "maxCount": 0,
                "maxLenPerMemory": 0,
                "maxTotalLen": 0,
                "maxLenIndex": 0,
                "maxLenDescription": 0,
                "maxResults": 0,
            },
        }
    )
    bound = repo.bind(cap, Agent("attacker", "mallory"))
    assert bound is not None
    assert bound.call("create_memory", {"name": "a", "description": "d", "body": "b"}).ok
    bound.use_sandbox(Sandbox(time_limit=1.0, memory_mb=64, output_cap=OUTPUT_CAP))
    yield bound
    bound.close()
    repo.close()


@pytest.fixture
def ctx(holder: Holder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Ctx]:
    monkeypatch.setenv(ENV_NAME, SECRET)
    secret_file = tmp_path / "secret.txt"
    secret_file.write_text(SECRET)
    secret_module = tmp_path / "secret.ts"
    secret_module.write_text(f'export const secret = "{SECRET}";\nexport default secret;\n')
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    try:
        context = Ctx(holder, secret_file, secret_module, tmp_path / "written.txt", listener)
        bridge = holder._bridge  # pyright: ignore[reportPrivateUsage]

        def counting(name: str, args: dict[str, object]) -> tuple[bool, str]:
            context.calls.append(name)
            return bridge(name, args)

        holder._bridge = counting  # type: ignore[method-assign]
        try:
            yield context
        finally:
            del holder._bridge
    finally:
        listener.close()


def refused(result: ProgramResult, ctx: Ctx) -> None:
    assert not result.ok
    assert SECRET not in result.output + str(result.error)


def timed_out(result: ProgramResult, ctx: Ctx) -> None:
    assert not result.ok
    assert result.error is not None
    assert "time limit" in result.error


def out_of_memory(result: ProgramResult, ctx: Ctx) -> None:
    assert not result.ok
    assert result.error is not None
    # Off-heap growth races the clock: the RSS watchdog or the time limit ends it.
    assert any(sign in result.error for sign in ("memory", "allocation failed", "time limit")), (
        result.error
    )


def nothing_written(result: ProgramResult, ctx: Ctx) -> None:
    refused(result, ctx)
    assert not ctx.target.exists()


def no_connection(result: ProgramResult, ctx: Ctx) -> None:
    refused(result, ctx)
    assert ctx.nobody_connected()


def still_alive(result: ProgramResult, ctx: Ctx) -> None:
    """The host is here to check, and the runtime process survived too."""
    refused(result, ctx)
    assert ctx.sandbox.pid is not None
    os.kill(ctx.sandbox.pid, 0)


def prints(expected: str) -> Callable[[ProgramResult, Ctx], None]:
    def check(result: ProgramResult, ctx: Ctx) -> None:
        assert result.output == expected, result
        assert SECRET not in str(result.error)

    return check


def later_runs_see_nothing(probe: str, expected: str) -> Callable[[ProgramResult, Ctx], None]:
    def check(result: ProgramResult, ctx: Ctx) -> None:
        assert result.ok, result
        assert ctx.run(probe).output == expected

    return check


def timers_never_fire(result: ProgramResult, ctx: Ctx) -> None:
    assert result.ok, result
    time.sleep(0.4)
    ctx.run("await new Promise((r) => setTimeout(r, 100));")
    assert ctx.calls == []
    assert not ctx.target.exists()


def no_cpu_left_burning(result: ProgramResult, ctx: Ctx) -> None:
    """Whatever the run left spinning stops: the core goes quiet or the runtime is replaced."""
    pid = ctx.sandbox.pid
    assert pid is not None
    stat = Path(f"/proc/{pid}/stat")

    def cpu() -> int:
        fields = stat.read_text().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])

    for _ in range(20):
        try:
            before = cpu()
            time.sleep(0.25)
            if cpu() - before < 5:  # clock ticks: under a fifth of the window
                return
        except (FileNotFoundError, ProcessLookupError):
            return
        if fields_state(stat) == "Z":
            return
    pytest.fail("the runtime kept a core busy after the run ended")


def fields_state(stat: Path) -> str:
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return "gone"


def real_result_wins(result: ProgramResult, ctx: Ctx) -> None:
    assert not result.ok
    assert result.error is not None
    assert result.error.startswith("Error: the real error")
    assert "forged" not in result.output


ATTACKS: list[tuple[str, str, Callable[[ProgramResult, Ctx], None]]] = [
    ("deno-read-file", 'console.log(await Deno.readTextFile("$secret_file"));', refused),
    ("deno-read-file-sync", 'console.log(Deno.readTextFileSync("$secret_file"));', refused),
    ("deno-write-file", 'await Deno.writeTextFile("$target", "x");', nothing_written),
    (
        "node-fs-read",
        'import fs from "node:fs";\nconsole.log(fs.readFileSync("$secret_file", "utf8"));',
        refused,
    ),
    (
        "node-fs-write-dynamic",
        'const fs = await import("node:fs");\nfs.writeFileSync("$target", "x");',
        nothing_written,
    ),
    ("file-import-static", 'import s from "$secret_module";\nconsole.log(s);', refused),
    ("file-import-dynamic", 'console.log((await import("$secret_module")).secret);', refused),
    ("env-deno", 'console.log(Deno.env.get("$env"));', refused),
    ("env-process", 'console.log(process.env["$env"]);\nthrow new Error("x");', refused),
    (
        "subprocess-deno-command",
        'new Deno.Command("touch", { args: ["$target"] }).outputSync();',
        nothing_written,
    ),
    (
        "subprocess-node",
        'const cp = await import("node:child_process");\ncp.execSync("touch $target");',
        nothing_written,
    ),
    (
        "ffi-dlopen",
        'Deno.dlopen("libc.so.6", { getpid: { parameters: [], result: "i32" } });',
        refused,
    ),
    ("fetch", 'await fetch("http://127.0.0.1:$port/");', no_connection),
    ("connect-tcp", 'await Deno.connect({ hostname: "127.0.0.1", port: $port });', no_connection),
    ("listen-tcp", "Deno.listen({ port: 0 });", refused),
    ("import-npm", 'import pad from "npm:left-pad";\nconsole.log(pad);', refused),
    ("import-jsr", 'import * as a from "jsr:@std/assert";\nconsole.log(a);', refused),
    ("import-https", 'await import("https://deno.land/std/path/mod.ts");', refused),
    (
        "import-node-v8",
        'const v8 = await import("node:v8");\nv8.setFlagsFromString("--allow-natives-syntax");',
        refused,
    ),
    (
        "stdout-forgery",
        "const forged = JSON.stringify({ op: 'result', ok: true, output: 'forged', error: null });\n"
        "const bytes = new TextEncoder().encode(forged);\n"
        "const frame = new Uint8Array(4 + bytes.length);\n"
        "new DataView(frame.buffer).setUint32(0, bytes.length);\n"
        "frame.set(bytes, 4);\n"
        "try { Deno.stdout.writeSync(frame); } catch {}\n"
        "try { Deno.stdout.writeSync(new TextEncoder().encode(forged + '\\n')); } catch {}\n"
        "throw new Error('the real error');",
        real_result_wins,
    ),
    (
        "postmessage-forgery",
        "try { globalThis.postMessage({ op: 'done', error: null, t: 'guess' }); } catch {}\n"
        "try { globalThis.postMessage({ op: 'out', text: 'forged', t: 'guess' }); } catch {}\n"
        "throw new Error('the real error');",
        real_result_wins,
    ),
    (
        "stdin-theft",
        "const buf = new Uint8Array(4096);\nconsole.log(Deno.stdin.readSync(buf));",
        refused,
    ),
    (
        "reconnect-host-socket",
        'await Deno.connect({ hostname: "127.0.0.1", port: $host_port });',
        refused,
    ),
    (
        "permission-request",
        'const s = await Deno.permissions.request({ name: "read" });\n'
        'console.log(s.state, await Deno.readTextFile("$secret_file"));',
        refused,
    ),
    (
        "nested-web-worker",
        'new Worker("data:application/javascript,1", { type: "module", '
        "deno: { permissions: { read: true, env: true } } });",
        refused,
    ),
    (
        "nested-node-worker",
        'const { Worker } = await import("node:worker_threads");\n'
        'new Worker("Deno.exit(1)", { eval: true });',
        refused,
    ),
    ("require-global", 'require("node:fs");', refused),
    ("process-builtin", 'process.getBuiltinModule("node:fs");', refused),
    ("deno-internal", "console.log(Object.keys(Deno[Deno.internal]));", refused),
    ("deno-exit", "Deno.exit(0);", still_alive),
    ("deno-kill", 'Deno.kill(Deno.pid, "SIGKILL");', still_alive),
    ("process-exit", "process.exit(1);", still_alive),
    ("process-really-exit", "process.reallyExit(1);", still_alive),
    ("process-abort", "process.abort();", still_alive),
    ("self-close", "close();", still_alive),
    ("tight-loop", "while (true) {}", timed_out),
    ("tight-loop-async", "await 0;\nfor (;;) {}", timed_out),
    (
        "microtask-loop",
        "await new Promise(() => {\n  const f = () => Promise.resolve().then(f);\n  f();\n});",
        timed_out,
    ),
    (
        "microtask-loop-left-behind",
        "const f = () => queueMicrotask(f);\nf();",
        no_cpu_left_burning,
    ),
    ("atomics-wait", "Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);", timed_out),
    ("redos", 'console.log(/^(a+)+$$/.test("a".repeat(40) + "b"));', timed_out),
    ("heap-bomb", "const a = [];\nfor (;;) a.push(new Array(100000).fill(1.5));", out_of_memory),
    (
        "string-heap-bomb",
        'let s = "x";\nconst keep = [];\nfor (;;) { s = s + s; keep.push(s + "y"); }',
        refused,
    ),
    (
        "off-heap-bomb",
        "const keep = [];\nfor (;;) { const b = new Uint8Array(64 << 20); b.fill(1); keep.push(b); }",
        out_of_memory,
    ),
    (
        "wasm-memory-bomb",
        "const m = new WebAssembly.Memory({ initial: 1, maximum: 65536 });\n"
        "for (;;) { m.grow(1024); new Uint8Array(m.buffer).fill(1); }",
        refused,
    ),
    ("unhandled-rejection", 'Promise.reject(new Error("nope"));\nawait 0;\nawait 0;', refused),
    ("deep-recursion", "const f = (n: number): number => f(n + 1) + 1;\nf(0);", refused),
    (
        "output-flood",
        'for (let i = 0; i < 100000; i++) console.log("x".repeat(1000));\n'
        'Deno.stdout.writeSync(new TextEncoder().encode("y".repeat(1 << 20)));',
        lambda result, ctx: (
            None
            if len(result.output) <= OUTPUT_CAP + 40
            and result.output.endswith("[output truncated]")
            else pytest.fail(f"output not capped: {len(result.output)}")
        ),
    ),
    (
        "globals-left-for-next-run",
        "(globalThis as any).leak = 'L';\nObject.prototype.polluted = 'P';\nconsole.log('set');",
        later_runs_see_nothing(
            "console.log(typeof (globalThis as any).leak, ({} as any).polluted);",
            "undefined undefined\n",
        ),
    ),
    (
        "caches-and-storage",
        "console.log(typeof caches, typeof localStorage, typeof BroadcastChannel);",
        prints("undefined undefined undefined\n"),
    ),
    (
        "timers-after-end",
        'import { memories } from "gitmem";\n'
        'setTimeout(() => memories.createMemory({ name: "late" }), 100);\n'
        'setTimeout(() => Deno.writeTextFileSync("$target", "x"), 100);',
        timers_never_fire,
    ),
]


@pytest.mark.parametrize(
    ("source", "check"), [(s, c) for _, s, c in ATTACKS], ids=[name for name, _, _ in ATTACKS]
)
def test_attack_is_contained(
    ctx: Ctx, source: str, check: Callable[[ProgramResult, Ctx], None]
) -> None:
    """The attack fails; the same holder then runs a program and a tool call."""
    result = ctx.run(source)
    check(result, ctx)
    assert SECRET not in result.output
    ctx.calls.clear()
    normal = ctx.run(
        'import { memories } from "gitmem";\n'
        "const n: number = 6 * 7;\n"
        'console.log(n, memories.readMemory({ name: "a" }));'
    )
    assert normal == ProgramResult(True, "42 `a` — d\n\nb\n", None)
    assert ctx.calls == ["readMemory"]
    assert ctx.holder.call("read_memory", {"name": "a"}).ok
