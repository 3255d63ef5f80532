"""Undo without rewriting: restore a memory's revision, revert a commit (a merge against
its first parent) or a run of commits, each as one new commit held to the limits,
secrets and guards; a revert that would lose a later change is refused, naming it."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner, Result
from conftest import capability, tree_bytes
from helpers_secrets import SECRETS

from gitmem import Agent, Repository, ops
from gitmem.cli import cli
from gitmem.errors import (
    GuardRefused,
    InvalidArgument,
    LimitExceeded,
    NotFound,
    SecretFound,
    Unchanged,
)
from gitmem.types import Author, Edit, Memory
from gitmem.undo import RESTORES, REVERTS

ME = Author("Operator", "op@example.com")
STORE = "notes"
NO_TODO = """
export function check(change: { body: string | null }): string | undefined {
  if (change.body !== null && change.body.includes("TODO")) return "no TODO in bodies";
}
"""


def cli_run(repo: Repository, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--repo", repo.directory, *args])


def bodies(repo: Repository, store: str = STORE) -> dict[str, str]:
    return {m.slug: m.body for m in repo.snapshot(store).memories()}


def trailers(repo: Repository, commit: str) -> dict[str, str]:
    return dict(repo.made_by(commit)[2])


# -- restore ---------------------------------------------------------------------------


def test_restore_makes_a_past_revision_live_in_one_new_commit(repo: Repository) -> None:
    """The old text comes back as a new revision on top; every earlier commit stays."""
    ops.create(repo, STORE, ME, "a", "the a", "one\n")
    ops.edit(repo, STORE, ME, "a", body="two\n", description="the a, later")
    before = list(repo.iter_commits(STORE))
    restored = repo.restore(STORE, "a", 1, ME)
    assert (restored.revision, restored.op, restored.body) == (3, "restore", "one\n")
    assert restored.description == "the a"
    assert list(repo.iter_commits(STORE))[1:] == before
    assert repo.parents(restored.commit) == [before[0]]
    assert trailers(repo, restored.commit)[RESTORES] == "a 1"


def test_restore_brings_back_a_deleted_memory(repo: Repository) -> None:
    """A deleted memory's last text is restored by naming its revision."""
    ops.create(repo, STORE, ME, "a", "the a", "one\n")
    ops.delete(repo, STORE, ME, "a")
    assert repo.restore(STORE, "a", 1, ME).revision == 3
    assert bodies(repo) == {"a": "one\n"}


@pytest.mark.parametrize(
    ("slug", "revision", "error", "words"),
    [
        ("a", 2, InvalidArgument, "revision 2 of 'a' removed it"),
        ("a", 9, NotFound, "'a' has revisions 1 to 3, not 9"),
        ("zz", 1, NotFound, "there is no memory named 'zz'"),
        ("a", 3, Unchanged, "already holds exactly this text"),
    ],
)
def test_a_restore_that_cannot_be_is_refused_and_writes_nothing(
    repo: Repository, slug: str, revision: int, error: type[Exception], words: str
) -> None:
    """A removal, a missing revision or memory, and a no-op are refused."""
    ops.create(repo, STORE, ME, "a", "the a", "one\n")
    ops.delete(repo, STORE, ME, "a")
    repo.restore(STORE, "a", 1, ME)
    before = tree_bytes(repo.directory)
    with pytest.raises(error, match=words):
        repo.restore(STORE, slug, revision, ME)
    assert tree_bytes(repo.directory) == before


# -- revert ----------------------------------------------------------------------------


def test_revert_takes_back_one_commit(repo: Repository) -> None:
    """Each memory the commit changed goes back to its text before it; others stay."""
    ops.create(repo, STORE, ME, "a", "the a", "one\n")
    target = ops.edit(repo, STORE, ME, "a", body="two\n").commit
    ops.create(repo, STORE, ME, "b", "the b", "bee\n")
    done = repo.revert(STORE, target[:8], ME)
    assert [(r.slug, r.op, r.body) for r in done] == [("a", "revert", "one\n")]
    assert bodies(repo) == {"a": "one\n", "b": "bee\n"}
    assert trailers(repo, done[0].commit)[REVERTS] == target


def test_revert_takes_back_a_whole_pass_in_one_commit(repo: Repository) -> None:
    """FROM..TO takes back every commit after FROM up to TO: creates are removed,
    edits and deletes undone, all in one commit."""
    ops.create(repo, STORE, ME, "a", "the a", "one\n")
    start = ops.create(repo, STORE, ME, "gone", "the gone", "kept\n").commit
    ops.edit(repo, STORE, ME, "a", body="rewritten\n")
    ops.delete(repo, STORE, ME, "gone")
    end = ops.create(repo, STORE, ME, "new", "the new", "fresh\n").commit
    count = len(list(repo.iter_commits(STORE)))
    done = repo.revert(STORE, f"{start[:7]}..{end[:7]}", ME)
    assert sorted((r.slug, r.removed) for r in done) == [
        ("a", False),
        ("gone", False),
        ("new", True),
    ]
    assert len({r.commit for r in done}) == 1
    assert len(list(repo.iter_commits(STORE))) == count + 1
    assert bodies(repo) == {"a": "one\n", "gone": "kept\n"}
    assert trailers(repo, done[0].commit)[REVERTS] == f"{start}..{end}"


def test_revert_of_a_merge_is_against_its_first_parent(repo: Repository) -> None:
    """A merge is taken back to its first parent: what it brought in goes, what the
    branch had stays."""
    ours = ops.create(repo, STORE, ME, "a", "the a", "ours\n").commit
    repo.fork(STORE, "side")
    theirs = ops.create(repo, "side", ME, "b", "the b", "theirs\n").commit
    merged = repo.merge(
        STORE, ME, ours, theirs, [Edit("create", "b", Memory("b", "the b", "theirs\n"))], {}
    )
    assert merged is not None
    assert bodies(repo) == {"a": "ours\n", "b": "theirs\n"}
    done = repo.revert(STORE, merged, ME)
    assert [(r.slug, r.removed) for r in done] == [("b", True)]
    assert bodies(repo) == {"a": "ours\n"}


def test_a_revert_that_would_lose_a_later_change_is_refused(repo: Repository) -> None:
    """Memories changed again since are named; nothing is written."""
    ops.create(repo, STORE, ME, "a", "the a", "one\n")
    ops.create(repo, STORE, ME, "b", "the b", "bee\n")
    start = repo.head(STORE)
    assert start is not None
    ops.edit(repo, STORE, ME, "a", body="two\n")
    end = ops.edit(repo, STORE, ME, "b", body="bee two\n").commit
    ops.edit(repo, STORE, ME, "a", body="three\n")
    ops.delete(repo, STORE, ME, "b")
    before = tree_bytes(repo.directory)
    with pytest.raises(InvalidArgument) as caught:
        repo.revert(STORE, f"{start}..{end}", ME)
    assert str(caught.value) == (
        f"cannot revert {start[:12]}..{end[:12]}: later changes to `a`, `b` would be lost; "
        "restore those memories one by one (`gitmem restore SLUG --rev N`) instead"
    )
    assert tree_bytes(repo.directory) == before


@pytest.mark.parametrize(
    ("commits", "words"),
    [
        ("HEAD", r"is not a commit \(at least 4 hex digits\) or a range FROM\.\.TO"),
        ("2026-01-01", "is not a commit"),
        ("0000000", "names no commit of store 'notes'"),
    ],
)
def test_a_revert_of_no_commit_is_refused(repo: Repository, commits: str, words: str) -> None:
    """Only commits of the store's history (or a range of two) can be reverted."""
    ops.create(repo, STORE, ME, "a", "the a", "one\n")
    with pytest.raises((InvalidArgument, NotFound), match=words):
        repo.revert(STORE, commits, ME)


def test_a_file_store_is_refused_in_one_line_naming_git_revert(repo: Repository) -> None:
    """A file store (the observer's log, the recall store) has no memories to put back:
    revert and restore say so and name the way that takes back its commits."""
    from gitmem.types import FileChange, FileEdit

    made = repo.publish_files("log", ME, lambda _: FileChange((FileEdit("create", "a.md", "x"),)))
    with pytest.raises(InvalidArgument, match=r"is a file store.*`git revert`"):
        repo.revert("log", made[0].commit, ME)
    with pytest.raises(InvalidArgument, match=r"is a file store.*`git revert`"):
        repo.restore("log", "a", 1, ME)


def test_a_revert_of_a_commit_that_changed_no_memory_writes_nothing(repo: Repository) -> None:
    """A commit of the store's allowlist or guard changed no memory: nothing to revert."""
    ops.create(repo, STORE, ME, "a", "the a", "one\n")
    allowed = repo.allow(STORE, "0123456789abcdef", "reviewed", ME)
    assert allowed is not None
    with pytest.raises(Unchanged, match=f"{allowed[:12]} changed no memory of notes"):
        repo.revert(STORE, allowed, ME)
    assert repo.head(STORE) == allowed


def test_a_backwards_range_is_refused(repo: Repository) -> None:
    """FROM must be an ancestor of TO."""
    first = ops.create(repo, STORE, ME, "a", "the a", "one\n").commit
    second = ops.edit(repo, STORE, ME, "a", body="two\n").commit
    with pytest.raises(InvalidArgument, match="is not an ancestor of"):
        repo.revert(STORE, f"{second}..{first}", ME)


# -- held to the limits, secrets and guards ------------------------------------------


def test_a_revert_is_held_to_the_limits_the_store_records(repo: Repository) -> None:
    """Bringing back a deleted memory past maxCount is refused like any create."""
    cap = capability("keyword-search", "shared", maxCount=2)
    holder = repo.bind(cap, Agent("team", "w"))
    assert holder is not None
    for slug in ("a", "b"):
        holder.call("create_memory", {"name": slug, "description": slug, "body": slug})
    deleted = holder.call("delete_memory", {"name": "b"})
    assert deleted.ok
    gone = repo.head(holder.store_id)
    assert gone is not None
    holder.call("create_memory", {"name": "c", "description": "c", "body": "c"})
    with pytest.raises(LimitExceeded):
        repo.revert(holder.store_id, gone, ME)
    with pytest.raises(LimitExceeded):
        repo.restore(holder.store_id, "b", 1, ME)


def test_a_revert_passes_the_secrets_screen(repo: Repository) -> None:
    """A revert that would put back a secret (allowed then, not now) is refused."""
    _, text = SECRETS[0]
    ops.create(repo, STORE, ME, "a", "the a", "clean\n")
    with pytest.raises(SecretFound) as caught:
        ops.edit(repo, STORE, ME, "a", body=text)
    repo.allow(STORE, caught.value.fingerprint, "reviewed", ME)
    ops.edit(repo, STORE, ME, "a", body=text)
    cleaned = ops.edit(repo, STORE, ME, "a", body="clean again\n").commit
    repo.set_meta(STORE, "@allowlist", None, ME)
    with pytest.raises(SecretFound):
        repo.revert(STORE, cleaned, ME)
    with pytest.raises(SecretFound):
        repo.restore(STORE, "a", 2, ME)
    assert bodies(repo) == {"a": "clean again\n"}


def test_a_revert_passes_the_stores_guard(repo: Repository) -> None:
    """The store's guard judges the revert's change as it judges any write."""
    ops.create(repo, STORE, ME, "a", "the a", "TODO: write it\n")
    done = ops.edit(repo, STORE, ME, "a", body="written\n").commit
    repo.set_guard(STORE, NO_TODO, ME)
    with pytest.raises(GuardRefused, match="no TODO in bodies"):
        repo.revert(STORE, done, ME)
    assert bodies(repo) == {"a": "written\n"}


# -- the command line ------------------------------------------------------------------


def test_restore_and_revert_through_the_cli(repo: Repository) -> None:
    """`gitmem restore` and `gitmem revert` print the revisions they made (JSON too);
    a conflict is one error line, exit 1."""
    ops.create(repo, STORE, ME, "a", "the a", "one\n")
    target = ops.edit(repo, STORE, ME, "a", body="two\n").commit
    restored = cli_run(repo, "restore", "a", "--rev", "1", "-s", STORE, "--json")
    assert restored.exit_code == 0, restored.output
    assert json.loads(restored.stdout)["op"] == "restore"
    refused = cli_run(repo, "revert", target, "-s", STORE)
    assert refused.exit_code == 1
    assert refused.stderr == (
        f"Error: cannot revert {target[:12]}: later changes to `a` would be lost; "
        "restore those memories one by one (`gitmem restore SLUG --rev N`) instead\n"
    )
    last = repo.head(STORE)
    assert last is not None
    reverted = cli_run(repo, "revert", last[:9], "-s", STORE)
    assert reverted.exit_code == 0, reverted.output
    assert reverted.stdout.startswith("reverted a (revision 4, commit ")
    assert bodies(repo) == {"a": "two\n"}
