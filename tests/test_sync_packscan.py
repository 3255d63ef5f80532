"""A pack a remote sends over the pack protocol (an ``ssh://`` or ``https://`` remote's
road) is read through before anything of it is stored: each object held to the bound
a push hook holds objects to, from what it declares and from what it inflates to, the
pack held to a size and a time as it arrives. What fails changes nothing here."""

from __future__ import annotations

import io
import socket
import threading
import zlib
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from helpers_packs import (
    BLOB,
    OFS_DELTA,
    REF_DELTA,
    Packer,
    blob,
    copies,
    distance,
    header,
    pack,
    varint,
)
from helpers_sync import ME, hostile_replicas, make_project, sh
from test_store_pushobjects import git, history

from gitmem import Repository, ops
from gitmem.cli import cli
from gitmem.store import packscan, pushobjects, remote
from gitmem.store.packscan import check_pack
from gitmem.store.pushobjects import TooLarge


def test_a_pack_git_writes_reads_through(tmp_path: Path) -> None:
    """Every kind of entry git writes (whole objects, a tag, deltas on a base named by
    id, and on one at an offset, in the pack or held here) reads."""
    repo = history(tmp_path / "r")
    listed = git(repo, "rev-list", "--objects", "--all")
    for options in ([], ["--delta-base-offset"]):  # by default, bases named by id
        check_pack(io.BytesIO(git(repo, "pack-objects", "--stdout", *options, stdin=listed)))
    # a thin pack, as a fetch gets one: deltas on objects this side holds, named by id
    thin = git(repo, "pack-objects", "--stdout", "--thin", "--revs", stdin=b"HEAD\n^HEAD~3\n")
    check_pack(io.BytesIO(thin))


@pytest.mark.parametrize(
    ("pack", "refusal"),
    [
        (b"NOPE" + b"\0" * 28, "is not a pack"),
        (pack(blob(b"x" * 100), count=2)[:-20], "cut short"),
        (pack(blob(b"x" * 100))[:-25], "cut short"),
        (pack(blob(b"x" * 100)) + b"more", "goes on past its last object"),
        (pack(header(5, 3) + zlib.compress(b"abc")), "unknown type 5"),
        (pack(blob(b"x" * 1_000_000, declared=10)), "inflates past its size"),
        (pack(blob(b"x" * 10, declared=11)), "inflates short of its size"),
        (pack(header(BLOB, 10) + b"\x78\x9c garbage here"), "does not inflate"),
    ],
    ids=[
        "not a pack",
        "fewer entries than counted",
        "cut short",
        "trailing bytes",
        "unknown type",
        "a bomb declaring little",
        "short of its size",
        "not a zlib stream",
    ],
)
def test_a_pack_that_does_not_read_is_refused(pack: bytes, refusal: str) -> None:
    with pytest.raises(ValueError, match=refusal):
        check_pack(io.BytesIO(pack))


def test_a_pack_of_more_objects_than_a_fetch_takes_is_refused_before_any_is_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(packscan, "ENTRIES_MAX", 2)
    check_pack(io.BytesIO(pack(blob(b"a"), blob(b"b"))))
    with pytest.raises(ValueError, match="holds 3 objects, past the 2 a fetch takes"):
        check_pack(io.BytesIO(pack(blob(b"a"), blob(b"b"), b"", count=3)))


def test_an_object_or_a_delta_s_result_past_the_bound_is_refused_before_it_inflates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """From the size an entry declares, or a delta's header declares it makes: the
    stream is not inflated at all (a stream that is no stream is never reached)."""
    monkeypatch.setattr(pushobjects, "OBJECT_MAX", 1_000)
    with pytest.raises(TooLarge, match="holds 1,001 bytes"):
        check_pack(io.BytesIO(pack(header(BLOB, 1_001) + b"not a stream")))
    delta = varint(10) + varint(5_000_000) + b"\x90\x0a"  # copy 10 bytes of the base
    base = blob(b"0123456789")
    for entry in (
        header(OFS_DELTA, len(delta)) + varint(len(base)) + zlib.compress(delta),
        header(REF_DELTA, len(delta)) + b"\x11" * 20 + zlib.compress(delta),
    ):
        with pytest.raises(TooLarge, match="holds 5,000,000 bytes"):
            check_pack(io.BytesIO(pack(base, entry)))


def _comb(depth: int, base: int, result: int, *, pinned: bool) -> Packer:
    """A line of ``depth`` deltas, each of ``result`` bytes on the one before. ``pinned``:
    each but the last also has a one-byte delta on it, written first; walked depth first
    in the order the library walks it, each such waits while the line goes on beneath
    its base, which is held all that time. Else those small deltas all hang on the
    first object, and nothing need be held but the line's last two."""
    packer = Packer()
    at = packer.blob(b"\0" * base)
    first = at
    for _ in range(depth):
        packer.delta(at if pinned else first, 1)
        at = packer.delta(at, result)
    return packer


def test_a_pack_that_would_have_this_side_hold_gigabytes_is_refused() -> None:
    """Some 16 KB that make six objects of 64 MiB in a line, each held while the next is
    made: with the small deltas that pin them, more than this side may hold at once; the
    same objects without them read through."""
    line = 64 << 20
    pinned = _comb(6, 16 << 20, line, pinned=True).pack()
    assert len(pinned) < 64 << 10
    with pytest.raises(ValueError, match="could have this side hold more than 268,435,456 bytes"):
        check_pack(io.BytesIO(pinned))
    check_pack(io.BytesIO(_comb(6, 16 << 20, line, pinned=False).pack()))


def test_what_may_be_held_counts_only_objects_a_later_delta_waits_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Along the worst path down a delta tree: one pinned object fewer than the bound
    reads, one more does not; a line however long holds nothing but its last two."""
    # ten deltas: the base (1,000 bytes) and nine of the line's objects are pinned
    monkeypatch.setattr(packscan, "HELD_MAX", 1_000 + 9 * 4_096)
    check_pack(io.BytesIO(_comb(10, 1_000, 4_096, pinned=True).pack()))
    with pytest.raises(ValueError, match="hold more than 37,864 bytes"):
        check_pack(io.BytesIO(_comb(11, 1_000, 4_096, pinned=True).pack()))
    check_pack(io.BytesIO(_comb(500, 1_000, 4_096, pinned=False).pack()))


def test_a_delta_whose_base_is_named_by_id_counts_as_hung_anywhere(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its base is placed only once it is made, in the pack or among the objects held
    here, so each such delta counts as if it held one more of the pack's largest objects
    while it waits, and as if the tree beneath it lay on the same path as any other."""
    monkeypatch.setattr(packscan, "HELD_MAX", 100_000)
    sha = bytes.fromhex("ab" * 20)

    def named(count: int, result: int, pinned: bool = False) -> bytes:
        packer = Packer()
        packer.blob(b"\0" * 1_000)
        for _ in range(count):
            at = packer.delta_by_id(sha, 1_000, result)
            if pinned:  # two deltas on it, one waiting while the other is made
                packer.delta(at, 1)
                packer.delta(at, 1)
        return packer.pack()

    check_pack(io.BytesIO(named(2, 40_000)))  # two of the largest: 80,000
    with pytest.raises(ValueError, match="hold more than 100,000 bytes"):
        check_pack(io.BytesIO(named(3, 40_000)))
    # each with two deltas on it: its tree holds 20,000, and one of the largest 20,000
    # more; one such comes to 40,000, three to 120,000
    check_pack(io.BytesIO(named(1, 20_000, pinned=True)))
    with pytest.raises(ValueError, match="hold more than 100,000 bytes"):
        check_pack(io.BytesIO(named(3, 20_000, pinned=True)))


def test_a_chain_of_deltas_a_later_read_would_hold_whole_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A line of deltas as large as what they make pins nothing as the pack is stored,
    but the pack is kept as it came, and the library reads a stored object by holding
    every delta down its chain at once: the deltas along a chain are bounded too."""
    monkeypatch.setattr(pushobjects, "CHAIN_MAX", 100_000)

    def line(count: int) -> bytes:
        packer = Packer()
        at = packer.blob(b"x")
        for n in range(count):
            at = packer.inserts(at, bytes([n]) * 40_000)
        return packer.pack()

    check_pack(io.BytesIO(line(2)))  # some 80,000 bytes of deltas
    with pytest.raises(ValueError, match="a chain of deltas of more than 100,000 bytes"):
        check_pack(io.BytesIO(line(3)))


def test_a_pack_that_makes_more_than_a_fetch_takes_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The objects made whole, deltas' results with the rest, from what each declares."""
    monkeypatch.setattr(packscan, "INFLATED_MAX", 10_000)
    packer = Packer()
    packer.delta(packer.blob(b"x" * 1_000), 9_000)
    check_pack(io.BytesIO(packer.pack()))
    packer.blob(b"y")
    with pytest.raises(ValueError, match="makes more than 10,000 bytes of objects"):
        check_pack(io.BytesIO(packer.pack()))


def test_a_delta_on_no_entry_of_the_pack_is_refused() -> None:
    entry = header(OFS_DELTA, 4) + distance(3) + zlib.compress(copies(1, 1))
    with pytest.raises(ValueError, match="names a base that is none of its objects"):
        check_pack(io.BytesIO(pack(blob(b"0123456789"), entry)))


@pytest.fixture
def over_the_protocol(monkeypatch: pytest.MonkeyPatch) -> None:
    """Remotes on this machine taken through the pack protocol, as ssh:// and https://
    remotes are."""
    monkeypatch.setattr(remote.Remote, "_local", lambda self: None)


@pytest.mark.usefixtures("over_the_protocol")
@pytest.mark.parametrize("bound", ["size", "time", "made"])
def test_a_fetch_past_its_size_or_time_is_refused_and_stores_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bound: str
) -> None:
    """A remote that sends more than a fetch takes, sends for longer, or sends a pack
    that makes more than a fetch takes: one line says so, and no object of it, nor any
    ref, is stored here."""
    origin, a, b = hostile_replicas(tmp_path)
    with Repository.open(str(a)) as repo:
        for n in range(5):
            ops.create(repo, "notes", ME, f"more-{n}", "more", "x\n" * 50)
        repo.sync("origin")
        head = repo.head("notes")
    if bound == "size":
        monkeypatch.setattr(remote, "FETCH_MAX", 64)
        words = "it sent more than 0 MiB"
    elif bound == "time":
        monkeypatch.setattr(remote, "FETCH_SECONDS", -1)
        words = "it sent for more than -1 s"
    else:
        monkeypatch.setattr(packscan, "INFLATED_MAX", 64)
        words = "the remote's pack makes more than 64 bytes of objects"
    with Repository.open(str(b)) as repo:
        before = repo.head("notes")
    objects = sorted(p.name for p in (b / ".git" / "objects").rglob("*") if p.is_file())
    result = CliRunner().invoke(cli, ["--repo", str(b), "sync"])
    assert result.exit_code == 1, result.output
    assert f"cannot fetch from {origin}: {words}" in result.output
    with Repository.open(str(b)) as repo:
        assert repo.head("notes") == before != head
    assert sorted(p.name for p in (b / ".git" / "objects").rglob("*") if p.is_file()) == objects


def test_an_http_remote_that_stops_answering_is_given_up_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that takes the connection and never answers holds a sync no longer than
    ``SILENCE`` (a few tries of it): one line says the remote cannot be fetched from,
    and the store is as it was."""
    monkeypatch.setattr(remote, "SILENCE", 0.3)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def silent() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])  # taken, and never answered
            except TimeoutError:
                continue

    server = threading.Thread(target=silent, daemon=True)
    server.start()
    try:
        project = tmp_path / "project"
        make_project(project)
        with Repository.init(str(project)) as repo:
            ops.create(repo, "notes", ME, "todo", "open tasks", "- ship\n")
            before = repo.head("notes")
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/origin.git"
        sh(project, "remote", "add", "origin", url)
        results: list[Result] = []
        syncing = threading.Thread(
            target=lambda: results.append(
                CliRunner().invoke(cli, ["--repo", str(project), "sync"])
            ),
            daemon=True,
        )
        syncing.start()
        syncing.join(timeout=30)
        assert results, "the sync still waits for a remote that never answers"
        result = results[0]
        assert result.exit_code == 1, result.output
        assert result.output == (
            f"Error: cannot fetch from {url}: it did not answer within 0.3 s "
            "(or the http.timeout setting of the git config, where set)\n"
        )
        with Repository.open(str(project)) as repo:
            assert repo.head("notes") == before
    finally:
        stop.set()
        server.join()
        for connection in held:
            connection.close()
        listener.close()
