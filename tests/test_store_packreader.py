"""Reads straight from the packs: a reader that listed the pack folder still finds what
lands or moves after, and a memory looked up through its fan-out folder is the memory
a listing finds."""

from __future__ import annotations

import tracemalloc
import zlib
from pathlib import Path

import pytest
from dulwich.pack import write_pack_index_v2
from helpers_packs import Packer, blob_id, placed_far
from test_store_pushobjects import git, history

from gitmem import Author, Memory, Repository
from gitmem.lean.objects import entry_header
from gitmem.store import packreader, pushobjects
from gitmem.store.packreader import PackedObjects, Packs
from gitmem.types import Change

STORE = "profile/packs"
ME = Author.agent("tester")


def _write(repo: Repository, slug: str, body: str, code: str = "") -> None:
    memory = Memory(slug, f"{slug} described", body, code=code)
    repo.mutate(STORE, ME, lambda _: Change("write", slug, memory))


def test_a_pack_folder_that_changed_is_stale(tmp_path: Path) -> None:
    """A reader says its listing is stale once a pack lands in the folder."""
    with Repository.init(str(tmp_path / "r.git")) as repo:
        _write(repo, "first", "one\n")
        folder = str(tmp_path / "r.git" / "objects" / "pack")
        packs = Packs(folder)
        try:
            assert not packs.stale()
            _write(repo, "second", "two\n")
            assert packs.stale()
        finally:
            packs.close()


def test_a_reader_finds_what_another_writer_added_and_packed(tmp_path: Path) -> None:
    """Memories another process wrote after this one read the packs, and memories that
    packing then moved into one pack (the packs read first deleted), read as written."""
    path = str(tmp_path / "r.git")
    with Repository.init(path) as writer:
        _write(writer, "early", "before the reader\n")
    with Repository.open(path) as reader, Repository.open(path) as writer:
        assert [m.slug for m in reader.snapshot(STORE).memories()] == ["early"]
        for i in range(5):
            _write(writer, f"later-{i}", f"after the reader, {i}\n")
        fresh = reader.snapshot(STORE)
        assert fresh.get("later-4") == Memory(
            "later-4", "later-4 described", "after the reader, 4\n"
        )
        assert writer.pack() > 0
        _write(writer, "last", "after packing\n")
        got = {m.slug: m.body for m in reader.snapshot(STORE).memories()}
        assert got == {
            "early": "before the reader\n",
            **{f"later-{i}": f"after the reader, {i}\n" for i in range(5)},
            "last": "after packing\n",
        }
        assert [r.slug for r in reader.revisions(STORE)][-1] == "last"


def test_a_memory_looked_up_is_the_memory_listed(tmp_path: Path) -> None:
    """A memory found through its fan-out folder alone (with its code file, and a
    missing one absent) equals what the listing of every memory finds, in a fresh
    repository and after writes that built on the folder it parsed."""
    path = str(tmp_path / "r.git")
    with Repository.init(path) as repo:
        for i in range(30):
            _write(repo, f"m{i:02d}", f"body {i}\n", code="export default 1;\n" if i % 3 else "")
    with Repository.open(path) as repo:
        snapshot = repo.snapshot(STORE)
        looked_up = {f"m{i:02d}": snapshot.memory_files(f"m{i:02d}") for i in range(30)}
        assert snapshot.memory_files("absent") is None
        assert "absent" not in snapshot
        listed = repo.snapshot(STORE)
        assert looked_up == {slug: listed.memory_files(slug) for slug in listed.slugs()}
        assert all(
            files is not None and files.code
            for slug, files in looked_up.items()
            if int(slug[1:]) % 3
        )
        _write(repo, "m05", "rewritten\n")
        _write(repo, "m06", "rewritten too\n")
        after = repo.snapshot(STORE)
        assert after.get("m05") == Memory("m05", "m05 described", "rewritten\n")
        assert after.get("m04") == Memory(
            "m04", "m04 described", "body 4\n", code="export default 1;\n"
        )
        assert len(after.memories()) == 30


def test_memories_read_in_one_sweep_are_those_read_one_by_one(tmp_path: Path) -> None:
    """A whole store read pack by pack in offset order (code halves, descriptions JSON
    escapes, objects in several packs and loose) is the store read a memory at a time."""
    path = str(tmp_path / "r.git")
    with Repository.init(path) as repo:
        for i in range(12):
            _write(repo, f"m{i:02d}", f"body {i}\n", code="export const x = 1;\n" * (i % 2))
        repo.mutate(
            STORE, ME, lambda _: Change("write", "odd", Memory("odd", 'a "quoted"\tdé', "b\n"))
        )
        repo.pack()
        _write(repo, "after", "written after packing\n")
    with Repository.open(path) as repo:
        snapshot = repo.snapshot(STORE)
        swept = snapshot.memories()
        one_by_one = [snapshot.get(slug) for slug in snapshot.slugs()]
    assert swept == one_by_one
    assert len(swept) == 14 and swept[-1].description == 'a "quoted"\tdé'
    assert [m for m in swept if m.code] == [m for m in one_by_one if m and m.code] != []


def _chain(tmp_path: Path, depth: int, step: int) -> tuple[str, bytes]:
    """A repository whose pack holds a line of ``depth`` deltas, each on the one before
    and making ``step`` bytes of its own; its folder and the line's last object."""
    packer = Packer()
    at = packer.blob(b"x")
    for n in range(depth):
        at = packer.inserts(at, n.to_bytes(2, "big") * (step // 2))
    git(tmp_path, "init", "-q", "--bare", "r.git")
    git(tmp_path / "r.git", "index-pack", "--stdin", stdin=packer.pack(checksum=True))
    last = (depth - 1).to_bytes(2, "big") * (step // 2)
    return str(tmp_path / "r.git" / "objects" / "pack"), last


def test_a_chain_deeper_than_the_stack_reads(tmp_path: Path) -> None:
    """Git stores a chain of deltas as deep as a writer made it; each link is read in
    turn, not by a call per link."""
    folder, last = _chain(tmp_path, 3_000, 16)
    packs = Packs(folder, bounded=True)
    try:
        assert packs.read(blob_id(last)) == (3, last)
    finally:
        packs.close()


def test_what_a_pack_keeps_of_a_chain_is_bounded_in_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each link read is kept for the next read (a chain is read once, not per link),
    within a bound in bytes as well as in objects: a chain of a hundred deltas making
    256 KiB each, some kilobytes of pack, is never held whole."""
    monkeypatch.setattr(packreader, "_KEPT_BYTES", 1 << 20)
    folder, last = _chain(tmp_path, 100, 256 << 10)
    packs = Packs(folder, bounded=True)
    tracemalloc.start()
    try:
        assert packs.read(blob_id(last)) == (3, last)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        packs.close()
    assert peak < 4 << 20  # the line comes to 25 MiB


def _laid_down(folder: Path, name: str, packer: Packer, ids: list[bytes]) -> None:
    """``packer``'s pack written in ``folder`` with an index naming its entries ``ids``,
    as a writer other than git could lay them down (a pack whose deltas name bases it
    lacks, an index that names what it likes)."""
    data = packer.pack(checksum=True)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"pack-{name}.pack").write_bytes(data)
    ends = [*packer.starts[1:], len(data) - 20]
    entries = sorted(
        (sha, at, zlib.crc32(data[at:end]))
        for sha, at, end in zip(ids, packer.starts, ends, strict=True)
    )
    with open(folder / f"pack-{name}.idx", "wb") as f:
        write_pack_index_v2(f, entries, data[-20:])


@pytest.mark.parametrize("where", ["this pack", "another pack", "elsewhere"])
def test_a_chain_on_a_delta_whose_base_is_named_by_id_reads_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """Its base in its own pack (as git writes a pack for a client that takes no
    offsets), in another, or elsewhere (a loose object, read by the reader's caller):
    the chain is read here, one delta at a time, not handed whole to dulwich (which
    holds every delta of a chain at once)."""
    monkeypatch.setattr(packreader, "_KEPT_BYTES", 1 << 20)
    base = b"x" * 1_000
    links = [n.to_bytes(2, "big") * (128 << 10) for n in range(40)]
    folder = tmp_path / "pack"
    packer = Packer()
    ids: list[bytes] = []
    if where == "this pack":
        packer.blob(base)
        ids.append(blob_id(base))
    elif where == "another pack":
        first = Packer()
        first.blob(base)
        _laid_down(folder, "b", first, [blob_id(base)])
    at = packer.delta_by_id(blob_id(base), len(base), 4_000)
    ids.append(blob_id(b"x" * 4_000))
    for link in links:
        at = packer.inserts(at, link)
        ids.append(blob_id(link))
    _laid_down(folder, "c", packer, ids)
    loose = {blob_id(base).hex(): (3, base)}.get if where == "elsewhere" else None
    packs = Packs(str(folder), bounded=True, elsewhere=loose)
    tracemalloc.start()
    try:
        assert packs.read(blob_id(links[-1])) == (3, links[-1])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        packs.close()
    assert peak < 4 << 20  # the chain's deltas come to 10 MiB


def test_a_delta_named_as_its_own_base_does_not_read(tmp_path: Path) -> None:
    """An index may name a delta as the base it names: the read stops after a bounded
    number of such steps and says the object does not read."""
    packer = Packer()
    packer.blob(b"x")
    loop = bytes.fromhex("ab" * 20)
    packer.delta_by_id(loop, 1, 1)
    folder = tmp_path / "pack"
    _laid_down(folder, "a", packer, [blob_id(b"x"), loop])
    packs = Packs(str(folder), bounded=True)
    try:
        with pytest.raises(ValueError, match="names bases by id past 64 times"):
            packs.read(loop)
    finally:
        packs.close()


def test_an_object_placed_past_2_gib_is_read_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the index's table of 8-byte offsets, as git places an object past 2 GiB
    of its pack: read here, and held to the bound, like any other."""
    monkeypatch.setattr(pushobjects, "OBJECT_MAX", 1_000)
    small, big = b"fits\n", b"x" * 5_000
    names = placed_far(tmp_path / "pack", small, big)
    packs = Packs(str(tmp_path / "pack"), bounded=True)
    try:
        assert packs.read(names[0]) == (3, small)
        with pytest.raises(ValueError, match="holds 5,000 bytes"):
            packs.read(names[1])
    finally:
        packs.close()


def test_what_a_bounded_reader_makes_over_all_its_reads_is_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each object is held to the bound, but a line of deltas read link by link, last
    first, makes far more than the pack holds: the reads stop once all they made comes
    to ``MADE_MAX``, and say so."""
    monkeypatch.setattr(packreader, "_KEPT_BYTES", 1 << 20)
    folder, _ = _chain(tmp_path, 40, 256 << 10)
    links = [n.to_bytes(2, "big") * (128 << 10) for n in range(40)]
    # read once, the line makes 40 links of 256 KiB, and their deltas as much again
    monkeypatch.setattr(pushobjects, "MADE_MAX", 24 << 20)
    packs = Packs(folder, bounded=True)
    try:
        assert packs.read(blob_id(links[-1])) == (3, links[-1])
        with pytest.raises(ValueError, match="made more than 25,165,824 bytes"):
            for link in reversed(links):  # each link's chain again, the kept ones gone
                assert packs.read(blob_id(link)) == (3, link)
    finally:
        packs.close()


@pytest.mark.parametrize("deltas", ["by offset", "by id"])
def test_a_size_is_read_from_the_entry_without_inflating_the_object(
    tmp_path: Path, deltas: str
) -> None:
    """Each object's size, packed whole, as a delta on its base by offset or by id, or
    loose, is the size git gives, read from the entry's header or the delta's first
    bytes: a reader passes over a file too large to read without reading it."""
    path = history(tmp_path / "h")
    offsets = "true" if deltas == "by offset" else "false"
    git(path, "-c", f"repack.useDeltaBaseOffset={offsets}", "repack", "-a", "-d", "-f", "-q")
    (path / "loose.md").write_text("a loose object\n")
    loose = git(path, "hash-object", "-w", "loose.md").decode().strip()
    listed = git(
        path, "cat-file", "--batch-all-objects", "--batch-check=%(objectname) %(objectsize)"
    )
    sizes = dict(line.split() for line in listed.decode().splitlines())
    assert loose in sizes
    packed = PackedObjects(str(path / ".git" / "objects" / "pack"))
    try:
        assert {sha: packed.size(sha) for sha in sizes} == {s: int(n) for s, n in sizes.items()}
        folder = packed._packs.packs  # pyright: ignore[reportPrivateUsage, reportOptionalMemberAccess]
        kinds = {entry_header(p._data, at)[0] for p in folder for at in p.table().values()}  # pyright: ignore[reportPrivateUsage]
        assert (6 if deltas == "by offset" else 7) in kinds  # deltas were sized
        inflated: list[int] = []
        real = zlib.decompressobj

        class Counting:
            def __init__(self) -> None:
                self._inner = real()

            def decompress(self, data: bytes, max_length: int = 0) -> bytes:
                out = self._inner.decompress(data, max_length)
                inflated.append(len(out))
                return out

            def __getattr__(self, name: str) -> object:
                return getattr(self._inner, name)

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(zlib, "decompressobj", Counting)
            for sha in sizes:
                packed.size(sha)
        assert max(inflated) <= 32  # a delta's header, a loose object's: never more
    finally:
        packed.forget()
