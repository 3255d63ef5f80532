"""The runtime's split of a text around its "gitmem" imports: a text with nothing to
split or disarm is taken whole without the token pass, and comes out as the pass
would have made it."""

from __future__ import annotations

import json
import random
from pathlib import Path

from conftest import run_beside_runtime

# Pieces that sit on every edge of the shortcut: the word it looks for, both comment
# marks it looks for and their near misses, and the shapes the token pass reads.
PIECES = [
    "gitmem",
    "gitme",
    "'gitmem'",
    '"gitmem"',
    "import",
    "from",
    "export",
    " ",
    "\n",
    "/",
    "//",
    "/*",
    "*/",
    "#",
    "@",
    "//#",
    "/*@",
    "// #",
    "x",
    "'",
    '"',
    "`",
    "${",
    "}",
    "(",
    ")",
    "\\",
    "1",
    "sourceMappingURL=a.map",
]

DRIVER = """
import { splitImports } from "./runtime.js";
const sources = JSON.parse(await new Response(Deno.stdin.readable).text());
console.log(JSON.stringify(sources.map((s) => [splitImports(s), splitImports(s, true)])));
"""


def test_a_text_taken_whole_splits_as_the_token_pass_splits_it(tmp_path: Path) -> None:
    """Texts built from the edge pieces: the runtime's split of each, with and without
    the shortcut, is the same list of parts (and the shortcut took some of them)."""
    rng = random.Random(7)
    sources = ["", "const a = 1;", "// a\nconst b = '#';"]
    sources += ["".join(rng.choices(PIECES, k=rng.randint(1, 16))) for _ in range(3000)]
    printed = run_beside_runtime(
        tmp_path, "splitImports", {"driver.js": DRIVER}, json.dumps(sources)
    )
    pairs: list[list[list[str]]] = json.loads(printed)
    assert len(pairs) == len(sources)
    for source, (quick, whole) in zip(sources, pairs, strict=True):
        assert quick == whole, source
    whole_texts = [
        s
        for s in sources
        if "gitmem" not in s and not any(m in s for m in ("//#", "//@", "/*#", "/*@"))
    ]
    assert len(whole_texts) > 100
