"""Copying history between repositories on this machine (``gitmem.store.transfer``):
raw objects, one pack whose index is written as it is written, trees as deltas."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import zlib
from pathlib import Path

import pytest
from conftest import assert_fsck
from dulwich.objects import ObjectID, Tree, parse_tree
from dulwich.pack import apply_delta, create_delta
from dulwich.repo import Repo
from helpers_sync import ME, STORE, sh
from hypothesis import given, settings
from hypothesis import strategies as st

from gitmem import Memory, RemoteError, Repository
from gitmem.store.packreader import Packs
from gitmem.store.transfer import (  # pyright: ignore[reportPrivateUsage]
    _delta,
    _delta_between,
    _RawReader,
    _TreeCache,
    copy_history,
)
from gitmem.store.trees import Trees
from gitmem.types import Change

BRANCH = f"refs/heads/{STORE}"


def _write(repo: Repository, slug: str, body: str) -> str:
    memory = Memory(slug, f"about {slug}", body)
    op = "edit" if repo.snapshot(STORE).get(slug) else "create"
    return repo.mutate(STORE, ME, lambda _: Change(op, slug, memory)).commit


def _head(path: Path) -> str:
    return sh(path, "rev-parse", BRANCH).strip()


def _deltas(path: Path) -> int:
    """How many objects the packs of ``path`` hold as deltas (git's own count)."""
    found = 0
    for idx in (path / "objects" / "pack").glob("*.idx"):
        out = sh(path, "verify-pack", "-v", str(idx))
        found += sum(1 for line in out.splitlines() if line.count(" ") >= 6 and "tree" in line)
    return found


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    """A standalone store with 40 memories, and an empty bare repository."""
    source = tmp_path / "source"
    with Repository.init(str(source)) as repo:
        for i in range(40):
            _write(repo, f"m{i:02d}", f"memory {i}\n")
    target = tmp_path / "target.git"
    sh(tmp_path, "init", "-q", "--bare", str(target))
    return source, target


def test_copies_the_whole_history_once_then_nothing(pair: tuple[Path, Path]) -> None:
    """Everything reachable arrives in one pack git accepts; a second copy copies nothing."""
    source, target = pair
    head = _head(source)
    with Repo(str(source)) as src, Repo(str(target)) as dst:
        copied = copy_history(src, dst, [head])
        assert copy_history(src, dst, [head]) == 0
    assert copied == len(sh(source, "rev-list", "--objects", BRANCH).splitlines())
    assert len(list((target / "objects" / "pack").glob("*.idx"))) == 1
    sh(target, "update-ref", BRANCH, head)
    assert_fsck(target)
    sh(target, "verify-pack", str(next((target / "objects" / "pack").glob("*.idx"))))


def test_sends_only_what_is_new_with_trees_as_deltas(pair: tuple[Path, Path]) -> None:
    """After a first copy, ten more commits send their own objects only; their root and
    fan-out trees travel as deltas against their parents' (git reads them back)."""
    source, target = pair
    with Repo(str(source)) as src, Repo(str(target)) as dst:
        copy_history(src, dst, [_head(source)])
    before = _head(source)
    with Repository.open(str(source)) as repo:
        for i in range(10):
            _write(repo, f"m{i * 3:02d}", f"memory {i} changed\n")
    with Repo(str(source)) as src, Repo(str(target)) as dst:
        copied = copy_history(src, dst, [_head(source)])
    new = sh(source, "rev-list", "--objects", BRANCH, f"^{before}").splitlines()
    assert copied == len(new)  # a commit, its root tree, its fan-out tree, its blob
    assert _deltas(target) >= 9  # every root tree after the first of the pack
    sh(target, "update-ref", BRANCH, _head(source))
    assert_fsck(target)
    with Repository.open(str(source)) as repo:
        memories = {m.slug: m.body for m in repo.snapshot(STORE).memories()}
    listed = sh(target, "ls-tree", "-r", BRANCH).splitlines()
    assert len(listed) == len(memories) == 40


def test_a_merge_commit_brings_both_parents(pair: tuple[Path, Path]) -> None:
    """A history with a merge (both sides unknown to the target) arrives whole."""
    source, target = pair
    clone = source.parent / "clone"
    shutil.copytree(source, clone)
    with Repository.open(str(source)) as repo:
        _write(repo, "m01", "ours\n")
    with Repository.open(str(clone)) as other:
        _write(other, "m02", "theirs\n")
    with Repository.open(str(source)) as repo:
        sh(source, "remote", "add", "other", str(clone))
        [report] = repo.sync("other")
        assert report.merged
    with Repo(str(source)) as src, Repo(str(target)) as dst:
        copy_history(src, dst, [_head(source)])
    sh(target, "update-ref", BRANCH, _head(source))
    assert_fsck(target)


def test_a_damaged_object_is_refused_and_nothing_lands(pair: tuple[Path, Path]) -> None:
    """A loose object whose content is not what its name says stops the copy with a
    clear error; the target gets no pack."""
    source, target = pair
    with Repository.open(str(source)) as repo:
        head = _write(repo, "m00", "to be damaged\n")
        path = repo.path(STORE, "m00")
    sha = sh(source, "rev-parse", f"{BRANCH}:{path}").strip()
    _refused_everywhere(source, target, head, sha, b"blob 5\x00wrong")


def _refused_everywhere(source: Path, target: Path, head: str, sha: str, impostor: bytes) -> None:
    """With everything in ``source`` packed and then ``impostor`` (a loose object's
    text) planted as ``sha``: a plain copy refuses it and lands nothing, and through a
    sync the same is one clear remote error."""
    sh(source, "repack", "-q", "-a", "-d")
    loose = source / "objects" / sha[:2] / sha[2:]
    loose.parent.mkdir(exist_ok=True)
    loose.write_bytes(zlib.compress(impostor))
    with Repo(str(source)) as src, Repo(str(target)) as dst, pytest.raises(ValueError, match=sha):
        copy_history(src, dst, [head])
    assert not list((target / "objects" / "pack").glob("*"))
    with Repository.init(str(source.parent / "fresh")) as fresh:
        with pytest.raises(RemoteError, match=f"cannot fetch from .*{sha}"):
            fresh.sync(str(source))
        assert fresh.stores() == []


def test_a_damaged_tree_is_refused_whether_or_not_a_sync_shares_it(
    pair: tuple[Path, Path],
) -> None:
    """A fan-out folder's tree whose content is not what its name says (one that
    parses) stops a plain copy and a sync's fetch alike, where the sync's readers
    share what the copy reads (each tree is hashed once there): nothing lands."""
    source, target = pair
    head = _head(source)
    folder = _path(source, "m07").split("/")[0]
    sha = sh(source, "rev-parse", f"{BRANCH}:{folder}").strip()
    other = sh(source, "rev-parse", f"{BRANCH}:{_path(source, 'm08')}").strip()
    # still a tree, naming objects the source holds, but not the tree of this name
    made = Tree()
    for name, mode, _ in parse_tree(_cat(source, sha), 20):
        made.add(name, mode, ObjectID(other.encode()))
    damaged = made.as_raw_string()
    assert damaged != _cat(source, sha)
    _refused_everywhere(source, target, head, sha, b"tree %d\x00" % len(damaged) + damaged)


@pytest.mark.parametrize("seed", range(40))
def test_a_delta_rebuilds_its_target(seed: int) -> None:
    """Copying the common head and tail and inserting the rest makes the target again,
    whatever the edit (at the start, the end, the middle, growing or shrinking), in no
    more than the inserted bytes and a few instructions."""
    rng = random.Random(seed)
    source = rng.randbytes(rng.randrange(0, 140_000 if seed % 10 == 0 else 3_000))
    start = rng.randrange(0, len(source) + 1)
    end = rng.randrange(start, min(len(source), start + 500) + 1)
    inserted = rng.randbytes(rng.randrange(0, 300))
    target = source[:start] + inserted + source[end:]
    delta = _delta(source, target)
    if delta is None:  # refused only when the part to insert is over half the target
        assert 2 * len(inserted) > len(target)
        return
    assert b"".join(apply_delta(source, delta)) == target
    assert len(delta) <= len(inserted) + 40 + 8 * (len(target) // 0xFFFF + 1)


@settings(derandomize=True, max_examples=50, deadline=None)
@given(changed=st.lists(st.integers(0, 255), min_size=1, max_size=3, unique=True))
def test_a_root_trees_delta_is_as_small_as_its_change(changed: list[int]) -> None:
    """A root tree of 256 folders with one to three entries swapped: the head-and-tail
    delta makes it again, byte for byte what dulwich's applies, costing the middle and
    a few instructions (dulwich's own delta, for scale, costs the changed entries)."""
    old = Tree()
    for i in range(256):
        old.add(f"{i:02x}".encode(), 0o040000, ObjectID((bytes([i]) * 20).hex().encode()))
    new = Tree.from_string(old.as_raw_string())
    for i in changed:
        new.add(f"{i:02x}".encode(), 0o040000, ObjectID(b"ab" * 20))
    source, target = old.as_raw_string(), new.as_raw_string()
    head = next(i for i, (a, b) in enumerate(zip(source, target, strict=True)) if a != b)
    tail = next(
        i for i, (a, b) in enumerate(zip(source[::-1], target[::-1], strict=True)) if a != b
    )
    ours = _delta_between(source, target, head, tail)
    assert ours == _delta(source, target)
    theirs = b"".join(create_delta(source, target))
    assert b"".join(apply_delta(source, theirs)) == target
    assert len(theirs) <= len(changed) * (20 + 2 + 8) + 8
    middle = len(target) - head - tail  # inserted in runs of 127, each after its length
    if ours is None:  # refused only when the part to insert is over half the tree
        assert middle * 2 > len(target)
        return
    assert b"".join(apply_delta(source, ours)) == target
    assert len(ours) <= middle + middle // 127 + 1 + 2 * 8 + 8


def test_sync_through_a_local_path_leaves_both_sides_valid(tmp_path: Path) -> None:
    """Two replicas syncing through a bare origin on a local path: both heads equal,
    every repository passes ``git fsck --strict`` and ``git verify-pack``."""
    a, b = tmp_path / "a", tmp_path / "b"
    with Repository.init(str(a)) as ra:
        for i in range(30):
            _write(ra, f"s{i:02d}", "base\n")
    origin = tmp_path / "origin.git"
    sh(tmp_path, "clone", "-q", "--bare", str(a), str(origin))
    shutil.copytree(a, b)
    for path in (a, b):
        sh(path, "remote", "add", "origin", str(origin))
    with Repository.open(str(a)) as ra, Repository.open(str(b)) as rb:
        for i in range(12):
            _write(ra, f"s{i:02d}", f"a {i}\n")
            _write(rb, f"s{29 - i:02d}", f"b {i}\n")
        ra.sync("origin")
        [report] = rb.sync("origin")
        assert report.merged and report.pushed and not report.conflicts
        [again] = ra.sync("origin")
        assert again.head == report.head
        snapshot = ra.snapshot(STORE)
        assert {m.slug: m.body for m in snapshot.memories()} == {
            f"s{i:02d}": (f"a {i}\n" if i < 12 else f"b {29 - i}\n" if i >= 18 else "base\n")
            for i in range(30)
        }
    for path in (a, b, origin):
        assert_fsck(path)
        for idx in (path / "objects" / "pack").glob("*.idx"):
            result = subprocess.run(
                ["git", "verify-pack", str(idx)], capture_output=True, text=True, check=False
            )
            assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("sync_folder", [True, False])
def test_a_copy_is_as_durable_as_a_commit(
    pair: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, sync_folder: bool
) -> None:
    """The copy goes through packing's one writer: pack and index fsynced, the pack
    renamed into place first, then the folder fsynced unless the caller does it."""
    source, target = pair
    synced: list[str] = []
    renamed: list[str] = []
    real_fsync, real_rename = os.fsync, os.rename

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    def rename(old: str, new: str) -> None:
        renamed.append(new)
        real_rename(old, new)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "rename", rename)
    with Repo(str(source)) as src, Repo(str(target)) as dst:
        copy_history(src, dst, [_head(source)], sync_folder=sync_folder)
    pack_dir = str(target / "objects" / "pack")
    assert [os.path.splitext(n)[1] for n in renamed] == [".pack", ".idx"]
    files = sorted(os.path.basename(p) for p in synced if p != pack_dir)
    assert len(files) == 2 and all(n.startswith("tmp_gitmem_") for n in files)
    assert synced.count(pack_dir) == (1 if sync_folder else 0)
    assert not [n for n in os.listdir(pack_dir) if n.startswith("tmp_")]


def test_the_pack_reader_reads_what_dulwich_reads(pair: tuple[Path, Path]) -> None:
    """Every object of a pack git wrote with deltas (offset deltas, chains) reads the
    same through the mapped reader as through dulwich; an object it lacks is ``None``."""
    source, _ = pair
    with Repository.open(str(source)) as repo:
        for i in range(20):
            _write(repo, f"m{i:02d}", f"memory {i}\n" + "the same long line\n" * 40 + f"{i}\n")
    sh(source, "repack", "-q", "-a", "-d", "-f", "--depth=20", "--window=50")
    listed = sh(source, "rev-list", "--objects", "--all").split()
    ids = sorted({line for line in listed if len(line) == 40})
    assert _deltas(source) > 0
    packs = Packs(str(source / "objects" / "pack"))
    try:
        with Repo(str(source)) as repo:
            for sha in ids:
                found = packs.get(bytes.fromhex(sha))
                assert found is not None
                kind, content, packed = found
                assert (kind, content) == repo.object_store.get_raw(sha.encode())  # type: ignore[arg-type]
                if packed:  # held whole: its header and zlib stream, as the pack has it
                    start = 1
                    while packed[start - 1] & 0x80:  # the type-and-size header's bytes
                        start += 1
                    assert zlib.decompressobj().decompress(packed[start:]) == content
        assert packs.get(b"\x00" * 20) is None
        assert bytes.fromhex(ids[0]) in packs
    finally:
        packs.close()


def test_a_damaged_pack_entry_is_refused_and_nothing_lands(pair: tuple[Path, Path]) -> None:
    """A blob whose packed bytes were damaged on disk stops the copy with a clear error
    naming it (its zlib stream or its id does not check), and the target gets no pack;
    objects that travel as they are packed are checked all the same."""
    source, target = pair
    head = _head(source)
    sha = sh(source, "rev-parse", f"{BRANCH}:{_path(source, 'm07')}").strip()
    sh(source, "repack", "-q", "-a", "-d")
    [idx] = (source / "objects" / "pack").glob("*.idx")
    offsets = {
        line.split()[0]: int(line.split()[4])
        for line in sh(source, "verify-pack", "-v", str(idx)).splitlines()
        if len(line.split()) >= 5 and len(line.split()[0]) == 40
    }
    pack = idx.with_suffix(".pack")
    data = bytearray(pack.read_bytes())
    at = offsets[sha] + 6  # inside the zlib stream of a small blob
    data[at] ^= 0xFF
    pack.chmod(0o644)
    pack.write_bytes(bytes(data))
    with Repo(str(source)) as src, Repo(str(target)) as dst, pytest.raises(ValueError, match=sha):
        copy_history(src, dst, [head])
    assert not list((target / "objects" / "pack").glob("*"))


def _cat(path: Path, sha: str) -> bytes:
    return subprocess.run(
        ["git", "cat-file", "tree", sha], cwd=path, check=True, capture_output=True
    ).stdout


def _path(source: Path, slug: str) -> str:
    with Repository.open(str(source)) as repo:
        return repo.path(STORE, slug)


@pytest.mark.parametrize("seed", range(60))
def test_a_trees_change_is_found_between_its_common_head_and_tail(seed: int) -> None:
    """Parsing only the entries between a tree's common head and tail with its parent
    finds exactly what a whole parse finds: the new entries, the parent's entries they
    replace, and where each of the child's entries starts (so its own child can be
    compared the same way), whatever entries were added, removed or changed."""
    rng = random.Random(seed)

    def tree(entries: dict[bytes, tuple[int, bytes]]) -> bytes:
        made = Tree()
        for name, (mode, sha) in entries.items():
            made.add(name, mode, ObjectID(sha))
        return made.as_raw_string()

    def sha() -> bytes:
        return rng.randbytes(20).hex().encode()

    names = [f"{n:02x}".encode() if seed % 2 else f"m{n:05d}.md".encode() for n in range(60)]
    current = {n: (0o040000 if seed % 2 else 0o100644, sha()) for n in rng.sample(names, 40)}
    cache = _TreeCache(None)  # type: ignore[arg-type]
    parent_id = "p" * 40
    parent = tree(current)
    cache.tree(parent_id, parent)
    for step in range(6):
        child = dict(current)
        for _ in range(rng.randrange(1, 4)):
            name = rng.choice(names)
            if name in child and rng.random() < 0.3:
                del child[name]
            else:
                child[name] = (child.get(name, (0o100644, b""))[0], sha())
        content = tree(child)
        child_id = f"{step:040d}"
        fresh, change = cache.changed(child_id, content, parent_id)
        whole = set(parse_tree(content, 20))
        before = set(parse_tree(parent, 20))
        assert set(fresh) == whole - before
        old_by_name = {e[0]: e for e in before}
        assert all(change.olds[name] == old_by_name[name] for name in change.olds)
        for name, _, _ in whole - before:  # a changed entry's parent version is at hand
            if name in old_by_name:
                assert change.olds[name] == old_by_name[name]
        assert cache.tree(child_id).starts == _TreeCache(None).tree(child_id, content).starts  # type: ignore[arg-type]
        current, parent, parent_id = child, content, child_id


def test_entry_starts_follow_a_mode_spelled_with_a_leading_zero() -> None:
    """A tree whose modes are spelled unusually (``040000``, as old git wrote) still
    gets the right entry starts, so its next version is compared correctly."""
    sha = bytes(range(20))
    content = b"040000 ab\0" + sha + b"100644 cd\0" + sha + b"040000 ef\0" + sha
    cache = _TreeCache(None)  # type: ignore[arg-type]
    assert cache.tree("t" * 40, content).starts == [0, 30, 60, 90]
    child = content[:60] + b"040000 ef\0" + bytes(20)
    fresh, change = cache.changed("c" * 40, child, "t" * 40)
    assert fresh == [(b"ef", 0o40000, bytes(20).hex().encode())]
    assert list(change.olds) == [b"ef"]


def test_a_fetch_reads_a_parent_tree_from_its_own_repository(pair: tuple[Path, Path]) -> None:
    """A copy into the repository whose readers share its trees reads a tree that
    repository holds from it (as its own, not checked again), and from the source
    only when it lacks it; any other copy reads the source."""
    source, target = pair
    with Repo(str(source)) as src, Repo(str(target)) as dst:
        copy_history(src, dst, [_head(source)])
        root = sh(source, "rev-parse", f"{BRANCH}^{{tree}}").strip()
        empty = source.parent / "empty.git"
        sh(source.parent, "init", "-q", "--bare", str(empty))
        with Repo(str(empty)) as nothing:
            lacking = _RawReader(nothing.object_store)
            own = _RawReader(dst.object_store)
            try:
                found = _TreeCache(lacking, Trees(), own).tree(root).content
                with Repo(str(source)) as again:
                    assert found == again.object_store[ObjectID(root.encode())].as_raw_string()
                with pytest.raises(KeyError):
                    _TreeCache(lacking, Trees()).tree(root)
            finally:
                lacking.close()
                own.close()
