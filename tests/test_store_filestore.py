"""File stores in the store engine: path rules, refusals, conflicts, revisions, trailers,
the marking of a store's kind, and health checks."""

from __future__ import annotations

import threading

import pytest
from conftest import assert_fsck, git, tree_bytes
from dulwich.objects import Blob, Commit, Tree
from dulwich.repo import Repo

from gitmem import (
    AlreadyExists,
    Author,
    InvalidArgument,
    InvalidPath,
    InvalidText,
    NotFound,
    Repository,
    Totals,
)
from gitmem.store import FileSnapshot
from gitmem.types import FileChange, FileEdit, check_path

STORE = "files/notes"
ALICE = Author.agent("alice")


def put(repo: Repository, *edits: tuple[str, str, str | None], store: str = STORE):
    """Publish one change that does not depend on the head."""
    change = FileChange(tuple(FileEdit(op, path, text) for op, path, text in edits))
    return repo.publish_files(store, ALICE, lambda _: change)


VALID = [
    "a",
    "notes.md",
    "a/b/c.md",
    ".hidden",
    "d/.h/x",
    "/".join(["d"] * 16),
    "x" * 64,
    "a b",
    "é.md",
    "x.lock",
    "x" * 255,
    "日本語/メモ.md",
    "100%.md",
]
INVALID = [
    "",
    "/abs.md",
    "a//b",
    "a/",
    "../x",
    "a/../b",
    "./a",
    ".git/config",
    "a/.GIT",
    "/".join(["d"] * 17),
    "a\\b",
    ".git.",
    "a/.Git ./b",
    "git~1/x",
    "d/.gitmodules",
    "tab\t",
    "new\nline",
    "x" * 256,
    "nul\x00",
    ("a/" * 520) + "b",
]


@pytest.mark.parametrize("path", VALID)
def test_valid_paths_are_stored(repo: Repository, path: str) -> None:
    """A path of names a tree may hold is stored at that very path in the tree."""
    put(repo, ("create", path, "text"))
    assert repo.files(STORE).files() == [path]
    shown = git(repo.directory, "show", f"{STORE}:{path}")
    assert shown.returncode == 0 and shown.stdout == "text"
    assert_fsck(repo.directory)


@pytest.mark.parametrize("path", INVALID)
def test_invalid_paths_are_refused(repo: Repository, path: str) -> None:
    """Absolute paths, ``..``, ``.git``, empty segments, bad names and paths too deep or
    too long raise InvalidPath and write nothing."""
    with pytest.raises(InvalidPath):
        check_path(path)
    before = tree_bytes(repo.directory)
    with pytest.raises(InvalidPath):
        put(repo, ("create", path, "x"))
    assert tree_bytes(repo.directory) == before


REFUSALS = [
    ((("delete", "ghost.md", None),), NotFound),
    ((("create", "kept.md", "again"),), AlreadyExists),
    ((("create", "dir", "a file where a directory is"),), AlreadyExists),
    ((("write", "kept.md/below", "under a file"),), InvalidArgument),
    ((("write", "dir", "over a directory"),), InvalidArgument),
    ((("delete", "kept.md", "text"),), InvalidArgument),
    ((("write", "kept.md", None),), InvalidArgument),
    ((("write", "kept.md", "a"), ("write", "kept.md", "b")), InvalidArgument),
    ((("write", "kept.md", "nul\x00"),), InvalidText),
]


@pytest.mark.parametrize(("edits", "error"), REFUSALS)
def test_refused_changes_leave_every_file_byte_identical(
    repo: Repository, edits: tuple[tuple[str, str, str | None], ...], error: type[Exception]
) -> None:
    """A refusal (missing, existing, a file/directory clash, a malformed edit) leaves
    refs, objects and the history index as they were."""
    put(repo, ("create", "kept.md", "k"))
    put(repo, ("create", "dir/inner.md", "i"))
    repo.file_revisions(STORE)
    before = tree_bytes(repo.directory)
    with pytest.raises(error):
        put(repo, *edits)
    assert tree_bytes(repo.directory) == before


def test_revisions_totals_and_trailers(repo: Repository) -> None:
    """Each path counts its own revisions across removal; the trailers carry the totals
    and peaks of files, characters and lines."""
    put(repo, ("create", "a.md", "one\ntwo\n"))
    put(repo, ("create", "d/b.md", "é"))
    put(repo, ("delete", "a.md", None))
    last = put(repo, ("create", "a.md", "x"))[0]
    assert [(r.revision, r.op, r.text, r.removed) for r in repo.file_revisions(STORE, "a.md")] == [
        (1, "create", "one\ntwo\n", False),
        (2, "delete", "one\ntwo\n", True),
        (3, "create", "x", False),
    ]
    assert (last.totals, last.peaks) == (Totals(2, 2, 2), Totals(2, 9, 3))
    snapshot = repo.files(STORE)
    assert (snapshot.totals, snapshot.revision("a.md"), snapshot.revision("never")) == (
        Totals(2, 2, 2),
        3,
        0,
    )
    message = git(repo.directory, "log", "-1", "--format=%B", STORE).stdout
    assert message == (
        "create a.md\n\nGitmem-Path: a.md\nGitmem-Op: create\nGitmem-Revision: 3\n"
        "Gitmem-Count: 2\nGitmem-Chars: 2\nGitmem-Lines: 2\n"
        "Gitmem-Peak-Count: 2\nGitmem-Peak-Chars: 9\nGitmem-Peak-Lines: 3\n\n"
    )
    assert Repository.open(repo.directory).file_revisions(STORE) == repo.file_revisions(STORE)


def test_snapshot_reads_directories_and_files(repo: Repository) -> None:
    """A snapshot lists files, children with sizes, and knows files from directories."""
    put(repo, ("create", "b.md", "bb"), ("create", "d/e/f.md", "fff"), ("create", "d/g", "é"))
    snap = repo.files(STORE)
    assert snap.files() == ["b.md", "d/e/f.md", "d/g"]
    assert snap.files("d") == ["d/e/f.md", "d/g"]
    assert [(c.name, c.is_dir) for c in snap.children("d")] == [("e", True), ("g", False)]
    assert snap.size("d/g") == 2 and snap.read("d/g") == "é"
    assert snap.is_dir("d/e") and not snap.is_dir("b.md") and snap.is_dir("")
    assert "b.md" in snap and "d" not in snap and snap.read("d") is None
    old = repo.files(STORE, snap.commit)
    put(repo, ("delete", "d/e/f.md", None))
    assert not repo.files(STORE).is_dir("d/e")
    assert old.files() == snap.files()


def test_a_change_of_no_path_writes_nothing(repo: Repository) -> None:
    """An empty change publishes no commit and returns no revision."""
    before = tree_bytes(repo.directory)
    assert put(repo) == []
    assert repo.head(STORE) is None and tree_bytes(repo.directory) == before


def test_a_lost_race_reruns_the_function(repo: Repository) -> None:
    """Two writers that read the same head both land: the loser's function runs again on
    the winner's head, so neither update is lost."""
    put(repo, ("create", "log.md", ""))
    barrier = threading.Barrier(2)
    runs: list[str] = []

    def append(line: str) -> None:
        def build(snapshot: FileSnapshot) -> FileChange:
            runs.append(line)
            if len(runs) <= 2:
                barrier.wait(timeout=10)
            return FileChange((FileEdit("append", "log.md", snapshot.read("log.md") + line),))

        repo.publish_files(STORE, ALICE, build)

    threads = [threading.Thread(target=append, args=(x,)) for x in ("a\n", "b\n")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(repo.files(STORE).read("log.md").splitlines()) == ["a", "b"]  # type: ignore[union-attr]
    assert len(runs) == 3


def test_check_reads_file_stores_as_files(repo: Repository) -> None:
    """gitmem check accepts plain ``.md`` files in a file store and reports a file that
    is not UTF-8 text."""
    put(repo, ("create", "notes.md", "no front matter here"))
    assert repo.check() == []
    raw = Repo(repo.directory)
    blob = Blob.from_string(b"\xff\xfe")
    inner = Tree()
    inner.add(b"bad.md", 0o100644, blob.id)
    commit = Commit()
    commit.tree = inner.id
    commit.parents = [raw.refs[b"refs/heads/" + STORE.encode()]]
    commit.author = commit.committer = b"x <x@x>"
    commit.author_time = commit.commit_time = 0
    commit.author_timezone = commit.commit_timezone = 0
    commit.message = (
        b"write bad.md\n\nGitmem-Path: bad.md\nGitmem-Op: write\nGitmem-Revision: 1\n"
        b"Gitmem-Count: 1\nGitmem-Chars: 1\nGitmem-Lines: 1\nGitmem-Peak-Count: 1\n"
        b"Gitmem-Peak-Chars: 1\nGitmem-Peak-Lines: 1\n"
    )
    for obj in (blob, inner, commit):
        raw.object_store.add_object(obj)
    raw.refs[b"refs/heads/" + STORE.encode()] = commit.id
    raw.close()
    problems = repo.check()
    assert len(problems) == 1 and "bad.md is not UTF-8 text" in problems[0]


def test_memory_commit_messages_are_unchanged(repo: Repository) -> None:
    """A memory store's commits still name slugs, byte for byte as before."""
    from gitmem import Memory
    from gitmem.types import Change

    repo.mutate("mem", ALICE, lambda _: Change("create", "a", Memory("a", "d", "b")))
    assert git(repo.directory, "log", "-1", "--format=%B", "mem").stdout == (
        "create a\n\nGitmem-Slug: a\nGitmem-Op: create\nGitmem-Revision: 1\n"
        "Gitmem-Count: 1\nGitmem-Chars: 1\nGitmem-Lines: 1\n"
        "Gitmem-Peak-Count: 1\nGitmem-Peak-Chars: 1\nGitmem-Peak-Lines: 1\n\n"
    )
    assert repo.layout("mem") == "memories" and repo.layout("none") is None
    with pytest.raises(InvalidArgument, match="holds memories"):
        repo.files("mem")
    with pytest.raises(InvalidArgument, match="holds memories"):
        put(repo, ("create", "x", "y"), store="mem")
    put(repo, ("create", "x", "y"))
    with pytest.raises(InvalidArgument, match="is a file store"):
        repo.revisions(STORE)
