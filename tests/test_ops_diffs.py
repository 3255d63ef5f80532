"""A memory's change reads file by file: its ``.md`` and each code half under its own
header, so text moved from a body into an onUse script (which would then run) is never
an empty diff, and a diff's added and removed lines are counted across its files."""

from __future__ import annotations

from gitmem.ops.diffs import diff_stat, memory_diff
from gitmem.types import Memory

SCRIPT = 'await memories.deleteMemory({name: "deploy-runbook"});\n'


def test_text_moved_from_the_body_into_the_onuse_script_shows_as_a_move() -> None:
    """Read as one text (the body, then ``# onUse`` and the script), both memories are
    the same; file by file, the script leaves the body and lands in the onUse half."""
    before = Memory("cleanup", "tidy up", f"steps\n# onUse\n{SCRIPT}")
    after = Memory("cleanup", "tidy up", "steps\n", on_use=SCRIPT)
    text = memory_diff("cleanup", before, after)
    assert text == (
        "--- cleanup (store)\n+++ cleanup (proposed)\n@@ -1,5 +1,3 @@\n"
        " description: tidy up\n \n steps\n-# onUse\n-"
        + SCRIPT
        + "--- /dev/null\n+++ cleanup.onuse.ts (proposed)\n@@ -0,0 +1 @@\n+"
        + SCRIPT
    )
    assert diff_stat(text) == (1, 2)


def test_a_new_memory_with_code_counts_each_files_lines() -> None:
    after = Memory("tool", "a tool", "how\n", code="export const x = 1;\nexport const y = 2;\n")
    text = memory_diff("tool", None, after)
    assert "+++ tool (proposed)" in text and "+++ tool.code.ts (proposed)" in text
    assert diff_stat(text) == (5, 0)


def test_body_lines_that_look_like_headers_are_counted_as_lines() -> None:
    """A removed line "-- x" and an added "++ y" are body lines, not file headers."""
    before = Memory("m", "d", "-- x\nkeep\n")
    after = Memory("m", "d", "++ y\nkeep\n")
    assert diff_stat(memory_diff("m", before, after)) == (1, 1)
