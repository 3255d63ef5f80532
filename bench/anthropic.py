"""The memory tool: each command on GitMemoryTool against the SDK's reference backend,
``BetaLocalFilesystemMemoryTool``, measured side by side in one run (``make bench``).

Goals: a write (create, str_replace, insert, rename, delete) at most 3x the reference's
time (it fsyncs one file; gitmem fsyncs its objects and the ref); a view at most 1.5x.
Each figure is the median of ROUNDS commands on a store of FILES files; the three
backends (the reference, gitmem, gitmem with os.fsync patched out) take turns command by
command.
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


class Runner:
    """One backend in its own folder; ``fsync=False`` patches os.fsync out around its
    commands only (gitmem's cost without the disk)."""

    def __init__(self, make: Callable[[str], Any], *, fsync: bool = True) -> None:
        self.folder = tempfile.mkdtemp(prefix="gitmem-bench-")
        self.tool = make(self.folder)
        self.fsync = fsync
        self.samples: dict[str, list[float]] = {}

    def call(self, command: dict[str, Any]) -> float:
        real = os.fsync
        if not self.fsync:
            os.fsync = lambda fd: None
        try:
            start = time.perf_counter()
            self.tool.call(command)
            return time.perf_counter() - start
        finally:
            os.fsync = real

    def medians(self) -> dict[str, float]:
        return {name: statistics.median(v) * 1000 for name, v in self.samples.items()}

    def close(self) -> None:
        shutil.rmtree(self.folder)


def gitmem_tool(folder: str) -> GitMemoryTool:
    return GitMemoryTool(
        Repository.init(f"{folder}/mem.git"), "claude", author=Author.agent("bench")
    )


def measure() -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    """Medians of the reference, gitmem and gitmem without fsync, taking turns command by
    command, so that the disk's weather hits all three alike."""
    runners = [
        Runner(lambda folder: BetaLocalFilesystemMemoryTool(folder)),
        Runner(gitmem_tool),
        Runner(gitmem_tool, fsync=False),
    ]
    try:
        for i in range(FILES):
            for runner in runners:
                runner.call(
                    {"command": "create", "path": f"/memories/seed/{i}.md", "file_text": TEXT}
                )
        for i in range(ROUNDS):
            for name, command in commands(i):
                for runner in runners:
                    runner.samples.setdefault(name, []).append(runner.call(command))
        reference, ours, bare = (runner.medians() for runner in runners)
        return reference, ours, bare
    finally:
        for runner in runners:
            runner.close()


def main() -> None:
    reference, ours, bare = measure()
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
