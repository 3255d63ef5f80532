"""The write path: a commit's new objects as one fsynced pack, and packs combined past a limit."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from conftest import assert_fsck, git
from dulwich.refs import Ref

from gitmem import Author, Memory, Repository
from gitmem.store import packing
from gitmem.types import Change, Edit

STORE = "profile/packing"
ALICE = Author.agent("alice")


def _write(repo: Repository, slug: str, body: str, **extra: str) -> None:
    memory = Memory(slug, "d", body, **extra)
    repo.mutate(STORE, ALICE, lambda _: Change("write", slug, memory))


def _pack_dir(repo: Repository) -> str:
    return os.path.join(repo.directory, "objects", "pack")


def _packs(repo: Repository) -> list[str]:
    return sorted(n for n in os.listdir(_pack_dir(repo)) if n.endswith(".pack"))


def _loose(repo: Repository) -> list[str]:
    objects = os.path.join(repo.directory, "objects")
    return [
        d + n
        for d in os.listdir(objects)
        if len(d) == 2
        for n in os.listdir(os.path.join(objects, d))
    ]


def test_a_write_adds_one_pack_and_no_loose_object(repo: Repository) -> None:
    """Each commit's blobs, trees and commit land in one new pack with its index."""
    _write(repo, "a", "one")
    before = _packs(repo)
    _write(repo, "b", "two", code="export default 1", on_use="run()")
    after = _packs(repo)
    assert len(after) == len(before) + 1
    new = os.path.join(_pack_dir(repo), next(n for n in after if n not in before))
    assert os.path.exists(new[: -len(".pack")] + ".idx")
    listed = git(repo.directory, "verify-pack", "-v", new[: -len(".pack")] + ".idx").stdout
    rows = [line.split() for line in listed.splitlines()]
    kinds = [row[1] for row in rows if row and len(row[0]) == 40]
    assert sorted(kinds) == ["blob", "blob", "blob", "commit", "tree", "tree"]
    assert _loose(repo) == []
    assert not [n for n in os.listdir(_pack_dir(repo)) if n.startswith("tmp_")]
    assert_fsck(repo.directory)


def test_the_fsyncs_of_a_write_do_not_grow_with_its_objects(
    repo: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A commit of one blob and one of many cost the same fsyncs: pack, index and ref
    lock file (one flush), pack folder, ref folder."""
    _write(repo, "seed", "x")
    calls: list[int] = []
    real = os.fsync

    def counting(fd: int) -> None:
        calls.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fsync", counting)
    _write(repo, "small", "one blob")
    small = len(calls)
    calls.clear()
    memories = [Memory(f"many-{i}", "d", f"body {i}", "code()", "use()") for i in range(8)]
    also = tuple(Edit("create", m.slug, m) for m in memories[1:])
    repo.mutate(STORE, ALICE, lambda _: Change("create", "many-0", memories[0], also=also))
    assert small == len(calls) == 5
    assert repo.snapshot(STORE).get("many-7") == memories[7]


def test_packs_past_the_limit_are_combined(repo: Repository) -> None:
    """Writes never leave more than PACK_LIMIT packs; combining keeps every revision."""
    most = 0
    for i in range(packing.PACK_LIMIT + 6):
        _write(repo, f"m{i % 5}", f"body {i}")
        most = max(most, len(_packs(repo)))
    assert most == packing.PACK_LIMIT
    assert len(_packs(repo)) < packing.PACK_LIMIT // 2
    fresh = Repository.open(repo.directory)
    assert [r.body for r in fresh.revisions(STORE)] == [
        f"body {i}" for i in range(packing.PACK_LIMIT + 6)
    ]
    assert_fsck(repo.directory)


@pytest.mark.parametrize(
    ("counts", "kept"),
    [
        ([5] * packing.PACK_LIMIT, [5] * packing.PACK_LIMIT),  # at the limit: nothing to do
        ([5] * (packing.PACK_LIMIT + 1) + [10_000], [10_000]),  # the small ones roll up
        ([5] * (packing.PACK_LIMIT + 1) + [100, 10_000], [10_000]),
        ([5] * (packing.PACK_LIMIT + 1) + [1_000, 10_000], [1_000, 10_000]),
        ([5] * (packing.PACK_LIMIT + 1) + [150], []),  # 165 + 150: all of it
    ],
)
def test_roll_up_leaves_a_geometric_progression(counts: list[int], kept: list[int]) -> None:
    """The packs left uncombined each hold at least twice the objects of the one below,
    and twice what was combined, as git repack --geometric=2 leaves them."""
    packs = {f"pack-{i:03d}": n for i, n in enumerate(counts)}
    chosen = set(packing._roll_up(packs))  # pyright: ignore[reportPrivateUsage]
    assert sorted(n for name, n in packs.items() if name not in chosen) == kept


def test_another_reader_sees_new_packs_and_outlives_combining(repo: Repository) -> None:
    """A Repository opened before others wrote and combined packs reads everything."""
    _write(repo, "a", "first")
    reader = Repository.open(repo.directory)
    assert reader.snapshot(STORE).get("a") is not None  # its pack list is now cached
    writer = Repository.open(repo.directory)
    for i in range(6):
        _write(writer, "a", f"body {i}")
    assert reader.snapshot(STORE).get("a").body == "body 5"  # type: ignore[union-attr]
    assert writer.pack() > 0
    assert len(_packs(repo)) == 1
    assert [r.body for r in reader.revisions(STORE, "a")] == ["first"] + [
        f"body {i}" for i in range(6)
    ]
    _write(reader, "b", "written by the reader")
    assert writer.snapshot(STORE).get("b") is not None
    assert_fsck(repo.directory)


def test_git_gc_accepts_the_packs_and_gitmem_reads_after_it(repo: Repository) -> None:
    """A user's git gc repacks gitmem's packs with deltas; gitmem reads, writes and
    combines them (resolving the deltas) afterwards."""
    text = "".join(f"line {i}: the same long text again and again\n" for i in range(60))
    for i in range(5):
        _write(repo, "m", text + f"revision {i}\n")
    result = git(repo.directory, "gc", "--quiet")
    assert result.returncode == 0, result.stderr
    assert len(_packs(repo)) == 1
    index = os.path.join(_pack_dir(repo), _packs(repo)[0][: -len(".pack")] + ".idx")
    rows = [
        line.split() for line in git(repo.directory, "verify-pack", "-v", index).stdout.splitlines()
    ]
    assert any(len(row) == 7 and len(row[0]) == 40 for row in rows)  # git made deltas
    fresh = Repository.open(repo.directory)
    assert len(fresh.revisions(STORE)) == 5
    _write(fresh, "m", "after gc")
    assert fresh.pack() > 0
    assert len(_packs(repo)) == 1
    again = Repository.open(repo.directory)
    assert [r.body for r in again.revisions(STORE)] == [
        text + f"revision {i}\n" for i in range(5)
    ] + ["after gc"]
    assert_fsck(repo.directory)


def test_a_killed_writers_leftovers_go_once_old(repo: Repository) -> None:
    """Temporary files and an index-less pack are removed by packing once an hour old,
    never while young (a live writer may be between writing and renaming them)."""
    _write(repo, "a", "x")
    _write(repo, "b", "y")
    pack_dir = Path(_pack_dir(repo))
    old = [
        pack_dir / "tmp_gitmem_pack_0123456789abcdef",
        pack_dir / "tmp_gitmem_idx_0123456789abcdef",
        pack_dir / "tmp_pack_AbCdEf",
        pack_dir / ("pack-" + "ab" * 20 + ".pack"),
    ]
    young = pack_dir / "tmp_gitmem_pack_fedcba9876543210"
    for path in [*old, young]:
        path.write_bytes(b"half written")
    stale = time.time() - packing.STALE_SECONDS - 60
    for path in old:
        os.utime(path, (stale, stale))
    assert repo.pack() > 0
    assert [p for p in old if p.exists()] == []
    assert young.exists()
    assert Repository.open(repo.directory).snapshot(STORE).get("b").body == "y"  # type: ignore[union-attr]
    assert_fsck(repo.directory)


def test_a_failed_write_leaves_no_pack(repo: Repository, monkeypatch: pytest.MonkeyPatch) -> None:
    """An error while the pack is written leaves neither a pack nor a temporary file."""
    _write(repo, "a", "x")
    before = sorted(os.listdir(_pack_dir(repo)))

    def broken(src: str, dst: str) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "rename", broken)
    with pytest.raises(Exception, match="Input/output error"):
        _write(repo, "b", "y")
    monkeypatch.undo()
    assert sorted(os.listdir(_pack_dir(repo))) == before
    assert repo.snapshot(STORE).get("b") is None


def test_a_branch_in_packed_refs_still_moves(repo: Repository) -> None:
    """After git pack-refs moves the branch into packed-refs, writes still compare and swap it."""
    _write(repo, "a", "one")
    _write(repo, "a", "two")
    result = git(repo.directory, "pack-refs", "--all")
    assert result.returncode == 0, result.stderr
    assert not Path(repo.directory, "refs", "heads", *STORE.split("/")).exists()
    _write(repo, "a", "three")
    _write(repo, "b", "four")
    fresh = Repository.open(repo.directory)
    assert [r.body for r in fresh.revisions(STORE)] == ["one", "two", "three", "four"]
    assert_fsck(repo.directory)


def test_the_swap_refuses_a_head_moved_by_another_program(
    repo: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git moving the branch after gitmem checked it and before gitmem takes the ref's
    lock file makes the swap fail, leaving no pack behind; the change is built again on
    git's commit, so neither update is lost."""
    _write(repo, "a", "one")
    ref = "refs/heads/" + STORE
    refs = repo._refs  # pyright: ignore[reportPrivateUsage]
    real = refs.swap
    moved: list[str] = []
    packs: list[list[str]] = []

    def racing(*args: object) -> bool:
        if not moved:  # git does not take gitmem's flock: it can move the ref right now
            head = git(repo.directory, "rev-parse", ref).stdout.strip()
            tree = f"{head}^{{tree}}"
            who = ("-c", "user.name=git", "-c", "user.email=git@example.invalid")
            made = git(repo.directory, *who, "commit-tree", tree, "-p", head, "-m", "by git")
            assert made.returncode == 0, made.stderr
            commit = made.stdout.strip()
            assert git(repo.directory, "update-ref", ref, commit, head).returncode == 0
            moved.append(commit)
            packs.append(sorted(os.listdir(_pack_dir(repo))))
            swapped = real(*args)  # type: ignore[arg-type]
            assert not swapped
            assert sorted(os.listdir(_pack_dir(repo))) == packs[0]  # nothing written
            return swapped
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(refs, "swap", racing)
    _write(repo, "a", "two")
    head = git(repo.directory, "rev-parse", ref).stdout.strip()
    parent = git(repo.directory, "rev-parse", f"{head}^").stdout.strip()
    assert parent == moved[0]
    assert repo.snapshot(STORE).get("a").body == "two"  # type: ignore[union-attr]
    assert_fsck(repo.directory)


def test_two_refs_move_by_one_swap_or_not_at_all(repo: Repository) -> None:
    """A swap of two refs moves both only if each still names what the caller read:
    one moved by another leaves both as they were, with no lock file and no pack
    left; a ref held still keeps its commit while the other moves."""
    _write(repo, "a", "one")
    first = repo.head(STORE)
    _write(repo, "a", "two")
    second = repo.head(STORE)
    assert first is not None and second is not None
    refs = repo._refs  # pyright: ignore[reportPrivateUsage]
    store = Ref(("refs/heads/" + STORE).encode())
    other = Ref(b"refs/gitmem/proposals/x/y")
    packs = sorted(os.listdir(_pack_dir(repo)))
    with repo._lock.held():  # pyright: ignore[reportPrivateUsage]
        assert refs.swap_all([(store, second, first), (other, None, second)])
        assert refs.read(store) == first and refs.read(other) == second
        assert not refs.swap_all([(store, second, second), (other, second, first)])
        assert refs.read(store) == first and refs.read(other) == second
        assert refs.swap_all([(other, second, first), (store, first, first)])
    assert refs.read(store) == first and refs.read(other) == first
    assert not list((Path(repo.directory) / "refs").rglob("*.lock"))
    assert sorted(os.listdir(_pack_dir(repo))) == packs
    assert_fsck(repo.directory)


def test_the_index_dulwich_reads_back_with_offsets_past_2_gib(tmp_path: Path) -> None:
    """The pack index gitmem writes reads back in dulwich, 8-byte offsets included."""
    from dulwich.object_format import DEFAULT_OBJECT_FORMAT
    from dulwich.pack import load_pack_index

    entries = [(bytes([i]) * 20, offset, 7 * i) for i, offset in enumerate([12, 2**31, 2**33 + 5])]
    path = tmp_path / "x.idx"
    path.write_bytes(packing._index(entries, b"\x01" * 20))  # pyright: ignore[reportPrivateUsage]
    index = load_pack_index(str(path), DEFAULT_OBJECT_FORMAT)
    index.check()
    assert [index.object_offset(sha) for sha, _, _ in entries] == [12, 2**31, 2**33 + 5]
    assert index.get_pack_checksum() == b"\x01" * 20


@pytest.mark.parametrize("size", [0, 15, 16, 2047, 2048, 300_000])
def test_objects_of_every_header_length_read_back(repo: Repository, size: int) -> None:
    """Object sizes whose packed header takes one to three bytes read back exactly."""
    body = "x" * size
    _write(repo, "sized", body)
    assert Repository.open(repo.directory).snapshot(STORE).get("sized").body == body  # type: ignore[union-attr]
    assert_fsck(repo.directory)


def test_the_one_writer_packs_offset_and_ref_deltas_git_reads(tmp_path: Path) -> None:
    """``write_pack`` writes whole objects, a delta whose base comes earlier (an offset
    delta) and one whose base comes later (a ref delta); git and dulwich read all back."""
    from dulwich.object_format import DEFAULT_OBJECT_FORMAT
    from dulwich.objects import Blob
    from dulwich.pack import Pack

    from gitmem.store.transfer import _delta  # pyright: ignore[reportPrivateUsage]

    repo = tmp_path / "r.git"
    git(repo, "init", "-q", "--bare")
    objects_dir = str(repo / "objects")
    base = Blob.from_string(b"line one\n" * 50)
    edited = Blob.from_string(b"line one\n" * 49 + b"line two\n")
    before = Blob.from_string(b"line zero\n" + b"line one\n" * 49)
    to_edited = _delta(base.data, edited.data)
    to_before = _delta(base.data, before.data)
    assert to_edited is not None and to_before is not None
    records: list[packing.Record] = [
        (3, to_before, before.sha().digest(), base.sha().digest()),  # base not yet written
        (3, base.data, base.sha().digest(), None),
        (3, to_edited, edited.sha().digest(), base.sha().digest()),  # base earlier
    ]
    pack_dir = packing.write_pack(objects_dir, records, len(records))
    (idx,) = [n for n in os.listdir(pack_dir) if n.endswith(".idx")]
    listed = git(repo, "verify-pack", "-v", os.path.join(pack_dir, idx)).stdout
    assert "chain length = 1: 2 objects" in listed
    pack = Pack(os.path.join(pack_dir, idx[: -len(".idx")]), object_format=DEFAULT_OBJECT_FORMAT)
    try:
        kinds = {
            sha: pack.data.get_unpacked_object_at(off).pack_type_num
            for sha, off, _ in pack.index.iterentries()
        }
        assert kinds[before.sha().digest()] == 7  # REF_DELTA
        assert kinds[edited.sha().digest()] == 6  # OFS_DELTA
        for blob in (base, edited, before):
            assert pack[blob.id].as_raw_string() == blob.data
    finally:
        pack.close()
    assert not [n for n in os.listdir(pack_dir) if n.startswith("tmp_")]
