"""GitMemoryTool against the SDK's own BetaLocalFilesystemMemoryTool: the same random
command sequences, the same answers, the same files."""

from __future__ import annotations

import itertools
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from anthropic.lib.tools import ToolError
from anthropic.lib.tools._beta_builtin_memory_tool import BetaLocalFilesystemMemoryTool
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitmem import Author, Repository
from gitmem.anthropic import GitMemoryTool

NAMES = ["a.md", "b", "d/a.md", "d/e/b", "d/e", "d", ".h", "d/.h/a.md"]
GOOD = ["/memories", "/memories/", *(f"/memories/{n}" for n in NAMES), "/memories/d/"]
# refused alike by both: outside /memories, or escaping it
BAD = ["/etc/passwd", "memories/a.md", "/memories/../a.md", "/memories/..", "/memories/d/../.."]
PATHS = st.sampled_from(GOOD * 4 + BAD)
FILES = ["/memories/a.md", "/memories/d/a.md", "/memories/d/e/b"]
# commands on a file mostly name one that may exist, so their own refusals are reached
ON_FILES = st.sampled_from(FILES * 8 + GOOD + BAD)
WORDS = ["alpha", "beta", "\n", "gamma\n", "\r\n", "é", " ", "a"]
TEXT = st.lists(st.sampled_from(WORDS), max_size=6).map("".join) | st.text("ab\n\r", max_size=4)
RANGES = st.sampled_from([None, [1, 2], [2, -1], [0, 1], [3, 1], [-5, 2], [1], [1, -3], [9, 12]])

CREATE = st.fixed_dictionaries({"command": st.just("create"), "path": ON_FILES, "file_text": TEXT})
COMMANDS = st.one_of(
    st.fixed_dictionaries({"command": st.just("view"), "path": PATHS, "view_range": RANGES}),
    st.fixed_dictionaries({"command": st.just("view"), "path": ON_FILES, "view_range": RANGES}),
    CREATE,
    CREATE,
    st.fixed_dictionaries({"command": st.just("create"), "path": PATHS, "file_text": TEXT}),
    st.fixed_dictionaries(
        {
            "command": st.just("str_replace"),
            "path": ON_FILES,
            "old_str": st.sampled_from([*WORDS, "", "alpha beta", "ha"]) | TEXT,
            "new_str": TEXT,
        }
    ),
    st.fixed_dictionaries(
        {
            "command": st.just("insert"),
            "path": ON_FILES,
            "insert_line": st.integers(-1, 4),
            "insert_text": TEXT,
        }
    ),
    st.fixed_dictionaries({"command": st.just("delete"), "path": PATHS}),
    st.fixed_dictionaries({"command": st.just("rename"), "old_path": PATHS, "new_path": PATHS}),
    st.fixed_dictionaries({"command": st.just("rename"), "old_path": ON_FILES, "new_path": PATHS}),
)
WRITES = {"create", "str_replace", "insert", "delete", "rename"}
_SIZE = re.compile(r"\d+(\.\d)?[BKMG]")


def answer(tool: Any, command: dict[str, Any]) -> tuple[str, str]:
    """``("ok", text)``, ``("error", text)`` for a ToolError, ``("foreign", type)`` else."""
    try:
        return "ok", tool.call(command)
    except ToolError as exc:
        return "error", str(exc)
    except Exception as exc:
        return "foreign", type(exc).__name__


def sizes_of_directories_masked(text: str) -> str:
    """A listing with each directory's size replaced by ``<dir>`` once it is checked to
    be a well-formed size: the one difference the contract allows."""
    if not text.startswith("Here're the files and directories"):
        return text
    header, *rows = text.split("\n")
    out = [header]
    for i, row in enumerate(rows):
        size, _, path = row.partition("\t")
        assert _SIZE.fullmatch(size), row
        out.append(f"<dir>\t{path}" if i == 0 or path.endswith("/") else row)
    return "\n".join(out)


def prune_empty_directories(root: Path) -> None:
    """Directories are implicit in a file store: one exists while it holds a
    file. The reference keeps a folder its last file left; remove those."""
    for folder, _, _ in sorted(os.walk(root), key=lambda w: -len(w[0])):
        if Path(folder) != root and not os.listdir(folder):
            os.rmdir(folder)


def reference_files(root: Path) -> dict[str, str]:
    found: dict[str, str] = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder) / name
            found["memories/" + path.relative_to(root).as_posix()] = path.read_bytes().decode()
    return found


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Repository]:
    repo = Repository.init(str(tmp_path_factory.mktemp("diff") / "mem.git"))
    yield repo
    repo.close()


_stores = itertools.count()


@settings(
    derandomize=True,
    max_examples=500,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(commands=st.lists(COMMANDS, min_size=3, max_size=30))
def test_same_answers_and_files_as_the_reference(
    shared: Repository, commands: list[dict[str, Any]]
) -> None:
    """Every command answers as the reference does (directory sizes aside), a command
    the reference fails on with a foreign exception is a ToolError here, every success
    that writes is one commit, and the files end up the same."""
    store = f"diff/{next(_stores)}"
    ours = GitMemoryTool(shared, store, author=Author.agent("claude"))
    base = Path(tempfile.mkdtemp(prefix="gitmem-ref-"))
    try:
        reference = BetaLocalFilesystemMemoryTool(str(base))
        root = base / "memories"
        writes = 0
        for command in commands:
            expected = answer(reference, command)
            prune_empty_directories(root)
            got = answer(ours, command)
            assert got[0] != "foreign", (command, got)
            if expected[0] == "foreign":
                assert got[0] == "error", (command, got)
                continue
            assert (got[0], sizes_of_directories_masked(got[1])) == (
                expected[0],
                sizes_of_directories_masked(expected[1]),
            ), command
            writes += got[0] == "ok" and command["command"] in WRITES
        snapshot = shared.files(store)
        assert {p: snapshot.read(p) for p in snapshot.files()} == reference_files(root)
        assert len(list(shared.iter_commits(store))) == writes
    finally:
        shutil.rmtree(base)
