"""The memory tool: each command on GitMemoryTool against the SDK's reference backend,
``BetaLocalFilesystemMemoryTool``, measured side by side in one run (``make bench``).

Goals: a write (create, str_replace, insert, rename, delete) at most 3x the reference's
time (it fsyncs one file; gitmem fsyncs its objects and the ref); a view at most 1.5x.
Each figure is the median of ROUNDS commands on a store of FILES files.
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

# run as a script, this file's folder comes first on sys.path and its name would hide
# the SDK's package of the same name
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]

from anthropic.lib.tools._beta_builtin_memory_tool import (  # noqa: E402
    BetaLocalFilesystemMemoryTool,
)

from gitmem import Author, Repository  # noqa: E402
from gitmem.anthropic import GitMemoryTool  # noqa: E402

ROUNDS = 40
FILES = 50
TEXT = "".join(f"- note {i}: lorem ipsum dolor sit amet\n" for i in range(20))
GOALS = {"view dir": 1.5, "view file": 1.5}
WRITE_GOAL = 3.0


def commands(i: int) -> list[tuple[str, dict[str, Any]]]:
    """One round: every command once, on paths of its own so each succeeds."""
    path = f"/memories/bench/{i}.md"
    return [
        ("create", {"command": "create", "path": path, "file_text": TEXT}),
        ("view file", {"command": "view", "path": path}),
        ("view dir", {"command": "view", "path": "/memories"}),
        (
            "str_replace",
            {"command": "str_replace", "path": path, "old_str": "note 7:", "new_str": "n7:"},
        ),
        ("insert", {"command": "insert", "path": path, "insert_line": 3, "insert_text": "new"}),
        (
            "rename",
            {"command": "rename", "old_path": path, "new_path": f"/memories/moved/{i}.md"},
        ),
        ("delete", {"command": "delete", "path": f"/memories/moved/{i}.md"}),
    ]


def run(tool: Any, samples: dict[str, list[float]]) -> None:
    for i in range(FILES):
        tool.call({"command": "create", "path": f"/memories/seed/{i}.md", "file_text": TEXT})
    for i in range(ROUNDS):
        for name, command in commands(i):
            start = time.perf_counter()
            tool.call(command)
            samples.setdefault(name, []).append(time.perf_counter() - start)


def measure(make: Callable[[str], Any]) -> dict[str, float]:
    folder = tempfile.mkdtemp(prefix="gitmem-bench-")
    try:
        samples: dict[str, list[float]] = {}
        run(make(folder), samples)
        return {name: statistics.median(values) * 1000 for name, values in samples.items()}
    finally:
        shutil.rmtree(folder)


def gitmem_tool(folder: str) -> GitMemoryTool:
    return GitMemoryTool(
        Repository.init(f"{folder}/mem.git"), "claude", author=Author.agent("bench")
    )


def without_fsync(make: Callable[[str], Any]) -> dict[str, float]:
    real = os.fsync
    os.fsync = lambda fd: None
    try:
        return measure(make)
    finally:
        os.fsync = real


def main() -> None:
    reference = measure(lambda folder: BetaLocalFilesystemMemoryTool(folder))
    ours = measure(gitmem_tool)
    bare = without_fsync(gitmem_tool)
    print(
        f"memory tool: median of {ROUNDS} commands on a store of {FILES} files "
        f"(load average {' / '.join(f'{x:.2f}' for x in os.getloadavg())})"
    )
    print(
        "(the reference fsyncs a created or edited file once, and a rename or delete not "
        "at all;\n gitmem fsyncs pack, index and ref lock, then the pack folder, then the "
        "ref folder: three flushes;\n 'no fsync' is gitmem with os.fsync patched out: its "
        "cost without the disk)"
    )
    print(f"{'command':<12} {'reference':>10} {'gitmem':>10} {'ratio':>7}  {'goal':<14} no fsync")
    for name in reference:
        ratio = ours[name] / reference[name]
        goal = GOALS.get(name, WRITE_GOAL)
        verdict = "met" if ratio <= goal else "MISSED"
        print(
            f"{name:<12} {reference[name]:>8.2f}ms {ours[name]:>8.2f}ms {ratio:>6.2f}x"
            f"  <= {goal}x {verdict:<6} {bare[name]:>6.2f}ms"
        )


if __name__ == "__main__":
    main()
