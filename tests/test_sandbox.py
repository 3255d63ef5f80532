"""The sandbox: module keys, compiling, loading, programs, the memories bridge, onUse views."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest
from conftest import gone

import gitmem.sandbox
from gitmem.errors import CodeError, InternalError, InvalidArgument
from gitmem.sandbox import ExportDoc, Pool, ProgramResult, Sandbox, View, module_key

CSV_TOOLS = """\
export function parseCsv(text: string): string[][] {
  return text
    .trim()
    .split("\\n")
    .map((line) => line.split(",").map((cell) => cell.replace(/^"|"$/g, "")));
}

export const countRows = (rows: string[][]): number => rows.length;

export async function firstCell<T extends string>(rows: T[][]): Promise<T | undefined> {
  return rows[0]?.[0];
}

export const VERSION = 2;
"""


def refuse_all(name: str, args: dict[str, object]) -> tuple[bool, str]:
    return False, f"{name} is not available"


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with Sandbox(time_limit=2.0, memory_mb=64) as box:
        yield box


@pytest.mark.parametrize(
    ("slug", "taken", "key"),
    [
        ("csv-tools", (), "csvTools"),
        ("csv_tools", (), "csvTools"),
        ("csv.tools.v2", (), "csvToolsV2"),
        ("notes", (), "notes"),
        ("Big-Thing", (), "bigThing"),
        ("csv-tools", ("csvTools",), "csvTools2"),
        ("csv-tools", ("csvTools", "csvTools2"), "csvTools3"),
        ("a--b__c", (), "aBC"),
        ("3d-models", (), "_3dModels"),
        ("memories", (), "memories2"),
        ("views", (), "views2"),
        ("class", (), "class2"),
    ],
)
def test_module_key(slug: str, taken: tuple[str, ...], key: str) -> None:
    """The key is the slug in camel case, made unique with a numeric suffix."""
    assert module_key(slug, taken) == key


@pytest.mark.parametrize(
    ("source", "diagnostic"),
    [
        ("export function f(x: number { return x }", "1:29: Expected ',', got '{'"),
        ("let a = 1;\nlet b = ;\n", "2:9: Expression expected"),
        ("const ok = 1;\n\n\nfunction (", "4:10: Expected ident"),
    ],
)
def test_compile_reports_located_diagnostics(
    sandbox: Sandbox, source: str, diagnostic: str
) -> None:
    """A source that does not parse gets ``line:column: message`` in the user's lines."""
    assert sandbox.compile(source) == diagnostic


def test_compile_does_not_run_the_code(sandbox: Sandbox) -> None:
    """Compiling checks syntax only: a module that loops forever still compiles at once."""
    assert sandbox.compile("const n: number = 1;\nwhile (true) {}\n") is None
    assert sandbox.compile('views.openText("t", "x");') is None


def test_load_documents_each_exported_function(sandbox: Sandbox) -> None:
    """One doc per exported function, with its typed signature and the import line."""
    docs = sorted(sandbox.load("csvTools", CSV_TOOLS), key=lambda d: d.name)
    assert docs == [
        ExportDoc("csvTools", "countRows", "countRows(rows: string[][]): number"),
        ExportDoc(
            "csvTools",
            "firstCell",
            "firstCell<T extends string>(rows: T[][]): Promise<T | undefined>",
        ),
        ExportDoc("csvTools", "parseCsv", "parseCsv(text: string): string[][]"),
    ]
    text = docs[2].text()
    assert "csvTools" in text
    assert "parseCsv(text: string): string[][]" in text
    assert 'import { csvTools } from "gitmem";' in text.splitlines()
    assert docs[2].view() == View("csvTools.parseCsv", text)


SHAPES = """\
export function plain(x: number, y = 2): void {}
export const arrow = async (rows: string[][]): Promise<Map<string, number>> => new Map();
export function objects<T>(f: (x: T) => void, o: { k: number }): { k: number } { return o; }
export const expression = function (s: string) { return s; };
export function callback(cb: () => string): () => string { return cb; }
export default function (q: string): string { return q; }
function inner(a: string): number { return a.length; }
export { inner, inner as alias };
"""


def test_load_reads_signatures_of_every_declaration_shape(sandbox: Sandbox) -> None:
    """Declarations, arrows, generics, object and function types, defaults, re-exports."""
    docs = {d.name: d.signature for d in sandbox.load("shapes", SHAPES)}
    assert docs == {
        "plain": "plain(x: number, y = 2): void",
        "arrow": "arrow(rows: string[][]): Promise<Map<string, number>>",
        "objects": "objects<T>(f: (x: T) => void, o: { k: number }): { k: number }",
        "expression": "expression(s: string)",
        "callback": "callback(cb: () => string): () => string",
        "default": "default(q: string): string",
        "inner": "inner(a: string): number",
        "alias": "alias(...)",
    }


def test_load_refuses_code_that_does_not_compile(sandbox: Sandbox) -> None:
    """A module that does not compile raises CodeError with a located diagnostic."""
    with pytest.raises(CodeError) as caught:
        sandbox.load("broken", "export function f() {\n  return 1 +;\n}\n")
    assert caught.value.diagnostic == "2:13: Expression expected"


def test_load_refuses_a_module_that_never_finishes_loading() -> None:
    """Top-level code that outlives the time limit is refused, and the sandbox goes on."""
    with Sandbox(time_limit=0.5) as box:
        with pytest.raises(CodeError, match=r"did not finish within 0\.5 s"):
            box.load("slow", "while (true) {}\nexport function f() {}\n")
        assert [d.name for d in box.load("fine", "export function f() {}")] == ["f"]


def test_program_imports_a_loaded_module(sandbox: Sandbox) -> None:
    """The csv-tools example end to end: a program imports the module and prints."""
    program = """\
import { csvTools } from "gitmem";
const rows: string[][] = csvTools.parseCsv('name,qty\\n"bolt",3');
console.log(rows[1][0], csvTools.countRows(rows));
console.error("done");
"""
    result = sandbox.run(program, modules={"csvTools": CSV_TOOLS}, bridge=refuse_all)
    assert result == ProgramResult(True, "bolt 2\ndone\n", None, imported=("csvTools",))


@pytest.mark.parametrize(
    ("kind", "modules", "message"),
    [
        ("script", {}, r"the run kind 'script' is unknown; use \"program\" or \"onuse\""),
        ("program", {"csv-tools": CSV_TOOLS}, r"'csv-tools' cannot be a module key"),
        ("program", {"1st": CSV_TOOLS}, r"'1st' cannot be a module key"),
        ("onuse", {"memories": CSV_TOOLS}, r"'memories' cannot be a module key"),
        ("program", {"views": CSV_TOOLS}, r"'views' cannot be a module key"),
    ],
)
def test_run_refuses_bad_input_before_starting(
    kind: str, modules: dict[str, str], message: str
) -> None:
    """An unknown kind or an unusable module key is InvalidArgument; no process starts."""
    box = Sandbox()
    with pytest.raises(InvalidArgument, match=message):
        box.run("console.log(1)", modules=modules, bridge=refuse_all, kind=kind)
    assert box.pid is None


def test_public_names_are_exactly_all() -> None:
    """``gitmem.sandbox`` exports a sorted ``__all__`` and nothing else public."""
    public = {n for n in vars(gitmem.sandbox) if not n.startswith("_")}
    modules = {"keys", "launch", "pool", "process", "runner", "annotations"}
    assert gitmem.sandbox.__all__ == sorted(gitmem.sandbox.__all__)
    assert set(gitmem.sandbox.__all__) == public - modules


def test_memories_bridge_returns_text_and_throws_refusals(sandbox: Sandbox) -> None:
    """A bridged call returns the text; a refusal throws an Error carrying the refusal."""
    calls: list[tuple[str, dict[str, object]]] = []

    def bridge(name: str, args: dict[str, object]) -> tuple[bool, str]:
        calls.append((name, args))
        if name == "createMemory":
            return True, f"Created {args['name']}."
        return False, "deleteMemory is not available to this holder."

    program = """\
import { memories } from "gitmem";
console.log(memories.createMemory({ name: "csv-tools", description: "d", body: "b" }));
console.log(await memories.createMemory({ name: "again" }));
try {
  memories.deleteMemory({ name: "csv-tools" });
} catch (e) {
  console.log(e instanceof Error, (e as Error).message);
}
memories.deleteMemory({ name: "x" });
"""
    result = sandbox.run(program, modules={}, bridge=bridge)
    assert result.output == (
        "Created csv-tools.\nCreated again.\ntrue deleteMemory is not available to this holder.\n"
    )
    assert not result.ok
    assert result.error is not None
    assert result.error.startswith("Error: deleteMemory is not available to this holder.")
    assert calls[0] == ("createMemory", {"name": "csv-tools", "description": "d", "body": "b"})
    assert len(calls) == 4


def test_memories_lists_the_calls_it_is_given(sandbox: Sandbox) -> None:
    """Object.keys, for...in and `in` see the calls the run names (bad names left out);
    a listed call is callable through its descriptor, an unlisted one still by name."""
    program = """\
import { memories } from "gitmem";
const seen: string[] = [];
for (const name in memories) seen.push(name);
const found = Object.getOwnPropertyDescriptor(memories, "readMemory");
console.log(JSON.stringify(Object.keys(memories)), JSON.stringify(seen));
console.log("readMemory" in memories, "nope" in memories, found?.enumerable);
console.log(found?.value({ name: "a" }), memories.other({}));
"""
    result = sandbox.run(
        program,
        modules={},
        bridge=lambda name, args: (True, f"{name} answered"),
        calls=["readMemory", "createMemory", "not a name"],
    )
    assert result.ok, result
    assert result.output == (
        '["readMemory","createMemory"] ["readMemory","createMemory"]\n'
        "true false true\n"
        "readMemory answered other answered\n"
    )
    bare = sandbox.run(
        'import { memories } from "gitmem";\nconsole.log(Object.keys(memories).length);',
        modules={},
        bridge=refuse_all,
    )
    assert bare.output == "0\n"


def test_large_bridge_replies_arrive_whole(sandbox: Sandbox) -> None:
    """A reply bigger than the shared buffer comes across in chunks, intact."""
    big = "é" * 200_000 + "end"
    result = sandbox.run(
        'import { memories } from "gitmem";\n'
        "const t = memories.readMemory({});\n"
        "console.log(t.length, t.slice(-3));\n",
        modules={},
        bridge=lambda name, args: (True, big),
    )
    assert result.output == f"{len(big)} end\n"


def test_a_reply_of_tens_of_megabytes_is_read_in_linear_time() -> None:
    """The runtime reads a long frame into one buffer of its size: 40 MB arrive in well
    under the program's limit (grown by each chunk read, they took over 10 s)."""
    big = "x" * 40_000_000
    with Sandbox(time_limit=5.0) as box:
        result = box.run(
            'import { memories } from "gitmem";\nconsole.log(memories.big({}).length);',
            modules={},
            bridge=lambda name, args: (True, big),
        )
    assert result == ProgramResult(True, f"{len(big)}\n", None), result


def test_a_run_carries_only_the_modules_its_text_names() -> None:
    """A holder that loaded a thousand code memories (32 MB) runs a program that names
    none of them, or one, at the pace of one that names none: the rest never cross."""
    module = "export function f(x: number): number { return x + 1; }\n" + "// pad\n" * 4_000
    modules = {f"m{n}": f"// {n}\n{module}" for n in range(1_000)}
    with Sandbox(time_limit=2.0, memory_mb=64) as box:
        plain = box.run("console.log(1)", modules=modules, bridge=refuse_all)
        one = box.run(
            'import { m7 } from "gitmem";\nconsole.log(m7.f(1));',
            modules=modules,
            bridge=refuse_all,
        )
    assert plain == ProgramResult(True, "1\n", None), plain
    assert one == ProgramResult(True, "2\n", None, imported=("m7",)), one


def test_onuse_opens_views_through_globals(sandbox: Sandbox) -> None:
    """An onUse script uses ``views`` without importing it; its views come back."""
    result = sandbox.run(
        'views.openText("csv-notes", "Row 1 is a header on exports after March.");',
        modules={},
        bridge=refuse_all,
        kind="onuse",
    )
    assert result.ok
    assert result.views == (View("csv-notes", "Row 1 is a header on exports after March."),)


def test_program_errors_are_located_in_the_program(sandbox: Sandbox) -> None:
    """An uncaught error names its line in the program; a syntax error is located."""
    thrown = sandbox.run(
        "const a: number = 1;\nthrow new RangeError('bad ' + a);\n",
        modules={},
        bridge=refuse_all,
    )
    assert not thrown.ok
    assert thrown.error == "RangeError: bad 1\n    at program:2:7"
    broken = sandbox.run("let x = ;\n", modules={}, bridge=refuse_all)
    assert broken.error == "SyntaxError: 1:9: Expression expected"


def test_pending_timers_are_dropped(sandbox: Sandbox) -> None:
    """A run ends when its top level settles; timers it left never fire, even later."""
    first = sandbox.run(
        'setTimeout(() => console.log("late"), 50);\n'
        "setInterval(() => console.log('tick'), 10);\n"
        'console.log("now");\n',
        modules={},
        bridge=refuse_all,
    )
    assert first == ProgramResult(True, "now\n", None)
    second = sandbox.run(
        "await new Promise((r) => setTimeout(r, 200));\nconsole.log('second');",
        modules={},
        bridge=refuse_all,
    )
    assert second.output == "second\n"


def test_output_is_capped() -> None:
    """Output past the cap is cut and marked."""
    with Sandbox(output_cap=100) as box:
        result = box.run(
            "for (let i = 0; i < 1000; i++) console.log(i);", modules={}, bridge=refuse_all
        )
    assert result.ok
    assert result.output.startswith("0\n1\n2\n")
    assert result.output.endswith("\n[output truncated]")
    assert len(result.output) <= 100 + len("\n[output truncated]")


def test_a_crash_raises_internal_error_then_recovers() -> None:
    """A dead runtime is gitmem's defect: InternalError, then a fresh process serves."""
    with Sandbox() as box:

        def crash(name: str, args: dict[str, object]) -> tuple[bool, str]:
            pid = box.pid
            assert pid is not None
            os.kill(pid, signal.SIGKILL)
            return True, "never seen"

        with pytest.raises(InternalError):
            box.run('import { memories } from "gitmem"; memories.x({});', modules={}, bridge=crash)
        assert box.run("console.log(40 + 2)", modules={}, bridge=refuse_all).output == "42\n"
        assert box.compile("export const a = 1;") is None


def test_close_then_use_starts_again() -> None:
    """close() stops the process; the next call starts a new one."""
    box = Sandbox()
    assert box.pid is None
    assert box.compile("1") is None
    first = box.pid
    box.close()
    assert box.pid is None
    assert box.run("console.log('x')", modules={}, bridge=refuse_all).output == "x\n"
    assert box.pid not in (None, first)
    box.close()


def test_watchdog_kills_past_the_resident_memory_cap() -> None:
    """Off-heap memory V8 does not count is caught by the RSS watchdog; the next run works."""
    with Sandbox(time_limit=10.0, memory_mb=32) as box:
        box.start()
        first = box.pid
        result = box.run(
            "const keep = [];\n"
            "for (;;) { const b = new Uint8Array(32 << 20); b.fill(7); keep.push(b); }\n",
            modules={},
            bridge=refuse_all,
        )
        assert result == ProgramResult(False, "", "the program exceeded the sandbox memory limit")
        assert box.run("console.log('after')", modules={}, bridge=refuse_all).output == "after\n"
        assert box.pid != first


def test_a_filled_heap_fails_its_own_run_and_the_next_works() -> None:
    """Every isolate's heap is capped when the process starts: a program that fills its
    heap ends the process, and that run alone fails, as the program's own doing."""
    with Sandbox(time_limit=20.0, memory_mb=32) as box:
        box.start()
        first = box.pid
        result = box.run(
            "const keep = [];\nfor (;;) keep.push(new Array(100000).fill(1.5));\n",
            modules={},
            bridge=refuse_all,
        )
        assert result == ProgramResult(False, "", "the program exceeded the sandbox memory limit")
        assert box.run("console.log('after')", modules={}, bridge=refuse_all).output == "after\n"
        assert box.pid != first


def test_a_guard_hears_none_of_the_runtimes_messages(sandbox: Sandbox) -> None:
    """A listener a module adds to its worker's global scope sees none of the requests
    the runtime sends that worker: the checks after its first reach only the runtime."""
    guard = (
        "let heard = 0;\n"
        'EventTarget.prototype.addEventListener.call(globalThis, "message", () => heard++);\n'
        "export function check(change: unknown): string { return `heard ${heard}`; }\n"
    )
    verdicts = [sandbox.check(guard, {"n": n}, scope="listener") for n in range(3)]
    assert [v.message for v in verdicts] == ["heard 0"] * 3, verdicts


def test_load_documents_a_module_that_ends_in_a_keyword(sandbox: Sandbox) -> None:
    """A source whose last word is ``function`` (a property name here) is documented; the
    scanner once read past the end of its tokens there and raised IndexError."""
    docs = sandbox.load("tail", "export const f = (a: number) => a;\nf.function")
    assert [(d.name, d.signature) for d in docs] == [("f", "f(a: number)")]


UNENDING = "await new Promise(() => {\n  const f = () => queueMicrotask(f);\n  f();\n});\n"


@pytest.fixture
def own_pool() -> Iterator[Pool]:
    """A pool of one process a kind: the next call goes to the process the last one used
    (the shared pool may hold others of the kind, which a call may be lent instead)."""
    pool = Pool(spread=False)
    yield pool
    pool.close()


def test_a_run_that_did_not_finish_takes_its_process_with_it(own_pool: Pool) -> None:
    """A worker stopped at its time limit may be one a terminate cannot end (a loop of
    microtasks): its whole process is gone before the next run, which gets a fresh one."""
    with Sandbox(time_limit=0.5, memory_mb=64, pool=own_pool) as box:
        box.start()
        first = box.pid
        assert first is not None
        result = box.run(UNENDING, modules={}, bridge=refuse_all)
        assert result == ProgramResult(
            False, "", "the program did not finish within its time limit of 0.5 s"
        )
        assert gone(first)
        assert box.run("console.log('after')", modules={}, bridge=refuse_all).output == "after\n"
        assert box.pid not in (None, first)


def test_a_load_or_check_that_did_not_finish_takes_its_process_with_it(own_pool: Pool) -> None:
    """The same for a code memory's top-level code and for a guard's check."""
    with Sandbox(time_limit=0.5, memory_mb=64, pool=own_pool) as box:
        box.start()
        first = box.pid
        assert first is not None
        with pytest.raises(CodeError, match="did not finish within"):
            box.load("stuck", UNENDING + "export function f(): number { return 1; }\n")
        assert gone(first)
        box.start()
        second = box.pid
        assert second is not None and second != first
        verdict = box.check(
            "export function check(change: unknown): Promise<never> {\n"
            # a microtask loop that holds nothing: a chain of promises would grow each
            # turn, and could fill the heap before the time is up
            "  return (async (): Promise<never> => { for (;;) await 0; })();\n}\n",
            {"n": 1},
            scope="stuck",
        )
        assert verdict.kind == "error" and "time limit" in (verdict.error or ""), verdict
        assert gone(second)
        assert box.compile("export const a = 1;") is None
