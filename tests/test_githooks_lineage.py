"""A push that goes on from a head an earlier push left reads what that push kept of the
head's line (each memory's latest revision, the capability the line records) rather
than walking the line back to the store's first commit, and refuses exactly what the
walk would have it refuse.

Most pushes here are checked as the hook checks them (``check_updates`` over a fresh
reader, the store's objects all in place), on stores written object by object so a
commit can look usual and not be (see ``test_pushcheck_next``); one goes through git
and the installed hook, and one is a merge ``gitmem sync`` made."""

from __future__ import annotations

import marshal
import os
import random
import sys
import time
from pathlib import Path

import pytest
from helpers_githooks import craft, guarded_world, md, push, refusals, trailers
from helpers_sync import ME, hostile_replicas, sh
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
from gitmem.store.permissions import adjust
from gitmem.store.pushcheck import PushReader

STORE = "notes"  # the store of these pushes (refs/heads/gitmem/notes)


def _kept(git_dir: str | Path, head: str = "") -> Path:
    """The folder of the store's kept lines, or the file of ``head``'s."""
    folder = Path(git_dir) / "gitmem" / "lineage" / store_file_name(STORE)
    return folder / head if head else folder


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
    assert os.listdir(_kept(path)) == [shas[40]]
    asked = _asked(monkeypatch)
    assert _refused(path, shas[-1], shas[40]) == []
    assert not asked & set(shas[:40])
    _kept(path, shas[40]).unlink()  # walked again: every commit back to the first
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
    assert _kept(path, shas[first]).is_file()
    kept = _refused(path, shas[-1], shas[first])
    _kept(path, shas[first]).unlink()
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
    kept = _kept(server, published)
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


def test_a_merge_made_by_sync_is_read_from_the_head_its_line_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """b syncs, writes while a pushes twice, then syncs again: its merge goes on from
    b's own line, which left from the head b synced at. Checked as the server checks
    each of those pushes, the merge reads nothing older than that head (its line kept
    by the push that left it), and lands as it does when every line is walked."""
    _, a, b = hostile_replicas(tmp_path)
    heads: list[str] = []
    with Repository.open(str(a)) as first, Repository.open(str(b)) as second:
        for i in range(6):
            ops.create(first, STORE, ME, f"a-{i}", "from a", f"a {i}\n")
        first.sync("origin")
        second.sync("origin")
        heads.append(second.head(STORE) or "")
        for i in range(4):
            ops.create(first, STORE, ME, f"later-{i}", "from a, later", f"later {i}\n")
            first.sync("origin")
            heads.append(first.head(STORE) or "")
        for i in range(3):
            ops.create(second, STORE, ME, f"b-{i}", "from b", f"b {i}\n")
        second.sync("origin")
        merge = second.head(STORE) or ""
    git_dir = str(b / ".git")
    reader = PushReader(git_dir)
    try:
        assert len(reader.head(merge).parents) == 2
        older = reader.ancestors(heads[0]) - {heads[0]}
    finally:
        reader.close()

    def checked(old: str, new: str) -> list[str]:
        reader = PushReader(git_dir)
        try:
            known = reader.ancestors(old) if old != _ZERO else set[str]()
            return check_updates(reader, [Update(_REF, old, new)], known.__contains__)
        finally:
            reader.close()

    # the pushes that reached the server, each kept as the server keeps it
    for old, new in zip([_ZERO, *heads], heads, strict=False):
        assert checked(old, new) == []
    asked = _asked(monkeypatch)
    assert checked(heads[-1], merge) == []
    assert not asked & older
    for head in heads:
        _kept(git_dir, head).unlink()
    assert checked(heads[-1], merge) == []
    assert older <= asked


def test_a_refused_push_keeps_nothing(tmp_path: Path) -> None:
    """Nor does a push one of whose refs is refused, though another's commits passed: a
    push lands whole or not at all."""
    path = str(tmp_path / "store.git")
    seed = 5
    shas = _push(path, seed, 12, rate=0, only="revision-lie")
    assert _refused(path, shas[-1]) != []
    assert not _kept(path).exists()
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
    assert os.listdir(_kept(path)) == [fine]


def test_a_store_keeps_the_lines_of_its_newest_heads(tmp_path: Path) -> None:
    heads = [f"{i:040x}" for i in range(lineage.KEPT + 4)]
    for number, head in enumerate(heads):
        lineage.keep(str(tmp_path), [(STORE, head, lineage.Lineage({"a": number}, True, None))])
        os.utime(_kept(tmp_path, head), ns=(number * 10**9, number * 10**9))
    assert sorted(os.listdir(_kept(tmp_path))) == heads[4:]
    assert lineage.kept(str(tmp_path), STORE, heads[-1]) == ({"a": len(heads) - 1}, True, None)
    assert lineage.kept(str(tmp_path), "other", heads[-1]) is None
    assert lineage.kept(str(tmp_path), STORE, "../" + heads[-1][3:]) is None


def _all_kept(git_dir: str | Path) -> list[str]:
    """Every kept line of every store, as ``<store folder>/<head>``."""
    root = Path(git_dir) / "gitmem" / "lineage"
    return sorted(
        f"{folder.name}/{head.name}" for folder in root.iterdir() for head in folder.iterdir()
    )


def test_a_push_of_many_branches_to_one_line_keeps_a_bounded_few(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each new store branch made to point at one long line keeps a copy of its line:
    every store together keeps the newest ``FILES``, so a push of refs alone (41 bytes
    each) cannot fill the server's disk. The stores whose lines all went leave no
    folder behind."""
    monkeypatch.setattr(lineage, "FILES", 5)
    path = str(tmp_path / "store.git")
    shas = _push(path, 11, 12, rate=0)
    updates = [Update(f"refs/heads/gitmem/copy-{i}", _ZERO, shas[-1]) for i in range(12)]
    reader = PushReader(path)
    try:
        assert check_updates(reader, updates, lambda _: False) == []
    finally:
        reader.close()
    kept = _all_kept(path)
    assert len(kept) == 5
    assert len(os.listdir(Path(path) / "gitmem" / "lineage")) == 5
    # the last update's line among them, whatever times the file system gave them
    assert f"{store_file_name('copy-11')}/{shas[-1]}" in kept


def test_the_line_just_kept_stays_though_the_clock_stamps_others_as_newer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file system that stamps times coarsely (or a clock set back) can give the line
    just kept a time no newer than the others: it stays all the same, and an older one
    goes."""
    monkeypatch.setattr(lineage, "FILES", 2)
    line = lineage.Lineage({"a": 1}, True, None)
    future = (time.time_ns() // 10**9 + 3600) * 10**9
    for store, head in (("one", "aa" * 20), ("two", "bb" * 20)):
        lineage.keep(str(tmp_path), [(store, head, line)])
        os.utime(_kept_file(tmp_path, store, head), ns=(future, future))
    lineage.keep(str(tmp_path), [("three", "cc" * 20, line)])
    kept = _all_kept(tmp_path)
    assert f"{store_file_name('three')}/{'cc' * 20}" in kept and len(kept) == 2


def test_every_store_together_keeps_its_newest_lines_within_its_room(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past ``ROOM`` bytes, the oldest lines of every store go, whichever store's they
    are; a line past ``LINEAGE_MAX`` is never written, since it would never be read."""
    big = lineage.Lineage({f"memory-{i}": i for i in range(2_000)}, True, None)
    lineage.keep(str(tmp_path / "sizing"), [(STORE, HEAD, big)])
    size = _kept_file(tmp_path / "sizing", STORE, HEAD).stat().st_size
    monkeypatch.setattr(lineage, "ROOM", 3 * size + size // 2)
    heads = [f"{i:040x}" for i in range(6)]
    for number, head in enumerate(heads):
        store = f"store-{number % 2}"
        lineage.keep(str(tmp_path), [(store, head, big)])
        at = (10 + number) * 10**9
        os.utime(_kept_file(tmp_path, store, head), ns=(at, at))
    assert _all_kept(tmp_path) == sorted(
        f"{store_file_name(f'store-{n % 2}')}/{heads[n]}" for n in (3, 4, 5)
    )
    monkeypatch.setattr(lineage, "LINEAGE_MAX", size - 1)
    lineage.keep(str(tmp_path), [("too-long", HEAD, big)])
    assert not _kept_file(tmp_path, "too-long", HEAD).exists()


def test_a_killed_writer_s_temporary_file_goes_once_it_is_stale(tmp_path: Path) -> None:
    """A hook killed while it wrote leaves its temporary file: the next push that keeps
    a line removes it once it is ``STALE``; a write under way is left alone."""
    line = lineage.Lineage({"a": 1}, True, None)
    lineage.keep(str(tmp_path), [(STORE, HEAD, line)])
    stale = _kept(tmp_path, f"{HEAD}.123.456.tmp")
    fresh = _kept(tmp_path, f"{'cd' * 20}.789.1.tmp")
    for leftover in (stale, fresh):
        leftover.write_bytes(b"half a line")
    old = (lineage.STALE + 5) * 10**9
    aged = os.stat(stale).st_mtime_ns - old
    os.utime(stale, ns=(aged, aged))
    lineage.keep(str(tmp_path), [(STORE, "ef" * 20, line)])
    assert sorted(os.listdir(_kept(tmp_path))) == sorted([HEAD, "ef" * 20, fresh.name])


@pytest.mark.parametrize("shared", ["", "umask", "group", "true", "all", "0640", "0664"])
@pytest.mark.parametrize("config", ["plain", "with quoting"])
def test_lines_kept_in_a_shared_repository_are_made_as_git_makes_its_own(
    tmp_path: Path, shared: str, config: str
) -> None:
    """In a repository every pusher's own account writes (``git init --shared``), a
    kept line and its folders get the permissions git gives a ref and its folders,
    whatever the pusher's umask: the next pusher, another account, can replace them."""
    repo = tmp_path / "server.git"
    options = [f"--shared={shared}"] if shared else []
    before = os.umask(0o077)
    try:
        sh(tmp_path, "init", "-q", "--bare", *options, str(repo))
        if config == "with quoting":
            with open(repo / "config", "a") as f:
                f.write('[remote "origin"]\n\turl = /nowhere\n')
        at = f"--git-dir={repo}"
        tree = sh(tmp_path, at, "hash-object", "-t", "tree", "-w", "/dev/null").strip()
        commit = sh(tmp_path, at, "commit-tree", tree, "-m", "x").strip()
        sh(tmp_path, at, "update-ref", "refs/heads/gitmem/made/here", commit)
        lineage.keep(str(repo), [(STORE, HEAD, lineage.Lineage({"a": 1}, True, None))])
    finally:
        os.umask(before)
    ref = repo / "refs" / "heads" / "gitmem" / "made" / "here"
    assert _mode(_kept(repo, HEAD)) == _mode(ref)
    for folder in (_kept(repo), _kept(repo).parent, repo / "gitmem"):
        assert _mode(folder) == _mode(ref.parent)


def _mode(path: Path) -> str:
    return oct(path.stat().st_mode & 0o7777)


def test_a_link_in_the_folder_of_kept_lines_leads_their_removal_nowhere_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a repository several accounts write, one could put links among the kept
    lines: a store's folder that is a link to another folder, a line that is a link
    to another file. The bounds read and remove through the folders themselves, never
    through a link, and touch only names they write: what the links lead to stays, as
    does any other file."""
    monkeypatch.setattr(lineage, "FILES", 1)
    outside = tmp_path / "outside"
    outside.mkdir()
    old = time.time_ns() - (lineage.STALE + 60) * 10**9
    victims = [outside / HEAD, outside / f"{HEAD}.1.2.tmp", outside / "notes.txt"]
    for victim in victims:
        victim.write_text("keep me")
        os.utime(victim, ns=(old, old))
    git_dir = tmp_path / "repo.git"
    line = lineage.Lineage({"a": 1}, True, None)
    lineage.keep(str(git_dir), [(STORE, HEAD, line)])
    root = _kept(git_dir).parent
    (root / ("ee" * 20)).symlink_to(outside, target_is_directory=True)
    (_kept(git_dir) / ("dd" * 20)).symlink_to(outside / HEAD)
    stray = _kept(git_dir) / "notes.txt"
    stray.write_text("not ours")
    os.utime(stray, ns=(old, old))
    lineage.keep(str(git_dir), [("other", "cd" * 20, line)])
    lineage.keep(str(git_dir), [(STORE, "ef" * 20, line)])
    assert all(victim.read_text() == "keep me" for victim in victims)
    assert stray.exists() and (root / ("ee" * 20)).is_symlink()
    assert _all_kept_files(git_dir) == [f"{store_file_name(STORE)}/{'ef' * 20}"]
    # a store's folder that is a link is written through no more than it is pruned
    (root / store_file_name("linked")).symlink_to(outside, target_is_directory=True)
    lineage.keep(str(git_dir), [("linked", "fa" * 20, line)])
    assert sorted(p.name for p in outside.iterdir()) == sorted(v.name for v in victims)


def test_a_link_in_place_of_a_kept_line_keeps_what_it_leads_to_as_it_was(tmp_path: Path) -> None:
    """Made as git makes its own files in a shared repository, through the file itself:
    a link in its place changes nothing it leads to."""
    victim = tmp_path / "victim"
    victim.write_text("private")
    victim.chmod(0o600)
    link = tmp_path / "line"
    link.symlink_to(victim)
    adjust(str(link), 0o660)
    assert victim.stat().st_mode & 0o777 == 0o600
    adjust(str(victim), 0o660)  # the same call on the file itself does change it
    assert victim.stat().st_mode & 0o777 == 0o660


def _all_kept_files(git_dir: Path) -> list[str]:
    """The kept lines that are files, not links, of every store folder that is one."""
    root = git_dir / "gitmem" / "lineage"
    return sorted(
        f"{folder.name}/{line.name}"
        for folder in root.iterdir()
        if folder.is_dir() and not folder.is_symlink()
        for line in folder.iterdir()
        if len(line.name) == 40 and line.is_file() and not line.is_symlink()
    )


def _kept_file(git_dir: str | Path, store: str, head: str) -> Path:
    return Path(git_dir) / "gitmem" / "lineage" / store_file_name(store) / head


HEAD = "ab" * 20


@pytest.mark.parametrize(
    "damage",
    ["another head", "a byte changed", "cut short", "another Python", "another shape", "empty"],
)
def test_a_kept_line_that_does_not_read_whole_is_passed_over(tmp_path: Path, damage: str) -> None:
    """Of another head, with a byte changed, cut short, written by another Python
    version, of another shape (with a CRC that matches it), or empty: nothing is kept,
    and the line is walked."""
    kept = lineage.Lineage({"a": 3, "b": 1}, True, "markdown maxCount=10")
    lineage.keep(str(tmp_path), [(STORE, HEAD, kept)])
    assert lineage.kept(str(tmp_path), STORE, HEAD) == kept
    path = _kept(tmp_path, HEAD)
    data = path.read_bytes()
    if damage == "another head":
        data = data.replace(HEAD.encode(), b"cd" * 20, 1)
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
    path.write_bytes(data)
    assert lineage.kept(str(tmp_path), STORE, HEAD) is None
