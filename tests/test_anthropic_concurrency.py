"""Two processes of memory-tool commands on one store: no lost update."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import helpers_anthropic
from conftest import assert_fsck, git

from gitmem import Author, Repository
from gitmem.anthropic import GitMemoryTool

STORE = "claude/shared"
HELPER = str(Path(helpers_anthropic.__file__))
COMMANDS = 200


def test_two_processes_of_200_commands_lose_nothing(repo: Repository) -> None:
    """Every insert into the shared file and every create lands, each as one commit of
    one command, and git fsck --strict accepts the result."""
    GitMemoryTool(repo, STORE, author=Author.agent("setup")).call(
        {"command": "create", "path": "/memories/shared.md", "file_text": ""}
    )
    procs = [
        subprocess.Popen(
            [sys.executable, HELPER, repo.directory, STORE, name, str(COMMANDS)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("p0", "p1")
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        assert out == "done\n"
    snapshot = repo.files(STORE)
    lines = (snapshot.read("memories/shared.md") or "").splitlines()
    expected = {f"p{n} {i}" for n in range(2) for i in range(0, COMMANDS, 2)}
    assert len(lines) == len(expected) and set(lines) == expected
    # each process's own inserts appear newest first: none was reordered or lost
    for n in range(2):
        mine = [line for line in lines if line.startswith(f"p{n} ")]
        assert mine == sorted(mine, key=lambda line: -int(line.split()[1]))
    created = snapshot.files("memories/p0") + snapshot.files("memories/p1")
    assert len(created) == COMMANDS
    commits = git(repo.directory, "rev-list", "--count", STORE).stdout.strip()
    assert commits == str(1 + 2 * COMMANDS)
    revisions = repo.file_revisions(STORE)
    assert len(revisions) == 1 + 2 * COMMANDS
    assert len({r.commit for r in revisions}) == len(revisions)
    assert [r.revision for r in repo.file_revisions(STORE, "memories/shared.md")] == list(
        range(1, 2 + COMMANDS)
    )
    assert_fsck(repo.directory)
