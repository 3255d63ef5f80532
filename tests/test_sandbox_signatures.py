"""The signature scanner reads declarations as a reader of every token does: its quick
reading of plain declarations, and its scan of the words declarations start with,
outside comments and strings."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitmem.sandbox import signatures as scanner

# Pieces a module's text is made of, chosen to sit on every edge of the quick reading:
# comments, strings, a lone slash, digits and non-ASCII letters right after `export` or
# a function's name, `default`, generators, and the end of the source.
PIECES = [
    "export",
    "function",
    "default",
    "defaultX",
    "async",
    "const",
    "let",
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
    "<T>",
    "{",
    "}",
    ";",
    "=",
    "=>",
    ":",
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
]

sources = st.lists(st.sampled_from(PIECES), max_size=24).map("".join)


def read_by_tokens(
    source: str,
    monkeypatch: pytest.MonkeyPatch,
    *,
    quick: tuple[str, ...] = ("_plain_declaration",),
) -> dict[str, tuple[int, bool]]:
    with monkeypatch.context() as patched:
        for name in quick:
            patched.setattr(scanner, name, lambda *_: -1)
        return scanner.declarations.__wrapped__(source)


@settings(max_examples=1000, deadline=None)
@given(sources)
def test_quick_reading_finds_what_the_token_reader_finds(source: str) -> None:
    """Each declared function's name, where its signature starts, and whether an arrow:
    the same whichever reader reads a declaration."""
    monkeypatch = pytest.MonkeyPatch()
    assert scanner.declarations.__wrapped__(source) == read_by_tokens(source, monkeypatch)


def test_quick_reading_reads_the_common_shapes() -> None:
    """The shapes it exists for are read by it, and read right."""
    source = "export function f(a: number): string {}\nfunction* g <T>() {}\n"
    found: dict[str, tuple[int, bool]] = {}
    quick = scanner._plain_declaration  # pyright: ignore[reportPrivateUsage]
    assert quick(source, "export", 6, found) == 6
    assert quick(source, "function", 15, found) == source.index("(")
    assert quick(source, "function", source.index("* g"), found) == source.index("<")
    assert found == {"f": (source.index("("), False), "g": (source.index(" <"), False)}
    assert quick("export default function", "export", 6, {}) == -1
    assert quick("function f // c", "function", 8, {}) == -1


@settings(max_examples=1000, deadline=None)
@given(sources)
def test_export_function_read_at_once_as_the_token_reader_reads_it(source: str) -> None:
    """``export function name`` read with one match finds what the token reader finds
    with no quick reading at all."""
    monkeypatch = pytest.MonkeyPatch()
    every = ("_plain_declaration", "_export_function")
    assert scanner.declarations.__wrapped__(source) == read_by_tokens(
        source, monkeypatch, quick=every
    )


def test_export_function_read_at_once() -> None:
    """The shape it exists for is read by it, and read right; others are left to the rest."""
    source = "export  function\n* f <T>(a: number): string {}\n"
    found: dict[str, tuple[int, bool]] = {}
    quick = scanner._export_function  # pyright: ignore[reportPrivateUsage]
    assert quick(source, "export", 6, found) == source.index("<")
    assert found == {"f": (source.index(" <"), False)}
    assert quick("export default function f() {}", "export", 6, {}) == -1
    assert quick("export functional()", "export", 6, {}) == -1
    assert quick("export function // c\nf() {}", "export", 6, {}) == -1
    assert quick("export function f() {}", "function", 8, {}) == -1


def read_every_token(source: str) -> dict[str, tuple[int, bool]]:
    """The declarations a reader finds that reads every token from the start of the
    source, reading a declaration wherever a word one may start with begins."""
    found: dict[str, tuple[int, bool]] = {}
    at = 0
    while True:
        tokens = scanner._Tokens(source, at)  # pyright: ignore[reportPrivateUsage]
        token = tokens.word(0)
        if not token:
            return found
        if token in ("function", "const", "let", "var", "export"):
            at = scanner._declaration(tokens, found)  # pyright: ignore[reportPrivateUsage]
        else:
            at = tokens.end(0)


@settings(max_examples=1000, deadline=None)
@given(sources)
def test_scan_of_first_words_finds_what_reading_every_token_finds(source: str) -> None:
    """Reading a declaration at each of its first words outside the comments and strings
    (each found whole by one search) finds what reading every token finds."""
    assert scanner.declarations.__wrapped__(source) == read_every_token(source)


@pytest.mark.parametrize(
    "source",
    [
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
        "'unclosed export function f() {}",
        "/* unclosed export function f() {}",
        "/*c*//function f() {}",
        "export function",
    ],
)
def test_scan_reads_edges_as_reading_every_token_does(source: str) -> None:
    """Escaped and unclosed strings, comments, a division, words that only contain a
    declaration's first word, and the end of the source."""
    assert scanner.declarations.__wrapped__(source) == read_every_token(source)
