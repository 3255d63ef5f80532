"""The store's history: changes of several slugs in one commit, merges, rewritten branches."""

from __future__ import annotations

import os
import random
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import assert_fsck, commit_by_hand, git, tree_bytes
from dulwich.objects import Commit, Tree
from dulwich.repo import Repo
from hypothesis import given, settings
from hypothesis import strategies as st

from gitmem import (
    AlreadyExists,
    Author,
    InvalidArgument,
    InvalidSlug,
    Memory,
    NotFound,
    Repository,
    Revision,
    Totals,
)
from gitmem.errors import StorageError
from gitmem.store import Snapshot, memoryfiles
from gitmem.store.history import History
from gitmem.store.historyfile import FOREIGN_END, MERGE_FIELD
from gitmem.store.message import Edited, Facts, parse_message
from gitmem.store.objects import ObjectReader, Step
from gitmem.store.rows import Row, field_of, lines_with
from gitmem.types import Change, Edit, check_op

S = "profile/s"
T = "profile/t"
ALICE = Author.agent("alice")


def put(repo: Repository, op: str, slug: str, body: str = "", *, store: str = S) -> Revision:
    """Publish one single-slug change that does not depend on the head."""
    memory = None if op == "delete" else Memory(slug, f"about {slug}", body)
    return repo.mutate(store, ALICE, lambda _: Change(op, slug, memory))


def rename(repo: Repository, old: str, new: str, *, store: str = S) -> list[Revision]:
    """Publish ``old`` under the name ``new`` as one two-slug change."""

    def fn(snapshot: Snapshot) -> Change:
        memory = snapshot.get(old)
        assert memory is not None
        moved = Memory(new, memory.description, memory.body)
        return Change("rename", old, None, also=(Edit("rename", new, moved),))

    return repo.publish(store, ALICE, fn)


def message(repo: Repository, commit: str) -> str:
    return git(repo.directory, "log", "-1", "--format=%B", commit).stdout


def key(rev: Revision) -> tuple[str, str, int, str, str]:
    """A revision without its store: what two stores sharing a commit agree on."""
    return (rev.commit, rev.slug, rev.revision, rev.op, rev.body)


def history_files(repo: Repository) -> dict[str, bytes]:
    folder = os.path.join(repo.directory, "gitmem", "history")
    return {
        name: open(os.path.join(folder, name), "rb").read()
        for name in sorted(os.listdir(folder))
        if not name.endswith((".lock", ".blobs"))
    }


def drop_history(repo: Repository) -> None:
    """Remove the derived index and its side file of blob ids."""
    folder = os.path.join(repo.directory, "gitmem", "history")
    for name in os.listdir(folder):
        if not name.endswith(".lock"):
            os.remove(os.path.join(folder, name))


# -- a change of several slugs -----------------------------------------------------


def test_two_slug_change_is_one_commit_in_both_histories(repo: Repository) -> None:
    """Removing a and adding b with a's text is one commit that both slugs' histories show."""
    put(repo, "create", "a", "alpha\n")
    put(repo, "edit", "a", "alpha two\n")
    put(repo, "create", "keep", "k")
    before = repo.head(S)
    old, new = rename(repo, "a", "b")
    head = repo.head(S)
    assert old.commit == new.commit == head
    assert git(repo.directory, "rev-parse", f"{head}^").stdout.strip() == before
    assert git(repo.directory, "rev-list", "--count", S).stdout.strip() == "4"
    assert (old.slug, old.op, old.revision, old.body) == ("a", "rename", 3, "alpha two\n")
    assert (new.slug, new.op, new.revision, new.body) == ("b", "rename", 1, "alpha two\n")
    assert [key(r) for r in repo.revisions(S, "a")][-1] == key(old)
    assert [key(r) for r in repo.revisions(S, "b")] == [key(new)]
    assert [r.slug for r in repo.revisions(S)] == ["a", "a", "keep", "a", "b"]
    snapshot = repo.snapshot(S)
    assert snapshot.slugs() == ["b", "keep"]
    assert (snapshot.revision("a"), snapshot.revision("b")) == (3, 1)
    assert old.totals == new.totals == snapshot.totals == Totals(2, 11, 2)
    assert snapshot.peaks == Totals(2, 11, 2)
    assert put(repo, "edit", "b", "beta\n").revision == 2
    assert Repository.open(repo.directory).revisions(S) == repo.revisions(S)
    assert_fsck(repo.directory)


def test_multi_slug_message_format_and_round_trip(repo: Repository) -> None:
    """A two-slug commit reads as one line in git log, repeats the slug trio, and parses back."""
    put(repo, "create", "a", "x\n")
    old, _ = rename(repo, "a", "b")
    oneline = git(repo.directory, "log", "--oneline", "-1", S).stdout
    assert oneline == f"{old.commit[:7]} rename a, b\n"
    text = message(repo, old.commit)
    assert text == (
        "rename a, b\n\n"
        "Gitmem-Slug: a\nGitmem-Op: rename\nGitmem-Revision: 2\n"
        "Gitmem-Slug: b\nGitmem-Op: rename\nGitmem-Revision: 1\n"
        "Gitmem-Count: 1\nGitmem-Chars: 2\nGitmem-Lines: 1\n"
        "Gitmem-Peak-Count: 1\nGitmem-Peak-Chars: 2\nGitmem-Peak-Lines: 1\n\n"
    )
    facts = parse_message(text.encode())
    assert facts is not None
    assert facts.edits == (Edited("a", "rename", 2), Edited("b", "rename", 1))
    assert (facts.slug, facts.op, facts.revision) == ("a", "rename", 2)
    trailers = git(repo.directory, "log", "-1", "--format=%(trailers:key=Gitmem-Slug)", S)
    assert trailers.stdout.split() == ["Gitmem-Slug:", "a", "Gitmem-Slug:", "b"]


def test_single_slug_message_is_unchanged(repo: Repository) -> None:
    """A one-slug commit's message is byte for byte the format gitmem always wrote."""
    rev = repo.mutate(
        S, ALICE, lambda _: Change("create", "a", Memory("a", "d", "xy\n"), {"Gitmem-Why": "t"})
    )
    assert message(repo, rev.commit) == (
        "create a\n\nGitmem-Slug: a\nGitmem-Op: create\nGitmem-Revision: 1\n"
        "Gitmem-Count: 1\nGitmem-Chars: 3\nGitmem-Lines: 1\n"
        "Gitmem-Peak-Count: 1\nGitmem-Peak-Chars: 3\nGitmem-Peak-Lines: 1\nGitmem-Why: t\n\n"
    )


def test_subject_names_ops_where_they_change_and_caps_the_list(repo: Repository) -> None:
    """Mixed ops are each named; past three slugs the subject says how many more."""
    put(repo, "create", "gone", "g")
    mixed = repo.publish(
        S,
        ALICE,
        lambda _: Change(
            "delete", "gone", None, also=(Edit("create", "born", Memory("born", "d", "")),)
        ),
    )
    assert git(repo.directory, "log", "-1", "--format=%s", S).stdout == "delete gone, create born\n"
    assert [(r.slug, r.op, r.revision) for r in mixed] == [
        ("gone", "delete", 2),
        ("born", "create", 1),
    ]
    five = tuple(Edit("write", f"w{i}", Memory(f"w{i}", "d", "")) for i in range(1, 5))
    revs = repo.publish(S, ALICE, lambda _: Change("write", "w0", Memory("w0", "d", ""), also=five))
    assert len(revs) == 5 and len({r.commit for r in revs}) == 1
    assert (
        git(repo.directory, "log", "-1", "--format=%s", S).stdout == "write w0, w1, w2 (+2 more)\n"
    )
    assert repo.snapshot(S).totals == Totals(6, 0, 0)
    assert_fsck(repo.directory)


def test_peaks_count_every_edit_of_a_change(repo: Repository) -> None:
    """Totals after a change of several slugs add up every slug; the peak is the result."""
    put(repo, "create", "a", "aaaa\n")  # 5 chars, 1 line
    three = (Edit("create", "b", Memory("b", "d", "bb\nbb\n")), Edit("delete", "a", None))
    rev = repo.mutate(S, ALICE, lambda _: Change("create", "c", Memory("c", "d", "c"), also=three))
    assert rev.totals == Totals(2, 7, 3)
    assert rev.peaks == Totals(2, 7, 3)


OPS_OK = ["create", "rename", "merge-in", "a", "x" * 32, "re-"]
OPS_BAD = ["", "Edit", "EDIT", "ed it", "ed_it", "1up", "-x", "x" * 33, "é", "edit\n", "a:b"]


@pytest.mark.parametrize("op", OPS_OK)
def test_check_op_accepts_lowercase_words(op: str) -> None:
    """An op of lowercase letters and '-', starting with a letter, up to 32 long, is usable."""
    assert check_op(op) == op


@pytest.mark.parametrize("op", OPS_BAD)
def test_check_op_refuses_anything_else(op: str) -> None:
    """Anything but a lowercase word is refused with InvalidArgument."""
    with pytest.raises(InvalidArgument, match="lowercase word"):
        check_op(op)


def _also(*edits: Edit) -> Callable[[Snapshot], Change]:
    return lambda _: Change("edit", "kept", Memory("kept", "d", "new"), also=edits)


MULTI_REFUSALS: dict[str, tuple[Callable[[Snapshot], Change], type[Exception]]] = {
    "duplicate slug": (_also(Edit("write", "kept", Memory("kept", "d", "x"))), InvalidArgument),
    "duplicate removal": (_also(Edit("remove", "kept", None)), InvalidArgument),
    "bad op on subject": (
        lambda _: Change("Edit", "kept", Memory("kept", "d", "x")),
        InvalidArgument,
    ),
    "bad op in also": (_also(Edit("move it", "m", Memory("m", "d", "x"))), InvalidArgument),
    "bad slug in also": (_also(Edit("write", "a b", Memory("a b", "d", "x"))), InvalidSlug),
    "removal of missing in also": (_also(Edit("rename", "ghost", None)), NotFound),
    "create of existing in also": (
        lambda _: Change(
            "write",
            "m",
            Memory("m", "d", ""),
            also=(Edit("create", "kept", Memory("kept", "d", "")),),
        ),
        AlreadyExists,
    ),
    "delete with memory in also": (
        _also(Edit("delete", "m", Memory("m", "d", ""))),
        InvalidArgument,
    ),
    "slug mismatch in also": (_also(Edit("rename", "m", Memory("n", "d", ""))), InvalidArgument),
    "gitmem's own trailer key": (
        lambda _: Change("edit", "kept", Memory("kept", "d", "x"), {"Gitmem-Slug": "other"}),
        InvalidArgument,
    ),
    "trailer key with a colon": (
        lambda _: Change("edit", "kept", Memory("kept", "d", "x"), {"A: b\nGitmem-Op": "x"}),
        InvalidArgument,
    ),
}


@pytest.mark.parametrize("name", sorted(MULTI_REFUSALS))
def test_refused_multi_slug_change_writes_nothing(repo: Repository, name: str) -> None:
    """A refused change of several slugs leaves refs, objects and the index byte-identical."""
    put(repo, "create", "kept", "original\n")
    repo.revisions(S)  # bring the derived history index up to date first
    fn, error = MULTI_REFUSALS[name]
    before = tree_bytes(repo.directory)
    refs = git(repo.directory, "for-each-ref").stdout
    with pytest.raises(error):
        repo.publish(S, ALICE, fn)
    assert git(repo.directory, "for-each-ref").stdout == refs
    assert tree_bytes(repo.directory) == before


def test_open_ops_remove_by_memory_not_by_name(repo: Repository) -> None:
    """An op gitmem does not know is stored as given; memory=None is what removes a slug."""
    put(repo, "create", "a", "x")
    rev = repo.mutate(S, ALICE, lambda _: Change("archive", "a", None))
    assert (rev.op, rev.revision, rev.body) == ("archive", 2, "x")
    assert "a" not in repo.snapshot(S)
    back = repo.mutate(S, ALICE, lambda _: Change("restore", "a", Memory("a", "d", "y")))
    assert (back.op, back.revision) == ("restore", 3)
    assert [r.op for r in Repository.open(repo.directory).revisions(S, "a")] == [
        "create",
        "archive",
        "restore",
    ]


# -- merges ------------------------------------------------------------------------


IDENTITY = ("-c", "user.name=git", "-c", "user.email=git@example.com")


def git_ok(repo: Repository, *args: str) -> str:
    result = git(repo.directory, *IDENTITY, *args)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def merge(repo: Repository, first: str, second: str, text: str = "merge") -> str:
    """A merge commit of ``first`` and ``second`` made by git itself, keeping first's tree."""
    tree = git_ok(repo, "rev-parse", f"{first}^{{tree}}")
    return git_ok(repo, "commit-tree", tree, "-p", first, "-p", second, "-m", text)


class Forked:
    """Store S forked to T, both written to, then T merged into S by git."""

    def __init__(self, repo: Repository, *, index_before: bool, merged: bool = True) -> None:
        self.repo = repo
        self.base = [put(repo, "create", "a", "a1"), put(repo, "create", "c", "c1")]
        repo.fork(S, T)
        self.s_side = [
            put(repo, "edit", "a", "a2"),
            put(repo, "edit", "c", "c2 on s"),
            put(repo, "edit", "c", "c3 on s"),
        ]
        self.t_side = [
            put(repo, "create", "t", "t1", store=T),
            put(repo, "edit", "c", "c2 on t", store=T),
            put(repo, "edit", "t", "t2", store=T),
        ]
        self.old_s = repo.head(S)
        self.t_head = repo.head(T)
        assert self.old_s is not None and self.t_head is not None
        if index_before:
            assert len(repo.revisions(S)) == 5
        self.merge = merge(repo, self.old_s, self.t_head)
        if merged:
            git_ok(repo, "update-ref", f"refs/heads/{S}", self.merge, self.old_s)


def both_sides(f: Forked) -> list[tuple[str, str, int, str, str]]:
    """Every revision of both sides, numbered as the merge's history lists them: T's
    edit of c comes after S's two, so it is c's revision 4 there (2 on T)."""
    t_side = [key(r) for r in f.t_side]
    t_side[1] = (*t_side[1][:2], 4, *t_side[1][3:])
    return [key(r) for r in f.base + f.s_side] + t_side


@pytest.mark.parametrize("index_before", [False, True], ids=["cold", "indexed before"])
def test_history_follows_both_parents_of_a_merge(repo: Repository, index_before: bool) -> None:
    """After git merges T into S, S's history holds every revision of both sides exactly once."""
    f = Forked(repo, index_before=index_before)
    for view in (repo, Repository.open(repo.directory)):
        revisions = [key(r) for r in view.revisions(S)]
        assert sorted(revisions) == sorted(both_sides(f))
        assert revisions[:5] == [key(r) for r in f.base + f.s_side]  # first parent's line first
        assert [key(r) for r in view.revisions(S, "t")] == [key(r) for r in f.t_side[::2]]
        assert [r.revision for r in view.revisions(S, "c")] == [1, 2, 3, 4]  # each its own
        since = view.revisions_since(S, f.old_s, f.merge)
        assert [key(r) for r in since] == both_sides(f)[5:]
        since_t = view.revisions_since(S, f.t_head, f.merge)
        assert [key(r) for r in since_t] == [key(r) for r in f.s_side]
        assert view.revisions_since(S, f.merge, f.old_s) == []
        commits = list(view.iter_commits(S))
        assert len(commits) == len(set(commits)) == 9
        assert commits[0] == f.merge
        for i, sha in enumerate(commits):  # every commit comes before its parents
            for parent in git_ok(repo, "rev-parse", f"{sha}^@").split():
                assert commits.index(parent) > i
    assert_fsck(repo.directory)


def test_revision_numbers_continue_after_a_merge(repo: Repository) -> None:
    """A write after the merge numbers each slug's revision after every revision of
    both sides: no two revisions of one memory share a number."""
    f = Forked(repo, index_before=True)
    assert repo.snapshot(S).revision("c") == 4  # three on s's line, one more from t
    assert put(repo, "edit", "a", "a3").revision == 3  # changed on the first parent only
    assert put(repo, "edit", "c", "c4").revision == 5
    assert [r.revision for r in repo.revisions(S, "c")] == [1, 2, 3, 4, 5]
    assert put(repo, "create", "t", "t3").revision == 3  # changed on the second parent only
    assert [r.revision for r in Repository.open(repo.directory).revisions(S, "c")] == [
        1,
        2,
        3,
        4,
        5,
    ]
    assert repo.snapshot(S, f.old_s).revision("c") == 3
    assert repo.snapshot(S, f.t_head).revision("c") == 2  # a commit off the first-parent line
    assert repo.snapshot(S, f.t_head).revision("a") == 1
    assert Repository.open(repo.directory).snapshot(S, f.t_head).revision("t") == 2


def test_incremental_index_equals_a_cold_one(repo: Repository) -> None:
    """An index kept up to date across a merge is byte-identical to one rebuilt from scratch."""
    Forked(repo, index_before=True)
    put(repo, "edit", "a", "after")
    repo.revisions(S)
    repo.revisions(T)
    incremental = history_files(repo)
    drop_history(repo)
    cold = Repository.open(repo.directory)
    cold.revisions(S)
    cold.revisions(T)
    assert history_files(repo) == incremental
    assert any(b" ^ " in data for data in incremental.values())


def test_a_gitmem_merge_commit_gets_rows_for_its_edits(repo: Repository, tmp_path: Path) -> None:
    """A merge commit with gitmem trailers is indexed like any other, after both parents."""
    f = Forked(repo, index_before=True, merged=False)
    c_path = repo.path(S, "c")
    t_blob = git_ok(repo, "rev-parse", f"{f.t_head}:{c_path}")
    # the merge takes c from T and removes a: what a sync could write
    scratch = ("--work-tree", str(tmp_path))  # git's index is scratch space here
    git_ok(repo, *scratch, "read-tree", f.old_s)
    git_ok(repo, *scratch, "update-index", "--cacheinfo", f"100644,{t_blob},{c_path}")
    git_ok(repo, *scratch, "update-index", "--force-remove", repo.path(S, "a"))
    tree = git_ok(repo, *scratch, "write-tree")
    os.remove(os.path.join(repo.directory, "index"))
    text = (
        "merge c, a\n\nGitmem-Slug: c\nGitmem-Op: merge\nGitmem-Revision: 4\n"
        "Gitmem-Slug: a\nGitmem-Op: merge\nGitmem-Revision: 3\n"
        "Gitmem-Count: 1\nGitmem-Chars: 7\nGitmem-Lines: 1\n"
        "Gitmem-Peak-Count: 2\nGitmem-Peak-Chars: 9\nGitmem-Peak-Lines: 2\n"
    )
    sha = git_ok(repo, "commit-tree", tree, "-p", f.old_s, "-p", f.t_head, "-m", text)
    git_ok(repo, "update-ref", f"refs/heads/{S}", sha, f.old_s)
    for view in (repo, Repository.open(repo.directory)):
        revisions = view.revisions(S)
        assert len(revisions) == 10
        assert [(r.slug, r.revision, r.op, r.body) for r in revisions[-2:]] == [
            ("c", 5, "merge", "c2 on t"),  # after s's 1-3 and t's edit, numbered 4
            ("a", 3, "merge", "a2"),  # a removal carries the text the first parent held
        ]
        assert view.snapshot(S).totals == Totals(1, 7, 1)
    assert put(repo, "edit", "c", "c5").revision == 6
    assert put(repo, "create", "a", "back").revision == 4
    assert_fsck(repo.directory)


def test_a_long_history_with_merges_needs_no_recursion(repo: Repository) -> None:
    """A history far deeper than Python's recursion limit, with merges, indexes and lists."""
    raw = Repo(repo.directory)
    tree = Tree()
    raw.object_store.add_object(tree)
    parent: bytes | None = None
    count = 0
    for i in range(2500):
        parents = [parent] if parent else []
        if i % 50 == 49:  # a side commit merged in
            side = _commit(raw, tree, [parent] if parent else [], f"side {i}")
            parents.append(side)
            count += 1
        parent = _commit(raw, tree, parents, f"c {i}")
        count += 1
    assert parent is not None
    raw.refs[f"refs/heads/{S}".encode()] = parent  # type: ignore[index]
    raw.close()
    put(repo, "create", "top", "x")
    assert [r.slug for r in repo.revisions(S)] == ["top"]
    assert len(set(repo.iter_commits(S))) == count + 1
    assert [r.slug for r in Repository.open(repo.directory).revisions(S)] == ["top"]


def _commit(raw: Repo, tree: Tree, parents: list[bytes], text: str) -> bytes:
    commit = Commit()
    commit.tree = tree.id
    commit.parents = parents  # type: ignore[assignment]
    commit.author = commit.committer = b"git <git@example.com>"
    commit.author_time = commit.commit_time = 1_700_000_000
    commit.author_timezone = commit.commit_timezone = 0
    commit.message = text.encode() + b"\n"
    raw.object_store.add_object(commit)
    return commit.id


# -- rewritten branches and damaged indexes ------------------------------------------


def test_a_rewritten_branch_leaves_no_stale_rows(repo: Repository) -> None:
    """After a reset to an older commit and new writes, only reachable revisions are listed."""
    writes = [put(repo, "write", "a", f"w{i}") for i in range(5)]
    other = Repository.open(repo.directory)
    assert len(other.revisions(S)) == 5  # another process's view, indexed before the reset
    git_ok(repo, "update-ref", f"refs/heads/{S}", writes[1].commit)
    # more rows than before the reset: a reader must notice the file was replaced
    later = [put(repo, "write", "b", f"b{i}") for i in range(5)] + [put(repo, "write", "a", "w")]
    expected = [key(r) for r in [*writes[:2], *later]]
    assert [r.revision for r in later] == [1, 2, 3, 4, 5, 3]
    for view in (repo, other, Repository.open(repo.directory)):
        assert [key(r) for r in view.revisions(S)] == expected
        assert view.revisions_since(S, writes[3].commit, repo.head(S)) == []
        assert [key(r) for r in view.revisions_since(S, writes[1].commit, repo.head(S))] == [
            key(r) for r in later
        ]
    rewritten = history_files(repo)
    drop_history(repo)
    Repository.open(repo.directory).revisions(S)
    assert history_files(repo) == rewritten


def test_a_branch_reset_to_an_unrelated_commit_is_indexed_afresh(repo: Repository) -> None:
    """A head that shares no history with the index replaces it rather than extending it."""
    put(repo, "create", "a", "one")
    put(repo, "create", "b", "two", store=T)
    repo.revisions(S)
    git_ok(repo, "update-ref", f"refs/heads/{S}", str(repo.head(T)))
    assert [r.slug for r in repo.revisions(S)] == ["b"]
    assert repo.snapshot(S).revision("a") == 0


def test_a_branch_reset_to_a_merged_in_side_keeps_only_that_side(repo: Repository) -> None:
    """Resetting past a merge to its second parent drops the first parent's line from history."""
    f = Forked(repo, index_before=True)
    assert len(repo.revisions(S)) == 8  # the index now ends at the merge
    git_ok(repo, "update-ref", f"refs/heads/{S}", f.t_head, f.merge)
    after = put(repo, "edit", "c", "c3 on t")
    assert after.revision == 3
    expected = [key(r) for r in [*f.base, *f.t_side, after]]
    for view in (repo, Repository.open(repo.directory)):
        assert [key(r) for r in view.revisions(S)] == expected
        assert len(list(view.iter_commits(S))) == 6


def test_an_index_missing_part_of_a_commits_rows_is_repaired(repo: Repository) -> None:
    """An index whose last commit lost one of its rows (a killed writer) is completed again."""
    put(repo, "create", "a", "x\n")
    rename(repo, "a", "b")
    expected = repo.revisions(S)
    ((name, data),) = history_files(repo).items()
    lines = data.splitlines(keepends=True)
    with open(os.path.join(repo.directory, "gitmem", "history", name), "wb") as f:
        f.write(b"".join(lines[:-1]))
    fresh = Repository.open(repo.directory)
    assert fresh.revisions(S) == expected
    assert fresh.revisions(S, "b") == expected[-1:]
    assert history_files(repo)[name] == data


# -- what a cold read costs: the walk reads commits, a slug's rows are found alone ------


class _Counting:
    """A history ``Source`` that counts the tree lookups (``step``) it is asked for."""

    def __init__(self, repo: Repository) -> None:
        self.reader = ObjectReader(Repo(repo.directory))
        self.stepped: list[str] = []

    def parents(self, sha: str) -> list[str]:
        return self.reader.parents(sha)

    def facts(self, sha: str) -> Facts | None:
        return self.reader.facts(sha)

    def heading(self, sha: str) -> tuple[list[str], tuple[Edited, ...] | None]:
        return self.reader.heading(sha)

    def step(self, sha: str) -> Step:
        self.stepped.append(sha)
        return self.reader.step(sha)


def _fresh_history(repo: Repository) -> tuple[History, _Counting]:
    source = _Counting(repo)
    path = History.file_for(os.path.join(repo.directory, "gitmem", "history"), S)
    return History(path, source), source


def test_building_the_index_reads_no_tree_and_a_read_looks_up_only_its_rows(
    repo: Repository,
) -> None:
    """From scratch, the walk reads commits only; one slug's history then looks up the
    blobs of that slug's commits and no other, and keeps them for the next process."""
    for i in range(6):
        put(repo, "create" if i < 3 else "edit", f"m{i % 3}", f"v{i}\n")
    expected = repo.revisions(S, "m1")
    drop_history(repo)
    history, source = _fresh_history(repo)
    head = repo.head(S)
    entries = history.entries(head, "m1")
    assert [e.commit for e in entries] == [r.commit for r in expected]
    assert sorted(source.stepped) == sorted(r.commit for r in expected)
    again, source2 = _fresh_history(repo)
    assert again.entries(head, "m1") == entries
    assert source2.stepped == []  # the side file knew them


def test_a_cold_read_of_one_slug_parses_only_its_rows(repo: Repository) -> None:
    """With the index file up to the head, a fresh reader answers one slug's history and
    last revision without taking the other rows into memory, and as the full path does."""
    for i in range(5):
        put(repo, "create", f"c{i}", "x\n")
    put(repo, "edit", "c2", "y\n")
    full = repo.revisions(S, "c2")
    history, _ = _fresh_history(repo)
    head = repo.head(S)
    cold = history.entries(head, "c2")
    assert history.last_revision(head, "c2") == 2
    assert history._rows == []
    assert [e.commit for e in cold] == [r.commit for r in full]
    assert history.entries(head) != []
    assert history._rows != []
    assert history.entries(head, "c2") == cold


def test_a_cold_reader_names_a_heads_commits_as_the_full_path_does(repo: Repository) -> None:
    """A fresh reader says which commits a head's history holds (all, or those whose
    ids start with a prefix), and whether it holds one, from the index file alone (of
    the head and of an older commit), as a reader that took the rows into memory says
    it."""
    for i in range(4):
        put(repo, "create", f"c{i}", "x\n")
    put(repo, "create", "other", "x\n", store=T)
    other = repo.head(T)
    head = repo.head(S)
    assert head is not None and other is not None
    older = repo.parents(repo.parents(head)[0])[0]
    loaded, _ = _fresh_history(repo)
    loaded.entries(head)
    for at in (head, older):
        history, _ = _fresh_history(repo)
        commits = history.commits(at)
        for prefix in (older[:4], head[:40], "0000"):
            named = [c for c in loaded.commits(at) if c.startswith(prefix)]
            assert history.commits(at, prefix=prefix) == loaded.commits(at, prefix=prefix) == named
        assert [history.contains(at, c) for c in (head, older, other)] == [
            loaded.contains(at, c) for c in (head, older, other)
        ]
        assert history._rows == []  # pyright: ignore[reportPrivateUsage]
        assert commits == loaded.commits(at)
    assert loaded._rows != []  # pyright: ignore[reportPrivateUsage]


def test_a_cold_reader_counts_a_heads_revisions_as_the_full_path_lists_them(
    repo: Repository,
) -> None:
    """A fresh reader says how many revisions a head's history holds from the index
    file alone, a merge's row and that of a commit changing no memory not counted, as
    many as the full path lists; once the rows are in memory it leaves that to them."""
    Forked(repo, index_before=False)
    merged = repo.head(S)
    assert merged is not None
    tree = git_ok(repo, "rev-parse", f"{merged}^{{tree}}")
    empty = git_ok(repo, "commit-tree", tree, "-p", merged, "-m", "nothing changed")
    git_ok(repo, "update-ref", f"refs/heads/{S}", empty, merged)
    put(repo, "create", "after", "x\n")
    head = repo.head(S)
    revisions = len(repo.revisions(S))
    history, _ = _fresh_history(repo)
    with open(history._path, "rb") as kept:  # pyright: ignore[reportPrivateUsage]
        data = kept.read()
    # the merge (keeping its first parent's tree) and the empty commit change nothing
    assert data.count(FOREIGN_END) == 2 and data.count(MERGE_FIELD) == 1
    assert history.size(head) == revisions == data.count(b"\n") - 3
    assert history._rows == []  # pyright: ignore[reportPrivateUsage]
    assert len(history.entries(head)) == revisions
    assert history.size(head) is None


def test_a_damaged_blob_side_file_is_passed_over(repo: Repository) -> None:
    """Garbage in the side file of blob ids changes no answer."""
    put(repo, "create", "a", "one\n")
    put(repo, "edit", "a", "two\n")
    expected = repo.revisions(S, "a")
    folder = os.path.join(repo.directory, "gitmem", "history")
    (side,) = [n for n in os.listdir(folder) if n.endswith(".blobs")]
    with open(os.path.join(folder, side), "wb") as f:
        f.write(b"\x00garbage a \xff\nnot a line\n" + b"z" * 40 + b" a 1 2\n")
    assert Repository.open(repo.directory).revisions(S, "a") == expected


# -- the rows of a commit this process published -------------------------------------


def _index_lines(repo: Repository) -> list[str]:
    return next(iter(history_files(repo).values())).decode().splitlines()


def test_a_write_adds_its_rows_to_the_index_at_once(repo: Repository) -> None:
    """The index ends with a commit's rows as soon as the write returns, no read in
    between, and equals an index built from scratch; the recorded blob ids answer as
    the ones looked up in the trees do."""
    put(repo, "create", "a", "one\n")
    rename(repo, "a", "b")
    put(repo, "create", "c", "three\n")
    put(repo, "delete", "c")
    head = repo.head(S)
    assert head is not None
    assert [line.split()[:4] for line in _index_lines(repo)[-1:]] == [[head, "2", "delete", "c"]]
    recorded = history_files(repo)
    answers = [key(r) for r in repo.revisions(S)]
    drop_history(repo)
    cold = Repository.open(repo.directory)
    assert [key(r) for r in cold.revisions(S)] == answers
    assert history_files(repo) == recorded


def test_writes_from_fresh_processes_keep_the_index_whole(repo: Repository) -> None:
    """A Repository that writes once without reading the index (a command-line write)
    still appends its commit's rows when the file ends with the old head's, so the
    next fresh reader answers one slug's history without a walk."""
    put(repo, "create", "a", "one\n")
    for i in range(4):
        put(Repository.open(repo.directory), "edit", "a", f"take {i}\n")
        head = Repository.open(repo.directory).head(S)
        assert _index_lines(repo)[-1].split()[:3] == [head, str(i + 2), "edit"]
    fresh = Repository.open(repo.directory)
    assert [r.body for r in fresh.revisions(S, "a")] == ["one\n"] + [
        f"take {i}\n" for i in range(4)
    ]
    recorded = history_files(repo)
    drop_history(repo)
    Repository.open(repo.directory).revisions(S)
    assert history_files(repo) == recorded


def test_a_write_leaves_an_index_it_does_not_end_alone(repo: Repository) -> None:
    """When the index file does not end with the old head's rows (another history, a
    torn line), the write appends nothing and the next read rebuilds or catches up."""
    put(repo, "create", "a", "one\n")
    folder = os.path.join(repo.directory, "gitmem", "history")
    (name,) = [n for n in os.listdir(folder) if not n.endswith((".lock", ".blobs"))]
    with open(os.path.join(folder, name), "ab") as f:
        f.write(b"f" * 40 + b" 1 edit zz ? ? ?\n")
    damaged = history_files(repo)
    put(Repository.open(repo.directory), "edit", "a", "two\n")
    assert history_files(repo) == damaged
    fresh = Repository.open(repo.directory)
    assert [r.body for r in fresh.revisions(S, "a")] == ["one\n", "two\n"]


def test_a_process_that_writes_on_reads_the_index_whole(
    repo: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a write that appended without reading the index, the next write of the same
    process loads the index once instead of searching the whole file again per write."""
    put(repo, "create", "a", "one\n")
    writer = Repository.open(repo.directory)
    reads: list[str] = []
    real = History._cold_rows  # pyright: ignore[reportPrivateUsage]

    def counting(self: History, head: str | None, slug: str) -> object:
        found = real(self, head, slug)
        reads.append("cold" if found is not None else "full")
        return found

    monkeypatch.setattr(History, "_cold_rows", counting)
    for i in range(4):
        put(writer, "edit", "a", f"take {i}\n")
    assert reads[:1] == ["cold"]
    assert "cold" not in reads[1:]
    assert [r.body for r in writer.revisions(S, "a")][-1] == "take 3\n"


# -- building the index from scratch -----------------------------------------------


class _AsDulwichReads:
    """The commits as dulwich itself reads them, each parsed whole: what the index
    built through the store's own raw reader must agree with."""

    def __init__(self, raw: Repo, reader: ObjectReader) -> None:
        self._raw = raw
        self._reader = reader

    def _commit(self, sha: str) -> Commit:
        found = self._raw[sha.encode()]
        assert isinstance(found, Commit)
        return found

    def parents(self, sha: str) -> list[str]:
        return [p.decode() for p in self._commit(sha).parents]

    def facts(self, sha: str) -> Facts | None:
        return parse_message(self._commit(sha).message)

    def heading(self, sha: str) -> tuple[list[str], tuple[Edited, ...] | None]:
        facts = self.facts(sha)
        return self.parents(sha), facts.edits if facts is not None else None

    def step(self, sha: str) -> Step:
        return self._reader.step(sha)

    def outside(self, sha: str) -> tuple[Edited, ...]:
        return self._reader.outside(sha)


@pytest.mark.parametrize("packed", [False, True], ids=["loose", "packed"])
def test_an_index_built_from_scratch_reads_every_commit_as_dulwich_does(
    repo: Repository, tmp_path: Path, packed: bool
) -> None:
    """Creations, edits, a rename, a deletion, a merge made by git and a commit made by
    hand: the index a fresh process builds (its file and every row, blob ids and all)
    equals one built from the commits as dulwich parses them."""
    f = Forked(repo, index_before=False)
    rename(repo, "a", "b")
    put(repo, "delete", "c")
    put(repo, "create", "d", "d1")

    def change(work: Path) -> None:
        (work / memoryfiles.memory_path("d")).write_text('---\ndescription: "by hand"\n---\nd2\n')

    commit_by_hand(repo.directory, S, tmp_path / "work", change)
    put(repo, "edit", "b", "b2")
    if packed:
        repo.pack()
    drop_history(repo)
    head = repo.head(S)
    assert head is not None and f.merge in git_ok(repo, "rev-list", head).split()
    with Repository.open(repo.directory) as fresh:
        built = fresh.revisions(S)
        files = history_files(fresh)
    assert [r.op for r in built].count("rename") == 2 and "delete" in [r.op for r in built]
    (path,) = files
    with Repo(repo.directory) as raw:
        reader = ObjectReader(raw)
        reference = History(str(tmp_path / "reference"), _AsDulwichReads(raw, reader))
        expected = reference.entries(head)
        with open(tmp_path / "reference", "rb") as kept:
            assert files[path] == kept.read()
    with Repository.open(repo.directory) as fresh:
        assert fresh._history(S).entries(head) == expected  # pyright: ignore[reportPrivateUsage]


@settings(max_examples=300, derandomize=True, deadline=None)
@given(
    st.lists(
        st.lists(st.sampled_from(["a", "ab", "b", "a%20b", "", "-"]), min_size=1, max_size=5),
        max_size=30,
    ),
    st.sampled_from(["a", "ab", "a b"]),
    st.integers(1, 3),
    st.booleans(),
)
def test_lines_with_a_word_are_found_as_a_split_of_every_line_finds_them(
    lines: list[list[str]], word: str, field: int, cut: bool
) -> None:
    """Whether the word is on few lines (searched for) or many (taken from all of
    them), the complete lines whose field (one with fields on both sides) holds it are
    the ones a split finds."""
    data = "".join(" ".join(fields) + "\n" for fields in lines).encode()
    if cut:
        data += b"a a a a"  # a last line a writer has not finished
    wanted = field_of(word).encode()
    complete = data.split(b"\n")[:-1]
    expected = [
        line
        for line in complete
        if len(line.split(b" ", field + 1)) > field + 1 and line.split(b" ")[field] == wanted
    ]
    assert lines_with(data, word, field) == expected


class _AsTreesParsedWhole(_AsDulwichReads):
    """As :class:`_AsDulwichReads`, and a revision's blob ids found as the walk found
    them before it read raw trees: the root and the fan-out folder parsed whole by
    dulwich, a name's last entry taken."""

    def step(self, sha: str) -> Step:
        facts = self.facts(sha)
        if facts is not None and facts.paths:
            return self._reader.step(sha)
        commit = self._commit(sha)
        parents = self.parents(sha)
        edits = facts.edits if facts is not None else self._reader.outside(sha)
        if facts is None and not edits:
            return Step(parents, None, ())
        before = self._commit(parents[0]).tree if parents else None
        blobs: list[tuple[str, str, str]] = []
        for edit in edits:
            found = self._files(commit.tree, edit.slug)
            if found is None and before is not None:
                md, code, on_use = self._files(before, edit.slug) or ("-", "-", "-")
                blobs.append(("~" + md, code, on_use))
                continue
            blobs.append(found or ("-", "-", "-"))
        return Step(parents, facts or Facts(edits, Totals(), Totals(), {}), tuple(blobs))

    def _files(self, root: bytes, slug: str) -> tuple[str, str, str] | None:
        tree = self._raw[root]
        assert isinstance(tree, Tree)
        folder = {n.decode(): (m, s) for n, m, s in tree.iteritems()}.get(memoryfiles.bucket(slug))
        if folder is None or folder[0] != 0o040000:
            return None
        sub = self._raw[folder[1]]
        assert isinstance(sub, Tree)
        names = {n.decode(): s.decode() for n, _, s in sub.iteritems()}
        md = names.get(slug + memoryfiles.MD)
        if md is None:
            return None
        return (
            md,
            names.get(slug + memoryfiles.CODE, "-"),
            names.get(slug + memoryfiles.ON_USE, "-"),
        )


@pytest.mark.parametrize("packed", [False, True], ids=["loose", "packed"])
def test_a_history_read_from_raw_objects_answers_as_one_read_from_parsed_objects(
    repo: Repository, tmp_path: Path, packed: bool
) -> None:
    """Renames, deletions, code halves, a merge made by git, commits made by hand that
    move a memory's file to another folder and a whole folder elsewhere: every answer
    built from an index a fresh process builds from raw objects (every row, blob ids
    and all, the file, each slug's history, every revision) is the one built from
    objects dulwich parsed whole."""
    f = Forked(repo, index_before=False)
    rename(repo, "a", "b")
    repo.mutate(S, ALICE, lambda _: Change("create", "k", Memory("k", "code", "k1", code="1")))
    put(repo, "delete", "c")
    put(repo, "create", "d", "d1")
    put(repo, "create", "e", "e1")
    moved = memoryfiles.memory_path("d")
    folder = memoryfiles.bucket("e")

    def move_a_file(work: Path) -> None:
        (work / "zz").mkdir(exist_ok=True)
        (work / moved).rename(work / "zz" / "d.md")

    def move_a_folder(work: Path) -> None:
        (work / folder).rename(work / "moved-folder")

    commit_by_hand(repo.directory, S, tmp_path / "one", move_a_file)
    commit_by_hand(repo.directory, S, tmp_path / "two", move_a_folder)
    put(repo, "create", "d", "d2")
    put(repo, "edit", "b", "b2")
    if packed:
        repo.pack()
    head = repo.head(S)
    assert head is not None and f.merge in git_ok(repo, "rev-list", head).split()
    slugs = ["a", "b", "c", "d", "e", "k", "t"]
    drop_history(repo)
    with Repository.open(repo.directory) as fresh:
        answers = {slug: fresh.revisions(S, slug) for slug in slugs}
        every = fresh.revisions(S)
        (built,) = history_files(fresh).values()
    with Repo(repo.directory) as raw:
        source = _AsTreesParsedWhole(raw, ObjectReader(raw))
        reference = History(str(tmp_path / "reference"), source)
        expected = {slug: reference.entries(head, slug) for slug in slugs}
        assert reference.entries(head) == every_entry(repo, head)
        with open(tmp_path / "reference", "rb") as kept:
            assert built == kept.read()
    assert {s: [e.commit for e in expected[s]] for s in slugs} == {
        s: [r.commit for r in answers[s]] for s in slugs
    }
    for slug in slugs:
        assert [(e.revision, e.op, e.removed) for e in expected[slug]] == [
            (r.revision, r.op, r.removed) for r in answers[slug]
        ]
    assert [r.commit for r in every] == [e.commit for e in reference.entries(head)]
    assert any(r.op == "delete" for r in every) and any(r.op == "rename" for r in every)
    assert any(r.code for r in every)


def every_entry(repo: Repository, head: str) -> list[object]:
    """Every entry of the store's index at ``head``, blob ids and all, in a fresh process."""
    with Repository.open(repo.directory) as fresh:
        return list(fresh._history(S).entries(head))  # pyright: ignore[reportPrivateUsage]


@settings(max_examples=200, derandomize=True, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a" * 40, "b" * 40]),
            st.sampled_from(["0", "7"]),
            st.sampled_from(["edit", "-", "^"]),
            st.text(min_size=1, max_size=6),
            st.sampled_from(["?", "-", "~" + "c" * 40]),
            st.sampled_from(["?", "-"]),
            st.sampled_from(["?", "-"]),
        ),
        max_size=8,
    )
)
def test_rows_formatted_together_read_as_each_formatted_alone(rows: list[Row]) -> None:
    """A build's rows written in one go are the bytes of each row written alone, and
    read back as the rows written (a slug of any characters escaped alike)."""
    from gitmem.store.rows import format_row, format_rows, parse_row

    together = format_rows(rows)
    assert together == "".join(format_row(row) for row in rows)
    assert [parse_row(line) for line in together.split("\n")[:-1]] == rows


def _generated_history(repo: Repository, seed: int) -> str:
    """A history of creations, edits, renames and deletions on S and on its fork T, with
    T merged into S by git now and then (the merge's tree S's), chosen by ``seed``;
    packed by git with a wide window, so that trees are stored as deltas of trees of
    other commits. Returns S's head."""
    rng = random.Random(seed)
    live = {S: set[str](), T: set[str]()}
    put(repo, "create", "base", "base")
    live[S].add("base")
    repo.fork(S, T)
    live[T] = set(live[S])
    for i in range(36):
        store = S if rng.random() < 0.6 else T
        slugs = sorted(live[store])
        roll = rng.random()
        if roll < 0.12:
            old, new = repo.head(S), repo.head(T)
            assert old is not None and new is not None
            merged = merge(repo, old, new)
            git_ok(repo, "update-ref", f"refs/heads/{S}", merged, old)
            continue
        if roll < 0.4 or not slugs:
            slug = f"m{rng.randrange(12)}"
            if slug in live[store]:
                put(repo, "edit", slug, f"{slug} take {i}", store=store)
            else:
                put(repo, "create", slug, f"{slug} made {i}", store=store)
                live[store].add(slug)
        elif roll < 0.7:
            slug = rng.choice(slugs)
            put(repo, "edit", slug, f"{slug} take {i}\n" * rng.randrange(1, 4), store=store)
        elif roll < 0.85:
            old = rng.choice(slugs)
            rename(repo, old, f"r{i}", store=store)
            live[store] = (live[store] - {old}) | {f"r{i}"}
        else:
            slug = rng.choice(slugs)
            put(repo, "delete", slug, store=store)
            live[store].discard(slug)
    git_ok(repo, "repack", "-adf", "--window=250", "--depth=50")
    head = repo.head(S)
    assert head is not None
    return head


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_an_index_built_from_a_generated_history_is_the_reference_walks(
    repo: Repository, tmp_path: Path, seed: int
) -> None:
    """Generated histories (creations, edits, renames, deletions, merges made by git),
    their trees stored as deltas of trees in other commits: the index a fresh process
    builds through its quick reads (its file, every row, blob ids and all, each slug's
    history) is the one a walk of objects dulwich parsed whole builds."""
    head = _generated_history(repo, seed)
    deltas = git_ok(repo, "verify-pack", "-v", *_pack_indexes(repo)).splitlines()
    assert any(line.split()[1:2] == ["tree"] and len(line.split()) >= 7 for line in deltas)
    assert len(git_ok(repo, "rev-list", "--merges", head).split()) >= 1
    drop_history(repo)
    with Repository.open(repo.directory) as fresh:
        every = list(fresh._history(S).entries(head))  # pyright: ignore[reportPrivateUsage]
        slugs = sorted({entry.slug for entry in every})
        per_slug = {slug: fresh.revisions(S, slug) for slug in slugs}
        (built,) = history_files(fresh).values()
    with Repo(repo.directory) as raw:
        walked = [line.split(" ")[:4] for line in built.decode().splitlines()]
        assert walked == _reference_rows(raw, ObjectReader(raw), head)
        source = _AsTreesParsedWhole(raw, ObjectReader(raw))
        reference = History(str(tmp_path / "reference"), source)
        assert reference.entries(head) == every
        with open(tmp_path / "reference", "rb") as kept:
            assert built == kept.read()
        for slug in slugs:
            expected = reference.entries(head, slug)
            assert [(e.commit, e.revision, e.op, e.removed) for e in expected] == [
                (r.commit, r.revision, r.op, r.removed) for r in per_slug[slug]
            ]


def _reference_rows(raw: Repo, reader: ObjectReader, head: str) -> list[list[str]]:
    """The index's rows (commit, number, op, slug) as its order is defined, by a
    recursive walk of commits dulwich parsed whole: a commit's parents in order, each
    visited once, then the commit; a merge's ``^`` row counts the rows its later
    parents brought in."""
    rows: list[list[str]] = []
    seen: set[str] = set()

    def visit(sha: str) -> None:
        seen.add(sha)
        commit = raw[sha.encode()]
        assert isinstance(commit, Commit)
        parents = [p.decode() for p in commit.parents]
        mark = len(rows)
        for i, parent in enumerate(parents):
            if i == 1:
                mark = len(rows)
            if parent not in seen:
                visit(parent)
        facts = parse_message(commit.message)
        edits = facts.edits if facts is not None else reader.outside(sha)
        if len(parents) > 1:
            rows.append([sha, str(len(rows) - mark), "^", "-"])
        if not edits and (facts is None or len(parents) < 2):
            rows.append([sha, "0", "-", "-"])
        rows.extend([sha, str(e.revision), e.op, e.slug] for e in edits)

    visit(head)
    return rows


def _pack_indexes(repo: Repository) -> list[str]:
    folder = os.path.join(repo.directory, "objects", "pack")
    return [os.path.join(folder, name) for name in os.listdir(folder) if name.endswith(".idx")]


def test_a_damaged_commit_halfway_down_the_history_is_refused(repo: Repository) -> None:
    """A commit whose packed bytes do not inflate, halfway down the history, stops a
    build from scratch with an error naming it: the walk never passes over it."""
    for i in range(6):
        put(repo, "create", f"m{i}", f"v{i}\n")
    repo.pack()
    head = repo.head(S)
    assert head is not None
    middle = git_ok(repo, "rev-list", head).split()[3]
    (index,) = _pack_indexes(repo)
    listed = git_ok(repo, "verify-pack", "-v", index).splitlines()
    offset = next(int(line.split()[4]) for line in listed if line.startswith(middle))
    pack = index[: -len(".idx")] + ".pack"
    os.chmod(pack, 0o644)
    with open(pack, "r+b") as f:
        f.seek(offset + 8)  # inside the zlib stream, past the entry's header
        byte = f.read(1)
        f.seek(offset + 8)
        f.write(bytes([byte[0] ^ 0xFF]))
    drop_history(repo)
    with Repository.open(repo.directory) as fresh, pytest.raises(StorageError, match=middle):
        fresh.revisions(S)


def test_a_repository_read_through_its_history_is_freed_once_unused(tmp_path: Path) -> None:
    """A repository object that has read a store's history and is closed is freed when
    its last reference goes, with what it read, not at a later collection of cycles."""
    import gc
    import weakref

    path = str(tmp_path / "repo.git")
    Repository.init(path).close()
    with Repository.open(path) as writer:
        put(writer, "create", "a", "one")
        put(writer, "update", "a", "two")
    gc.collect()
    gc.disable()
    try:
        repo = Repository.open(path)
        assert [o.revision for o in repo.outlines(S)] == [1, 2]
        repo.close()
        freed = weakref.ref(repo)
        del repo
        assert freed() is None
    finally:
        gc.enable()


def _hand_commits(repo: Repository, slug: str, count: int) -> None:
    """``count`` commits made by hand on top of the store's head, each editing ``slug``,
    written at once as ``git fast-import`` writes what a sync may bring in."""
    head = repo.head(S)
    path = memoryfiles.memory_path(slug)
    stream: list[bytes] = []
    for i in range(1, count + 1):
        body = f'---\ndescription: "by hand"\n---\nedit {i}\n'.encode()
        stream.append(
            f"commit refs/heads/{S}\ncommitter Ana <a@x> {1_700_000_000 + i} +0000\n".encode()
        )
        subject = f"hand {i}".encode()
        stream.append(f"data {len(subject)}\n".encode() + subject + b"\n")
        if i == 1:
            stream.append(f"from {head}\n".encode())
        stream.append(f"M 100644 inline {path}\ndata {len(body)}\n".encode() + body + b"\n")
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    done = subprocess.run(
        ["git", f"--git-dir={repo.directory}", "fast-import", "--quiet"],
        input=b"".join(stream),
        capture_output=True,
        env=env,
    )
    assert done.returncode == 0, done.stderr


def test_a_long_line_of_hand_commits_is_walked_once(
    repo: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The history of a memory edited by a long line of commits made by hand reads each
    commit's parents a bounded number of times, not once for each later commit: the
    line's standing (the gitmem commit it continues) is found in one walk."""
    put(repo, "create", "m", "one")
    count = 150
    _hand_commits(repo, "m", count)
    asked: list[str] = []
    parents = ObjectReader.parents

    def counted(self: ObjectReader, sha: str) -> list[str]:
        asked.append(sha)
        return parents(self, sha)

    monkeypatch.setattr(ObjectReader, "parents", counted)
    with Repository.open(repo.directory) as fresh:
        revisions = fresh.revisions(S, "m")
    assert [r.body for r in revisions][-1] == f"edit {count}\n"
    assert len(revisions) == count + 1
    # a few reads a commit (the index, its edits, the walk), not one for each later commit
    assert len(asked) <= 5 * count, len(asked)


def test_a_commits_parents_are_read_from_its_header(
    repo: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A commit's parents (what a walk to the nearest gitmem commit reads) come from its
    raw header, not from a parsed commit object, which would copy its message again."""
    put(repo, "create", "a", "one")
    put(repo, "update", "a", "two")
    head = repo.head(S)
    assert head is not None
    parsed: list[str] = []
    monkeypatch.setattr(ObjectReader, "commit", lambda _, sha: parsed.append(sha))
    with Repo(repo.directory) as raw:
        reader = ObjectReader(raw)
        assert reader.parents(head) == [git_ok(repo, "rev-parse", f"{head}^").strip()]
    assert parsed == []


def test_a_log_parses_each_commits_message_once(
    repo: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A commit's message names every path it changed, so a commit of many paths parsed
    once for each would cost their square (a minute of `gitmem log` for a few cheap
    calls of an agent's memory tool): every message is parsed once, however many of
    its paths the log reads."""
    from click.testing import CliRunner

    from gitmem import Author
    from gitmem.cli import cli
    from gitmem.store import objects
    from gitmem.types import FileChange, FileEdit

    many = 300
    for op, text in (("create", "x\n"), ("delete", None)):
        repo.publish_files(
            "claude",
            Author.agent("a1"),
            lambda _, op=op, text=text: FileChange(
                tuple(FileEdit(op, f"memories/f{i:04d}.md", text) for i in range(many))
            ),
        )
    parsed: list[bytes] = []
    real = objects.parse_message

    def counted(message: bytes) -> object:
        parsed.append(message)
        return real(message)

    monkeypatch.setattr(objects, "parse_message", counted)
    done = CliRunner().invoke(cli, ["--repo", repo.directory, "log", "--store", "claude"])
    assert done.exit_code == 0, done.output
    assert len(done.output.splitlines()) == 2 * many
    assert len(parsed) == len(set(parsed)) == 2
