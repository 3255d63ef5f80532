"""Stores in a project's own repository, and sync between replicas through a remote:
real repositories on disk, the ``git`` CLI playing the user (test-only)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import assert_fsck, capability, tree_bytes
from helpers_sync import ENV, ME, STORE, is_ancestor, make_project, sh

from gitmem import (
    Agent,
    Author,
    Holder,
    InvalidArgument,
    LimitExceeded,
    Memory,
    RemoteError,
    Repository,
    StorageError,
    ops,
)
from gitmem.binding import Binding
from gitmem.cli import cli
from gitmem.holder.notices import SYNCED
from gitmem.lean import halves, listing, rendered
from gitmem.quick import answer
from gitmem.search.index import SearchIndex, index_path
from gitmem.store import Snapshot
from gitmem.store.history import History
from gitmem.sync import CONFLICTS_TRAILER as CONFLICTS
from gitmem.sync import SYNC_TRAILER
from gitmem.trailers import CAPABILITY_TRAILER
from gitmem.types import Change

BODY = "one\ntwo\nthree\nfour\nfive\n"
CODE = "export const a = 1;\n// kept\nexport const b = 2;\n"
HELPER = str(Path(__file__).parent / "helpers_sync.py")


@dataclass
class Replicas:
    project: Path
    origin: Path
    a: Repository
    b: Repository

    def sync_all(self) -> None:
        """a, b, a: every change reaches both."""
        for repo in (self.a, self.b, self.a):
            repo.sync()


def _seed(repo: Repository) -> None:
    ops.create(repo, STORE, ME, "shared", "lines", BODY)
    ops.create(repo, STORE, ME, "doomed", "to be deleted", "old\n")
    ops.create(repo, STORE, ME, "tool", "code", "see code\n", code=CODE)


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[Replicas]:
    """A project with a seeded store, a bare origin cloned from it, and two clones of
    the origin, each synced once."""
    project = make_project(tmp_path / "project")
    with Repository.init(str(project)) as repo:
        _seed(repo)
    sh(tmp_path, "clone", "-q", "--bare", "project", "origin.git")
    opened: list[Repository] = []
    for name in ("a", "b"):
        sh(tmp_path, "clone", "-q", "origin.git", name)
        repo = Repository.open(str(tmp_path / name))
        repo.sync()
        opened.append(repo)
    try:
        yield Replicas(project, tmp_path / "origin.git", opened[0], opened[1])
    finally:
        for repo in opened:
            repo.close()


def _assert_converged(r: Replicas) -> str:
    head = r.a.head(STORE)
    assert head is not None and head == r.b.head(STORE)
    assert sh(r.origin, "rev-parse", f"refs/heads/gitmem/{STORE}").strip() == head
    return head


# -- a project's own repository ----------------------------------------------------------


def test_init_in_a_project_keeps_stores_in_its_repository(tmp_path: Path) -> None:
    """The stores are branches under refs/heads/gitmem/ of the project's repository; its
    HEAD, index, config and work tree are untouched, and git accepts the result."""
    project = make_project(tmp_path / "project")
    git_dir = project / ".git"
    kept = {name: (git_dir / name).read_bytes() for name in ("HEAD", "index", "config")}
    with Repository.init(str(project / ".git")) as repo:
        assert repo.project and repo.directory == str(git_dir)
        _seed(repo)
    assert {name: (git_dir / name).read_bytes() for name in kept} == kept
    assert sh(project, "status", "--porcelain") == ""
    sh(project, "fsck", "--strict", "--no-dangling")
    assert sh(project, "branch", "--list", "gitmem/*").split() == [f"gitmem/{STORE}"]
    assert "gitmem.version" not in sh(project, "config", "--list", "--local")
    assert (git_dir / "gitmem" / "history").is_dir()
    with Repository.open(str(project / ".git")) as repo:
        path = repo.path(STORE, "shared")
    assert sh(project, "show", f"gitmem/{STORE}:{path}").endswith(BODY)
    for where in (project, project / ".git"):
        with Repository.open(str(where)) as repo:
            assert repo.snapshot(STORE).slugs() == ["doomed", "shared", "tool"]


def test_a_plain_clone_carries_every_store_and_its_history(tmp_path: Path) -> None:
    """`git clone` of the project, then `gitmem sync`: memories and per-slug history."""
    project = make_project(tmp_path / "project")
    with Repository.init(str(project)) as repo:
        _seed(repo)
        ops.edit(repo, STORE, ME, "shared", old_text="two", new_text="TWO")
        expected = [(r.slug, r.revision, r.op) for r in repo.revisions(STORE)]
    sh(tmp_path, "clone", "-q", "project", "copy")
    with Repository.open(str(tmp_path / "copy")) as copy:
        assert copy.stores() == []  # until the first sync, as documented
        [report] = copy.sync()
        assert report.fetched and not report.pushed and report.conflicts == []
        assert copy.stores() == [STORE]
        assert [(r.slug, r.revision, r.op) for r in copy.revisions(STORE)] == expected
        assert copy.snapshot(STORE).get("shared") == Memory(
            "shared", "lines", BODY.replace("two", "TWO")
        )
    assert sh(tmp_path / "copy", "status", "--porcelain") == ""


@pytest.mark.parametrize("forked", [True, False])
def test_a_clones_first_sync_keeps_what_its_first_ls_and_search_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forked: bool
) -> None:
    """The first sync of a clone receives each store whole and keeps its listing, its
    search index and what `ls` and `state` print, so the clone's first `gitmem ls`,
    `state` and `search` read one file each (answered on the lean path, as the command
    line answers them), and its history index (made by a forked child on a second core,
    or here), so that no first `log` walks every commit; a later sync that brings a
    change keeps nothing more: the next command catches up."""
    monkeypatch.setattr(halves, "cores", lambda: 2 if forked else 1)
    monkeypatch.setattr(halves, "_alone", lambda: True)
    project = make_project(tmp_path / "project")
    with Repository.init(str(project)) as repo:
        _seed(repo)
        ops.edit(repo, STORE, ME, "shared", old_text="two", new_text="TWO")
    sh(tmp_path, "clone", "-q", "project", "copy")
    copy = tmp_path / "copy"
    meta = copy / ".git" / "gitmem"
    kept = [
        listing.listing_path(str(meta), STORE),
        index_path(str(copy / ".git"), STORE),
        *(rendered.rendered_path(str(meta), STORE, command) for command in rendered.COMMANDS),
    ]
    with Repository.open(str(copy)) as repo:
        [report] = repo.sync()
        assert report.fetched and report.before is None
        head = repo.head(STORE)
    assert all(os.path.isfile(path) for path in kept)
    stamps = [os.stat(path).st_mtime_ns for path in kept]
    index = SearchIndex.load(kept[1])
    assert index is not None and index.commit == head
    for argv in (["ls"], ["state"], ["search", "code"]):
        printed = answer(["--repo", str(copy), *argv], {})
        assert printed is not None
        assert printed == CliRunner().invoke(cli, ["--repo", str(copy), *argv]).stdout
    assert [os.stat(path).st_mtime_ns for path in kept] == stamps  # read, not made again
    rows = Path(History.file_for(str(meta / "history"), STORE)).read_text().splitlines()
    assert rows[-1].startswith(f"{head} ")  # kept up to the head received
    with Repository.open(str(project)) as repo:
        logged = CliRunner().invoke(cli, ["--repo", str(project), "log", "shared"]).stdout
    walked: list[str] = []
    monkeypatch.setattr(History, "_extend", lambda *args, **_: walked.append("walked"))
    assert CliRunner().invoke(cli, ["--repo", str(copy), "log", "shared"]).stdout == logged
    assert walked == []  # the clone's first log read the kept index, walking no commit
    with Repository.open(str(project)) as repo:
        ops.create(repo, STORE, ME, "later", "one more", "body\n")
    with Repository.open(str(copy)) as repo:
        [report] = repo.sync()
        assert report.fetched and report.before == head
    assert (SearchIndex.load(kept[1]) or SearchIndex()).commit == head


def test_a_standalone_replicas_first_sync_keeps_what_ls_prints(tmp_path: Path) -> None:
    """A standalone replica made by `gitmem init` and a sync with the remote keeps the
    same derived files as a clone's first sync, its stores' branches where a
    standalone repository keeps them."""
    origin = str(tmp_path / "origin.git")
    with Repository.init(origin) as repo:
        _seed(repo)
    replica = str(tmp_path / "replica.git")
    with Repository.init(replica) as repo:
        [report] = repo.sync(origin)
        assert report.fetched and report.before is None
        root = repo.snapshot(STORE).root
    assert root is not None
    printed = rendered.read(os.path.join(replica, "gitmem"), STORE, "ls", root)
    assert printed is not None
    assert printed.decode() == CliRunner().invoke(cli, ["--repo", replica, "ls"]).stdout


def test_a_store_received_whole_is_synced_though_its_index_cannot_be_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The listing and index a first sync keeps are derived data: a disk that fails
    while they are made leaves them to the first command, and the sync reports as ever."""
    project = make_project(tmp_path / "project")
    with Repository.init(str(project)) as repo:
        _seed(repo)
        head = repo.head(STORE)
    sh(tmp_path, "clone", "-q", "project", "copy")

    def failing(*_: object) -> None:
        raise StorageError("the disk failed while the index was written")

    monkeypatch.setattr("gitmem.search.index.stored_index", failing)
    with Repository.open(str(tmp_path / "copy")) as repo:
        [report] = repo.sync()
        assert report.fetched and report.head == head == repo.head(STORE)
        assert repo.snapshot(STORE).slugs() == ["doomed", "shared", "tool"]


def test_the_users_git_work_leaves_the_stores_intact(tmp_path: Path) -> None:
    """git gc --prune=now, commit, checkout -b and merge in the project change no store,
    history or notice watermark."""
    project = make_project(tmp_path / "project")
    with Repository.init(str(project)) as repo:
        _seed(repo)
        holder = Holder(repo, capability("markdown"), Agent("dev", "dev-1"), Binding(STORE, True))
        assert holder.notices() is None  # writes the watermark ref
        head = repo.head(STORE)
        history = [(r.slug, r.revision) for r in repo.revisions(STORE)]
    sh(project, "gc", "--prune=now", "--quiet")
    sh(project, "checkout", "-q", "-b", "feature")
    (project / "feature.txt").write_text("feature\n")
    sh(project, "add", "feature.txt")
    sh(project, "commit", "-q", "-m", "feature")
    sh(project, "checkout", "-q", "main")
    sh(project, "merge", "-q", "--no-ff", "-m", "merge feature", "feature")
    sh(project, "gc", "--prune=now", "--quiet")
    with Repository.open(str(project)) as repo:
        assert repo.head(STORE) == head
        assert [(r.slug, r.revision) for r in repo.revisions(STORE)] == history
        assert repo.snapshot(STORE).get("tool") == Memory("tool", "code", "see code\n", CODE)
        assert repo.marker(f"notices/dev-1/{STORE}") == head
        assert repo.check() == []
        ops.create(repo, STORE, ME, "after", "after the user's work", "x\n")
    assert sh(project, "status", "--porcelain") == ""
    sh(project, "fsck", "--strict", "--no-dangling")


def test_the_cli_finds_the_project_as_git_finds_dot_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From a subfolder the project holding stores is found; a project without stores
    is passed over for an enclosing .gitmem; `init` in a project says where stores live."""
    outer = tmp_path / "outer"
    outer.mkdir()
    monkeypatch.chdir(outer)
    assert CliRunner().invoke(cli, ["init"]).exit_code == 0
    project = make_project(outer / "project")
    (project / "src").mkdir()
    monkeypatch.chdir(project / "src")
    assert ops.find_repository(str(project / "src")) == str(outer / ".gitmem")
    result = CliRunner().invoke(cli, ["init"])
    assert result.exit_code == 0, result.output
    assert "refs/heads/gitmem/<store>" in result.output
    assert ops.find_repository(str(project / "src")) == str(project)
    created = CliRunner().invoke(cli, ["create", "--store", STORE, "m", "-d", "d", "--body", "b"])
    assert created.exit_code == 0, created.output
    listed = CliRunner().invoke(cli, ["ls", "--json"])
    assert [m["slug"] for m in json.loads(listed.stdout)] == ["m"]
    with Repository.open(str(outer / ".gitmem")) as standalone:
        assert standalone.stores() == []
    bare = CliRunner().invoke(cli, ["init", "--bare", str(tmp_path / "solo.git")])
    assert bare.exit_code == 0 and "gitmem repository in" in bare.output
    with Repository.open(str(tmp_path / "solo.git")) as solo:
        assert not solo.project


# -- reconciling two replicas -------------------------------------------------------------


def test_disjoint_writes_converge_and_a_second_sync_writes_nothing(replicas: Replicas) -> None:
    """Each side's new memory reaches the other; heads end equal; nothing new, nothing written."""
    ops.create(replicas.a, STORE, ME, "from-a", "a", "a\n")
    ops.create(replicas.b, STORE, ME, "from-b", "b", "b\n")
    [first] = replicas.a.sync()
    assert first.pushed and not first.merged
    [second] = replicas.b.sync()
    assert second.merged and second.pushed and second.conflicts == []
    assert second.changed == ["from-a"]
    [third] = replicas.a.sync()
    assert third.fetched and not third.merged and not third.pushed
    head = _assert_converged(replicas)
    assert replicas.a.snapshot(STORE).slugs() == ["doomed", "from-a", "from-b", "shared", "tool"]
    assert replicas.a.snapshot(STORE).totals.count == 5
    merge = sh(replicas.origin, "cat-file", "-p", head)
    assert merge.count("\nparent ") == 2 and "Gitmem-Slug: from-a" in merge
    git_dir = Path(replicas.a.directory)
    before = tree_bytes(git_dir)
    [again] = replicas.a.sync()
    assert again.up_to_date and again.head == head
    assert tree_bytes(git_dir) == before
    sh(git_dir, "fsck", "--strict", "--no-dangling")


def test_the_same_memory_changed_apart_merges_line_by_line(replicas: Replicas) -> None:
    """Edits to separate lines of one memory both land; the history holds both sides'
    revisions, each with a number of its own, and the merge is numbered after them."""
    ops.edit(replicas.a, STORE, ME, "shared", old_text="one", new_text="ONE")
    ops.edit(replicas.a, STORE, ME, "shared", old_text="two", new_text="TWO")
    ops.edit(replicas.b, STORE, ME, "shared", old_text="five", new_text="FIVE")
    replicas.sync_all()
    _assert_converged(replicas)
    for repo in (replicas.a, replicas.b):
        merged = repo.snapshot(STORE).get("shared")
        assert merged is not None and merged.body == "ONE\nTWO\nthree\nfour\nFIVE\n"
        history = [(r.revision, r.op, r.body) for r in repo.revisions(STORE, "shared")]
        assert [n for n, _, _ in history] == [1, 2, 3, 4, 5]
        assert history[-1] == (5, "merge", "ONE\nTWO\nthree\nfour\nFIVE\n")
        assert repo.snapshot(STORE).revision("shared") == 5


def test_the_same_line_changed_on_both_sides_keeps_both_texts(replicas: Replicas) -> None:
    """Overlapping edits: this replica's text stays at the slug, the other's beside it
    as <slug>.conflict-<commit>, and the conflict is reported."""
    ops.edit(replicas.a, STORE, ME, "shared", old_text="three", new_text="THREE by a")
    ops.edit(replicas.b, STORE, ME, "shared", old_text="three", new_text="three by b")
    replicas.a.sync()
    a_head = replicas.a.head(STORE)
    assert a_head is not None
    [report] = replicas.b.sync()
    assert report.conflicts == ["shared"]
    replicas.a.sync()
    _assert_converged(replicas)
    companion = f"shared.conflict-{a_head[:7]}"
    for repo in (replicas.a, replicas.b):
        snap = repo.snapshot(STORE)
        kept, other = snap.get("shared"), snap.get(companion)
        assert kept is not None and "three by b" in kept.body
        assert other is not None and "THREE by a" in other.body
        assert other.description == "lines"
    assert "Gitmem-Conflicts: shared" in sh(replicas.origin, "log", "-1", f"gitmem/{STORE}")
    # resolving is an edit and a delete
    ops.edit(replicas.a, STORE, ME, "shared", old_text="three by b", new_text="three by both")
    ops.delete(replicas.a, STORE, ME, companion)
    replicas.sync_all()
    _assert_converged(replicas)
    assert companion not in replicas.b.snapshot(STORE)


@pytest.mark.parametrize("deleter", ["a", "b"])
def test_an_edit_survives_a_delete_on_the_other_side(replicas: Replicas, deleter: str) -> None:
    """Deleted on one side, edited on the other: the edit stays, whichever syncs first."""
    gone, kept = (replicas.a, replicas.b) if deleter == "a" else (replicas.b, replicas.a)
    ops.delete(gone, STORE, ME, "doomed")
    ops.edit(kept, STORE, ME, "doomed", body="still needed\n")
    replicas.sync_all()
    _assert_converged(replicas)
    for repo in (replicas.a, replicas.b):
        found = repo.snapshot(STORE).get("doomed")
        assert found is not None and found.body == "still needed\n"


def test_code_halves_reconcile_like_bodies(replicas: Replicas) -> None:
    """Code changed on separate lines on each side merges; the body change comes along."""
    ops.edit(replicas.a, STORE, ME, "tool", body="see the code\n")
    with_a = CODE.replace("a = 1", "a = 10")
    with_b = CODE.replace("b = 2", "b = 20")
    ops.delete(replicas.a, STORE, ME, "shared")
    for repo, code in ((replicas.a, with_a), (replicas.b, with_b)):
        repo.mutate(STORE, ME, _set_code(repo, code))
    replicas.sync_all()
    _assert_converged(replicas)
    tool = replicas.b.snapshot(STORE).get("tool")
    assert tool == Memory(
        "tool", "code", "see the code\n", CODE.replace("a = 1", "a = 10").replace("b = 2", "b = 20")
    )
    assert "shared" not in replicas.b.snapshot(STORE)


def _set_code(repo: Repository, code: str) -> Callable[[Snapshot], Change]:
    def build(snapshot: Snapshot) -> Change:
        tool = snapshot.get("tool")
        assert tool is not None
        return Change("edit", "tool", replace(tool, code=code))

    return build


# -- holders, limits --------------------------------------------------------------------


def _holder(repo: Repository, instance: str, **limits: int) -> Holder:
    cap = capability("keyword-search", "shared", **limits)
    return Holder(repo, cap, Agent("team", instance), Binding(STORE, True))


def test_holders_on_each_side_are_told_once(replicas: Replicas) -> None:
    """What a sync brought in reaches a holder on each replica once, never its own writes."""
    on_a, on_b = _holder(replicas.a, "agent-a"), _holder(replicas.b, "agent-b")
    assert on_a.notices() is None and on_b.notices() is None
    assert on_a.call("create_memory", {"name": "by-a", "description": "da", "body": "a\n"}).ok
    assert on_b.call("create_memory", {"name": "by-b", "description": "db", "body": "b\n"}).ok
    ops.edit(replicas.b, STORE, ME, "shared", old_text="five", new_text="FIVE")
    replicas.sync_all()
    told_a = on_a.notices()
    assert told_a is not None and told_a.startswith(SYNCED)  # b's merge, fast-forwarded
    assert "- added `by-b` — db" in told_a and "- updated `shared` — lines" in told_a
    assert "by-a" not in told_a
    told_b = on_b.notices()
    assert told_b is not None and told_b.startswith(SYNCED)  # b made the merge
    assert "- added `by-a` — da" in told_b and "by-b" not in told_b
    assert on_a.notices() is None and on_b.notices() is None


def test_a_merged_set_over_a_limit_is_kept_reported_and_held(replicas: Replicas) -> None:
    """Each side within maxCount, the merge over it: kept, reported by sync and state,
    and from then on only writes that bring the count down are taken."""
    on_a, on_b = (
        _holder(replicas.a, "agent-a", maxCount=5),
        _holder(replicas.b, "agent-b", maxCount=5),
    )
    for holder, prefix in ((on_a, "a"), (on_b, "b")):
        for i in range(2):
            assert holder.call(
                "create_memory", {"name": f"{prefix}{i}", "description": "d", "body": "x\n"}
            ).ok
    replicas.a.sync()
    [report] = replicas.b.sync()
    assert [e.to_dict() for e in report.exceeded] == [
        {"limit": "maxCount", "value": 7, "maximum": 5, "over": 2, "slug": None}
    ]
    assert ops.state(replicas.b, STORE)["exceeded"] == [
        {"limit": "maxCount", "value": 7, "maximum": 5, "over": 2, "slug": None}
    ]
    assert on_b.state()["exceeded"][0]["over"] == 2
    shown = CliRunner().invoke(cli, ["--repo", replicas.b.directory, "state"])
    assert shown.exit_code == 0, shown.output
    assert "exceeded: maxCount 7 > 5, over by 2;" in shown.stdout
    refused = on_b.call("create_memory", {"name": "more", "description": "d", "body": "x\n"})
    assert not refused.ok and refused.kind == "limit-exceeded"
    assert "maxCount" in refused.text
    with pytest.raises(LimitExceeded):
        ops.edit(replicas.b, STORE, ME, "a0", body="changed\n")
    assert on_b.call("delete_memory", {"name": "a0"}).ok  # 6: still over, but down
    assert on_b.call("delete_memory", {"name": "a1"}).ok  # 5
    assert not on_b.call("create_memory", {"name": "c", "description": "d", "body": "x\n"}).ok
    assert on_b.call("edit_memory", {"name": "b0", "old_text": "x", "new_text": "y"}).ok
    assert ops.state(replicas.b, STORE)["exceeded"] == []


# -- the remote -------------------------------------------------------------------------


def test_a_push_race_loses_nothing(replicas: Replicas, tmp_path: Path) -> None:
    """Two processes writing and syncing against one origin at once: both end
    reconciled, and every head either pushed is an ancestor of origin's final head."""
    clones = [Path(replicas.a.directory).parent, Path(replicas.b.directory).parent]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent)}
    procs = [
        subprocess.Popen(
            [sys.executable, HELPER, str(clone), name, "4"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for clone, name in zip(clones, ("pa", "pb"), strict=True)
    ]
    pushed: list[str] = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        pushed += out.split()
    replicas.sync_all()
    head = _assert_converged(replicas)
    for old in pushed:
        assert is_ancestor(replicas.origin, old, head)
    slugs = replicas.b.snapshot(STORE).slugs()
    assert {f"{p}-{i}" for p in ("pa", "pb") for i in range(4)} <= set(slugs)
    sh(replicas.origin, "fsck", "--strict", "--no-dangling")
    with Repository.open(str(replicas.origin)) as origin:  # a project's bare repository
        assert origin.project and origin.head(STORE) == head


def test_plain_git_push_and_fetch_carry_stores(replicas: Replicas, tmp_path: Path) -> None:
    """`git push origin 'refs/heads/gitmem/*'` by hand is a store a sync then takes up."""
    clone = Path(replicas.a.directory).parent
    ops.create(replicas.a, STORE, ME, "by-hand", "pushed by git", "x\n")
    sh(clone, "push", "-q", "origin", "refs/heads/gitmem/*:refs/heads/gitmem/*")
    [report] = replicas.b.sync()
    assert report.fetched and "by-hand" in replicas.b.snapshot(STORE)


def test_an_unreachable_remote_is_one_line_and_exit_1(
    replicas: Replicas, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A missing remote name, or a remote path that is gone, is a RemoteError; the CLI
    says it in one line and exits 1. --json prints one object per store."""
    with pytest.raises(RemoteError, match="no remote named 'nowhere'"):
        replicas.a.sync("nowhere")
    clone = Path(replicas.a.directory).parent
    sh(clone, "remote", "add", "gone", str(tmp_path / "gone.git"))
    monkeypatch.chdir(clone)
    result = CliRunner().invoke(cli, ["sync", "gone"])
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: cannot fetch from ") and result.stderr.count("\n") == 1
    ops.create(replicas.a, STORE, ME, "new", "d", "x\n")
    result = CliRunner().invoke(cli, ["sync", "--json"])
    assert result.exit_code == 0, result.output
    [row] = json.loads(result.stdout)
    assert row["store"] == STORE and row["pushed"] is True and row["conflicts"] == []
    text = CliRunner().invoke(cli, ["sync"])
    assert text.exit_code == 0 and text.stdout == f"{STORE}: up to date at {row['head'][:12]}\n"


def test_a_remote_paths_damage_is_refused_in_one_line(replicas: Replicas, tmp_path: Path) -> None:
    """A remote on this machine is anyone's repository, and dulwich reads its loose
    objects and refs itself. A commit it cannot parse (pushed there by plain git) is
    that branch's refusal, and the other stores sync; a ref that names no object, or
    a ``packed-refs`` it cannot read, is one line for the whole remote, and nothing is
    written here. Never a defect of gitmem's."""
    origin = replicas.origin
    head = sh(origin, "rev-parse", f"refs/heads/gitmem/{STORE}").strip()
    tree = sh(origin, "rev-parse", f"{head}^{{tree}}").strip()
    text = f"tree {tree}\nparent {head}\nauthor M <m@x> 1700000000 xx\ncommitter M <m@x> 1700000000 +0000\n\nhand\n"
    bad = subprocess.run(
        ["git", "hash-object", "-t", "commit", "--literally", "-w", "--stdin"],
        cwd=origin,
        input=text,
        capture_output=True,
        text=True,
        env=ENV,
        check=True,
    ).stdout.strip()
    sh(origin, "update-ref", "refs/heads/gitmem/junk", bad)
    ops.create(replicas.a, "other", ME, "x", "d", "x\n")
    reports = {r.store: r for r in replicas.a.sync()}
    assert reports["junk"].refused and "does not read" in reports["junk"].refused[0]
    assert reports["other"].pushed
    assert replicas.a.head("junk") is None
    clone = Path(replicas.a.directory).parent
    runner = CliRunner()
    for damage, says in (
        ("nothex\n", "names no commit ('nothex'); mend or delete it there"),
        (None, "cannot read the branches of"),
    ):
        if damage is not None:
            (origin / "refs" / "heads" / "gitmem" / "junk").write_text(damage)
        else:
            (origin / "refs" / "heads" / "gitmem" / "junk").unlink()
            (origin / "packed-refs").write_text(f"{head} refs/heads/gitmem/x..y\n")
        before = sh(clone, "for-each-ref")
        done = runner.invoke(cli, ["--repo", str(clone), "sync"])
        assert done.exit_code == 1 and says in done.stderr, done.stderr
        assert done.stderr.count("\n") == 1 and "please report" not in done.stderr
        assert sh(clone, "for-each-ref") == before


def test_a_store_beside_another_of_its_name_is_refused_in_one_line(
    replicas: Replicas,
) -> None:
    """Git keeps no branch whose name is a folder of another's: a store ``team`` beside
    a store ``team/x`` is refused where it would be made (a write here, an adoption of
    the remote's, a push there) with one line that says so, never an error about lock
    files or folders; it is that store's refusal alone (a teammate's store named for
    a prefix of ours holds back none of our other stores), the other stores are synced,
    and nothing is left half made."""
    with pytest.raises(InvalidArgument, match="cannot be made beside gitmem/notes:"):
        ops.create(replicas.a, "notes/x", ME, "x", "d", "x\n")
    ops.create(replicas.b, "team/x", ME, "x", "d", "x\n")
    replicas.b.sync()
    ops.create(replicas.a, "team", ME, "y", "d", "y\n")
    ops.create(replicas.a, STORE, ME, "after", "d", "z\n")
    reports = {r.store: r for r in replicas.a.sync()}
    assert reports["team"].refused == [
        "gitmem/team cannot be made beside gitmem/team/x: git keeps no branch whose name "
        "is a folder of another branch's; give the store another name"
    ]
    assert reports["team/x"].refused and reports[STORE].pushed  # a store's own refusal
    assert replicas.a.stores() == [STORE, "team"]
    head = sh(replicas.origin, "rev-parse", f"refs/heads/gitmem/{STORE}").strip()
    packed = replicas.origin / "packed-refs"
    with packed.open("a") as refs:
        refs.write(f"{head} refs/heads/gitmem/{STORE}/x\n")
    reports = {r.store: r for r in replicas.b.sync()}
    assert reports[f"{STORE}/x"].refused == [
        f"gitmem/{STORE}/x cannot be made beside gitmem/{STORE}: git keeps no branch whose "
        "name is a folder of another branch's; give the store another name"
    ]
    assert reports[STORE].fetched and not reports[STORE].refused
    assert_fsck(replicas.b.directory)


def test_an_unnamed_remote_path_syncs_too(replicas: Replicas) -> None:
    """A path given instead of a remote name works, recording no tracking ref."""
    ops.create(replicas.a, STORE, ME, "via-path", "d", "x\n")
    [report] = replicas.a.sync(str(replicas.origin))
    assert report.pushed
    assert sh(replicas.origin, "rev-parse", f"gitmem/{STORE}").strip() == replicas.a.head(STORE)


def test_the_author_of_a_merge_is_gitmem_sync(replicas: Replicas) -> None:
    """A merge commit is authored by the sync identity, never an agent or the user."""
    ops.create(replicas.a, STORE, ME, "x1", "d", "x\n")
    ops.create(replicas.b, STORE, Author("Other", "o@example.com"), "x2", "d", "x\n")
    replicas.sync_all()
    author = sh(replicas.origin, "log", "-1", "--format=%an <%ae>", f"gitmem/{STORE}").strip()
    assert author == "gitmem sync <sync@gitmem.invalid>"


def test_a_merge_carries_what_binds_the_store_never_who_wrote(replicas: Replicas) -> None:
    """A sync's merge records its own part and the store's capability alone, never the
    agent, session, client or tool of the last write on either side: blame credits a
    conflict copy to the sync, not to an agent."""
    on_a, on_b = _holder(replicas.a, "agent-a"), _holder(replicas.b, "agent-b")
    for holder, text in ((on_a, "THREE by a"), (on_b, "three by b")):
        edit = {"name": "shared", "old_text": "three", "new_text": text}
        assert holder.call("edit_memory", edit).ok
    replicas.a.sync()
    [report] = replicas.b.sync()
    assert report.conflicts == ["shared"]
    head = replicas.b.head(STORE)
    assert head is not None
    assert set(replicas.b.made_by(head)[2]) == {CAPABILITY_TRAILER, SYNC_TRAILER, CONFLICTS}
    [copy] = [s for s in replicas.b.snapshot(STORE).slugs() if ".conflict-" in s]
    lines = replicas.b.blame(STORE, copy)
    assert {(b.author, b.by) for b in lines if b.commit == head} == {("gitmem sync", "operator")}


def test_the_pack_protocol_path_reconciles_too(
    replicas: Replicas, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the local shortcut off, dulwich's client (the path ssh:// and https://
    remotes take) fetches, and pushes never forced, to the same result."""
    from gitmem.store import remote

    monkeypatch.setattr(remote.Remote, "_local", lambda self: None)
    ops.create(replicas.a, STORE, ME, "from-a", "a", "a\n")
    ops.edit(replicas.b, STORE, ME, "shared", old_text="five", new_text="FIVE")
    replicas.sync_all()
    _assert_converged(replicas)
    assert "from-a" in replicas.b.snapshot(STORE)
    assert "Gitmem-Sync: origin" in sh(replicas.origin, "log", "-1", f"gitmem/{STORE}")


def test_two_projects_with_unrelated_stores_reconcile(tmp_path: Path) -> None:
    """Stores started apart (no common commit) merge from nothing: a slug both created
    with different texts is a conflict; the tracking ref follows the remote."""
    first = make_project(tmp_path / "first")
    sh(tmp_path, "init", "-q", "--bare", "origin.git")
    sh(first, "remote", "add", "origin", str(tmp_path / "origin.git"))
    sh(tmp_path, "clone", "-q", "origin.git", "second")
    with Repository.init(str(first)) as a, Repository.init(str(tmp_path / "second")) as b:
        ops.create(a, STORE, ME, "same", "d", "from a\n")
        ops.create(a, STORE, ME, "only-a", "d", "a\n")
        ops.create(b, STORE, ME, "same", "d", "from b\n")
        a.sync()
        [report] = b.sync()
        assert report.merged and report.conflicts == ["same"]
        a.sync()
        assert a.head(STORE) == b.head(STORE)
        slugs = a.snapshot(STORE).slugs()
        assert slugs[:2] == ["only-a", "same"] and slugs[2].startswith("same.conflict-")
        tracking = sh(first, "rev-parse", f"refs/remotes/origin/gitmem/{STORE}").strip()
        assert tracking == a.head(STORE)
        assert b.check() == []


def test_tracking_refs_follow_over_a_stale_lock_and_packed_refs(replicas: Replicas) -> None:
    """A remote-tracking ref packed by `git pack-refs`, and a `.lock` file a killed
    writer left on it, do not stop a sync from recording where the remote is."""
    tracking = f"refs/remotes/origin/gitmem/{STORE}"
    clone = Path(replicas.a.directory).parent
    sh(clone, "pack-refs", "--all")
    lock = Path(replicas.a.directory, *tracking.split("/")).with_suffix(".lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text("0" * 40 + "\n")
    ops.create(replicas.b, STORE, ME, "from-b", "d", "b\n")
    [pushed] = replicas.b.sync()
    [fetched] = replicas.a.sync()
    assert pushed.pushed and fetched.fetched and fetched.head == pushed.head
    assert sh(clone, "rev-parse", tracking).strip() == pushed.head
    assert not lock.exists()
    sh(clone, "fsck", "--strict", "--no-dangling")


def test_a_merge_writes_only_the_objects_it_makes(replicas: Replicas) -> None:
    """Memories taken from the other side as they are keep its blobs and fan-out trees:
    the merge's pack holds the merge commit, its root tree and the one fan-out tree both
    sides changed, nothing else; git reads the result whole."""
    from gitmem.store.memoryfiles import bucket

    slugs = [f"note-{i}" for i in range(200)]
    by_bucket: dict[str, list[str]] = {}
    for slug in slugs:
        by_bucket.setdefault(bucket(slug), []).append(slug)
    both = next(group for group in by_bucket.values() if len(group) >= 2)
    taken = [s for s in slugs if bucket(s) not in {bucket(both[0]), bucket("shared")}][:3]
    for slug in taken:
        ops.create(replicas.a, STORE, ME, slug, "from a", f"{slug} body\n")
    ops.create(replicas.a, STORE, ME, both[0], "from a", "a side\n")
    ops.create(replicas.b, STORE, ME, both[1], "from b", "b side\n")
    replicas.a.sync()
    [report] = replicas.b.sync()
    assert report.merged and report.pushed
    head = replicas.b.head(STORE)
    assert head is not None and report.head == head
    clone = replicas.project.parent / "b"
    packs = list((clone / ".git" / "objects" / "pack").glob("*.idx"))
    holding = [idx for idx in packs if head in sh(clone, "verify-pack", "-v", str(idx)).split()]
    [idx] = holding
    listed = [
        line.split()[0]
        for line in sh(clone, "verify-pack", "-v", str(idx)).splitlines()
        if line.split() and len(line.split()[0]) == 40
    ]
    assert len(listed) == 3  # the commit, the root tree, the fan-out tree of `both`
    ours_side, theirs_side = sh(clone, "rev-parse", f"{head}^1", f"{head}^2").split()
    for slug in taken:
        path = replicas.b.path(STORE, slug)
        folder = path.rsplit("/", 1)[0]
        merged = sh(clone, "rev-parse", f"{head}:{folder}").strip()
        assert merged == sh(clone, "rev-parse", f"{theirs_side}:{folder}").strip()
        assert replicas.b.snapshot(STORE).get(slug) == replicas.a.snapshot(STORE).get(slug)
    assert ours_side != theirs_side
    subprocess.run(["git", "fsck", "--strict"], cwd=clone, check=True, capture_output=True)


def test_a_remote_branch_at_no_commit_is_refused_for_its_store_alone(
    replicas: Replicas,
) -> None:
    """A store branch at the remote that names a blob (a hostile or damaged remote) is
    that store's refusal (exit 2); every other store syncs as usual, and no ref here
    names what was never copied."""
    blob = (
        subprocess.run(
            ["git", "hash-object", "-w", "--stdin"],
            cwd=replicas.origin,
            input=b"not a commit\n",
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .strip()
    )
    folder = replicas.origin / "refs" / "heads" / "gitmem"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "other").write_text(blob + "\n")  # git's own commands refuse to
    ops.create(replicas.a, STORE, ME, "fresh", "a new one", "x\n")
    result = CliRunner().invoke(cli, ["--repo", str(replicas.a.directory), "sync", "--json"])
    assert result.exit_code == 2, result.output
    reports = {r["store"]: r for r in json.loads(result.output)}
    assert reports[STORE]["pushed"] and not reports["other"]["pushed"]
    assert "breaks rule parse" in reports["other"]["refused"][0]
    assert "other" not in replicas.a.stores()
    assert_fsck(replicas.a.directory)
