"""A hand commit on a store no hook guards may leave a memory that does not read as
text (invalid UTF-8): every reader of the head refuses it, and ``revert`` or ``restore``
is what repairs it, as one commit (each compares by blob and measures what it replaces
as far as it reads)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from dulwich.objects import Blob, Commit, Tree
from dulwich.refs import Ref
from dulwich.repo import Repo

from gitmem import Author, Memory, Repository, ops
from gitmem.cli import cli
from gitmem.errors import StorageError
from gitmem.store import memoryfiles as files

ME = Author("Operator", "op@example.com")
STORE = "notes"
BROKEN = b'---\ndescription: "how staging is rolled"\n---\n1. dr\xffain\n'


def _hand_commit(path: str, data: bytes) -> str:
    """A plain commit on the store's branch that rewrites `deploy`'s file as ``data``."""
    git = Repo(path)
    ref = Ref(f"refs/heads/{STORE}".encode())
    head = git[git.refs[ref]]
    assert isinstance(head, Commit)
    root = git[head.tree]
    assert isinstance(root, Tree)
    folder = files.bucket("deploy").encode()
    sub = git[root[folder][1]]
    assert isinstance(sub, Tree)
    blob = Blob.from_string(data)
    sub.add(b"deploy.md", 0o100644, blob.id)
    root.add(folder, 0o040000, sub.id)
    commit = Commit()
    commit.tree, commit.parents = root.id, [head.id]
    commit.author = commit.committer = b"Mallory <m@example.org>"
    commit.author_time = commit.commit_time = 0
    commit.author_timezone = commit.commit_timezone = 0
    commit.message = b"hand edit\n"
    for obj in (blob, sub, root, commit):
        git.object_store.add_object(obj)
    git.refs[ref] = commit.id
    git.close()
    return commit.id.decode()


@pytest.fixture
def broken(tmp_path: Path) -> tuple[str, str]:
    """A store whose head (a hand commit) holds `deploy` as invalid UTF-8; the path and
    that commit."""
    path = str(tmp_path / "r.git")
    with Repository.init(path) as repo:
        ops.create(repo, STORE, ME, "deploy", "how staging is rolled", "1. drain\n")
        ops.create(repo, STORE, ME, "other", "other", "fine\n")
    commit = _hand_commit(path, BROKEN)
    with Repository.open(path) as repo, pytest.raises(StorageError, match="does not parse"):
        repo.snapshot(STORE).get("deploy")
    return path, commit


def _repaired(path: str) -> None:
    with Repository.open(path) as repo:
        assert repo.snapshot(STORE).get("deploy") == Memory(
            "deploy", "how staging is rolled", "1. drain\n"
        )
        assert [m.slug for m in repo.snapshot(STORE).memories()] == ["deploy", "other"]
    for command in (["ls"], ["show", "deploy"], ["log"], ["state"]):
        result = CliRunner().invoke(cli, ["--repo", path, *command, "--store", STORE])
        assert result.exit_code == 0, (command, result.output)


def test_a_revert_repairs_a_memory_that_does_not_read(broken: tuple[str, str]) -> None:
    path, commit = broken
    result = CliRunner().invoke(cli, ["--repo", path, "revert", commit, "--store", STORE])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("reverted deploy (revision 3")
    _repaired(path)


def test_a_restore_repairs_a_memory_that_does_not_read(broken: tuple[str, str]) -> None:
    path, _ = broken
    result = CliRunner().invoke(
        cli, ["--repo", path, "restore", "deploy", "--rev", "1", "--store", STORE]
    )
    assert result.exit_code == 0, result.output
    _repaired(path)
    with Repository.open(path) as repo:
        kept = repo.revisions(STORE, "deploy")
        assert [r.revision for r in kept] == [1, 2, 3]
        assert "\ufffd" in kept[1].memory().body  # the hand commit's, read as far as it goes
