"""The lean read path answers exactly as the command line does, or not at all; and its
object reader reads what dulwich reads."""

from __future__ import annotations

import hashlib
import inspect
import itertools
import json
import os
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import commit_by_hand, git, tree_bytes
from dulwich.objects import ObjectID
from dulwich.repo import Repo

from gitmem import Agent, Author, Capability, Limits, Memory, Provenance, Repository
from gitmem.cli import cli
from gitmem.lean import heads, layout, lines, listing, refs, rendered, repository
from gitmem.lean.objects import Objects, Unreadable, apply_delta, tree_entries, tree_named
from gitmem.lean.survey import survey
from gitmem.quick import answer
from gitmem.search.index import BEHIND, index_path
from gitmem.store import Snapshot
from gitmem.store.history import History
from gitmem.types import OP_RE, SLUG_RE, Change, Edit, FileChange, FileEdit

AGENT = Author.agent("agent-1")
STORE = "profile/notes"


pytestmark = pytest.mark.usefixtures("operator_home")


def put(repo: Repository, store: str, slug: str, body: str, desc: str = "d") -> None:
    repo.mutate(store, AGENT, lambda _: Change("create", slug, Memory(slug, desc, body)))


def full(path: str, argv: list[str], environ: dict[str, str] | None = None) -> tuple[str, int]:
    """What the command line prints and its exit status (``--repo`` first unless the
    environment names the repository)."""
    args = argv if environ else ["--repo", path, *argv]
    result = CliRunner().invoke(cli, args, env=environ)
    return result.stdout, result.exit_code


def lean(path: str, argv: list[str], environ: dict[str, str] | None = None) -> str | None:
    return answer(argv if environ else ["--repo", path, *argv], environ or {})


@pytest.fixture
def store(tmp_path: Path) -> str:
    """A standalone repository with one memory store, its listing kept."""
    path = str(tmp_path / "repo.git")
    with Repository.init(path) as repo:
        put(repo, STORE, "deploy", "1. build\n2. ship\n", "how we ship")
        put(repo, STORE, "tabs", "a\tb\n", "tabs\tand ünïcode")
        put(repo, STORE, "a-much-longer-slug.v2", "x" * 300, "wide")
    full(path, ["ls"])  # keeps the listing
    full(path, ["search", "ship"])  # and the search index
    return path


ANSWERED = [
    ["ls"],
    ["ls", "-s", STORE],
    ["ls", "--store", STORE],
    ["state"],
    ["state", "--store", STORE],
    ["state", f"--store={STORE}"],
    ["search", "ship"],
    ["search", "SHIP", "build", "-s", STORE],
    ["search", "--limit", "1", "ship", "tabs"],
    ["search", "--limit=0", "a-much"],
    ["search", "nothing-matches-this"],
    ["search", "ünï"],
    ["show", "deploy"],
    ["show", "tabs", "-s", STORE],
    ["log", "deploy"],
    ["log", "-s", STORE, "tabs"],
    ["blame", "deploy"],
]


@pytest.mark.parametrize("argv", ANSWERED)
def test_the_lean_path_prints_what_the_command_line_prints(store: str, argv: list[str]) -> None:
    """Each plain form of ls, state, search, show, log and blame: the same text,
    status 0."""
    text = lean(store, argv)
    assert text is not None, argv
    assert (text, 0) == full(store, argv)


def test_the_repository_is_found_as_the_command_line_finds_it(
    store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--repo=PATH``, ``GITMEM_REPO``, and a ``.gitmem`` folder above the working one."""
    assert answer([f"--repo={store}", "ls"], {}) == full(store, ["ls"])[0]
    assert answer(["ls"], {"GITMEM_REPO": store}) == full(store, ["ls"], {"GITMEM_REPO": store})[0]
    project = tmp_path / "project"
    (project / "deep" / "er").mkdir(parents=True)
    os.rename(store, project / ".gitmem")
    monkeypatch.chdir(project / "deep" / "er")
    text = answer(["ls"], {})
    assert text is not None
    assert text == CliRunner().invoke(cli, ["ls"]).stdout


REFUSED = [
    ["ls", "--json"],
    ["ls", "--at", "2026-01-01"],
    ["ls", "--help"],
    ["ls", "-h"],
    ["--help"],
    ["--version"],
    ["ls", "extra"],
    ["ls", "-s"],
    ["ls", "-s", ""],
    ["ls", "--nope"],
    ["ls", "-x"],
    ["ls", "--json=1"],
    ["ls", "--", "-s"],
    ["ls", "-s", STORE, "-s", STORE],
    ["ls", f"-s{STORE}"],
    ["ls", "-s", "no-such-store"],
    ["ls", "-s", "bad..store"],
    ["ls", "-s", "-x"],
    ["state", "--json"],
    ["state", "extra"],
    ["show", "deploy", "--rev", "1"],
    ["show", "deploy", "--json"],
    ["show", "deploy", "--at", "2026-01-01"],
    ["show", "nope"],
    ["show"],
    ["log"],
    ["log", "deploy", "-p"],
    ["log", "deploy", "--stat"],
    ["log", "deploy", "--json"],
    ["log", "nope"],
    ["blame", "deploy", "--json"],
    ["blame", "deploy", "--at", "2026-01-01"],
    ["log", "deploy", "--at", "2026-01-01"],
    ["blame", "deploy", "extra"],
    ["blame"],
    ["blame", "no.such"],
    ["search"],
    ["search", "--limit", "x", "ship"],
    ["search", "--limit", "-1", "ship"],
    ["search", "--json", "ship"],
    ["search", "--at", "2026-01-01", "ship"],
    ["search", "a\x00b"],
    ["create", "x"],
    ["nonsense"],
    [],
]


@pytest.mark.parametrize("argv", REFUSED)
def test_what_the_lean_path_does_not_answer_is_left_to_the_command_line(
    store: str, argv: list[str]
) -> None:
    """Help, errors, options it does not take, other commands: ``None``."""
    assert lean(store, argv) is None


def _changed(repo: Repository, change: str) -> None:
    """One kind of write since the listing was kept."""
    if change == "create":
        put(repo, STORE, "new-one", "fresh\n")
    elif change == "edit":
        memory = Memory("deploy", "how we ship now", "1. build\n2. test\n3. ship\n")
        repo.mutate(STORE, AGENT, lambda _: Change("edit", memory.slug, memory))
    elif change == "delete":
        repo.mutate(STORE, AGENT, lambda _: Change("delete", "tabs", None))
    elif change == "code":
        memory = Memory("helper", "a helper", "use it\n", code="export const x = 1;\n")
        repo.mutate(STORE, AGENT, lambda _: Change("create", memory.slug, memory))
    else:  # more than are read one by one: the kept summaries are asked for
        for i in range(40):
            put(repo, STORE, f"more-{i:02d}", f"body {i}\n", f"more {i} ü")


@pytest.mark.parametrize("change", ["create", "edit", "delete", "code", "many"])
def test_a_listing_kept_of_an_earlier_tree_is_read_on_where_it_changed(
    store: str, tmp_path: Path, change: str
) -> None:
    """After a write the kept listing is of an older tree: the lean path reads only the
    folders that changed, prints what the command line prints, and keeps the listing
    and summaries the command line keeps."""
    meta = Path(store) / "gitmem"
    before = tmp_path / "before"
    shutil.copytree(meta, before)
    with Repository.open(store) as repo:
        _changed(repo, change)
    text = lean(store, ["ls"])
    assert text is not None
    kept = _kept(store, STORE)
    assert kept[0] is not None and kept[0][0] == _head_tree(store)
    shutil.rmtree(meta)
    shutil.copytree(before, meta)
    assert (text, 0) == full(store, ["ls"])
    assert _kept(store, STORE) == kept
    shutil.rmtree(meta)
    shutil.copytree(before, meta)
    assert (lean(store, ["state"]), 0) == full(store, ["state"])


SEARCHES = [
    ["search", "fresh"],
    ["search", "ship", "build"],
    ["search", "--limit", "1", "ship", "more"],
    ["search", "--limit=0", "ü"],
    ["search", "hip"],  # inside words only
    ["search", "tabs"],
]


@pytest.mark.parametrize("change", ["create", "edit", "delete", "code", "many", "rename", "often"])
def test_a_search_index_behind_the_head_is_caught_up_as_the_command_line_catches_it_up(
    store: str, tmp_path: Path, change: str
) -> None:
    """After a few writes the kept index is of an earlier commit: the lean path puts and
    removes the memories each revision since changed, in turn, as the command line
    does, prints what it prints and keeps what it keeps (the index file as it was)."""
    with Repository.open(store) as repo:
        if change == "rename":
            rename(repo, "tabs", "tabs-renamed")
        elif change == "often":  # a long history of one memory, then its deletion
            for i in range(4 * BEHIND):
                write(repo, "often", f"fresh body {i}\n")
            repo.mutate(STORE, AGENT, lambda _: Change("delete", "often", None))
        else:
            _changed(repo, change)
    meta = Path(store) / "gitmem"
    before = tmp_path / "before"
    shutil.copytree(meta, before)
    for argv in SEARCHES:
        text = lean(store, argv)
        assert text is not None, argv
        kept = tree_bytes(meta)
        shutil.rmtree(meta)
        shutil.copytree(before, meta)
        assert (text, 0) == full(store, argv), argv
        assert tree_bytes(meta) == kept, argv


def test_a_search_index_far_behind_is_left_to_the_command_line(store: str) -> None:
    """As many changed memories as make the command line write the index again: that
    is its to do, and the next search is lean again."""
    with Repository.open(store) as repo:
        for i in range(BEHIND):
            put(repo, STORE, f"many-{i:02d}", f"body {i}\n")
    assert lean(store, ["search", "body"]) is None
    assert full(store, ["search", "body"])[1] == 0
    assert lean(store, ["search", "body"]) is not None


def test_a_search_over_a_hand_made_revision_is_left_to_the_command_line(
    store: str, tmp_path: Path
) -> None:
    def change(work: Path) -> None:
        (work / layout.bucket("deploy") / "deploy.md").write_text("no front matter\n")

    commit_by_hand(store, STORE, tmp_path / "work", change)
    assert lean(store, ["search", "ship"]) is None


def test_a_changed_folder_that_does_not_read_is_left_to_the_command_line(
    store: str, tmp_path: Path
) -> None:
    """A memory file without front matter (made by hand) in a folder that changed: no
    listing read, nothing kept; the full reader says what is wrong."""

    def change(work: Path) -> None:
        (work / layout.bucket("deploy") / "deploy.md").write_text("no front matter\n")

    meta = Path(store) / "gitmem"
    kept = {p.name: p.read_bytes() for p in meta.rglob("*") if p.is_file()}
    commit_by_hand(store, STORE, tmp_path / "work", change)
    assert lean(store, ["ls"]) is None
    assert {p.name: p.read_bytes() for p in meta.rglob("*") if p.is_file()} == kept


def _rendered(path: str, command: str) -> Path:
    return Path(rendered.rendered_path(os.path.join(path, "gitmem"), STORE, command))


def _head_tree(path: str) -> str:
    return git(path, "rev-parse", f"refs/heads/{STORE}^{{tree}}").stdout.strip()


@pytest.mark.parametrize("command", rendered.COMMANDS)
def test_the_text_of_a_listing_is_kept_for_its_tree_and_printed_again(
    store: str, command: str
) -> None:
    """The first lean ``ls`` (``state``) of a tree keeps the rows it printed, named by
    that tree; the next prints them from the kept file, as the command line prints."""
    kept = _rendered(store, command)
    assert not kept.exists()
    printed = full(store, [command])
    assert (lean(store, [command]), 0) == printed
    data = kept.read_bytes()
    text = rendered.parse(data, command, _head_tree(store))
    assert text is not None
    assert text.decode() in printed[0]
    assert (lean(store, [command]), 0) == printed
    assert kept.read_bytes() == data


def _damaged(data: bytes) -> list[bytes]:
    """A kept text, damaged each way a file can be: a byte changed in the text or in
    the head line, cut short, grown, emptied, of an older format."""
    at = data.index(b"\n") + 5
    flipped = data[:at] + bytes([data[at] ^ 0x20]) + data[at + 1 :]
    line, _, text = data.partition(b"\n")
    fields = line.split(b" ")
    older = b" ".join([b"gitmem-rendered-0", *fields[1:]]) + b"\n" + text
    return [flipped, data[:-1], data + b"x\n", b"", older, data.replace(b"deploy", b"depl0y")]


@pytest.mark.parametrize("command", rendered.COMMANDS)
def test_a_damaged_kept_text_is_never_printed(store: str, command: str) -> None:
    """A kept text that does not read whole is passed over: the rows are laid out again
    from the listing, printed as the command line prints them, and kept anew."""
    lean(store, [command])
    kept = _rendered(store, command)
    whole = kept.read_bytes()
    printed = full(store, [command])
    for damaged in _damaged(whole):
        kept.write_bytes(damaged)
        assert (lean(store, [command]), 0) == printed
        assert kept.read_bytes() == whole


def test_a_kept_text_of_another_tree_or_command_is_never_printed(store: str) -> None:
    """After a write, the kept texts name the old tree: not printed, though the listing
    of the new tree is kept; and one command's text is never taken for another's."""
    lean(store, ["ls"])
    lean(store, ["state"])
    old_ls = _rendered(store, "ls").read_bytes()
    with Repository.open(store) as repo:
        put(repo, STORE, "new-one", "fresh\n")
    printed = full(store, ["ls"])  # keeps the new tree's listing
    assert "new-one" in printed[0]
    assert (lean(store, ["ls"]), 0) == printed
    assert (lean(store, ["state"]), 0) == full(store, ["state"])
    assert _rendered(store, "ls").read_bytes() != old_ls
    tree = _head_tree(store)
    assert rendered.parse(_rendered(store, "ls").read_bytes(), "ls", tree) is not None
    shutil.copy(_rendered(store, "state"), _rendered(store, "ls"))
    assert (lean(store, ["ls"]), 0) == printed


def test_the_rows_format_changes_with_the_rows_layout() -> None:
    """The kept texts are named by the format of the rows: a change to how ``ls`` or
    ``state`` lays them out changes this fingerprint, and must change
    ``ROWS_FORMAT`` too (then record the new fingerprint here)."""
    source = inspect.getsource(lines.listing_text) + inspect.getsource(lines.state_rows)
    fingerprints = {1: "f1c94fc7d1b4"}
    assert fingerprints.get(lines.ROWS_FORMAT) == hashlib.sha1(source.encode()).hexdigest()[:12]


def _forget_derived(path: str) -> None:
    """Leave ``path`` as a fresh clone has it: gitmem's folder, empty."""
    meta = os.path.join(path, "gitmem")
    for name in os.listdir(meta):
        at = os.path.join(meta, name)
        shutil.rmtree(at) if os.path.isdir(at) else os.remove(at)


def _kept(path: str, store: str) -> tuple[listing.Kept | None, listing.Summaries]:
    """The listing and the summaries kept in ``path``, as read back."""
    meta = os.path.join(path, "gitmem")
    with open(listing.listing_path(meta, store), "rb") as f:
        kept = listing.parse(f.read(), folders=True, tree=None)
    with open(listing.summaries_path(meta), "rb") as f:
        return kept, listing.summaries(f.read())


@pytest.mark.parametrize("count", [3, 40])
def test_a_fresh_clone_keeps_the_listing_the_command_line_keeps(tmp_path: Path, count: int) -> None:
    """No derived file at all: ``ls`` and ``state`` read the tree whole, print what the
    command line prints and keep the listing and summaries it keeps (a few memories
    read one by one, many in one sweep); a first search reads every memory once and
    keeps the search index the command line keeps, and the listing and summaries the
    first ``ls`` keeps (its sweep read every blob)."""
    path = str(tmp_path / "repo.git")
    with Repository.init(path) as repo:
        for i in range(count):
            memory = Memory(f"m{i:02d}", f"note {i} ü", "line\n" * (i % 3) + "end" * (i % 2))
            if i % 4 == 0:
                memory = Memory(memory.slug, memory.description, memory.body, code="export {};\n")
            repo.mutate(STORE, AGENT, lambda _, m=memory: Change("create", m.slug, m))
    _forget_derived(path)
    text = lean(path, ["ls"])
    assert text is not None
    lean_kept = _kept(path, STORE)
    assert (lean(path, ["state"]), 0) == full(path, ["state"])
    _forget_derived(path)
    searched = lean(path, ["search", "note"])
    index = Path(index_path(path, STORE))
    lean_index = index.read_bytes()
    assert _kept(path, STORE) == lean_kept
    _forget_derived(path)
    assert (searched, 0) == full(path, ["search", "note"])
    assert index.read_bytes() == lean_index
    assert _kept(path, STORE) == lean_kept
    _forget_derived(path)
    assert (text, 0) == full(path, ["ls"])
    assert lean_kept == _kept(path, STORE)
    with Repository.open(path) as repo:  # each summary as the memory itself reads
        memories = repo.snapshot(STORE).memories()
    kept = lean_kept[0]
    assert kept is not None
    assert kept[2] == [(m.slug, (m.description, m.chars, m.lines)) for m in memories]


def test_a_memory_the_lean_path_does_not_read_is_left_to_the_command_line(
    store: str, tmp_path: Path
) -> None:
    """A memory file without front matter (made by hand): no listing read, nothing
    kept; the full reader says what is wrong."""

    def change(work: Path) -> None:
        (work / layout.bucket("deploy") / "deploy.md").write_text("no front matter\n")

    commit_by_hand(store, STORE, tmp_path / "work", change)
    _forget_derived(store)
    tree = git(store, "rev-parse", f"refs/heads/{STORE}^{{tree}}").stdout.strip()
    objects = Objects(os.path.join(store, "objects"))
    assert survey(objects, os.path.join(store, "gitmem"), STORE, tree) is None
    assert os.listdir(os.path.join(store, "gitmem")) == []


def test_a_search_index_not_kept_is_built_here_and_a_damaged_one_left_to_the_command_line(
    store: str,
) -> None:
    """A search needs only its own index: kept, it is read; not kept at all (a fresh
    clone), it is built here as the command line builds it; kept but not readable (an
    earlier format, damaged), the command line rebuilds it."""
    for name in os.listdir(os.path.join(store, "gitmem", "listing")):
        os.remove(os.path.join(store, "gitmem", "listing", name))
    assert (lean(store, ["search", "ship"]), 0) == full(store, ["search", "ship"])
    index = Path(index_path(store, STORE))
    kept = index.read_bytes()
    shutil.rmtree(os.path.join(store, "gitmem", "search"))
    older = index.with_suffix(".2")
    older.parent.mkdir()
    older.write_bytes(b"gitmem-search-2 an earlier format\n")
    assert (lean(store, ["search", "ship"]), 0) == full(store, ["search", "ship"])
    assert index.read_bytes() == kept
    assert not older.exists()  # an earlier format's file goes when the index is written
    index.write_bytes(kept[:-1])
    assert lean(store, ["search", "ship"]) is None
    printed = full(store, ["search", "ship"])  # rebuilt there
    assert (lean(store, ["search", "ship"]), 0) == printed


def test_two_stores_need_one_named(store: str) -> None:
    """With two stores, a command without ``--store`` is the command line's refusal."""
    with Repository.open(store) as repo:
        put(repo, "other", "x", "y\n")
    assert lean(store, ["ls"]) is None
    assert full(store, ["ls"])[1] == 1
    assert (lean(store, ["ls", "-s", STORE]), 0) == full(store, ["ls", "-s", STORE])


def test_a_store_with_recorded_limits_is_left_to_the_command_line(tmp_path: Path) -> None:
    """``state`` of a store a binding wrote (its limits recorded): ``None``; ``ls`` of it
    is answered."""
    path = str(tmp_path / "bound.git")
    with Repository.init(path) as repo:
        holder = repo.bind(Capability("markdown", "shared", Limits()), Agent("writer", "w-1"))
        assert holder is not None
        result = holder.call("create_memory", {"name": "a", "description": "d", "body": "b\n"})
        assert result.ok, result.text
        store = holder.store_id
    full(path, ["ls", "-s", store])
    assert lean(path, ["state", "-s", store]) is None
    assert lean(path, ["search", "-s", store, "b"]) is None  # its maxResults applies
    assert (lean(path, ["ls", "-s", store]), 0) == full(path, ["ls", "-s", store])


def test_a_hand_made_head_is_left_to_the_command_line(store: str, tmp_path: Path) -> None:
    """A head gitmem did not write (its facts are an ancestor's): ``None``."""

    def change(work: Path) -> None:
        (work / "NOTES").write_text("x\n")

    commit_by_hand(store, STORE, tmp_path / "work", change)
    full(store, ["ls"])
    assert lean(store, ["ls"]) is None


@pytest.fixture
def project(tmp_path: Path) -> str:
    """A project whose own repository keeps the store, as ``gitmem init`` in it makes
    it, its listing and search index kept."""
    path = tmp_path / "project"
    path.mkdir()
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    with Repository.init(str(path)) as repo:
        put(repo, STORE, "deploy", "1. build\n2. ship\n", "how we ship")
        put(repo, STORE, "tabs", "a\tb\n", "tabs\tand ünïcode")
        put(repo, STORE, "a-much-longer-slug.v2", "x" * 300, "wide")
    full(str(path), ["ls"])
    full(str(path), ["search", "ship"])
    return str(path)


@pytest.mark.parametrize("argv", ANSWERED)
def test_a_project_repository_is_answered_as_the_command_line_answers_it(
    project: str, argv: list[str]
) -> None:
    """Stores in a project's own repository (``refs/heads/gitmem/``): the same text."""
    text = lean(project, argv)
    assert text is not None, argv
    assert (text, 0) == full(project, argv)


def test_a_project_is_found_from_its_work_tree_as_the_command_line_finds_it(
    project: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    deep = Path(project) / "src" / "deep"
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    text = answer(["ls"], {})
    assert text is not None
    assert text == CliRunner().invoke(cli, ["ls"]).stdout


def test_a_project_the_lean_path_does_not_read_whole_is_left_to_the_command_line(
    project: str, tmp_path: Path
) -> None:
    """A linked work tree, a ``.git`` file, a config with an include, or a project whose
    repository has no gitmem folder: the full reader decides what it is."""
    git_dir = Path(project) / ".git"
    assert repository.git_directory(project) == (str(git_dir), "refs/heads/gitmem/")
    (git_dir / "commondir").write_text("../elsewhere\n")
    assert lean(project, ["ls"]) is None
    (git_dir / "commondir").unlink()
    config = (git_dir / "config").read_text()
    (git_dir / "config").write_text(config + "[include]\n\tpath = more\n")
    assert lean(project, ["ls"]) is None
    (git_dir / "config").write_text(config)
    assert lean(project, ["ls"]) is not None
    moved = tmp_path / "moved.git"
    os.rename(git_dir, moved)
    (Path(project) / ".git").write_text(f"gitdir: {moved}\n")
    assert lean(project, ["ls"]) is None
    assert repository.found(project) is None
    plain = tmp_path / "plain"
    plain.mkdir()
    subprocess.run(["git", "init", "-q", str(plain)], check=True)
    assert repository.found(str(plain)) is None


@pytest.mark.parametrize(
    ("added", "read"),
    [
        ('[remote "origin"]\n\turl = /srv/project\n[branch "main"]\n\tremote = origin\n', True),
        ('[remote "origin"]\n\turl = "/srv/project"\n', False),  # a quoted value
        ('[remote "or\\"igin"]\n\turl = x\n', False),  # an escaped subsection name
        ('[remote  "origin"]\n\turl = x\n', False),
        ('[includeIf "gitdir:/srv/"]\n\tpath = more\n', False),
        ('[remote "origin"] url = x\n', False),
    ],
)
def test_a_clones_config_is_read_by_the_lean_path(project: str, added: str, read: bool) -> None:
    """A teammate's clone has a remote and a branch in its config, in subsections the
    lean path reads past; a config it cannot read line by line is the full reader's."""
    git_dir = Path(project) / ".git"
    config = git_dir / "config"
    config.write_text(config.read_text() + added)
    assert (repository.plain_config(str(git_dir)) is not None) is read
    text = lean(project, ["ls"])
    assert (text is not None) is read
    if read:
        assert text == full(project, ["ls"])[0]


def write(repo: Repository, slug: str, body: str, code: str = "", store: str = STORE) -> str:
    """Write ``slug`` whole (created or replaced); its commit."""

    def change(snapshot: Snapshot) -> Change:
        op = "write" if slug in snapshot else "create"
        return Change(op, slug, Memory(slug, "notes", body, code))

    return repo.mutate(store, AGENT, change).commit


def rename(repo: Repository, old: str, new: str) -> None:
    def change(snapshot: Snapshot) -> Change:
        memory = snapshot.get(old)
        assert memory is not None
        moved = Memory(new, memory.description, memory.body, memory.code)
        return Change("rename", new, moved, also=(Edit("rename", old, None),))

    repo.mutate(STORE, AGENT, change)


def same_blame(path: str, slug: str, store: str = STORE, command: str = "blame") -> bool:
    """The lean answer to ``blame SLUG`` (or ``command``) is the command line's
    (``False``: it left the command to the command line)."""
    argv = [command, slug, "-s", store]
    text = lean(path, argv)
    if text is None:
        return False
    assert (text, 0) == full(path, argv)
    return True


def test_blame_is_answered_as_the_command_line_answers_it(tmp_path: Path) -> None:
    """Revisions, code halves, a rename, a merge: where the history index is kept, the
    lean blame prints the command line's text; where it is not, it leaves it to it."""
    path = str(tmp_path / "repo.git")
    with Repository.init(path) as repo:
        write(repo, "plan", "one\ntwo\nthree\n")
        assert same_blame(path, "plan")  # the write kept the history index
        shutil.rmtree(os.path.join(path, "gitmem", "history"))  # as a fresh clone has it
        assert not same_blame(path, "plan")
        full(path, ["blame", "plan"])
        assert same_blame(path, "plan")
        write(repo, "plan", "one\nTWO\nthree\nfour\n")
        write(repo, "plan", "zero\none\nTWO\nthree\nfour\n", code="export const x = 1;\n")
        write(repo, "other", "x\n")
        assert same_blame(path, "plan")
        assert same_blame(path, "other")
        assert lean(path, ["blame", "missing", "-s", STORE]) is None  # the refusal is its
        rename(repo, "plan", "tasks")
        write(repo, "tasks", "zero\none\nTWO\nthree\nfour\nfive\n")
        assert same_blame(path, "tasks")
        repo.fork(STORE, "profile/copy")
        write(repo, "tasks", "ZERO\none\nTWO\nthree\nfour\nfive\n")
        write(repo, "tasks", "zero\none\nTWO\nthree\nfour\nFIVE\n", store="profile/copy")
        ours, theirs = repo.head(STORE), repo.head("profile/copy")
        assert ours is not None and theirs is not None
        merged = Memory("tasks", "notes", "ZERO\none\nTWO\nthree\nfour\nFIVE\nsix\n")
        assert repo.merge(STORE, AGENT, ours, theirs, [Edit("merge", "tasks", merged)], {})
        full(path, ["blame", "tasks", "-s", STORE])
        assert same_blame(path, "tasks")
        assert same_blame(path, "other")
        # the merged side's blob ids are looked up by the command line's first read
        assert not same_blame(path, "tasks", command="log")
        full(path, ["log", "tasks", "-s", STORE])
        for command in ("log", "show"):
            assert same_blame(path, "tasks", command=command)
            assert same_blame(path, "other", command=command)
        assert same_blame(path, "plan", command="log")  # up to its rename
        assert not same_blame(path, "plan", command="show")  # renamed: the refusal is its


def test_blame_of_a_history_with_a_commit_by_hand(tmp_path: Path) -> None:
    """A commit gitmem did not make in the history: the lean blame prints the command
    line's text once the command line has read that commit, and leaves it until then."""
    path = str(tmp_path / "repo.git")
    with Repository.init(path) as repo:
        write(repo, "todo", "one\ntwo\n")
        full(path, ["blame", "todo"])
        md = layout.bucket("todo") + "/todo" + layout.MD

        def by_hand(work: Path) -> None:
            text = (work / md).read_text()
            (work / md).write_text(text.replace("two\n", "two, by hand\nthree\n"))

        commit_by_hand(path, STORE, tmp_path / "work", by_hand)
        assert lean(path, ["blame", "todo"]) is None  # a hand-made head
        write(repo, "todo", "one\ntwo, by hand\nthree\nfour\n")
        assert not same_blame(path, "todo")  # the commit by hand is not read yet
        full(path, ["blame", "todo"])
        assert same_blame(path, "todo")
        # a revision by hand counts the store's totals: the command line's to read
        assert not same_blame(path, "todo", command="log")
        assert not same_blame(path, "todo", command="show")


def test_blame_names_the_session_as_the_command_line_does(tmp_path: Path) -> None:
    """An agent's lines with the session its harness gave: the same text."""
    path = str(tmp_path / "repo.git")
    with Repository.init(path) as repo:
        holder = repo.bind(
            Capability("markdown", "shared", Limits()),
            Agent("researcher", "r-1"),
            provenance=Provenance(session="sess-42-and-more", client="claude-code"),
        )
        assert holder is not None
        result = holder.call(
            "create_memory", {"name": "found", "description": "a finding", "body": "x\n"}
        )
        assert result.ok, result.text
        store_id = holder.store_id
    full(path, ["blame", "found", "-s", store_id])
    assert same_blame(path, "found", store_id)
    assert "sess-42-and-" in (lean(path, ["blame", "found", "-s", store_id]) or "")


@pytest.fixture
def past(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, list[str], list[int]]:
    """A store of five commits 100 s apart (``deploy`` written twice, ``gone`` made then
    deleted, ``later`` made last), another store beside it, and a file store; its
    commits, oldest first, and the times of ``deploy``'s two revisions."""
    clock = itertools.count(1_800_000_000, 100)
    monkeypatch.setattr(time, "time", lambda: next(clock))
    path = str(tmp_path / "past.git")
    with Repository.init(path) as repo:
        write(repo, "deploy", "1. build\n")
        write(repo, "gone", "soon gone\n")
        write(repo, "deploy", "1. build\n2. ship\n")
        repo.mutate(STORE, AGENT, lambda _: Change("delete", "gone", None))
        write(repo, "later", "last\n")
        write(repo, "elsewhere", "x\n", store="other/store")
        edits = (FileEdit("create", "a.md", "x\n"),)
        repo.publish_files("files", AGENT, lambda _: FileChange(edits))
        commits = list(reversed(list(repo.iter_commits(STORE))))
        times = [r.time for r in repo.revisions(STORE, "deploy")]
    full(path, ["log", "deploy", "-s", STORE])  # keeps the history index
    return path, commits, times


def _stamp(when: int) -> str:
    return datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_show_at_a_moment_is_answered_as_the_command_line_answers_it(
    past: tuple[str, list[str], list[int]],
) -> None:
    """``show SLUG --at`` a full id, a short id, a date between commits or after the
    head, and a memory deleted since: the same text, status 0."""
    path, commits, times = past
    cases = [
        (["show", "deploy", "--at", commits[0]], "revision 1"),
        (["show", "deploy", "--at", commits[0][:7]], "revision 1"),
        (["show", "deploy", f"--at={commits[2][:12].upper()}"], "revision 2"),
        (["show", "gone", "--at", commits[1]], "revision 1"),
        (["show", "deploy", "--at", _stamp(times[0] + 50)], "revision 1"),
        (["show", "deploy", "--at", _stamp(times[1])], "revision 2"),
        (["show", "deploy", "--at", "2099-01-01"], "revision 2"),
        (["show", "later", "--at", commits[4][:5], "-s", STORE], "revision 1"),
    ]
    for argv, revision in cases:
        argv = [*argv, "-s", STORE] if "-s" not in argv else argv
        text = lean(path, argv)
        assert text is not None, argv
        assert (text, 0) == full(path, argv)
        assert text.startswith(f"# {argv[1]}  {revision}\n"), argv


def test_log_and_blame_at_a_moment_are_answered_as_the_command_line_answers_them(
    past: tuple[str, list[str], list[int]],
) -> None:
    """``log SLUG --at`` and ``blame SLUG --at``: the store as of that commit, read as
    at the head; what the command line refuses is left to it."""
    path, commits, times = past
    for command in ("log", "blame"):
        for slug, moment in [
            ("deploy", commits[0][:7]),
            ("deploy", commits[2]),
            ("deploy", _stamp(times[0] + 50)),
            ("deploy", commits[1]),
            ("gone", commits[2][:9]),
        ]:
            argv = [command, slug, "-s", STORE, "--at", moment]
            text = lean(path, argv)
            assert text is not None, argv
            assert (text, 0) == full(path, argv)
        for refused in (
            [command, "later", "--at", commits[3]],
            [command, "deploy", "--at", "0000"],
        ):
            argv = [*refused, "-s", STORE]
            assert lean(path, argv) is None, argv
            assert full(path, argv)[1] == 1, argv
    assert lean(path, ["log", "-s", STORE, "--at", commits[3]]) is None  # the whole store's


def test_show_at_what_the_command_line_refuses_is_left_to_it(
    past: tuple[str, list[str], list[int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unknown id, a date before the first commit, a memory that did not exist then
    or was deleted by then, a commit of another store or of none, a file store, a
    moment that is neither id nor date, and an ambiguous short id: ``None``, and the
    command line refuses in one line."""
    path, commits, _ = past
    with Repository.open(path) as repo:
        elsewhere = next(iter(repo.iter_commits("other/store")))
    refused = [
        ["show", "deploy", "--at", "deadbeef"],
        ["show", "deploy", "--at", "f" * 40],
        ["show", "deploy", "--at", "2000-01-01"],
        ["show", "deploy", "--at", "yesterday"],
        ["show", "later", "--at", commits[3]],
        ["show", "gone", "--at", commits[3]],
        ["show", "deploy", "--at", elsewhere],
        ["show", "deploy", "--at", elsewhere[:8]],
    ]
    for argv in refused:
        argv = [*argv, "-s", STORE]
        assert lean(path, argv) is None, argv
        out, status = full(path, argv)
        assert status == 1 and out == "", argv
    argv = ["show", "a.md", "-s", "files", "--at", "2099-01-01"]
    assert lean(path, argv) is None
    assert full(path, argv)[1] == 0
    real = History.commits

    def crowded(self: History, head: str | None, *, line: bool = False) -> list[str]:
        return [*real(self, head, line=line), commits[0][:4] + "0" * 36]

    monkeypatch.setattr(History, "commits", crowded)
    argv = ["show", "deploy", "-s", STORE, "--at", commits[0][:4]]
    assert lean(path, argv) is None
    assert full(path, argv)[1] == 1


def test_show_at_a_commit_loads_neither_click_dulwich_nor_re(
    past: tuple[str, list[str], list[int]],
) -> None:
    """A fresh process answers ``show SLUG --at`` a short id on the lean path without
    loading the command line, dulwich or ``re`` (which alone costs more than the read)."""
    path, commits, _ = past
    argv = ["--repo", path, "show", "deploy", "-s", STORE, "--at", commits[0][:7]]
    root = str(Path(__file__).resolve().parent.parent)
    code = (
        f"import sys\nsys.path.insert(0, {root!r})\nfrom gitmem.quick import answer\n"
        f"found = answer({argv!r}, {{}})\n"
        "print(found is not None, sorted({m.split('.')[0] for m in sys.modules}))"
    )
    # without site: the development install's import finder loads ``re`` itself
    out = subprocess.run(
        [sys.executable, "-S", "-c", code], capture_output=True, text=True, check=True
    )
    answered, loaded = out.stdout.split(" ", 1)
    assert answered == "True"
    assert not {"click", "dulwich", "re"} & set(json.loads(loaded.replace("'", '"')))


@pytest.mark.parametrize("command", ["ls", "state", "show"])
@pytest.mark.parametrize("encoding", ["utf-8", "latin-1"])
def test_the_process_prints_the_lean_answer_and_exits_zero(
    store: str, command: str, encoding: str
) -> None:
    """``python -m gitmem ls`` (``state``, ``show``) as a process: the command line's
    text, status 0, both when the rows are laid out and when they are kept, in the
    encoding the output is in."""
    argv = [command, "tabs"] if command == "show" else [command]
    expected = full(store, argv)
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-m", "gitmem", "--repo", store, *argv],
            capture_output=True,
            check=False,
            env={**os.environ, "PYTHONIOENCODING": encoding},
        )
        assert (done.stdout, done.returncode, done.stderr) == (
            expected[0].encode(encoding),
            expected[1],
            b"",
        )


# -- the rules the lean path reads by ----------------------------------------------


@pytest.mark.parametrize(
    "text", ["a", "A-b_c.d", "x" * 64, "x" * 65, "", "é", "a b", "a/b", ".", "..", "-", "a\n"]
)
def test_the_slug_shape_is_the_slug_pattern(text: str) -> None:
    assert heads.slug_shape(text) == bool(SLUG_RE.fullmatch(text))


@pytest.mark.parametrize(
    "text", ["create", "edit", "a", "a-", "-a", "A", "a" * 32, "a" * 33, "", "é", "a1", "re-do"]
)
def test_the_op_shape_is_the_op_pattern(text: str) -> None:
    assert heads.op_shape(text) == bool(OP_RE.fullmatch(text))


@pytest.mark.parametrize(
    "framed",
    [
        b'"plain"',
        b'"tabs\\t, quotes \\" and \\u00fc"',
        json.dumps("ünïcode ✓").encode(),
        json.dumps("ünïcode ✓", ensure_ascii=False).encode(),
        b' "spaced" ',
        b'"a" "b"',
        b"42",
        b"",
        b'"unterminated',
        b'"raw\ttab"',
        b"\xff",
    ],
)
def test_a_description_reads_as_json_reads_it(framed: bytes) -> None:
    """The lean reading of a ``.md`` file's description is ``json.loads``'s, or none."""
    try:
        wanted = json.loads(framed)
    except ValueError:
        wanted = None
    assert layout.description(framed) == (wanted if isinstance(wanted, str) else None)


def test_ref_names_are_the_stores_dulwich_lists(store: str) -> None:
    with Repository.open(store) as repo:
        put(repo, "z/deep/er", "x", "y\n")
        wanted = repo.stores()
    git(store, "pack-refs", "--all")
    assert refs.names(store, "refs/heads/") == wanted
    with Repository.open(store) as repo:
        assert refs.read(store, "refs/heads/" + STORE) == repo.head(STORE)
    assert refs.read(store, "refs/heads/nothing") is None
    # packed, loose, or at a folder's path: there; named nowhere: absent, unless a
    # packed-refs that does not read leaves the question open
    assert not refs.absent(store, "refs/heads/" + STORE)
    assert refs.absent(store, "refs/heads/nothing")
    assert refs.absent(store, "refs/heads/z/deep")  # only a packed ref under it
    Path(store, "refs", "heads", "folder").mkdir()
    Path(store, "refs", "heads", "folder", "loose").write_text("0" * 40 + "\n")
    assert not refs.absent(store, "refs/heads/folder/loose")
    assert not refs.absent(store, "refs/heads/folder")
    with open(os.path.join(store, "packed-refs"), "ab") as f:
        f.write(b"not a line of packed-refs\n")
    assert not refs.absent(store, "refs/heads/nothing")


# -- the object reader ---------------------------------------------------------------


def _every_object(path: str) -> list[str]:
    listed = git(path, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)")
    return listed.stdout.split()


def _tree(entries: list[tuple[bytes, bytes, bytes]]) -> bytes:
    return b"".join(mode + b" " + name + b"\0" + sha for mode, name, sha in entries)


def test_a_tree_s_named_entries_are_those_its_table_has() -> None:
    """``tree_named`` finds what ``tree_entries`` has of the names asked for, stepping
    over entries as git does: a name that is inside another entry's id, or that ends
    another entry's name, is not taken for an entry; a tree cut short is refused."""
    inside = b"\x01" * 4 + b" a.md\0" + b"\x02" * 10  # an id holding " a.md\0"
    content = _tree(
        [
            (b"100644", b"ba.md", inside),
            (b"100644", b"b.md", b"\x03" * 20),
            (b"100755", b"b.code.ts", b"\x04" * 20),
            (b"40000", b"c", b"\x05" * 20),
        ]
    )
    table = tree_entries(content)
    names = ("a.md", "b.md", "b.code.ts", "b.onuse.ts", "c", "ba.md", "a")
    expected = {name: table[name] for name in names if name in table}
    assert tree_named(content, names) == expected
    assert "a.md" not in expected and set(expected) == {"b.md", "b.code.ts", "c", "ba.md"}
    with pytest.raises(Unreadable):
        tree_named(content[:-1], ("b.md",))


@pytest.mark.parametrize("offsets", [True, False])
def test_the_object_reader_reads_what_dulwich_reads(store: str, offsets: bool) -> None:
    """Loose objects, packs, and deltas against an offset or an object id."""
    with Repository.open(store) as repo:
        for i in range(12):
            put(repo, STORE, f"m{i}", "a long shared body line\n" * 40 + f"{i}\n")
    loose = _every_object(store)
    reader = Objects(os.path.join(store, "objects"))
    raw = Repo(store)
    try:
        for sha in loose:
            kind, content = reader.read(sha)
            found = raw.object_store[ObjectID(sha.encode())]
            assert (kind, content) == (found.type_num, found.as_raw_string())
        config = ["-c", f"repack.useDeltaBaseOffset={'true' if offsets else 'false'}"]
        subprocess.run(
            ["git", f"--git-dir={store}", *config, "repack", "-adfq", "--depth=20"], check=True
        )
        reader = Objects(os.path.join(store, "objects"))
        raw.close()
        raw = Repo(store)
        for sha in _every_object(store):
            kind, content = reader.read(sha)
            assert content == raw.object_store[ObjectID(sha.encode())].as_raw_string()
    finally:
        raw.close()
    with pytest.raises(KeyError):
        reader.read("0" * 40)
    with pytest.raises(Unreadable):
        reader.read("not an id")


def test_a_delta_that_does_not_fit_its_base_is_refused() -> None:
    base = b"hello world"
    # base size 11, result size 5, copy 5 bytes from offset 0
    assert apply_delta(base, bytes([11, 5, 0x90, 5])) == b"hello"
    with pytest.raises(Unreadable):
        apply_delta(base, bytes([12, 5, 0x90, 5]))  # names a base of another size
    with pytest.raises(Unreadable):
        apply_delta(base, bytes([11, 5, 0x91, 10, 5]))  # copies past the base
    with pytest.raises(Unreadable):
        apply_delta(base, bytes([11, 4, 0x90, 5]))  # makes another size
