"""Objects a hostile pusher (or remote) writes by hand, in forms git reads otherwise
than gitmem's readers would, or that git's fsck refuses: commit headers and trees.
Through a real ``git push`` to a server with gitmem's pre-receive, and ``gitmem sync``
from a remote that has no hook."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from dulwich.objects import ObjectID, Tree
from dulwich.repo import Repo
from helpers_githooks import (
    Unguarded,
    guarded_world,
    md,
    push,
    raw_object,
    raw_tree,
    refusal,
    server_state,
    trailers,
)
from helpers_secrets import SECRETS
from helpers_sync import ME, make_project, sh

from gitmem import Repository, ops
from gitmem.cli import cli
from gitmem.store import memoryfiles as files
from gitmem.types import Change, FileChange, FileEdit, Memory

REF = "refs/heads/gitmem/notes"
SECRET = SECRETS[0][1]
WHO = b"Dev <dev@example.com> 1800000000 +0000"


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path]:
    """A shared bare server with gitmem's pre-receive, and a project holding store
    ``notes`` (memory ``todo``) pushed to it."""
    return guarded_world(tmp_path)


def _commit(project: Path, header: bytes, message: bytes = b"by hand\n") -> str:
    """A commit of ``header`` on the store's head (its tree and parent first), moved to
    the store's branch as a forced push would; its id."""
    head = sh(project, "rev-parse", "gitmem/notes").strip()
    tree = sh(project, "rev-parse", "gitmem/notes^{tree}").strip()
    lines = f"tree {tree}\nparent {head}\n".encode() + header
    sha = raw_object(project, "commit", lines + b"\n" + message)
    sh(project, "update-ref", REF, sha)
    return sha


def test_a_parent_named_past_the_committer_is_no_parent(world: tuple[Path, Path]) -> None:
    """git reads a commit's parents only right after its tree; a ``parent`` line among
    the later ones is no parent to git (dulwich reads one there). A commit that names
    the published head only there rewrites history to git, and is refused."""
    server, project = world
    head = sh(project, "rev-parse", "gitmem/notes").strip()
    empty = raw_tree(project, [])
    text = f"tree {empty}\n".encode() + b"author " + WHO + b"\ncommitter " + WHO + b"\n"
    sha = raw_object(project, "commit", text + f"parent {head}\n\nwipe\n".encode())
    assert sh(project, "log", "-1", "--format=%P", sha).strip() == ""  # a root, to git
    sh(project, "update-ref", REF, sha)
    before = server_state(server)
    line = refusal(push(project, f"+{REF}"), REF, "parse")
    assert "does not read as git's" in line
    assert server_state(server) == before


_HEADERS = {
    "author's address": f"author A <{SECRET}@example.com> 1 +0000\n".encode()
    + b"committer "
    + WHO
    + b"\n",
    "committer": b"author " + WHO + f"\ncommitter {SECRET} <a@b> 1 +0000\n".encode(),
    "another line": b"author " + WHO + b"\ncommitter " + WHO + f"\nx-note {SECRET}\n".encode(),
    "signature": b"author "
    + WHO
    + b"\ncommitter "
    + WHO
    + f"\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n {SECRET}\n -----END PGP SIGNATURE-----\n".encode(),
}


@pytest.mark.parametrize("where", sorted(_HEADERS))
def test_a_secret_anywhere_in_a_commits_header_is_refused(
    world: tuple[Path, Path], where: str
) -> None:
    """`git log --format=full` and `git cat-file` show every header line: a secret in
    the committer, a signature or any other line is refused as one in the message is."""
    server, project = world
    _commit(project, _HEADERS[where])
    before = server_state(server)
    line = refusal(push(project, REF), REF, "secret")
    assert "the commit header holds a secret" in line and SECRET not in line
    assert server_state(server) == before


_UNREAD = {
    "two authors": b"author x <a@b> 1 +0000\nauthor " + WHO + b"\ncommitter " + WHO + b"\n",
    "no committer": b"author " + WHO + b"\n",
    "a bad date": b"author Dev <dev@example.com> soon +0000\ncommitter " + WHO + b"\n",
    "no name": b"author <dev@example.com> 1 +0000\ncommitter " + WHO + b"\n",
    "another encoding": b"author " + WHO + b"\ncommitter " + WHO + b"\nencoding IBM037\n",
}


@pytest.mark.parametrize("what", sorted(_UNREAD))
def test_a_commit_git_reads_otherwise_is_refused(world: tuple[Path, Path], what: str) -> None:
    """A header git's fsck refuses (or that readers read apart: a second author is the
    first to git and the last to dulwich), and a message in another encoding (which git
    shows decoded, past the secret scan), are refused in one line."""
    server, project = world
    # in EBCDIC, a message the scan would read as noise
    message = f"note\n\n{SECRET}\n".encode("cp037") if what == "another encoding" else b"m\n"
    _commit(project, _UNREAD[what], message)
    before = server_state(server)
    line = refusal(push(project, REF), REF, "parse")
    assert ("does not read as git's" in line) != (what == "another encoding"), line
    assert server_state(server) == before


def test_a_signed_commit_by_hand_lands(world: tuple[Path, Path]) -> None:
    """Header lines git writes (a signature, an encoding of UTF-8) are welcome."""
    server, project = world
    signature = b"gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEE\n -----END PGP SIGNATURE-----\n"
    header = b"author " + WHO + b"\ncommitter " + WHO + b"\nencoding UTF-8\n" + signature
    sha = _commit(project, header)
    result = push(project, REF)
    assert result.returncode == 0, result.stderr
    assert sh(server, "rev-parse", REF).strip() == sha


def _folder(project: Path, entries: list[tuple[bytes, bytes, str]]) -> str:
    """The store's root with the fan-out folder of ``todo`` replaced by ``entries``."""
    folder = raw_tree(project, entries)
    return raw_tree(project, [(b"40000", files.bucket("todo").encode(), folder)])


def _blob(project: Path, content: bytes) -> str:
    return raw_object(project, "blob", content)


def _trees(project: Path) -> dict[str, str]:
    clean = _blob(project, md("open tasks", "- ship\n- test\n"))
    hidden = _blob(project, md("open tasks", f"- ship\n{SECRET}\n"))
    name = b"todo.md"
    other = files.bucket("zeta").encode()  # after the folder of todo, in git's order
    zeta = raw_tree(project, [(b"100644", b"zeta.md", _blob(project, md("z", "z\n")))])
    todo = raw_tree(project, [(b"100644", name, clean)])
    home = files.bucket("todo").encode()
    return {
        # git shows the first, dulwich reads the last: the secret would land unscanned
        "a name twice": _folder(project, [(b"100644", name, hidden), (b"100644", name, clean)]),
        "out of order": raw_tree(project, [(b"40000", other, zeta), (b"40000", home, todo)]),
        "a zero-padded mode": raw_tree(project, [(b"040000", home, todo)]),
        "a mode git never writes": _folder(project, [(b"100664", name, clean)]),
    }


@pytest.mark.parametrize(
    "what", ["a name twice", "out of order", "a zero-padded mode", "a mode git never writes"]
)
def test_a_tree_git_refuses_is_refused(world: tuple[Path, Path], what: str) -> None:
    """Every tree a push brings is of the form `git fsck --strict` asks: each name
    once, in git's order, each mode one git writes, spelled as git spells it."""
    server, project = world
    assert files.bucket("zeta") > files.bucket("todo")
    head = sh(project, "rev-parse", "gitmem/notes").strip()
    tree = _trees(project)[what]
    sh(project, "update-ref", REF, raw_object(project, "commit", _plain(tree, head)))
    before = server_state(server)
    line = refusal(push(project, REF), REF, "tree")
    assert "git's fsck refuses" in line or "git does not write" in line, line
    assert SECRET not in line
    assert server_state(server) == before


def _plain(tree: str, parent: str, message: bytes = b"by hand\n") -> bytes:
    header = f"tree {tree}\nparent {parent}\n".encode()
    return header + b"author " + WHO + b"\ncommitter " + WHO + b"\n\n" + message


def test_a_folder_added_out_of_order_after_a_usual_commit_is_refused(
    world: tuple[Path, Path],
) -> None:
    """A commit read from the one before it (a push's usual line): a folder it adds to
    the root must go where git's order puts it."""
    server, project = world
    with Unguarded.open(str(project)) as u:
        u.publish("notes", ME, lambda _: Change("edit", "todo", Memory("todo", "t", "- b\n")))
    head = sh(project, "rev-parse", "gitmem/notes").strip()
    root = sh(project, "ls-tree", "gitmem/notes").split()
    zeta = raw_tree(project, [(b"100644", b"zeta.md", _blob(project, md("z", "z\n")))])
    entries = [
        (b"40000", files.bucket("zeta").encode(), zeta),
        (b"40000", root[3].encode(), root[2]),
    ]
    message = trailers("zeta", "create", 1, 2, 2, 1).encode()
    sha = raw_object(project, "commit", _plain(raw_tree(project, entries), head, message))
    sh(project, "update-ref", REF, sha)
    before = server_state(server)
    line = refusal(push(project, REF), REF, "tree")
    assert "out of git's order" in line and sha[:12] in line
    assert server_state(server) == before


def test_sync_keeps_out_a_remotes_commits_git_reads_otherwise(tmp_path: Path) -> None:
    """A remote with no hook: a commit whose folder names a memory twice, and one with a
    secret in its committer, are kept out by `gitmem sync` (exit 2), each in turn."""
    remote = tmp_path / "remote.git"
    sh(tmp_path, "init", "-q", "--bare", "remote.git")
    project = make_project(tmp_path / "project")
    sh(project, "remote", "add", "origin", str(remote))
    with Repository.init(str(project)) as repo:
        ops.create(repo, "notes", ME, "todo", "open tasks", "- ship\n")
        repo.sync("origin")
    head = sh(project, "rev-parse", "gitmem/notes").strip()
    hidden = _blob(remote, md("open tasks", f"- ship\n{SECRET}\n"))
    clean = _blob(remote, md("open tasks", "- ship\n- test\n"))
    twice = _folder(remote, [(b"100644", b"todo.md", hidden), (b"100644", b"todo.md", clean)])
    root = sh(remote, "rev-parse", f"{REF}^{{tree}}").strip()
    committer = f"tree {root}\nparent {head}\n".encode() + _HEADERS["committer"] + b"\nm\n"
    for sha, rule in (
        (raw_object(remote, "commit", _plain(twice, head)), "tree"),
        (raw_object(remote, "commit", committer), "secret"),
    ):
        sh(remote, "update-ref", REF, sha)
        result = CliRunner().invoke(cli, ["--repo", str(project), "sync", "--json"])
        assert result.exit_code == 2, result.output
        [report] = json.loads(result.output)
        assert report["head"] == head and not report["pushed"]
        assert f"breaks rule {rule}" in report["refused"][0]
        assert SECRET not in result.output
        assert sh(project, "rev-parse", "gitmem/notes").strip() == head


def test_a_commit_brought_by_another_ref_is_checked_when_a_store_takes_it(
    world: tuple[Path, Path],
) -> None:
    """A ref the hook lets through unread (a branch of the project's, a tag, a
    proposal) leaves its commits in the server's objects; a store branch moved onto
    them later has them checked all the same, as new to it."""
    server, project = world
    with Unguarded.open(str(project)) as u:
        memory = Memory("creds", "db", f"k {SECRET}\n")
        u.publish("notes", ME, lambda _: Change("create", "creds", memory))
    smuggled = sh(project, "rev-parse", "gitmem/notes").strip()
    assert push(project, f"{smuggled}:refs/heads/smuggle").returncode == 0
    assert push(project, f"{smuggled}:refs/gitmem/proposals/notes/bot").returncode == 0
    before = server_state(server)
    line = refusal(push(project, REF), REF, "secret")
    assert smuggled[:12] in line
    assert server_state(server) == before


def test_a_file_stores_folders_past_the_path_depth_are_refused_in_one_line(
    world: tuple[Path, Path],
) -> None:
    """A file store's path is at most 16 names: a push whose folders nest thousands deep
    is refused under that rule, not by the check failing on its own recursion."""
    server, project = world
    with Repository.open(str(project)) as repo:
        edit = FileEdit("create", "memories/a.md", "hi\n")
        repo.publish_files("claude", ME, lambda _: FileChange((edit,)))
    assert push(project, "gitmem/claude").returncode == 0
    deep = raw_tree(project, [(b"100644", b"x.md", _blob(project, b"deep\n"))])
    git_dir = Repo(str(project))
    try:
        for _ in range(1_200):  # past Python's recursion limit
            tree = Tree()
            tree.add(b"d", 0o040000, ObjectID(deep.encode()))
            git_dir.object_store.add_object(tree)
            deep = tree.id.decode()
    finally:
        git_dir.close()
    memories = sh(project, "rev-parse", "gitmem/claude:memories").strip()
    root = raw_tree(project, [(b"40000", b"d", deep), (b"40000", b"memories", memories)])
    head = sh(project, "rev-parse", "gitmem/claude").strip()
    ref = "refs/heads/gitmem/claude"
    sh(project, "update-ref", ref, raw_object(project, "commit", _plain(root, head)))
    before = server_state(server)
    line = refusal(push(project, ref), ref, "slug")
    assert "past 16 folders deep" in line
    assert server_state(server) == before


def test_a_branch_named_gitmem_is_refused_where_stores_would_go(tmp_path: Path) -> None:
    """On a server that holds no store yet, a branch named ``gitmem`` would stand where
    every store's branch goes (git keeps no branch beside a folder of the same name):
    refused in one line; the stores are then pushed as usual."""
    sh(tmp_path, "init", "-q", "--bare", "server.git")
    server = tmp_path / "server.git"
    assert CliRunner().invoke(cli, ["hooks", "install", "--server", str(server)]).exit_code == 0
    project = make_project(tmp_path / "project")
    sh(project, "remote", "add", "origin", str(server))
    result = push(project, "main:refs/heads/gitmem")
    assert result.returncode != 0
    assert "refused refs/heads/gitmem: a branch named gitmem stands where" in result.stderr
    assert sh(server, "for-each-ref") == ""
    assert push(project, "main").returncode == 0  # the project's own branches pass
    with Repository.init(str(project)) as repo:
        ops.create(repo, "notes", ME, "todo", "open tasks", "- ship\n")
    assert push(project, "gitmem/notes").returncode == 0
