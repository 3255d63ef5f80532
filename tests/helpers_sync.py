"""Git projects on disk for the sync tests, and a syncing process for the push race.

Run as a script: ``python helpers_sync.py <clone> <name> <rounds>``: each round creates
memory ``<name>-<i>`` in store ``notes`` and syncs with ``origin``, printing the head
each sync pushed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from gitmem import Author, Repository, ops

ENV = {
    **os.environ,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "Dev",
    "GIT_AUTHOR_EMAIL": "dev@example.com",
    "GIT_COMMITTER_NAME": "Dev",
    "GIT_COMMITTER_EMAIL": "dev@example.com",
}
ME = Author("Operator", "op@example.com")
STORE = "notes"


def sh(cwd: str | os.PathLike[str], *args: str) -> str:
    """Run ``git`` in ``cwd``; fail the test with git's words if it fails."""
    result = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, env=ENV, check=False
    )
    assert result.returncode == 0, f"git {' '.join(args)}: {result.stdout}{result.stderr}"
    return result.stdout


def make_project(path: Path) -> Path:
    """A git project with one commit on ``main``."""
    sh(path.parent, "init", "-q", "-b", "main", path.name)
    (path / "README.md").write_text("# project\n")
    sh(path, "add", "README.md")
    sh(path, "commit", "-q", "-m", "first")
    return path


def is_ancestor(cwd: str | os.PathLike[str], old: str, new: str) -> bool:
    return (
        subprocess.run(
            ["git", "merge-base", "--is-ancestor", old, new], cwd=cwd, env=ENV, check=False
        ).returncode
        == 0
    )


def main(argv: list[str]) -> None:
    clone, name, rounds = argv[0], argv[1], int(argv[2])
    with Repository.open(clone) as repo:
        for i in range(rounds):
            ops.create(repo, STORE, ME, f"{name}-{i}", f"by {name}", f"write {i} by {name}\n")
            for report in repo.sync("origin"):
                if report.pushed:
                    print(report.head, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])


def hostile_replicas(
    tmp_path: Path, prepare: Callable[[Path], None] | None = None
) -> tuple[Path, Path, Path]:
    """An unguarded bare origin holding store ``notes`` (one memory, then whatever
    ``prepare`` writes in the project it is cloned from), and two clones of it, ``a``
    (the hostile pusher) and ``b`` (the replica that syncs)."""
    project = make_project(tmp_path / "project")
    with Repository.init(str(project)) as repo:
        ops.create(repo, "notes", ME, "todo", "open tasks", "- ship\n")
    if prepare is not None:
        prepare(project)
    sh(tmp_path, "clone", "-q", "--bare", "project", "origin.git")
    for name in ("a", "b"):
        sh(tmp_path, "clone", "-q", "origin.git", name)
        with Repository.open(str(tmp_path / name)) as repo:
            repo.sync("origin")
    return tmp_path / "origin.git", tmp_path / "a", tmp_path / "b"
