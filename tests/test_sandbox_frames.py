"""A request's source reaches the runtime as written, whether it follows the request's
JSON as UTF-8 (the usual way) or travels inside the JSON (a text UTF-8 cannot carry)."""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator, Mapping

import pytest

from gitmem.errors import CodeError
from gitmem.sandbox import Pool, Sandbox
from gitmem.sandbox.process import Process


def _json_only(self: Process, message: Mapping[str, object]) -> None:
    """Every frame as JSON alone, as the host sent them all before sources followed."""
    assert self.conn is not None
    self.sent += 1
    body = json.dumps(message).encode()
    self.conn.sendall(struct.pack(">I", len(body)) + body)


@pytest.fixture(scope="module")
def boxes() -> Iterator[tuple[Sandbox, Sandbox]]:
    pools = Pool(reaper=False), Pool(reaper=False)
    yield Sandbox(time_limit=5.0, pool=pools[0]), Sandbox(time_limit=5.0, pool=pools[1])
    for pool in pools:
        pool.close()


@pytest.fixture
def box() -> Iterator[Sandbox]:
    """A sandbox with a pool of its own, closed after the test."""
    pool = Pool(reaper=False)
    try:
        yield Sandbox(time_limit=1.0, pool=pool)
    finally:
        pool.close()


# Texts whose every character counts: a leading byte order mark (a decoder drops it
# unless told not to), text outside ASCII and outside the BMP, NUL, line and paragraph
# separators, CRLF, a newline and JSON right at the start, the empty text, and a lone
# surrogate.
PROGRAMS = [
    '\ufeffconsole.log("\ufeff".length, "é€😀");',
    'console.log(JSON.stringify("a\\u0000b"), "\u0000".length, "\u2028\u2029".length);',
    'console.log("crlf");\r\nconsole.log("🜁".codePointAt(0));\r\n',
    '\n{"op": "run"}\nconsole.log("json first");',
    "",
    # UTF-8 cannot carry a lone surrogate: this one travels inside the JSON.
    'console.log("\ud800".length, "\ud800".charCodeAt(0));',
]

MODULES = [
    "\ufeffexport function bom(a: string): number { return 1; }",
    "export function wide(s: '😀é', n: number): '€' { return '€'; }",
    "export function f(x: number { return x }",
    "\ufeffexport function f(x: number { return x }",
    "\n\u2028export const g = (a: 'x\u2029y'): string => a;",
    "export function lone(a: '\udc00'): string { return a; }",
]


def _run(box: Sandbox, source: str) -> object:
    return box.run(source, modules={}, bridge=lambda name, args: (False, "no"))


def _load(box: Sandbox, source: str) -> object:
    try:
        return [(doc.name, doc.signature) for doc in box.load("mod", source)]
    except CodeError as exc:
        return exc.diagnostic


@pytest.mark.parametrize("source", PROGRAMS)
def test_a_program_runs_alike_either_way(
    boxes: tuple[Sandbox, Sandbox], source: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    tail = _run(boxes[0], source)
    monkeypatch.setattr(Process, "send", _json_only)
    assert _run(boxes[1], source) == tail


@pytest.mark.parametrize("source", MODULES)
def test_a_module_loads_and_compiles_alike_either_way(
    boxes: tuple[Sandbox, Sandbox], source: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    tail = _load(boxes[0], source), boxes[0].compile(source)
    monkeypatch.setattr(Process, "send", _json_only)
    assert (_load(boxes[1], source), boxes[1].compile(source)) == tail


def test_a_byte_order_mark_is_part_of_the_source(boxes: tuple[Sandbox, Sandbox]) -> None:
    # Its column counts: dropped, the diagnostic would point one column earlier.
    plain = boxes[0].compile("export function f(x: number { return x }")
    marked = boxes[0].compile("\ufeffexport function f(x: number { return x }")
    assert plain == "1:29: Expected ',', got '{'"
    assert marked == "1:30: Expected ',', got '{'"


# Modules loaded as they are (their text spells no `then` and holds no backslash) and
# through the wrapper that hands their namespace over (the same text and a last line
# that mentions `then`): the same exports, signatures and diagnostics.
DIRECT = [
    "export function f(a: number, b: string[]): boolean { return a > b.length; }\n"
    "export const g = <T,>(x: T): T => x;\nexport default function (): void {}\n"
    "export const n = 3;\nexport class C {}\n",
    "",
    "export function f(x: number { return x }\n",
    "const a = 1;\nthrow new Error('boom at ' + a);\n",
    "throw 5;\n",
    "export const x = missing + 1;\n",
    'import { nope } from "gitmem";\nexport function f(): void {}\n',
    'import { memories } from "gitmem";\nexport function f(): unknown { return memories; }\n',
    'import { readFileSync } from "node:fs";\nexport const r = readFileSync;\n',
    'import x from "https://example.com/x.ts";\nexport const y = x;\n',
    "await Promise.reject(new TypeError('late'));\n",
    "export function f(: number) {}\n",
    "let s = 'unterminated\n",
    "export { a as b };\nconst a = (): void => {};\n",
    "for (;;) {}\n",
]


@pytest.mark.parametrize("source", DIRECT)
def test_a_module_loads_alike_with_and_without_the_wrapper(source: str, box: Sandbox) -> None:
    assert "then" not in source and "\\" not in source
    assert _load(box, source) == _load(box, source + "\n// then\n")


# Programs run as they are (their text spells no `then` and holds no backslash) and
# through the module that imports them (the same text and a last line that mentions
# `then`): the same output, error, views and imported modules.
RUN_DIRECT = [
    "console.log(6 * 7);\n",
    "",
    "const a: number = 1;\nconsole.log(a);\nthrow new Error('boom at ' + a);\n",
    "throw 5;\n",
    "console.log(missing + 1);\n",
    "export const n = 3;\nexport function f(): void {}\nconsole.log(n);\n",
    'import { nope } from "gitmem";\nconsole.log(nope);\n',
    'import { lib } from "gitmem";\nconsole.log(lib.double(21));\n',
    'import { lib, memories, views } from "gitmem";\n'
    "views.openText('t', String(lib.double(2)));\nconsole.log(memories.ping({}));\n",
    'import { broken } from "gitmem";\nconsole.log(broken);\n',
    'import { readFileSync } from "node:fs";\nconsole.log(readFileSync);\n',
    "await Promise.reject(new TypeError('late'));\n",
    "Promise.reject(new RangeError('unhandled'));\nconsole.log('after');\n",
    "let s = 'unterminated\n",
    "export function f(: number) {}\n",
    "for (;;) {}\n",
]
RUN_MODULES = {
    "lib": "export function double(x: number): number { return 2 * x; }\n",
    "broken": "export const b = (x: number { return x };\n",
}


@pytest.mark.parametrize("source", RUN_DIRECT)
def test_a_program_runs_alike_with_and_without_the_wrapper(source: str, box: Sandbox) -> None:
    assert "then" not in source and "\\" not in source
    results = [
        box.run(text, modules=RUN_MODULES, bridge=lambda name, args: (True, f"{name}!"))
        for text in (source, source + "\n// then\n")
    ]
    assert results[0] == results[1]
