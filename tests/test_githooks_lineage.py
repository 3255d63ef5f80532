"""A push onto the head the push before it left reads what that push kept of the head's
line (each memory's latest revision, the capability the line records) rather than
walking the line back to the store's first commit, and refuses exactly what the walk
would have it refuse.

Each push here is checked as the hook checks it (``check_updates`` over a fresh reader,
the store's objects all in place), on stores written object by object so a commit can
look usual and not be (see ``test_pushcheck_next``)."""

from __future__ import annotations

import marshal
import os
import random
import sys
from pathlib import Path

import pytest
from helpers_githooks import craft, guarded_world, md, push, refusals, trailers
from helpers_sync import ME
from test_pushcheck_next import (  # pyright: ignore[reportPrivateUsage]
    _HOSTILE,
    _REF,
    _ZERO,
    _push,
    _refused,
)

from gitmem import Repository, ops
from gitmem.githooks import Update, check_updates
from gitmem.lean.listing import store_file_name
from gitmem.store import lineage
from gitmem.store.incoming import Incoming
from gitmem.store.pushcheck import PushReader

STORE = "notes"  # the store of test_pushcheck_next's pushes (refs/heads/gitmem/notes)


def _kept_file(path: str) -> Path:
    return Path(path) / "gitmem" / "lineage" / store_file_name(STORE)


def _asked(monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """The commits whose trailers any reader asks for from now on."""
    asked: set[str] = set()
    facts = Incoming.facts

    def counted(reader: Incoming, sha: str) -> object:
        asked.add(sha)
        return facts(reader, sha)

    monkeypatch.setattr(Incoming, "facts", counted)
    return asked


def test_a_push_onto_the_head_the_last_push_left_reads_no_older_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second push reads nothing of the line before the head it builds on, and
    lands as it does when that line is walked."""
    path = str(tmp_path / "store.git")
    shas = _push(path, 3, 60, rate=0)
    assert _refused(path, shas[40], shas[20]) == []
    assert _kept_file(path).is_file()
    asked = _asked(monkeypatch)
    assert _refused(path, shas[-1], shas[40]) == []
    assert not asked & set(shas[:40])
    _kept_file(path).unlink()  # walked again: every commit back to the first
    assert _refused(path, shas[-1], shas[40]) == []
    assert set(shas[:40]) <= asked


@pytest.mark.parametrize("only", ["", *_HOSTILE])
def test_a_push_refuses_alike_with_the_line_kept_and_walked(only: str, tmp_path: Path) -> None:
    """A push whose commits look usual and one is not (a revision that lies, limits
    loosened against the capability an earlier push recorded, a secret, an odd tree)
    is refused with the same lines whether its head's line was kept by the push
    before or is walked."""
    path = str(tmp_path / "store.git")
    seed = 11 + len(only)
    shas = _push(path, seed, 40, rate=0, only=only)
    # the first push ends on the commit before the one that is not usual, or on the
    # one that records the limits a later commit loosens or breaks
    first = random.Random(seed).randrange(3, 40) if only else 20
    if only in ("loosen", "over-limit"):
        first = 2
    assert _refused(path, shas[first]) == []
    assert _kept_file(path).is_file()
    kept = _refused(path, shas[-1], shas[first])
    _kept_file(path).unlink()
    assert kept == _refused(path, shas[-1], shas[first])
    if only in ("revision-lie", "peak-lie", "loosen", "over-limit"):
        assert kept  # judged by the revisions and the limits the first push left


def test_through_git_the_next_push_is_numbered_on_from_the_kept_line(tmp_path: Path) -> None:
    """Through git and the installed hook, on a store whose every commit gitmem made (so
    each revision must be the one after the last): a push lands and keeps its head's
    line; on it, a commit numbered past the next revision is refused in the very words
    a walk of the whole line gives, and the commit numbered right lands."""
    server, project = guarded_world(tmp_path)
    with Repository.open(str(project)) as repo:
        for i in range(3):
            ops.edit(repo, "notes", ME, "todo", body=f"- v{i}\n")  # revisions 2 to 4
        published, where = repo.head("notes"), repo.path("notes", "todo")
    assert published is not None
    assert push(project, "gitmem/notes").returncode == 0
    kept = _kept_file(str(server))
    line = kept.read_bytes()
    git_dir, ref, body = str(project / ".git"), "refs/heads/gitmem/notes", "- v3\n- v4\n"

    def next_commit(revision: int) -> str:
        message = trailers("todo", "edit", revision, 1, len(body), 2)
        return craft(git_dir, ref, {where: md("open tasks", body)}, message, [published])

    lie = next_commit(7)
    refused = refusals(push(project, "gitmem/notes"))
    assert len(refused) == 1 and lie[:12] in refused[0]
    assert "`todo` is numbered revision 7 after revision 4" in refused[0]
    kept.unlink()  # the same push, its line walked back to the store's first commit
    assert refusals(push(project, "gitmem/notes")) == refused
    kept.write_bytes(line)
    next_commit(5)
    landed = push(project, "gitmem/notes")
    assert landed.returncode == 0, landed.stderr


def test_a_refused_push_keeps_nothing(tmp_path: Path) -> None:
    """Nor does a push one of whose refs is refused, though another's commits passed: a
    push lands whole or not at all."""
    path = str(tmp_path / "store.git")
    seed = 5
    shas = _push(path, seed, 12, rate=0, only="revision-lie")
    assert _refused(path, shas[-1]) != []
    assert not _kept_file(path).exists()
    fine = shas[random.Random(seed).randrange(3, 12)]  # the commit before the lie
    both = [Update(_REF, _ZERO, fine), Update("refs/heads/gitmem/other", _ZERO, shas[-1])]
    reader = PushReader(path)
    try:
        assert [line.split(":")[0] for line in check_updates(reader, both, lambda _: False)] == [
            "refused refs/heads/gitmem/other"
        ]
        assert not (Path(path) / "gitmem" / "lineage").exists()
        assert check_updates(reader, both[:1], lambda _: False) == []
    finally:
        reader.close()
    assert _kept_file(path).is_file()


def _written(tmp_path: Path, head: str) -> tuple[str, bytes]:
    git_dir = str(tmp_path)
    kept = lineage.Lineage({"a": 3, "b": 1}, True, "markdown maxCount=10")
    lineage.keep(git_dir, STORE, head, kept)
    assert lineage.kept(git_dir, STORE, head) == kept
    return git_dir, _kept_file(git_dir).read_bytes()


HEAD = "ab" * 20


@pytest.mark.parametrize(
    "damage",
    ["another head", "a byte changed", "cut short", "another Python", "another shape", "empty"],
)
def test_a_kept_line_that_does_not_read_whole_is_passed_over(tmp_path: Path, damage: str) -> None:
    """Of another head, with a byte changed, cut short, written by another Python
    version, of another shape (with a CRC that matches it), or empty: nothing is kept,
    and the line is walked."""
    git_dir, data = _written(tmp_path, HEAD)
    head = HEAD
    if damage == "another head":
        head = "cd" * 20
    elif damage == "a byte changed":
        data = data[:-3] + bytes([data[-3] ^ 1]) + data[-2:]
    elif damage == "cut short":
        data = data[:-1]
    elif damage == "another Python":
        data = data.replace(b"-py%d.%d " % sys.version_info[:2], b"-py2.7 ", 1)
    elif damage == "another shape":
        payload = marshal.dumps(({"a": "3"}, True, None))
        crc = lineage._crc(HEAD, payload)  # pyright: ignore[reportPrivateUsage]
        header = data.partition(b"\n")[0].split(b" ")[:2]
        data = b" ".join([*header, b"%d %d\n" % (len(payload), crc)]) + payload
    else:
        data = b""
    _kept_file(git_dir).write_bytes(data)
    assert lineage.kept(git_dir, STORE, head) is None


def test_a_line_is_kept_per_store(tmp_path: Path) -> None:
    git_dir, _ = _written(tmp_path, HEAD)
    assert lineage.kept(git_dir, "other", HEAD) is None
    assert os.listdir(tmp_path / "gitmem" / "lineage") == [store_file_name(STORE)]
