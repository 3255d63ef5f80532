"""The runtime's signature scan reads declarations and signatures as a reader of every
token does (tests/helpers_signatures.py): on texts built from the pieces that sit on
every edge of its stops and quick readings, on edges written out, on windows that end
inside a signature, and on hostile texts of 256 KB, each read in one pass."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import cast

import helpers_signatures as reference
from conftest import run_beside_runtime

# Pieces a module's text is made of, chosen to sit on every edge of the scan: comments,
# strings, a lone slash, digits and letters outside ASCII right before or after a first
# word or a function's name, `default`, generators, blanks that are and are not
# whitespace, letters outside the Basic Multilingual Plane, and the end of the source.
PIECES = [
    "export",
    "function",
    "default",
    "defaultX",
    "async",
    "const",
    "let",
    "var",
    " ",
    "  ",
    "\n",
    "\t",
    "*",
    "**",
    "f",
    "g1",
    "é",
    "1",
    "$",
    "_",
    "(",
    ")",
    "(a: number): string",
    "(b: { k: T }) => void",
    "<T>",
    "<",
    ">",
    "[",
    "]",
    "{",
    "}",
    ";",
    "=",
    "=>",
    ":",
    "|",
    "&",
    ",",
    "/",
    "//c\n",
    "/*c*/",
    "'s'",
    '"s"',
    "`t`",
    "'",
    "\\",
    "\\\\",
    "/*",
    "*/",
    "constant",
    "xlet",
    "var$",
    "\u00a0",  # no-break space: whitespace
    "\x1c",  # a separator: whitespace too
    "\x85",  # next line: whitespace
    "\ufeff",  # byte order mark: not whitespace, a token of its own
    "\u200b",  # zero-width space: likewise
    "\u0301",  # a combining accent: neither a letter nor whitespace
    "\u0663",  # an Arabic-Indic digit
    "二",  # a letter of no case
    "ǅ",  # a title-case letter
    "\U0001d465",  # a letter outside the Basic Multilingual Plane
    "\U0001f600",  # a symbol outside it
]

WEIGHTS = {
    "export": 6,
    "function": 8,
    "const": 4,
    "let": 2,
    "var": 2,
    "async": 2,
    "default": 2,
    "f": 6,
    "g1": 3,
    "(": 3,
    ")": 3,
    "(a: number): string": 4,
    "(b: { k: T }) => void": 2,
    "=": 4,
    "=>": 2,
    ":": 3,
}

DRIVER = """
import { declarations, signatures } from "./runtime.js";
const cases = JSON.parse(await new Response(Deno.stdin.readable).text());
// Positions in code points, as the reference counts them.
const points = (source, at) =>
  /[\\ud800-\\udfff]/.test(source) ? Array.from(source.slice(0, at)).length : at;
const out = cases.map(([source, names]) => {
  const found = declarations(source);
  const declared = [];
  for (const [name, [at, arrow]] of found) declared.push([name, points(source, at), arrow]);
  return [declared, signatures(source, names, found)];
});
console.log(JSON.stringify(out));
"""

# Edges written out: escaped and unclosed strings, comments, a division, words that only
# contain a declaration's first word, and the end of the source.
EDGES = [
    "export function f(a: number): string {}\n",
    "const s = 'it\\'s'; export function f() {}",
    "const s = 'a\\\\'; export function f() {}",
    "/* export function f() {} */ export function g() {}",
    "// export function f() {}\nexport function g() {}",
    "const t = `export function f() {}`; function g() {}",
    "let x = a / b; export function f() {}",
    "xexport function f() {} constx = 1; letg = 2",
    "1export function f() {}",
    "é function f() {}",
    "\U0001d465function f() {}",
    "function f\U0001d465(x) {}",
    "function \U0001d465f(x) {}",
    "'unclosed export function f() {}",
    "/* unclosed export function f() {}",
    "/*c*//function f() {}",
    "export function",
    "export  function\n* f <T>(a: number): string {}\n",
    "export default function (q: string): string { return q; }",
    "export default async function* g() {}",
    "export functional()",
    "export function // c\nf() {}",
    "const f = async (x: number): Promise<void> => {};",
    "const f: (x: number) => void = (x) => {};",
    "let f = function* (a = 1) {};",
    "function f(x: { a: (b: string) => void }): { k: number } { return { k: 1 }; }",
    "function f(cb: () => string): () => string { return cb; }",
    "function f(): A | { b: 1 } { }",
    "function f(): () => { k: number } { return g; }",
    "const f = (a): x is { k: 1 } => true;",
    "function f(s = ')'): void {}",
]


def windows() -> list[str]:
    """Signatures that end on either side of the window's last character, counted in
    characters whether they are one UTF-16 unit or two."""
    texts: list[str] = []
    for fill in ("x", "\U0001d465", "\U0001f600"):
        for length in range(1993, 2001):
            texts.append(f"function f({fill * length}) {{}}")
            texts.append(f"function f(a): {fill * (length - 4)} {{}}")
    texts.append("function f(" + "\U0001d465" * 1500 + "x" * 497 + ") {}")
    return texts


def hostile() -> list[str]:
    """256 KB texts built against a scan that goes back or reads twice."""
    size = 256 * 1024
    texts = [
        "export function f(a: number): number { return a; }\n"
        + "".join(f"let v{i}: T\n" for i in range(size // 12)),
        "const f: " + "(" * size,
        "function f(" * (size // 11),
        "'" * size,
        "/*" * (size // 2),
        "`\\" * (size // 2),
        "export " * (size // 7),
        "exports " * (size // 8),
        "1" * size + "export function f() {}",
        "a" * size + "export function f() {}",
        "\u0663" * (size // 2) + "function f() {}",
        "\U0001d465" * (size // 4) + " function f() {}",
        "".join(f"export function a{i}(x: number): number {{ return x; }}\n" for i in range(5000)),
        "const f = " + "async " * (size // 6),
        # Blanks and then braces, in every window of the return types.
        "".join(f"function f{i}(a): {' ' * 900}x{'|{}' * 350} {{}}\n" for i in range(100)),
    ]
    return texts


def read_in_runtime(folder: Path, sources: list[str]) -> list[list[str]]:
    """Read each source in the runtime and by the reference, and check that they agree:
    the declarations (name, place in characters, whether an arrow, in the order first
    declared) and the signatures of every name the reference declared and one it did
    not. The signatures, source by source."""
    cases: list[tuple[str, list[str]]] = []
    expected: list[object] = []
    for source in sources:
        found = reference.declarations(source)
        names = [*found, "undeclared"]
        declared = [[name, at, arrow] for name, (at, arrow) in found.items()]
        cases.append((source, names))
        expected.append([declared, reference.signatures(source, names)])
    printed = run_beside_runtime(
        folder, "declarations, signatures", {"driver.js": DRIVER}, json.dumps(cases)
    )
    got = cast(list[list[object]], json.loads(printed))
    assert len(got) == len(sources)
    for source, mine, theirs in zip(sources, got, expected, strict=True):
        assert mine == theirs, source[:200]
    return [cast(list[str], mine[1]) for mine in got]


def test_runtime_reads_texts_of_edge_pieces_as_every_token_is_read(tmp_path: Path) -> None:
    """Texts built from the edge pieces (a fixed seed): the same declarations, at the same
    places, and the same signatures."""
    rng = random.Random(11)
    # The words declarations are made of come more often than the rest, and a piece is
    # followed by a space as often as not.
    weights = [WEIGHTS.get(piece, 1) for piece in PIECES]
    sources = [
        "".join(
            piece + " " * rng.randint(0, 1)
            for piece in rng.choices(PIECES, weights, k=rng.randint(0, 24))
        )
        for _ in range(20_000)
    ]
    read_in_runtime(tmp_path, sources)
    declared = [s for s in sources if reference.declarations(s)]
    assert len(declared) > 2000


def test_runtime_reads_written_edges_and_windows_as_every_token_is_read(
    tmp_path: Path,
) -> None:
    """The edges written out, and signatures that end at the window's edge."""
    shown = [
        signature for typed in read_in_runtime(tmp_path, EDGES + windows()) for signature in typed
    ]
    assert "f(a: number): string" in shown
    assert "f(...)" in shown and "undeclared(...)" in shown


def test_runtime_reads_hostile_texts_in_one_pass(tmp_path: Path) -> None:
    """Texts of 256 KB built against a scan that goes back: read, and read right."""
    read_in_runtime(tmp_path, hostile())
