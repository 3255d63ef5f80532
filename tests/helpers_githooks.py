"""Ways to make commits that gitmem's own tools would refuse, for the hook tests.

:class:`Unguarded` is a store writer with the write guards switched off (what an old
gitmem, or a script, could publish with correct trailers); :func:`craft` writes a
commit by hand with dulwich, so a test can break one structural rule at a time.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from dulwich.objects import Blob, Commit, ObjectID, Tree
from dulwich.repo import Repo
from helpers_sync import ENV, ME, make_project, sh

from gitmem import Repository, ops
from gitmem.store import Storage

DIR_MODE = 0o040000
FILE_MODE = 0o100644


class Unguarded(Storage):
    """A store writer that skips secret scanning and guard code: test-only."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.screens = []


def craft(
    git_dir: str,
    ref: str,
    changes: Mapping[str, bytes | None],
    message: str,
    parents: Sequence[str] | None = None,
) -> str:
    """Commit ``changes`` (path → content, ``None`` removes) on top of ``ref``'s head
    (or ``parents``) and move ``ref`` there; returns the new commit."""
    repo = Repo(git_dir)
    try:
        head = repo.refs[ref.encode()].decode() if ref.encode() in repo.refs else None
        chosen = list(parents) if parents is not None else ([head] if head else [])
        root: Tree | None = None
        if chosen:
            parent = repo[chosen[0].encode()]
            assert isinstance(parent, Commit)
            found = repo[parent.tree]
            assert isinstance(found, Tree)
            root = found
        new_root = _apply(repo, root, changes)
        commit = Commit()
        commit.tree = new_root.id
        commit.parents = [ObjectID(p.encode()) for p in chosen]
        commit.author = commit.committer = b"Script <script@example.com>"
        commit.author_time = commit.commit_time = 1_800_000_000
        commit.author_timezone = commit.commit_timezone = 0
        commit.message = message.encode()
        repo.object_store.add_object(commit)
        repo.refs[ref.encode()] = commit.id
        return commit.id.decode()
    finally:
        repo.close()


def _apply(repo: Repo, root: Tree | None, changes: Mapping[str, bytes | None]) -> Tree:
    entries: dict[bytes, tuple[int, bytes]] = {}
    if root is not None:
        entries = {e.path: (e.mode, bytes(e.sha)) for e in root.items()}
    nested: dict[str, dict[str, bytes | None]] = {}
    for path, data in changes.items():
        head, _, rest = path.partition("/")
        if rest:
            nested.setdefault(head, {})[rest] = data
        elif data is None:
            entries.pop(head.encode(), None)
        else:
            blob = Blob.from_string(data)
            repo.object_store.add_object(blob)
            entries[head.encode()] = (FILE_MODE, bytes(blob.id))
    for name, sub in nested.items():
        current = entries.get(name.encode())
        child: Tree | None = None
        if current is not None and current[0] == DIR_MODE:
            found = repo[ObjectID(current[1])]
            assert isinstance(found, Tree)
            child = found
        new = _apply(repo, child, sub)
        if len(new):
            entries[name.encode()] = (DIR_MODE, bytes(new.id))
        else:
            entries.pop(name.encode(), None)
    tree = Tree()
    for name, (mode, sha) in entries.items():
        tree.add(name, mode, ObjectID(sha))
    repo.object_store.add_object(tree)
    return tree


def trailers(
    slug: str, op: str, revision: int, count: int, chars: int, lines: int, extra: str = ""
) -> str:
    """A commit message in gitmem's format for one slug (peaks equal to the totals)."""
    return (
        f"{op} {slug}\n\nGitmem-Slug: {slug}\nGitmem-Op: {op}\nGitmem-Revision: {revision}\n"
        f"Gitmem-Count: {count}\nGitmem-Chars: {chars}\nGitmem-Lines: {lines}\n"
        f"Gitmem-Peak-Count: {count}\nGitmem-Peak-Chars: {chars}\nGitmem-Peak-Lines: {lines}\n"
        + extra
    )


def md(description: str, body: str) -> bytes:
    """A memory file as gitmem writes it."""
    import json

    return f"---\ndescription: {json.dumps(description)}\n---\n{body}".encode()


def refusals(result: subprocess.CompletedProcess[str]) -> list[str]:
    """Every refusal line a hook printed (the push failed)."""
    assert result.returncode != 0
    return [
        line.removeprefix("remote: ").rstrip()
        for line in result.stderr.splitlines()
        if "breaks rule" in line
    ]


def refusal(result: subprocess.CompletedProcess[str], ref: str, rule: str) -> str:
    """The one line a hook printed refusing ``ref`` by ``rule`` (the push failed); any
    other line names another rule the same commit breaks."""
    lines = refusals(result)
    shape = rf"refused {ref}: commit ([0-9a-f]{{12}}) breaks rule ([a-z]+): .+"
    matches = [re.fullmatch(shape, line) for line in lines]
    assert lines and all(matches), result.stderr
    assert len({m.group(1) for m in matches if m}) == 1, result.stderr
    rules = [m.group(2) for m in matches if m]
    assert rules.count(rule) == 1 and len(set(rules)) == len(rules), result.stderr
    return lines[rules.index(rule)]


def raw_object(git_dir: str | Path, kind: str, content: bytes) -> str:
    """Write ``content`` as an object of type ``kind``, as it is (git's own checks of
    the form skipped: a hostile pusher's tool); its id."""
    result = subprocess.run(
        ["git", "hash-object", "-w", "--literally", "-t", kind, "--stdin"],
        cwd=git_dir,
        input=content,
        capture_output=True,
        check=True,
    )
    return result.stdout.decode().strip()


def raw_tree(git_dir: str | Path, entries: Sequence[tuple[bytes, bytes, str]]) -> str:
    """A tree of ``entries`` ``(mode as spelled, name, hex id)``, in the order given."""
    content = b"".join(m + b" " + n + b"\0" + bytes.fromhex(s) for m, n, s in entries)
    return raw_object(git_dir, "tree", content)


def push(project: Path, *refspecs: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "push", "origin", *refspecs],
        cwd=project,
        capture_output=True,
        text=True,
        env=ENV,
        check=False,
    )


def guarded_world(
    tmp_path: Path, prepare: Callable[[Path], None] | None = None, *, pushed: bool = True
) -> tuple[Path, Path]:
    """A shared bare server with gitmem's pre-receive, and a project holding store
    ``notes`` (one memory, then whatever ``prepare`` writes), pushed to it unless not
    ``pushed``."""
    from click.testing import CliRunner

    from gitmem.cli import cli

    sh(tmp_path, "init", "-q", "--bare", "server.git")
    server = tmp_path / "server.git"
    result = CliRunner().invoke(cli, ["hooks", "install", "--server", str(server)])
    assert result.exit_code == 0, result.output
    project = make_project(tmp_path / "project")
    sh(project, "remote", "add", "origin", str(server))
    with Repository.init(str(project)) as repo:
        ops.create(repo, "notes", ME, "todo", "open tasks", "- ship\n")
    if prepare is not None:
        prepare(project)
    if pushed:
        done = push(project, "main", "gitmem/notes")
        assert done.returncode == 0, done.stderr
    return server, project


def server_state(server: Path) -> tuple[str, str]:
    """The server's refs and its object counts: what a refused push must not change."""
    refs = sh(server, "for-each-ref")
    counts = sh(server, "count-objects", "-v")
    kept = "\n".join(line for line in counts.splitlines() if not line.startswith("size"))
    return refs, kept
