"""The push hook's object reader (gitmem.store.pushobjects) reads every object as git
stores it: whole or as deltas against an earlier entry or a named base, packed or
loose, in the repository or in one its alternates name; an index it does not read is
left to dulwich; what is missing is ``None``."""

from __future__ import annotations

import io
import os
import random
import subprocess
import tracemalloc
import zlib
from pathlib import Path

import pytest
from helpers_packs import Packer, blob_id, index, placed_far

from gitmem.store import pushobjects
from gitmem.store.pushobjects import Objects

ENV = {
    **os.environ,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
}
KINDS = {"commit": 1, "tree": 2, "blob": 3, "tag": 4}


def git(cwd: Path, *args: str, stdin: bytes | None = None) -> bytes:
    return subprocess.run(
        ["git", *args], cwd=cwd, env=ENV, input=stdin, check=True, capture_output=True
    ).stdout


def history(path: Path, commits: int = 12) -> Path:
    """A repository whose files change a little each commit (so packs hold deltas)."""
    git(path.parent, "init", "-q", "-b", "main", path.name)
    for i in range(commits):
        for name in ("a.md", "b.md"):
            (path / name).write_text("".join(f"line {n} of {name}\n" for n in range(200 + i)))
        git(path, "add", ".")
        git(path, "commit", "-q", "-m", f"change {i}")
    git(path, "tag", "-a", "-m", "a tag", "v1")
    return path


def every_object(path: Path) -> dict[str, tuple[int, bytes]]:
    """Each object of the repository as git reads it: type number and content."""
    listed = git(
        path, "cat-file", "--batch-all-objects", "--batch-check=%(objectname) %(objecttype)"
    )
    found: dict[str, tuple[int, bytes]] = {}
    for line in listed.decode().splitlines():
        sha, kind = line.split()
        found[sha] = (KINDS[kind], git(path, "cat-file", kind, sha))
    return found


def read_all(objects: Objects, expected: dict[str, tuple[int, bytes]]) -> None:
    try:
        for sha, want in expected.items():
            assert objects.get(sha.encode()) == want, sha
            assert objects.holds(sha.encode())
    finally:
        objects.close()


@pytest.mark.parametrize(
    "pack",
    [
        ["repack", "-a", "-d", "-q"],  # deltas against an earlier entry (by offset)
        ["repack", "-a", "-d", "-q", "--depth=3", "--window=50"],
        ["gc", "-q", "--aggressive"],
    ],
    ids=["offset-deltas", "short-chains", "aggressive"],
)
def test_every_packed_object_reads_as_git_reads_it(tmp_path: Path, pack: list[str]) -> None:
    """Whole objects and delta chains, read in any order, match ``git cat-file``."""
    repo = history(tmp_path / "r")
    expected = every_object(repo)
    git(repo, *pack)
    assert not any(len(d.name) == 2 for d in (repo / ".git" / "objects").iterdir())
    read_all(Objects(str(repo)), expected)
    # newest first too: a chain's base read after the objects built on it
    read_all(Objects(str(repo)), dict(reversed(expected.items())))


def test_a_large_pack_is_searched_in_its_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Looked up by halves in the index (as a large repository's pack is), every object
    reads the same, and an object the pack lacks is not found."""
    monkeypatch.setattr(pushobjects, "_NAMED_SHARE", 0)
    repo = history(tmp_path / "r", commits=6)
    expected = every_object(repo)
    git(repo, "repack", "-a", "-d", "-q")
    read_all(Objects(str(repo)), expected)
    objects = Objects(str(repo))
    try:
        for sha in expected:
            near = f"{sha[:39]}{'0' if sha[39] != '0' else '1'}"
            assert objects.get(near.encode()) is None
    finally:
        objects.close()


def test_deltas_against_a_named_base_read(tmp_path: Path) -> None:
    """A pack written without offsets names each delta's base by id."""
    repo = history(tmp_path / "r")
    expected = every_object(repo)
    folder = tmp_path / "objects"
    (folder / "pack").mkdir(parents=True)
    names = "\n".join(expected).encode() + b"\n"
    git(repo, "pack-objects", "-q", "--window=50", str(folder / "pack" / "p"), stdin=names)
    (folder / "info").mkdir()
    bare = tmp_path / "b.git"
    git(tmp_path, "init", "-q", "--bare", "b.git")
    pushed = Objects(str(bare), str(folder))
    read_all(pushed, expected)


def test_loose_objects_and_alternates_read(tmp_path: Path) -> None:
    """Loose objects, and a repository's alternates, are asked too; only the
    repository and its alternates count as already held, not the pushed folder."""
    repo = history(tmp_path / "r", commits=3)
    expected = every_object(repo)
    other = tmp_path / "o.git"
    git(tmp_path, "init", "-q", "--bare", "o.git")
    (other / "objects" / "info" / "alternates").write_text(str(repo / ".git" / "objects") + "\n")
    read_all(Objects(str(other)), expected)
    empty = tmp_path / "e.git"
    git(tmp_path, "init", "-q", "--bare", "e.git")
    pushed = Objects(str(empty), str(repo / ".git" / "objects"))
    try:
        some = next(iter(expected)).encode()
        assert pushed.holds(some) and not pushed.holds(some, main_only=True)
        assert pushed.get(b"0" * 40) is None
        assert not pushed.holds(b"0" * 40)
    finally:
        pushed.close()


def test_an_index_of_another_version_is_left_to_dulwich(tmp_path: Path) -> None:
    """A version-1 index is not mapped; its objects still read, through dulwich."""
    repo = history(tmp_path / "r", commits=4)
    expected = every_object(repo)
    git(repo, "repack", "-a", "-d", "-q")
    pack = next((repo / ".git" / "objects" / "pack").glob("*.pack"))
    pack.with_suffix(".idx").unlink()
    git(repo, "index-pack", "--index-version=1", str(pack))
    objects = Objects(str(repo))
    assert objects.folders[0].odd
    read_all(objects, expected)


def test_a_damaged_pack_does_not_read(tmp_path: Path) -> None:
    """A pack whose bytes were changed raises when read, never returns other content."""
    repo = history(tmp_path / "r", commits=2)
    expected = every_object(repo)
    git(repo, "repack", "-a", "-d", "-q")
    pack = next((repo / ".git" / "objects" / "pack").glob("*.pack"))
    data = bytearray(pack.read_bytes())
    for at in range(40, len(data) - 20, 7):
        data[at] ^= 0x55
    pack.chmod(0o644)
    pack.write_bytes(bytes(data))
    objects = Objects(str(repo))
    try:
        for sha, want in expected.items():
            try:
                found = objects.get(sha.encode())
            except Exception:
                continue
            assert found is None or found == want
    finally:
        objects.close()


def quarantined(tmp_path: Path, repo: Path, server: Path, revs: bytes, thin: bool = False) -> Path:
    """A quarantine folder as receive-pack leaves it for ``server``: the pack of
    ``revs`` (the objects the push brings; ``thin``: deltas on bases the server holds,
    which index-pack appends), indexed by ``git index-pack``."""
    args = ["pack-objects", "-q", "--revs", "--delta-base-offset", "--stdout"]
    data = git(repo, *args, *(["--thin"] if thin else []), stdin=revs)
    folder = tmp_path / "incoming"
    (folder / "pack").mkdir(parents=True)
    fix = ["--fix-thin"] if thin else []
    git(server, "index-pack", *fix, "--stdin", str(folder / "pack" / "p.pack"), stdin=data)
    return folder


def chained(path: Path, commits: int = 12) -> Path:
    """A repository whose one file changes one more line each commit: each version is
    nearest the next, so a pack holds it as a delta on that one (chains of deltas)."""
    git(path.parent, "init", "-q", "-b", "main", path.name)
    lines = [f"line {k} of the notes, unchanged so far\n" for k in range(300)]
    for i in range(commits):
        lines[i * 37 % 300] = f"line changed by commit {i:02d} of twelve\n"
        (path / "a.md").write_text("".join(lines))
        git(path, "add", ".")
        git(path, "commit", "-q", "-m", f"change {i}")
    return path


def test_a_pushed_pack_is_read_in_one_pass(tmp_path: Path) -> None:
    """A quarantined pack of offset-delta chains is read whole, in pack order, at the
    first object asked: every object of it is then found without another read, and
    each is what git reads."""
    repo = chained(tmp_path / "r")
    expected = every_object(repo)
    bare = tmp_path / "b.git"
    git(tmp_path, "init", "-q", "--bare", "b.git")
    folder = quarantined(tmp_path, repo, bare, b"main\n")
    objects = Objects(str(bare), str(folder))
    pack = objects.folders[0].packs[0]
    kinds = git(folder, "verify-pack", "-v", str(folder / "pack" / "p.idx")).decode()
    assert "chain length = 8:" in kinds  # deltas on deltas
    pushed = {sha: want for sha, want in expected.items() if pack.offset(bytes.fromhex(sha))}
    assert len(pushed) == pack.count
    try:
        first = next(iter(pushed)).encode()
        assert objects.pushed(first) is None  # no pass made yet: nothing read
        assert objects.get(first) == next(iter(pushed.values()))
        read = objects._pushed  # pyright: ignore[reportPrivateUsage]
        assert read == {sha.encode(): want for sha, want in pushed.items()}
        assert all(objects.pushed(sha.encode()) == want for sha, want in pushed.items())
        assert objects.pushed(b"0" * 40) is None and objects.pushed(b"not an id") is None
    finally:
        objects.close()
    read_all(Objects(str(bare), str(folder)), expected)


def test_a_thin_pushed_pack_reads_its_deltas_on_held_bases(tmp_path: Path) -> None:
    """A thin pack's deltas on bases the server held (index-pack appends those bases
    and names them by id) are left to the lookup, and read as git reads them."""
    repo = history(tmp_path / "r")
    expected = every_object(repo)
    server = tmp_path / "s.git"
    git(tmp_path, "init", "-q", "--bare", "s.git")
    git(repo, "push", "-q", str(server), "main~4:refs/heads/main")
    folder = quarantined(tmp_path, repo, server, b"main\n^main~4\n", thin=True)
    listed = git(folder, "verify-pack", "-v", str(folder / "pack" / "p.idx")).decode()
    assert any(
        line.split()[1:2] == ["blob"] and len(line.split()) == 7 for line in listed.splitlines()
    )
    objects = Objects(str(server), str(folder))
    try:
        wanted = {sha: want for sha, want in expected.items() if objects.holds(sha.encode())}
        assert len(wanted) == len(expected) - 1  # every object but the tag
    finally:
        objects.close()
    read_all(Objects(str(server), str(folder)), wanted)


def test_a_damaged_pushed_pack_reads_nothing_wrong(tmp_path: Path) -> None:
    """A quarantined pack whose bytes were changed stops the pass where it first does
    not read; each object asked then raises or is None, never other content."""
    repo = history(tmp_path / "r", commits=4)
    expected = every_object(repo)
    bare = tmp_path / "b.git"
    git(tmp_path, "init", "-q", "--bare", "b.git")
    folder = quarantined(tmp_path, repo, bare, b"main\n")
    pack = folder / "pack" / "p.pack"
    data = bytearray(pack.read_bytes())
    for at in range(len(data) // 2, len(data) - 20, 5):
        data[at] ^= 0x55
    pack.chmod(0o644)
    pack.write_bytes(bytes(data))
    objects = Objects(str(bare), str(folder))
    read = 0
    try:
        for sha, want in expected.items():
            try:
                found = objects.get(sha.encode())
            except Exception:
                continue
            assert found is None or found == want
            read += found is not None
    finally:
        objects.close()
    assert 0 < read < len(expected)


def pushed_pass(
    tmp_path: Path, repo: Path, expected: dict[str, tuple[int, bytes]]
) -> tuple[Path, Path, dict[bytes, tuple[int, bytes]] | None]:
    """A bare repository ``b.git``, the quarantine of a push of ``repo``'s main into it,
    and what the quarantined pack's pass read at the first lookup."""
    bare = tmp_path / "b.git"
    git(tmp_path, "init", "-q", "--bare", "b.git")
    folder = quarantined(tmp_path, repo, bare, b"main\n")
    objects = Objects(str(bare), str(folder))
    try:
        objects.get(next(iter(expected)).encode())
        return bare, folder, objects._pushed  # pyright: ignore[reportPrivateUsage]
    finally:
        objects.close()


def test_a_pushed_pack_past_the_budget_is_read_in_part(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pass keeps at most the reader's budget of bytes: the objects past it are
    read by lookup, alike."""
    monkeypatch.setattr(pushobjects, "_KEPT_MAX", 40_000)
    repo = chained(tmp_path / "r")
    expected = every_object(repo)
    bare, folder, read = pushed_pass(tmp_path, repo, expected)
    assert read is not None and 0 < len(read) < len(expected)
    assert sum(len(content) for _, content in read.values()) <= 40_000
    read_all(Objects(str(bare), str(folder)), expected)


def test_a_pushed_pack_reads_small_and_large_entries_alike(tmp_path: Path) -> None:
    """The pass inflates an entry under 16 KiB in one call and a larger one a byte past
    its size at most: both read as git reads them."""
    repo = tmp_path / "r"
    git(tmp_path, "init", "-q", "-b", "main", "r")
    for i in range(3):
        (repo / "big.md").write_text("".join(f"row {n} {n * i % 97}\n" for n in range(4000)))
        (repo / "small.md").write_text(f"small {i}\n")
        git(repo, "add", ".")
        git(repo, "commit", "-q", "-m", f"change {i}")
    expected = every_object(repo)
    assert any(len(content) >= 1 << 14 for _, content in expected.values())
    _, _, read = pushed_pass(tmp_path, repo, expected)
    assert read == {sha.encode(): want for sha, want in expected.items()}


def test_a_pushed_entry_whose_checksum_is_wrong_does_not_read(tmp_path: Path) -> None:
    """A small entry whose stream inflates but whose checksum is wrong stops the pass
    there, and is refused when asked for, never read as other content."""
    repo = history(tmp_path / "r", commits=3)
    expected = every_object(repo)
    bare = tmp_path / "b.git"
    git(tmp_path, "init", "-q", "--bare", "b.git")
    folder = quarantined(tmp_path, repo, bare, b"main\n")
    listed = git(folder, "verify-pack", "-v", str(folder / "pack" / "p.idx")).decode()
    entries = [line.split() for line in listed.splitlines() if len(line.split()) in (5, 7)]
    # a whole blob's entry, its stream's last byte (its checksum's) changed
    sha, _, _, in_pack, offset = next(e[:5] for e in entries if e[1] == "blob" and len(e) == 5)
    pack = folder / "pack" / "p.pack"
    data = bytearray(pack.read_bytes())
    data[int(offset) + int(in_pack) - 1] ^= 0x01
    pack.chmod(0o644)
    pack.write_bytes(bytes(data))
    objects = Objects(str(bare), str(folder))
    try:
        with pytest.raises(Exception, match="inflate"):
            objects.get(sha.encode())
        read = objects._pushed  # pyright: ignore[reportPrivateUsage]
        assert read is not None and sha.encode() not in read
        for other, want in expected.items():
            if other != sha:
                try:
                    found = objects.get(other.encode())
                except Exception:
                    continue
                assert found is None or found == want
    finally:
        objects.close()


def _over(objects: Objects, expected: dict[str, tuple[int, bytes]]) -> None:
    """Each object over the bound is refused as such; each other reads as git reads it."""
    try:
        for sha, want in expected.items():
            if len(want[1]) > pushobjects.OBJECT_MAX:
                with pytest.raises(ValueError, match="past the"):
                    objects.get(sha.encode())
            else:
                assert objects.get(sha.encode()) == want, sha
    finally:
        objects.close()


def test_an_object_past_the_bound_is_refused_before_it_is_inflated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What an object's header (or a delta's) declares is held to OBJECT_MAX before
    anything is inflated, however the object is kept: loose, packed whole or as a
    delta, in a pushed pack read in one pass."""
    repo = chained(tmp_path / "r")
    expected = every_object(repo)
    monkeypatch.setattr(pushobjects, "OBJECT_MAX", 4_000)  # under the file, over the rest
    blobs = [sha for sha, (kind, _) in expected.items() if kind == KINDS["blob"]]
    assert blobs and all(len(expected[sha][1]) > 4_000 for sha in blobs)
    _over(Objects(str(repo)), expected)  # loose
    bare = tmp_path / "b.git"
    git(tmp_path, "init", "-q", "--bare", "b.git")
    _over(Objects(str(bare), str(quarantined(tmp_path, repo, bare, b"main\n"))), expected)
    git(repo, "repack", "-a", "-d", "-q")
    _over(Objects(str(repo)), expected)  # packed, deltas on deltas


def test_a_loose_object_is_read_no_further_than_its_header_allows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A loose object's file is read only as far as the size its header declares allows:
    one that declares more than the bound is refused from its first bytes, and bytes
    past the end of one that declares little are never read."""
    repo = tmp_path / "r"
    git(tmp_path, "init", "-q", "r")
    sha = git(repo, "hash-object", "-w", "--stdin", stdin=b"small\n").decode().strip()
    path = repo / ".git" / "objects" / sha[:2] / sha[2:]
    path.chmod(0o644)
    with path.open("ab") as f:
        f.write(b"\0" * (4 << 20))  # past the stream: no reader needs it
    # bytes of skewed frequencies: the stream opens with long code tables, and its
    # header inflates only after them
    rng = random.Random(1)
    text = bytes(min(255, int(rng.paretovariate(1.2) * 3)) for _ in range(20_000))
    tabled = git(repo, "hash-object", "-w", "--stdin", stdin=text).decode().strip()
    big = zlib.compress(b"blob 999999999\0" + b"x" * 4096) + bytes(4 << 20)
    (path.parent / ("f" * 38)).write_bytes(big)
    read: list[int] = []

    class Counted(io.FileIO):
        def read(self, size: int | None = -1) -> bytes:
            data = super().read(size)
            read.append(len(data))
            return data

    def opened(name: str, mode: str = "r", encoding: str | None = None) -> object:
        return Counted(name, mode) if mode == "rb" else open(name, mode, encoding=encoding)

    monkeypatch.setattr(pushobjects, "open", opened, raising=False)
    objects = Objects(str(repo))
    try:
        assert objects.get(tabled.encode()) == (KINDS["blob"], text)
        read.clear()
        assert objects.get(sha.encode()) == (KINDS["blob"], b"small\n")
        assert sum(read) < pushobjects.LOOSE_HEAD + 1024
        read.clear()
        with pytest.raises(ValueError, match="past the"):
            objects.get((sha[:2] + "f" * 38).encode())
        assert sum(read) < pushobjects.LOOSE_HEAD + 1024
    finally:
        objects.close()


def test_a_chain_of_large_deltas_is_read_one_delta_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each delta of the chain makes what it makes from its own bytes, so each is as
    large as its result while the pack holds some kilobytes of it: reading the chain's
    last object holds one delta at a time (and what the reader keeps), never the chain."""
    monkeypatch.setattr(pushobjects, "_KEPT_MAX", 1 << 20)
    packer = Packer()
    at = packer.blob(b"x")
    for n in range(16):
        at = packer.inserts(at, bytes([n]) * (1 << 20))
    data = packer.pack(checksum=True)
    assert len(data) < 256 << 10
    git(tmp_path, "init", "-q", "--bare", "r.git")
    git(tmp_path / "r.git", "index-pack", "--stdin", stdin=data)
    content = bytes([15]) * (1 << 20)
    sha = blob_id(content).hex()
    objects = Objects(str(tmp_path / "r.git"))
    tracemalloc.start()
    try:
        assert objects.get(sha.encode()) == (3, content)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        objects.close()
    assert peak < 8 << 20  # the chain's deltas come to 17 MiB
    # a reader that holds a chain whole (dulwich's) would hold those 17 MiB at once: a
    # chain past the bound does not read, read whole or link by link on kept bases
    monkeypatch.setattr(pushobjects, "CHAIN_MAX", 4 << 20)
    links = [blob_id(bytes([n]) * (1 << 20)).hex().encode() for n in range(16)]
    for reads in ([links[-1]], links):
        objects = Objects(str(tmp_path / "r.git"))
        try:
            with pytest.raises(ValueError, match="a chain of deltas of more than 4,194,304"):
                for link in reads:
                    objects.get(link)
        finally:
            objects.close()


def test_an_object_placed_past_2_gib_is_read_here_and_held_to_the_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An index entry that points into the table of 8-byte offsets (git's for an object
    past 2 GiB of its pack) is followed here, not handed to dulwich, which would
    inflate the object whatever its size."""
    monkeypatch.setattr(pushobjects, "OBJECT_MAX", 1_000)
    small, big = b"fits\n", b"x" * 5_000
    git(tmp_path, "init", "-q", "--bare", "r.git")
    names = placed_far(tmp_path / "r.git" / "objects" / "pack", small, big)
    objects = Objects(str(tmp_path / "r.git"))
    try:
        assert objects.get(names[0].hex().encode()) == (3, small)
        with pytest.raises(pushobjects.TooLarge, match="holds 5,000 bytes"):
            objects.get(names[1].hex().encode())
    finally:
        objects.close()


def test_what_a_reader_makes_over_all_its_reads_is_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each object is bounded, but a line of deltas read link by link, last first,
    makes far more than the push holds: the reads stop once all they made comes to
    ``MADE_MAX``, and say so."""
    monkeypatch.setattr(pushobjects, "_KEPT_MAX", 1 << 20)
    packer = Packer()
    at = packer.blob(b"x")
    links = [bytes([n]) * (256 << 10) for n in range(40)]
    for link in links:
        at = packer.inserts(at, link)
    git(tmp_path, "init", "-q", "--bare", "r.git")
    git(tmp_path / "r.git", "index-pack", "--stdin", stdin=packer.pack(checksum=True))
    # read once, the line makes 40 links of 256 KiB, and their deltas as much again
    monkeypatch.setattr(pushobjects, "MADE_MAX", 24 << 20)
    objects = Objects(str(tmp_path / "r.git"))
    ids = [blob_id(link).hex().encode() for link in links]
    try:
        assert objects.get(ids[-1]) == (3, links[-1])
        with pytest.raises(ValueError, match="made more than 25,165,824 bytes between them"):
            for sha, link in zip(reversed(ids), reversed(links), strict=True):
                assert objects.get(sha) == (3, link)
    finally:
        objects.close()


def test_a_delta_on_a_base_in_another_pack_reads_the_same_twice(tmp_path: Path) -> None:
    """The base is read from the other pack and the delta applied; what is kept is
    the delta's result, so a second read gives the same object, not its base."""
    base, made = b"the base\n" * 10, b"the base\n" * 20
    first, second = Packer(), Packer()
    first.blob(base)
    second.delta_by_id(blob_id(base), len(base), len(made))
    git(tmp_path, "init", "-q", "--bare", "r.git")
    folder = tmp_path / "r.git" / "objects" / "pack"
    for name, packer, names in (("a", first, [blob_id(base)]), ("b", second, [blob_id(made)])):
        data = packer.pack(checksum=True)
        (folder / f"pack-{name}.pack").write_bytes(data)
        (folder / f"pack-{name}.idx").write_bytes(index(data, names, packer.starts, set()))
    objects = Objects(str(tmp_path / "r.git"))
    try:
        for _ in range(2):
            assert objects.get(blob_id(made).hex().encode()) == (3, made)
    finally:
        objects.close()
