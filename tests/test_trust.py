"""What a store is, decided by the receiving side: the push hook and sync hold a store
to the kind and limits it records as of the commit they build on, whatever an incoming
commit's trailers claim; links and odd names never reach a store. Through the real
``git`` CLI for the hook, and real repositories for sync."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from dulwich.objects import Commit, ObjectID, Tree
from dulwich.repo import Repo
from helpers_githooks import Unguarded, craft, guarded_world, push, refusal
from helpers_secrets import SECRETS
from helpers_sync import ME, hostile_replicas, make_project, sh

from gitmem import Repository, ops
from gitmem.cli import cli
from gitmem.limits import Limits
from gitmem.store import memoryfiles as files
from gitmem.store.message import MESSAGE_SLACK, Edited, Facts, format_message, overlong
from gitmem.trailers import capability_trailer
from gitmem.types import Change, FileChange, FileEdit, Memory, Totals

REF = "refs/heads/gitmem/notes"
LINK_MODE = 0o120000
GITLINK_MODE = 0o160000


def bind(project: Path, limits: Limits) -> None:
    """The store's binding records ``limits`` (a commit creating memory `small`)."""
    with Unguarded.open(str(project)) as u:
        small = Memory("small", "s", "fits\n")
        u.publish(
            "notes",
            ME,
            lambda _: Change("create", "small", small, capability_trailer("markdown", limits)),
        )


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path]:
    """A shared bare server with gitmem's pre-receive; a project whose store ``notes``
    records maxLenPerMemory=100, pushed there."""
    return guarded_world(tmp_path, lambda project: bind(project, Limits(max_len_per_memory=100)))


def forged_file_commit(git_dir: str, ref: str) -> str:
    """A commit on a memory store's branch whose trailers claim a file store: a
    5,000-character stray file and a memory with no front matter."""
    text = "x" * 5000
    message = (
        "create stray.txt\n\nGitmem-Path: stray.txt\nGitmem-Op: create\nGitmem-Revision: 1\n"
        "Gitmem-Count: 1\nGitmem-Chars: 5000\nGitmem-Lines: 1\n"
        "Gitmem-Peak-Count: 1\nGitmem-Peak-Chars: 5000\nGitmem-Peak-Lines: 1\n"
    )
    return craft(
        git_dir,
        ref,
        {"stray.txt": text.encode(), files.memory_path("raw"): b"no front matter"},
        message,
    )


def wide_commit(project: Path) -> None:
    """A pusher's own capability trailer turns every limit off to land 5,000 characters."""
    with Unguarded.open(str(project)) as u:
        big = Memory("big", "b", "x" * 5000)
        off = capability_trailer("markdown", Limits())
        u.publish("notes", ME, lambda _: Change("create", "big", big, off))


# -- the push hook -------------------------------------------------------------------


def test_a_forged_file_store_trailer_does_not_skip_the_rules(world: tuple[Path, Path]) -> None:
    server, project = world
    before = sh(server, "rev-parse", REF)
    forged_file_commit(str(project / ".git"), REF)
    line = refusal(push(project, "gitmem/notes"), REF, "kind")
    assert "memory store" in line
    assert sh(server, "rev-parse", REF) == before


def test_a_pushers_own_capability_cannot_loosen_the_recorded_limits(
    world: tuple[Path, Path],
) -> None:
    server, project = world
    before = sh(server, "rev-parse", REF)
    wide_commit(project)
    result = push(project, "gitmem/notes")
    line = refusal(result, REF, "widen")
    assert "maxLenPerMemory" in line
    # what it writes is held to the limits the store records, not to its own
    assert "maxLenPerMemory (100)" in refusal(result, REF, "limit")
    assert sh(server, "rev-parse", REF) == before


def test_a_commit_that_drops_the_record_of_limits_is_refused(world: tuple[Path, Path]) -> None:
    """A commit gitmem makes carries the store's recorded limits forward (an allowlist's
    here); one written to leave them out, which would leave every tool reading the head
    to find no limits at all, is a loosening the hook refuses."""
    server, project = world
    before = sh(server, "rev-parse", REF)
    with Repository.open(str(project)) as repo:
        made = repo.allow("notes", "3f5a0c9e1b2d4e6f", "a sample key", ME)
        assert made is not None
        assert "Gitmem-Capability: markdown" in sh(project, "log", "-1", "--format=%B", REF)
    allowed = sh(project, "show", f"{REF}:{files.ALLOWLIST}")
    message = sh(project, "log", "-1", "--format=%B", REF)
    sh(project, "update-ref", REF, before.strip())
    dropped = "\n".join(
        line for line in message.splitlines() if not line.startswith("Gitmem-Capability:")
    )
    craft(str(project / ".git"), REF, {files.ALLOWLIST: allowed.encode()}, dropped + "\n")
    line = refusal(push(project, "gitmem/notes"), REF, "widen")
    assert "records no limits" in line and "maxLenPerMemory" in line
    assert sh(server, "rev-parse", REF) == before
    # one whose record does not read is told so, not that it records none
    sh(project, "update-ref", REF, before.strip())
    unreadable = re.sub(r"maxCount=\d+", "maxCount=-1", message)
    assert unreadable != message
    craft(str(project / ".git"), REF, {files.ALLOWLIST: allowed.encode()}, unreadable)
    line = refusal(push(project, "gitmem/notes"), REF, "widen")
    assert "its Gitmem-Capability trailer does not read" in line
    assert sh(server, "rev-parse", REF) == before


def test_narrowing_the_limits_lands(world: tuple[Path, Path]) -> None:
    _, project = world
    with Unguarded.open(str(project)) as u:
        memory = Memory("tiny", "t", "ok\n")
        narrow = capability_trailer("markdown", Limits(max_len_per_memory=50))
        u.publish("notes", ME, lambda _: Change("create", "tiny", memory, narrow))
    result = push(project, "gitmem/notes")
    assert result.returncode == 0, result.stderr


def link_commit(git_dir: str, ref: str, mode: int, name: str) -> str:
    """A commit adding a ``mode`` entry (a symlink or a gitlink) named ``name`` at the
    root of ``ref``'s tree, with a file store's trailers."""
    repo = Repo(git_dir)
    try:
        head = repo.refs[ref.encode()]
        parent = repo[head]
        assert isinstance(parent, Commit)
        old = repo[parent.tree]
        assert isinstance(old, Tree)
        tree = Tree()
        for e in old.items():
            tree.add(e.path, e.mode, e.sha)
        target = head if mode == GITLINK_MODE else craft_blob(repo, b"/etc/passwd")
        tree.add(name.encode(), mode, ObjectID(target))
        repo.object_store.add_object(tree)
        commit = Commit()
        commit.tree = tree.id
        commit.parents = [head]
        commit.author = commit.committer = b"Script <script@example.com>"
        commit.author_time = commit.commit_time = 1_800_000_000
        commit.author_timezone = commit.commit_timezone = 0
        commit.message = (
            f"create {name}\n\nGitmem-Path: {name}\nGitmem-Op: create\nGitmem-Revision: 1\n"
            "Gitmem-Count: 2\nGitmem-Chars: 11\nGitmem-Lines: 1\n"
            "Gitmem-Peak-Count: 2\nGitmem-Peak-Chars: 11\nGitmem-Peak-Lines: 1\n"
        ).encode()
        repo.object_store.add_object(commit)
        repo.refs[ref.encode()] = commit.id
        return commit.id.decode()
    finally:
        repo.close()


def craft_blob(repo: Repo, data: bytes) -> bytes:
    from dulwich.objects import Blob

    blob = Blob.from_string(data)
    repo.object_store.add_object(blob)
    return bytes(blob.id)


def file_store(project: Path, store: str = "shelf", init: bool = False) -> None:
    with (Repository.init if init else Repository.open)(str(project)) as repo:
        change = FileChange((FileEdit("create", "notes.md", "hello"),))
        repo.publish_files(store, ME, lambda _: change)


@pytest.mark.parametrize("mode", [LINK_MODE, GITLINK_MODE])
def test_links_are_refused_in_a_file_store(world: tuple[Path, Path], mode: int) -> None:
    _, project = world
    file_store(project)
    assert push(project, "gitmem/shelf").returncode == 0
    link_commit(str(project / ".git"), "refs/heads/gitmem/shelf", mode, "out")
    line = refusal(push(project, "gitmem/shelf"), "refs/heads/gitmem/shelf", "tree")
    assert "link" in line


def test_install_for_standalone_stores_guards_every_branch(tmp_path: Path) -> None:
    """A plain bare server installed with --standalone guards refs/heads/<store-id>;
    a standalone store synced into it is guarded too."""
    sh(tmp_path, "init", "-q", "--bare", "server.git")
    server = tmp_path / "server.git"
    result = CliRunner().invoke(cli, ["hooks", "install", "--server", str(server), "--standalone"])
    assert result.exit_code == 0, result.output
    assert sh(server, "config", "gitmem.layout").strip() == "standalone"
    local = tmp_path / "mem"
    with Repository.init(str(local)) as repo:
        ops.create(repo, "notes", ME, "todo", "open tasks", "- ship\n")
        repo.sync(str(server))
    assert sh(server, "rev-parse", "refs/heads/notes").strip()
    with Unguarded.open(str(local)) as u:
        memory = Memory("creds", "db", f"key {SECRETS[0][1]}\n")
        u.publish("notes", ME, lambda _: Change("create", "creds", memory))
    before = sh(server, "rev-parse", "refs/heads/notes")
    with Repository.open(str(local)) as repo, pytest.raises(Exception, match="breaks rule secret"):
        repo.sync(str(server))
    assert sh(server, "rev-parse", "refs/heads/notes") == before


def test_a_plain_server_records_the_project_layout(tmp_path: Path) -> None:
    sh(tmp_path, "init", "-q", "--bare", "server.git")
    server = tmp_path / "server.git"
    result = CliRunner().invoke(cli, ["hooks", "install", "--server", str(server)])
    assert result.exit_code == 0, result.output
    assert sh(server, "config", "gitmem.layout").strip() == "project"


# -- sync ------------------------------------------------------------------------------


@pytest.fixture
def replicas(tmp_path: Path) -> tuple[Path, Path, Path]:
    """An unguarded bare origin holding store ``notes`` (maxLenPerMemory=100), and
    two clones of it, ``a`` (the hostile pusher) and ``b`` (the agent's replica)."""
    return hostile_replicas(tmp_path, lambda project: bind(project, Limits(max_len_per_memory=100)))


def _pushed_by_a(a: Path) -> None:
    sh(a, "push", "-q", "origin", "gitmem/notes")


def _sync_b(b: Path) -> tuple[str | None, dict[str, object]]:
    """Sync b with --json; b's head and its report for `notes`. The exit status is 2
    when commits were kept out, else 0."""
    result = CliRunner().invoke(cli, ["--repo", str(b), "sync", "--json"])
    found = json.loads(result.output)
    rows = found if isinstance(found, list) else [found]
    row = next(r for r in rows if r["store"] == "notes")
    assert result.exit_code == (2 if row["refused"] else 0), result.output
    with Repository.open(str(b)) as repo:
        return repo.head("notes"), row


def test_a_file_store_commit_is_not_adopted_by_fast_forward(
    replicas: tuple[Path, Path, Path],
) -> None:
    _, a, b = replicas
    forged_file_commit(str(a / ".git"), REF)
    _pushed_by_a(a)
    with Repository.open(str(b)) as repo:
        before = repo.head("notes")
    head, row = _sync_b(b)
    assert head == before
    refused = row["refused"]
    # the kind first, then what else the commit breaks read as the store it lands in
    # (it also leaves out the limits the store records)
    assert isinstance(refused, list) and len(refused) == 3
    assert "breaks rule kind" in refused[0]
    assert "breaks rule widen" in refused[1] and "records no limits" in refused[1]
    assert "breaks rule parse" in refused[2] and "stray.txt" in refused[2]
    with Repository.open(str(b)) as repo:
        assert repo.layout("notes") == "memories"
        ops.create(repo, "notes", ME, "later", "still works", "yes\n")


def test_a_secret_arriving_by_fast_forward_is_kept_out(
    replicas: tuple[Path, Path, Path],
) -> None:
    _, a, b = replicas
    with Unguarded.open(str(a)) as u:
        memory = Memory("creds", "db", f"key {SECRETS[0][1]}\n")
        u.publish("notes", ME, lambda _: Change("create", "creds", memory))
    _pushed_by_a(a)
    with Repository.open(str(b)) as repo:
        before = repo.head("notes")
    head, row = _sync_b(b)
    assert head == before
    refused = row["refused"]
    assert isinstance(refused, list) and "breaks rule secret" in refused[0]
    assert SECRETS[0][1].split()[-1] not in refused[0]


def _commit_by_hand(a: Path, folder: Path, size: int) -> str:
    """A commit made with plain git on a's store branch, changing nothing, whose message
    holds ``size`` bytes; the new head."""
    message = folder / "message"
    message.write_bytes(b"by hand\n\n" + b"x" * (size - 10) + b"\n")
    head = sh(a, "rev-parse", REF).strip()
    made = sh(a, "commit-tree", f"{head}^{{tree}}", "-p", head, "-F", str(message)).strip()
    sh(a, "update-ref", REF, made)
    return made


def test_a_commit_whose_message_is_past_the_bound_is_not_adopted(
    replicas: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    """Every read of a store reads its head's message: a commit whose message is longer
    than a store commit's may be is kept out by a sync, named; one as long as it may be
    is adopted."""
    _, a, b = replicas
    fits = _commit_by_hand(a, tmp_path, MESSAGE_SLACK)
    _pushed_by_a(a)
    assert _sync_b(b)[0] == fits
    past = _commit_by_hand(a, tmp_path, MESSAGE_SLACK + 1)
    _pushed_by_a(a)
    head, row = _sync_b(b)
    assert head == fits
    refused = row["refused"]
    assert isinstance(refused, list) and len(refused) == 1
    assert refused[0].startswith(f"commit {past[:12]} breaks rule message: ")
    assert f"its message holds {MESSAGE_SLACK + 1:,} bytes" in refused[0]


def test_check_names_a_commit_whose_message_is_past_the_bound(
    replicas: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    """A message too long for a store commit that is already in a repository (made
    there by hand, or from before the bound) is named by `gitmem check`; one as long as
    a message may be is not."""
    _, a, _ = replicas
    _commit_by_hand(a, tmp_path, MESSAGE_SLACK)
    with Repository.open(str(a)) as repo:
        assert not [p for p in repo.check() if "its message holds" in p]
    past = _commit_by_hand(a, tmp_path, MESSAGE_SLACK + 1)
    with Repository.open(str(a)) as repo:
        found = [p for p in repo.check() if "its message holds" in p]
    assert len(found) == 1 and found[0].startswith(f"commit {past[:12]} on ")
    assert f"its message holds {MESSAGE_SLACK + 1:,} bytes" in found[0]


def test_a_message_gitmem_writes_is_never_past_the_bound() -> None:
    """The bound counts what a message holds beyond the trailers gitmem writes for it:
    a change of many memories, whose trailers alone pass it, is within it."""
    edits = tuple(Edited(f"memory-{i:05}", "create", 1) for i in range(2_000))
    totals = Totals(2_000, 2_000, 2_000)
    facts = Facts(edits, totals, totals, {"Gitmem-Session": "s" * 200})
    message = format_message(facts)
    assert len(message) > MESSAGE_SLACK
    assert overlong(message, facts) is None
    # the trailers gitmem writes count twice (a sync merge also names its conflicts)
    room = MESSAGE_SLACK + 2 * len(format_message(facts._replace(extra={})))
    assert overlong(message + b"x" * (room - len(message)), facts) is None
    assert overlong(message + b"x" * (room - len(message) + 1), facts) is not None
    assert overlong(message, None) is not None


def test_a_trailer_gitmem_does_not_write_is_held_to_the_bound() -> None:
    """Bulk carried in a trailer of any other name (``Gitmem-Pad: aaaa...``) counts as
    prose does: it cannot widen what a message may hold."""
    edits = (Edited("x", "create", 1),)
    totals = Totals(1, 4, 1)
    facts = Facts(edits, totals, totals, {"Gitmem-Pad": "a" * (2 * MESSAGE_SLACK)})
    assert overlong(format_message(facts), facts) is not None
    facts = Facts(edits, totals, totals, {"Gitmem-Pad": "a" * (MESSAGE_SLACK // 2)})
    assert overlong(format_message(facts), facts) is None


def test_a_remote_cannot_widen_limits_silently(replicas: tuple[Path, Path, Path]) -> None:
    _, a, b = replicas
    wide_commit(a)
    _pushed_by_a(a)
    with Repository.open(str(b)) as repo:
        before = repo.head("notes")
    result = CliRunner().invoke(cli, ["--repo", str(b), "sync"])
    assert result.exit_code == 2, result.output
    assert re.search(
        r"notes: refused commit [0-9a-f]{12} breaks rule widen: .*maxLenPerMemory", result.output
    )
    with Repository.open(str(b)) as repo:
        assert repo.head("notes") == before


def test_sync_exits_2_when_it_keeps_commits_out(replicas: tuple[Path, Path, Path]) -> None:
    """A sync that keeps out commits of the remote's says so by its exit status, in
    text and in JSON; the other stores sync as usual, and a sync with nothing kept
    out exits 0."""
    _, a, b = replicas
    with Repository.open(str(a)) as repo:
        ops.create(repo, "more", ME, "fine", "ok", "yes\n")
        repo.sync("origin")
        more = repo.head("more")
    wide_commit(a)
    _pushed_by_a(a)
    result = CliRunner().invoke(cli, ["--repo", str(b), "sync"])
    assert result.exit_code == 2, result.output
    assert re.search(r"^notes: refused commit [0-9a-f]{12} breaks rule widen", result.output, re.M)
    with Repository.open(str(b)) as repo:
        assert repo.head("more") == more
    result = CliRunner().invoke(cli, ["--repo", str(b), "sync", "--json"])
    assert result.exit_code == 2, result.output
    assert [r["store"] for r in json.loads(result.output) if r["refused"]] == ["notes"]
    result = CliRunner().invoke(cli, ["--repo", str(b), "sync", "--store", "more"])
    assert result.exit_code == 0, result.output


def test_a_link_arriving_by_sync_is_kept_out(tmp_path: Path) -> None:
    project = make_project(tmp_path / "project")
    file_store(project, init=True)
    sh(tmp_path, "clone", "-q", "--bare", "project", "origin.git")
    for name in ("a", "b"):
        sh(tmp_path, "clone", "-q", "origin.git", name)
        with Repository.open(str(tmp_path / name)) as repo:
            repo.sync("origin")
    a, b = tmp_path / "a", tmp_path / "b"
    link_commit(str(a / ".git"), "refs/heads/gitmem/shelf", LINK_MODE, "out")
    sh(a, "push", "-q", "origin", "gitmem/shelf")
    with Repository.open(str(b)) as repo:
        before = repo.head("shelf")
        done = repo.sync("origin")
        assert repo.head("shelf") == before
    row = next(r for r in done if r.store == "shelf")
    assert row.refused and "breaks rule tree" in row.refused[0]


def test_a_good_fast_forward_still_lands(replicas: tuple[Path, Path, Path]) -> None:
    _, a, b = replicas
    with Repository.open(str(a)) as repo:
        ops.create(repo, "notes", ME, "fine", "ok", "yes\n")
        repo.sync("origin")
        head = repo.head("notes")
    got, row = _sync_b(b)
    assert got == head and row["refused"] == []


# -- an operator's deliberate widening -------------------------------------------------


def test_set_limits_loosens_only_with_widen(replicas: tuple[Path, Path, Path]) -> None:
    """Tightening needs nothing; loosening is refused without --widen, in one line."""
    _, a, _ = replicas
    run = CliRunner().invoke
    result = run(cli, ["--repo", str(a), "set-limits", "--store", "notes", "maxLenPerMemory=0"])
    assert result.exit_code == 1
    assert "loosens maxLenPerMemory" in result.output and "--widen" in result.output
    result = run(cli, ["--repo", str(a), "set-limits", "--store", "notes", "maxLenPerMemory=50"])
    assert result.exit_code == 0, result.output
    result = run(cli, ["--repo", str(a), "set-limits", "--store", "notes", "maxCount=x"])
    assert result.exit_code == 1 and "is not a limit setting" in result.output


def test_a_deliberate_widening_is_refused_by_the_hook(world: tuple[Path, Path]) -> None:
    server, project = world
    before = sh(server, "rev-parse", REF)
    result = CliRunner().invoke(
        cli,
        ["--repo", str(project), "set-limits", "--store", "notes", "--widen", "maxLenPerMemory=0"],
    )
    assert result.exit_code == 0, result.output
    refusal(push(project, "gitmem/notes"), REF, "widen")
    assert sh(server, "rev-parse", REF) == before


def test_a_widening_made_where_the_store_is_kept_reaches_replicas_said(
    replicas: tuple[Path, Path, Path],
) -> None:
    origin, _, b = replicas
    result = CliRunner().invoke(
        cli,
        ["--repo", str(origin), "set-limits", "--store", "notes", "--widen", "maxLenPerMemory=0"],
    )
    assert result.exit_code == 0, result.output
    head, row = _sync_b(b)
    assert head == sh(origin, "rev-parse", REF).strip()
    assert row["refused"] == []
    widened = row["widened"]
    assert isinstance(widened, list) and len(widened) == 1
    assert "widens maxLenPerMemory on purpose" in widened[0]


def test_check_reports_links_in_a_store(tmp_path: Path) -> None:
    """`gitmem check` names a link in a store's tree, not only missing trailers."""
    project = make_project(tmp_path / "project")
    file_store(project, init=True)
    link_commit(str(project / ".git"), "refs/heads/gitmem/shelf", LINK_MODE, "out")
    result = CliRunner().invoke(cli, ["--repo", str(project), "check"])
    assert result.exit_code != 0
    assert "'out' is a symbolic link" in result.output


def test_limits_a_remote_leaves_unrecorded_are_refused(replicas: tuple[Path, Path, Path]) -> None:
    """An allowlist commit carries the store's limits forward, so it is adopted with
    nothing to say; the same commit written to leave them out is kept out, as a
    loosening, and nothing of it is adopted."""
    _, a, b = replicas
    with Repository.open(str(a)) as repo:
        repo.allow("notes", "0123456789abcdef", "reviewed", ME)
    _pushed_by_a(a)
    head, row = _sync_b(b)
    assert row["refused"] == [] and row["widened"] == []
    assert head == sh(a, "rev-parse", REF).strip()
    allowed = sh(a, "show", f"{REF}:{files.ALLOWLIST}")
    message = sh(a, "log", "-1", "--format=%B", REF)
    dropped = "\n".join(
        line for line in message.splitlines() if not line.startswith("Gitmem-Capability:")
    )
    more = allowed.encode() + b"fedcba9876543210\n"
    craft(str(a / ".git"), REF, {files.ALLOWLIST: more}, dropped + "\n")
    _pushed_by_a(a)
    after, row = _sync_b(b)
    assert after == head
    refused = row["refused"]
    assert isinstance(refused, list) and len(refused) == 1
    assert "breaks rule widen" in refused[0] and "records no limits" in refused[0]
