"""The store engine: opening, input rules, refusals, revisions, peaks, git compatibility."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import assert_fsck, commit_by_hand, git, tree_bytes
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitmem import (
    Agent,
    AlreadyExists,
    Author,
    Capability,
    GitmemError,
    InvalidArgument,
    InvalidSlug,
    InvalidText,
    Memory,
    NotARepository,
    NotFound,
    PathOccupied,
    Repository,
    Totals,
    ops,
)
from gitmem.store import Snapshot
from gitmem.store.message import as_read, parse_message
from gitmem.types import Change, FileChange, FileEdit

STORE = "profile/researcher"
ALICE = Author.agent("alice")


def put(
    repo: Repository,
    op: str,
    slug: str,
    body: str = "",
    description: str = "",
    *,
    store: str = STORE,
    code: str = "",
    on_use: str = "",
):
    """Publish one change that does not depend on the head."""
    memory = None if op == "delete" else Memory(slug, description or slug, body, code, on_use)
    return repo.mutate(store, ALICE, lambda _: Change(op, slug, memory))  # type: ignore[arg-type]


# -- opening ---------------------------------------------------------------------


def test_init_twice_is_a_no_op(tmp_path: Path) -> None:
    """A second init on a gitmem repository opens it and changes no file."""
    path = str(tmp_path / "mem.git")
    first = Repository.init(path)
    put(first, "create", "a", "body\n")
    before = tree_bytes(path)
    second = Repository.init(path)
    assert tree_bytes(path) == before
    assert second.head(STORE) == first.head(STORE)
    assert second.snapshot(STORE).get("a") == Memory("a", "a", "body\n")


def test_init_refuses_an_occupied_folder(tmp_path: Path) -> None:
    """Init refuses a folder that holds a file, and leaves the folder untouched."""
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "todo.txt").write_text("keep me")
    with pytest.raises(PathOccupied, match="choose an empty or new folder"):
        Repository.init(str(folder))
    assert tree_bytes(folder) == {"todo.txt": b"keep me"}


def test_init_refuses_a_file_and_a_plain_git_repository(tmp_path: Path) -> None:
    """Init refuses a path that is a file, and a bare git repository gitmem did not make."""
    file = tmp_path / "file"
    file.write_text("x")
    with pytest.raises(PathOccupied):
        Repository.init(str(file))
    bare = tmp_path / "plain.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    before = tree_bytes(bare)
    with pytest.raises(PathOccupied):
        Repository.init(str(bare))
    assert tree_bytes(bare) == before


def test_init_accepts_an_empty_folder(tmp_path: Path) -> None:
    """Init makes a repository in an existing empty folder."""
    (tmp_path / "empty").mkdir()
    repo = Repository.init(str(tmp_path / "empty"))
    assert repo.stores() == []
    assert Repository.open(str(tmp_path / "empty")).directory == repo.directory


@pytest.mark.parametrize("kind", ["missing", "plain folder", "worktree", "plain bare"])
def test_open_refuses_what_is_not_a_gitmem_repository(tmp_path: Path, kind: str) -> None:
    """Open raises NotARepository for a missing path, a plain folder and foreign git repos."""
    path = tmp_path / "target"
    if kind == "plain folder":
        path.mkdir()
        (path / "f").write_text("x")
    elif kind == "worktree":
        subprocess.run(["git", "init", "-q", str(path)], check=True)
    elif kind == "plain bare":
        subprocess.run(["git", "init", "-q", "--bare", str(path)], check=True)
    with pytest.raises(NotARepository, match="gitmem init"):
        Repository.open(str(path))


# -- input rules -------------------------------------------------------------------


VALID_SLUGS = ["a", "x" * 64, "a.b-c_d", "A9", "-lead", "trail.", "_"]
INVALID_SLUGS = [
    "",
    "x" * 65,
    ".",
    "..",
    ".git",
    ".GIT",
    ".Git",
    "a/b",
    "a\\b",
    "a b",
    "é",
    "ｆｕｌｌ",
    "x.lock",
    "nul\x00",
    "tab\t",
    "new\nline",
]


@pytest.mark.parametrize("slug", VALID_SLUGS)
def test_valid_slugs_are_stored(repo: Repository, slug: str) -> None:
    """A slug that obeys the rules is stored and read back under its own name."""
    put(repo, "create", slug, "b")
    assert repo.snapshot(STORE).slugs() == [slug]
    assert repo.path(STORE, slug).endswith("/" + slug + ".md")
    assert_fsck(repo.directory)


@pytest.mark.parametrize("slug", INVALID_SLUGS)
def test_invalid_slugs_are_refused(repo: Repository, slug: str) -> None:
    """A slug that breaks the rules raises InvalidSlug from path() and from a mutation."""
    with pytest.raises(InvalidSlug):
        repo.path(STORE, slug)
    with pytest.raises(InvalidSlug):
        put(repo, "create", slug, "b")
    assert repo.head(STORE) is None


def test_path_is_a_two_hex_digit_fanout(repo: Repository) -> None:
    """The path of a memory is <sha1(slug)[:2]>/<slug>.md."""
    import hashlib

    assert repo.path(STORE, "deploy") == hashlib.sha1(b"deploy").hexdigest()[:2] + "/deploy.md"


@pytest.mark.parametrize("field", ["description", "body", "code", "on_use"])
@pytest.mark.parametrize("bad", ["a\x00b", "a\ud800b", "\udfff"])
def test_text_that_is_not_text_is_refused(repo: Repository, field: str, bad: str) -> None:
    """A NUL or a lone surrogate in any text field raises InvalidText and writes nothing."""
    fields = {"description": "d", "body": "b", "code": "", "on_use": ""} | {field: bad}
    memory = Memory("m", **fields)
    before = tree_bytes(repo.directory)
    with pytest.raises(InvalidText):
        repo.mutate(STORE, ALICE, lambda _: Change("create", "m", memory))
    assert tree_bytes(repo.directory) == before


@pytest.mark.parametrize(
    "store", ["", "a//b", "/a", "a/", "../x", "a/.lock", "x.lock", "a b", "HEAD", "-x", "-a/b"]
)
def test_unusable_store_ids_are_refused(repo: Repository, store: str) -> None:
    """A store id git could not hold as a branch raises InvalidArgument."""
    with pytest.raises(InvalidArgument):
        put(repo, "create", "m", "b", store=store)


# -- a refused mutation writes nothing -------------------------------------------


class Boom(Exception):
    """Raised by a mutation function to refuse."""


def _raises(_: Snapshot) -> Change:
    raise Boom("refused by the function")


REFUSALS: dict[str, tuple[Callable[[Snapshot], Change], type[Exception]]] = {
    "fn raises": (_raises, Boom),
    "invalid slug": (lambda _: Change("create", "a b", Memory("a b", "d", "b")), InvalidSlug),
    "delete of missing": (lambda _: Change("delete", "ghost", None), NotFound),
    "create of existing": (
        lambda _: Change("create", "kept", Memory("kept", "d", "x")),
        AlreadyExists,
    ),
    "delete with memory": (
        lambda _: Change("delete", "kept", Memory("kept", "d", "x")),
        InvalidArgument,
    ),
    "write without memory": (lambda _: Change("write", "kept", None), InvalidArgument),
    "slug mismatch": (
        lambda _: Change("write", "kept", Memory("other", "d", "x")),
        InvalidArgument,
    ),
    "NUL in body": (lambda _: Change("write", "kept", Memory("kept", "d", "\x00")), InvalidText),
}


@pytest.mark.parametrize("name", sorted(REFUSALS))
def test_refused_mutation_leaves_every_file_byte_identical(repo: Repository, name: str) -> None:
    """A refusal leaves refs, objects and every other file under the repository unchanged."""
    put(repo, "create", "kept", "original\n")
    put(repo, "edit", "kept", "edited\n")
    repo.revisions(STORE)  # bring the derived history index up to date first
    fn, error = REFUSALS[name]
    before = tree_bytes(repo.directory)
    head = repo.head(STORE)
    with pytest.raises(error):
        repo.mutate(STORE, ALICE, fn)
    assert repo.head(STORE) == head
    assert tree_bytes(repo.directory) == before


def test_refusal_on_an_empty_store_creates_no_branch(repo: Repository) -> None:
    """A refused first mutation leaves no branch and no object behind."""
    before = tree_bytes(repo.directory)
    with pytest.raises(NotFound):
        repo.mutate("instance/abc", ALICE, lambda _: Change("delete", "ghost", None))
    assert repo.stores() == []
    assert tree_bytes(repo.directory) == before


def test_refusal_error_messages_say_what_to_do(repo: Repository) -> None:
    """Every refusal is a GitmemError whose message names the slug."""
    put(repo, "create", "kept", "x")
    for fn, _ in list(REFUSALS.values())[1:4]:
        with pytest.raises(GitmemError) as info:
            repo.mutate(STORE, ALICE, fn)
        assert info.value.message and (
            "ghost" in str(info.value) or "kept" in str(info.value) or "a b" in str(info.value)
        )


# -- revisions -------------------------------------------------------------------


def test_revisions_count_across_delete_and_recreate(repo: Repository) -> None:
    """Revision numbers run 1 create, 2 edit, 3 delete, 4 create; a delete carries the removed text."""
    published = [
        put(repo, "create", "note", "one\n", "first"),
        put(repo, "edit", "note", "two\n", "second"),
        put(repo, "delete", "note"),
        put(repo, "create", "note", "four\n", "fourth"),
    ]
    revs = repo.revisions(STORE, "note")
    assert [(r.revision, r.op) for r in revs] == [
        (1, "create"),
        (2, "edit"),
        (3, "delete"),
        (4, "create"),
    ]
    assert [(r.description, r.body) for r in revs] == [
        ("first", "one\n"),
        ("second", "two\n"),
        ("second", "two\n"),
        ("fourth", "four\n"),
    ]
    assert revs == published
    assert repo.snapshot(STORE).revision("note") == 4
    assert [r.commit for r in revs] == list(reversed(list(repo.iter_commits(STORE))))


def test_revisions_of_one_slug_hold_only_that_slug(repo: Repository) -> None:
    """revisions(store, slug) lists that slug's revisions; revisions(store) lists all in order."""
    for i in range(3):
        put(repo, "write", "a", f"a{i}")
        put(repo, "write", "b", f"b{i}")
    assert [r.body for r in repo.revisions(STORE, "a")] == ["a0", "a1", "a2"]
    assert [r.revision for r in repo.revisions(STORE, "b")] == [1, 2, 3]
    assert [(r.slug, r.body) for r in repo.revisions(STORE)] == [
        (s, f"{s}{i}") for i in range(3) for s in "ab"
    ]
    assert repo.revisions(STORE, "never") == []
    assert repo.revisions("instance/none") == []


def test_revision_fields_and_event(repo: Repository) -> None:
    """A revision carries author, commit, time, code halves and the telemetry event."""
    rev = put(repo, "create", "tool", "use me\n", "a tool", code="export default 1;", on_use="x;")
    assert rev.commit == repo.head(STORE)
    assert rev.author == "alice"
    assert (rev.code, rev.on_use) == ("export default 1;", "x;")
    assert rev.time > 1_600_000_000
    event = rev.to_dict()
    assert event["type"] == "memory_revision"
    assert {k: event[k] for k in ("store", "slug", "revision", "op", "body")} == {
        "store": STORE,
        "slug": "tool",
        "revision": 1,
        "op": "create",
        "body": "use me\n",
    }


def test_revisions_since(repo: Repository) -> None:
    """revisions_since lists what came after a base commit, and nothing for a foreign base."""
    base = put(repo, "create", "a", "1").commit
    put(repo, "create", "b", "2")
    put(repo, "edit", "a", "3")
    head = repo.head(STORE)
    assert [(r.slug, r.body) for r in repo.revisions_since(STORE, base, head)] == [
        ("b", "2"),
        ("a", "3"),
    ]
    assert len(repo.revisions_since(STORE, None, head)) == 3
    assert repo.revisions_since(STORE, head, head) == []
    assert repo.revisions_since(STORE, "0" * 40, head) == []


def _history_files(repo: Repository) -> list[str]:
    folder = os.path.join(repo.directory, "gitmem", "history")
    return [
        os.path.join(folder, n) for n in os.listdir(folder) if not n.endswith((".lock", ".blobs"))
    ]


def test_history_index_is_rebuilt_when_deleted(repo: Repository) -> None:
    """Deleting the history index file changes no answer, for this object or a fresh one."""
    for i in range(5):
        put(repo, "write", f"s{i % 2}", str(i))
    expected = repo.revisions(STORE)
    assert _history_files(repo)
    for path in _history_files(repo):
        os.remove(path)
    assert Repository.open(repo.directory).revisions(STORE) == expected
    for path in _history_files(repo):
        os.remove(path)
    put(repo, "write", "s0", "5")
    assert repo.revisions(STORE, "s0")[-1].revision == 4
    assert Repository.open(repo.directory).revisions(STORE)[:-1] == expected


def test_history_index_with_a_torn_last_line_is_repaired(repo: Repository) -> None:
    """A half-written last index line (a killed writer) is discarded and rewritten."""
    for i in range(4):
        put(repo, "write", "s", str(i))
    expected = repo.revisions(STORE)
    (path,) = _history_files(repo)
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(data[:-10])
    fresh = Repository.open(repo.directory)
    assert fresh.revisions(STORE) == expected
    put(fresh, "write", "s", "4")
    assert [r.revision for r in Repository.open(repo.directory).revisions(STORE, "s")] == [
        1,
        2,
        3,
        4,
        5,
    ]


def test_history_index_with_garbage_is_rebuilt(repo: Repository) -> None:
    """An index file holding garbage is derived data: it is rebuilt, not trusted or fatal."""
    for i in range(3):
        put(repo, "write", "s", str(i))
    expected = repo.revisions(STORE)
    (path,) = _history_files(repo)
    with open(path, "wb") as f:
        f.write(b"this is not an index line\n")
    assert Repository.open(repo.directory).revisions(STORE) == expected


def test_fresh_repository_object_gives_the_same_answers(repo: Repository) -> None:
    """A new Repository object on the same folder (a new process) reads the same state."""
    put(repo, "create", "a", "x\n")
    put(repo, "create", "b", "y\n", code="c")
    put(repo, "delete", "a")
    fresh = Repository.open(repo.directory)
    assert fresh.revisions(STORE) == repo.revisions(STORE)
    assert fresh.snapshot(STORE).memories() == repo.snapshot(STORE).memories()
    assert fresh.stores() == [STORE]


def test_snapshot_at_an_old_commit(repo: Repository) -> None:
    """A snapshot at an older commit shows the store as it was then."""
    first = put(repo, "create", "a", "old").commit
    put(repo, "edit", "a", "new")
    put(repo, "create", "b", "b")
    old = repo.snapshot(STORE, first)
    assert old.slugs() == ["a"] and old.get("a").body == "old"  # type: ignore[union-attr]
    assert "b" not in old and "b" in repo.snapshot(STORE)
    assert len(repo.snapshot(STORE)) == 2
    empty = repo.snapshot("instance/none")
    assert (empty.commit, len(empty), empty.slugs(), empty.get("a")) == (None, 0, [], None)


def test_revisions_as_of_an_old_commit(repo: Repository) -> None:
    """``revisions(..., commit)`` is the history as of that commit of the store."""
    first = put(repo, "create", "a", "old").commit
    put(repo, "edit", "a", "new")
    assert [r.body for r in repo.revisions(STORE, "a", first)] == ["old"]
    assert [r.body for r in repo.revisions(STORE, "a")] == ["old", "new"]
    assert [r.memory() for r in repo.revisions(STORE, commit=first)] == [Memory("a", "a", "old")]


# -- totals and peaks ------------------------------------------------------------


def _trailers(repo: Repository, commit: str) -> dict[str, str]:
    out = git(repo.directory, "log", "-1", "--format=%(trailers:only,unfold)", commit).stdout
    return dict(line.split(": ", 1) for line in out.splitlines() if line)


def test_totals_and_peaks_track_count_chars_lines(repo: Repository) -> None:
    """Trailers carry running totals and peaks; after deletes the peaks stay."""
    put(repo, "create", "a", "12345\n789\n")  # 10 chars, 2 lines
    put(repo, "create", "b", "é\n")  # 2 chars (code points), 1 line
    rev = put(repo, "edit", "a", "xy")  # 2 chars, 1 line (no final newline)
    assert rev.totals == Totals(2, 4, 2)
    assert rev.peaks == Totals(2, 12, 3)
    put(repo, "delete", "a")
    last = put(repo, "delete", "b")
    assert last.totals == Totals(0, 0, 0)
    assert last.peaks == Totals(2, 12, 3)
    snap = repo.snapshot(STORE)
    assert (snap.totals, snap.peaks) == (Totals(0, 0, 0), Totals(2, 12, 3))
    assert _trailers(repo, last.commit) == {
        "Gitmem-Slug": "b",
        "Gitmem-Op": "delete",
        "Gitmem-Revision": "2",
        "Gitmem-Count": "0",
        "Gitmem-Chars": "0",
        "Gitmem-Lines": "0",
        "Gitmem-Peak-Count": "2",
        "Gitmem-Peak-Chars": "12",
        "Gitmem-Peak-Lines": "3",
    }


def test_extra_trailers_are_kept_on_one_line(repo: Repository) -> None:
    """Extra trailers from a Change land in the message, folded onto one line."""
    memory = Memory("a", "d", "b")
    rev = repo.mutate(
        STORE, ALICE, lambda _: Change("create", "a", memory, {"Gitmem-Reason": "why\nnot"})
    )
    assert _trailers(repo, rev.commit)["Gitmem-Reason"] == "why not"


def test_extra_trailer_values_hold_no_control_character(repo: Repository) -> None:
    """A trailer value with NUL or another control character (which git refuses in a
    commit) is written with spaces in their place; the facts read back agree."""
    memory = Memory("a", "d", "b")
    value = "run\x00 1\x1b[31m\x7f\x85x"
    rev = repo.mutate(
        STORE, ALICE, lambda _: Change("create", "a", memory, {"Gitmem-Reason": value})
    )
    assert _trailers(repo, rev.commit)["Gitmem-Reason"] == "run 1 [31m x"
    message = git(repo.directory, "cat-file", "commit", rev.commit).stdout.partition("\n\n")[2]
    facts = parse_message(message.encode())
    assert facts is not None and facts.extra["Gitmem-Reason"] == "run 1 [31m x"
    assert as_read(facts) == facts
    assert_fsck(repo.directory)


# -- hypothesis round trips ------------------------------------------------------

TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    max_size=200,
) | st.sampled_from(["", "---", "---\n", '\n---\ndescription: "x"\n---\n', "\r\n\r", "💾 ü\u2028"])


@pytest.fixture(scope="module")
def shared_repo(tmp_path_factory: pytest.TempPathFactory) -> Repository:
    return Repository.init(str(tmp_path_factory.mktemp("hyp") / "mem.git"))


@settings(
    derandomize=True,
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    slug=st.sampled_from(["a", "b.c", "Z-9_"]),
    description=TEXT,
    body=TEXT,
    code=TEXT,
)
def test_write_then_read_returns_the_text(
    shared_repo: Repository, slug: str, description: str, body: str, code: str
) -> None:
    """Whatever text is written is read back unchanged, and history grows by exactly one."""
    repo = shared_repo
    before = len(repo.revisions(STORE))
    last = repo.snapshot(STORE).revision(slug)
    memory = Memory(slug, description, body, code)
    rev = repo.mutate(STORE, ALICE, lambda _: Change("write", slug, memory))
    assert rev.revision == last + 1
    assert repo.snapshot(STORE).get(slug) == memory
    fresh = Repository.open(repo.directory)
    assert fresh.snapshot(STORE).get(slug) == memory
    revisions = fresh.revisions(STORE)
    assert len(revisions) == before + 1
    assert (revisions[-1].description, revisions[-1].body, revisions[-1].code) == (
        description,
        body,
        code,
    )


# -- a person's git commit ------------------------------------------------------


def _commit_by_hand(
    repo: Repository, work: Path, change: Callable[[Path], None], store: str = STORE
) -> str:
    """An operator's plain git commit on the store's branch (``commit_by_hand``); the
    new head, which carries no gitmem trailers."""
    commit_by_hand(repo.directory, store, work, change)
    head = repo.head(store)
    assert head is not None and _trailers(repo, head) == {}
    return head


def test_a_commit_by_hand_is_counted_and_the_next_write_continues_from_it(
    repo: Repository, tmp_path: Path
) -> None:
    """A commit gitmem did not make records no totals: the store counts its tree, keeps
    its peaks, and the next write's trailers continue from what the store holds."""
    put(repo, "create", "a", "one\n")
    put(repo, "create", "b", "two\n")  # peaks: 2 memories, 8 chars, 2 lines
    a_path, c_path = repo.path(STORE, "a"), repo.path(STORE, "c")

    def change(work: Path) -> None:
        (work / a_path).write_text((work / a_path).read_text() + "and more\n")
        (work / c_path).parent.mkdir(exist_ok=True)
        (work / c_path).write_text('---\ndescription: "by hand"\n---\nthree\n')

    _commit_by_hand(repo, tmp_path / "work", change)
    snap = repo.snapshot(STORE)
    assert snap.slugs() == ["a", "b", "c"]
    assert snap.totals == Totals(3, 23, 4)  # "one\nand more\n" + "two\n" + "three\n"
    assert snap.peaks == Totals(3, 23, 4)
    after = put(repo, "create", "d", "four\n")
    assert (after.totals, after.peaks) == (Totals(4, 28, 5), Totals(4, 28, 5))
    assert _trailers(repo, after.commit)["Gitmem-Count"] == "4"
    assert_fsck(repo.directory)


def test_a_commit_by_hand_does_not_lift_the_limits(repo: Repository, tmp_path: Path) -> None:
    """An agent bound under maxCount is refused past it after an operator's plain git
    commit as before it, and an operator's own write still finds the recorded binding."""
    cap = Capability.from_json(
        '{"id": "memories", "enabled": true, "implementation": "keyword-search", "params": '
        '{"scope": "shared", "maxCount": 2, "maxLenPerMemory": 0, "maxTotalLen": 0, '
        '"maxLenIndex": 4096, "maxLenDescription": 256, "maxResults": 25}}'
    )
    holder = repo.bind(cap, Agent("researcher", "r-1", started_as="root"))
    store = holder.store_id
    for name in ("one", "two"):
        assert holder.call("create_memory", {"name": name, "body": "x\n"}).ok
    path = repo.path(store, "one")

    def change(work: Path) -> None:
        (work / path).write_text((work / path).read_text() + "fixed by the operator\n")

    _commit_by_hand(repo, tmp_path / "work", change, store)
    refused = holder.call("create_memory", {"name": "three", "body": "x\n"})
    assert not refused.ok and "over maxCount (2)" in refused.text
    assert repo.snapshot(store).slugs() == ["one", "two"]
    recorded = ops.record(repo, store)
    assert recorded is not None and recorded.limits.max_count == 2
    holder.close()


def test_a_file_store_stays_a_file_store_after_a_commit_by_hand(
    repo: Repository, tmp_path: Path
) -> None:
    """The layout a store's last gitmem commit recorded holds across a person's commit:
    a file store's files are counted, and the next file write continues from them."""

    def write(path: str, text: str) -> None:
        change = FileChange((FileEdit("create", path, text),))
        repo.publish_files(STORE, ALICE, lambda _: change)

    write("notes/a.md", "alpha\n")

    def change(work: Path) -> None:
        (work / "notes" / "b.md").write_text("beta\nbeta\n")

    _commit_by_hand(repo, tmp_path / "work", change)
    assert repo.layout(STORE) == "files"
    files = repo.files(STORE)
    assert files.files() == ["notes/a.md", "notes/b.md"]
    assert files.totals == Totals(2, 16, 3)
    assert len(files) == 2
    write("notes/c.md", "gamma\n")
    assert repo.files(STORE).totals == Totals(3, 22, 4)


# -- git compatibility -----------------------------------------------------------


def test_git_reads_the_store(repo: Repository, tmp_path: Path) -> None:
    """git log, git show <store>:<path>, git clone --branch and git fsck --strict all work."""
    put(repo, "create", "deploy", "roll it\n---\nslowly", 'say "hi"\nthere', code="let x = 1;\n")
    put(repo, "create", "other", "o")
    put(repo, "edit", "other", "p")
    put(repo, "delete", "other")

    log = git(repo.directory, "log", "--format=%s|%an <%ae>", STORE)
    assert log.returncode == 0, log.stderr
    assert log.stdout.splitlines() == [
        f"{s}|alice <alice@agents.gitmem>"
        for s in ("delete other", "edit other", "create other", "create deploy")
    ]

    path = repo.path(STORE, "deploy")
    show = git(repo.directory, "show", f"{STORE}:{path}")
    assert show.returncode == 0, show.stderr
    assert show.stdout == '---\ndescription: "say \\"hi\\"\\nthere"\n---\nroll it\n---\nslowly'
    code_path = path.removesuffix(".md") + ".code.ts"
    assert git(repo.directory, "show", f"{STORE}:{code_path}").stdout == "let x = 1;\n"

    history = git(repo.directory, "log", "--format=%s", STORE, "--", repo.path(STORE, "other"))
    assert history.stdout.split("\n")[:3] == ["delete other", "edit other", "create other"]

    clone = tmp_path / "clone"
    cloned = subprocess.run(
        ["git", "clone", "-q", "--branch", STORE, repo.directory, str(clone)],
        capture_output=True,
        text=True,
    )
    assert cloned.returncode == 0, cloned.stderr
    assert (clone / path).read_text() == show.stdout
    assert (clone / code_path).read_text() == "let x = 1;\n"
    assert not (clone / repo.path(STORE, "other")).exists()
    assert_fsck(repo.directory)


def test_stores_are_branches(repo: Repository) -> None:
    """Each store is refs/heads/<store-id>; fork starts a new branch at the source's head."""
    put(repo, "create", "a", "1", store="profile/researcher")
    put(repo, "create", "a", "2", store="instance/abc")
    assert repo.stores() == ["instance/abc", "profile/researcher"]
    refs = git(repo.directory, "for-each-ref", "--format=%(refname) %(objectname)").stdout
    assert f"refs/heads/instance/abc {repo.head('instance/abc')}" in refs.splitlines()
    head = repo.fork("profile/researcher", "instance/def")
    assert head == repo.head("instance/def") == repo.head("profile/researcher")
    with pytest.raises(AlreadyExists):
        repo.fork("profile/researcher", "instance/abc")
    with pytest.raises(NotFound):
        repo.fork("instance/none", "instance/xyz")
    put(repo, "edit", "a", "3", store="instance/def")
    assert repo.snapshot("profile/researcher").get("a").body == "1"  # type: ignore[union-attr]
    assert [r.revision for r in repo.revisions("instance/def", "a")] == [1, 2]


def test_markers(repo: Repository) -> None:
    """A marker is a durable named pointer at a commit, readable by git."""
    commit = put(repo, "create", "a", "1").commit
    assert repo.marker("holder/x") is None
    repo.set_marker("holder/x", commit)
    assert Repository.open(repo.directory).marker("holder/x") == commit
    assert git(repo.directory, "rev-parse", "refs/gitmem/holder/x").stdout.strip() == commit
    assert_fsck(repo.directory)


# -- upkeep --------------------------------------------------------------------------


def _loose(directory: str) -> list[str]:
    objects = os.path.join(directory, "objects")
    return [
        f"{d}/{n}"
        for d in os.listdir(objects)
        if len(d) == 2
        for n in os.listdir(os.path.join(objects, d))
    ]


def test_pack_combines_every_pack(repo: Repository) -> None:
    """pack() combines the packs writes left into one; everything stays readable and valid."""
    for i in range(20):
        put(repo, "write", f"m{i % 6}", f"body {i}\n")
    expected = repo.revisions(STORE)
    pack_dir = os.path.join(repo.directory, "objects", "pack")
    assert len([n for n in os.listdir(pack_dir) if n.endswith(".pack")]) == 20
    assert repo.pack() > 0
    assert len([n for n in os.listdir(pack_dir) if n.endswith(".pack")]) == 1
    assert _loose(repo.directory) == []
    for path in _history_files(repo):
        os.remove(path)
    fresh = Repository.open(repo.directory)
    assert fresh.revisions(STORE) == expected
    put(fresh, "write", "m0", "after pack")
    assert fresh.snapshot(STORE).get("m0").body == "after pack"  # type: ignore[union-attr]
    assert repo.snapshot(STORE).get("m0").body == "after pack"  # type: ignore[union-attr]
    assert_fsck(repo.directory)


def test_loose_objects_are_packed_past_the_threshold(repo: Repository) -> None:
    """Once objects/17 holds more loose objects than git gc --auto allows, a write packs."""
    from dulwich.objects import Blob
    from dulwich.repo import Repo

    raw = Repo(repo.directory)
    added, i = 0, 0
    while added < 40:
        blob = Blob.from_string(b"filler %d" % i)
        i += 1
        if blob.id.startswith(b"17"):
            raw.object_store.add_object(blob)
            added += 1
    raw.close()
    put(repo, "create", "a", "x")
    assert not os.path.isdir(os.path.join(repo.directory, "objects", "17")) or not os.listdir(
        os.path.join(repo.directory, "objects", "17")
    )
    assert Repository.open(repo.directory).snapshot(STORE).get("a").body == "x"  # type: ignore[union-attr]
    assert_fsck(repo.directory)


def test_a_repository_left_open_exits_quietly(tmp_path: Path) -> None:
    # dulwich's finalizers print a traceback apiece if they first run while the
    # interpreter shuts down; gitmem closes what the program left open at exit
    path = str(tmp_path / "mem.git")
    with Repository.init(path) as repo:
        put(repo, "create", "a", "body\n")
    program = (
        "import sys\n"
        "from gitmem import Repository\n"
        "repo = Repository.open(sys.argv[1])\n"
        f"print(repo.snapshot({STORE!r}).get('a').body, end='')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program, path], capture_output=True, text=True, check=True
    )
    assert done.stdout == "body\n"
    assert done.stderr == ""


def test_a_memory_found_again_is_what_a_fresh_reading_finds(repo: Repository) -> None:
    """A slug's files are found once per root tree and kept: every later reading, at
    that commit or another, in this repository or a fresh opening of it, finds what a
    reading from the trees finds (a memory gone, added, with code, changed back)."""
    put(repo, "create", "alpha", "one")
    put(repo, "create", "beta", "two", code="export const x = 1;\n")
    first = repo.head(STORE)
    put(repo, "update", "alpha", "changed")
    put(repo, "delete", "beta")
    put(repo, "create", "gamma", "three")
    second = repo.head(STORE)
    put(repo, "update", "alpha", "one")  # the first text again, in a new tree
    third = repo.head(STORE)
    assert first and second and third
    slugs = ["alpha", "beta", "gamma", "delta"]
    for _ in range(2):  # found, then kept
        for commit in (first, second, third):
            for slug in slugs:
                fresh = Repository.open(repo.directory)
                try:
                    expected = fresh.snapshot(STORE, commit).memory_files(slug)
                    assert fresh.snapshot(STORE, commit).get(slug) == (
                        repo.snapshot(STORE, commit).get(slug)
                    )
                finally:
                    fresh.close()
                assert repo.snapshot(STORE, commit).memory_files(slug) == expected
                assert (slug in repo.snapshot(STORE, commit)) == (expected is not None)
    assert repo.snapshot(STORE, second).get("beta") is None
    kept = repo.snapshot(STORE, first).get("beta")
    assert kept is not None and kept.code == "export const x = 1;\n"
    assert repo.snapshot(STORE, third).get("alpha") == repo.snapshot(STORE, first).get("alpha")
