"""What a sync copies from a remote on this machine is held to the bound a push hook
holds objects to: an object past it is refused from the size it declares, before it is
inflated, for its store alone, and nothing of that store's new history is copied."""

from __future__ import annotations

import json
import random
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from dulwich.object_store import DiskObjectStore
from helpers_packs import Packer, index
from helpers_sync import ME, hostile_replicas, sh
from test_store_pushobjects import KINDS, chained, every_object, git

from gitmem import Repository, ops
from gitmem.cli import cli
from gitmem.lean.objects import entry_header
from gitmem.store import pushobjects
from gitmem.store.packreader import Packs
from gitmem.store.pushobjects import TooLarge
from gitmem.store.transfer import _RawReader  # pyright: ignore[reportPrivateUsage]

_BOUND = 4_000  # under every tree and commit of the repositories below, over their files
_REF_DELTA = 7


def _kinds(folder: Path) -> set[int]:
    """The entry types the packs of ``folder`` hold."""
    found: set[int] = set()
    packs = Packs(str(folder))
    try:
        for pack in packs.packs:
            found |= {entry_header(pack._data, at)[0] for at in pack.table().values()}  # pyright: ignore[reportPrivateUsage]
    finally:
        packs.close()
    return found


def _read_bounded(objects: Path, expected: dict[str, tuple[int, bytes]]) -> None:
    """Each object over the bound is refused as such, named; each other reads as git
    reads it."""
    reader = _RawReader(DiskObjectStore(str(objects)), bounded=True)
    try:
        for sha, want in expected.items():
            if len(want[1]) > pushobjects.OBJECT_MAX:
                with pytest.raises(TooLarge, match="past the") as raised:
                    reader.entry(sha)
                assert raised.value.sha == sha
            else:
                assert reader.entry(sha)[:2] == want, sha
    finally:
        reader.close()


@pytest.mark.parametrize("bound", [_BOUND, 1 << 20])
def test_a_bounded_read_holds_every_object_to_the_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bound: int
) -> None:
    """Loose, packed whole, as offset deltas on deltas, and as deltas on bases named by
    id (which the unbounded reader leaves to dulwich): over the bound refused, the rest
    read whole and right."""
    repo = chained(tmp_path / "r")
    expected = every_object(repo)
    monkeypatch.setattr(pushobjects, "OBJECT_MAX", bound)
    blobs = [sha for sha, (kind, _) in expected.items() if kind == KINDS["blob"]]
    assert blobs and all(len(expected[sha][1]) > _BOUND for sha in blobs)
    _read_bounded(repo / ".git" / "objects", expected)  # loose
    git(repo, "repack", "-a", "-d", "-q")
    _read_bounded(repo / ".git" / "objects", expected)  # offset deltas
    git(repo, "-c", "repack.useDeltaBaseOffset=false", "repack", "-a", "-d", "-f", "-q")
    assert _REF_DELTA in _kinds(repo / ".git" / "objects" / "pack")
    _read_bounded(repo / ".git" / "objects", expected)


def test_a_bounded_read_takes_a_loose_stream_that_opens_with_long_code_tables(
    tmp_path: Path,
) -> None:
    """Bytes of skewed frequencies make a stream whose code tables run to hundreds of
    bytes before the object's header inflates: it reads whole, as git reads it."""
    rng = random.Random(1)
    text = bytes(min(255, int(rng.paretovariate(1.2) * 3)) for _ in range(20_000))
    git(tmp_path, "init", "-q", "r")
    sha = git(tmp_path / "r", "hash-object", "-w", "--stdin", stdin=text).decode().strip()
    _read_bounded(tmp_path / "r" / ".git" / "objects", {sha: (KINDS["blob"], text)})


@pytest.fixture
def replicas(tmp_path: Path) -> tuple[Path, Path, Path]:
    """An unguarded bare origin holding stores ``notes`` and ``more``, and two clones of
    it, ``a`` (the hostile pusher) and ``b`` (the replica that syncs)."""

    def more(project: Path) -> None:
        with Repository.open(str(project)) as repo:
            ops.create(repo, "more", ME, "fine", "ok", "yes\n")

    return hostile_replicas(tmp_path, more)


@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("road", ["on this machine", "pack protocol"])
def test_an_object_past_the_bound_keeps_its_store_out_of_a_sync(
    replicas: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch, packed: bool, road: str
) -> None:
    """A hand commit holding a file past the bound, pushed to a remote no hook guards,
    is refused for its store in one line, as the hook words it: the store keeps its
    head, nothing of it is copied here, and the other stores sync as usual. Over the
    pack protocol (an ssh:// or https:// remote's road), the pack is read through
    before anything of it is stored, and the store is told apart by fetching each
    head alone."""
    if road == "pack protocol":
        from gitmem.store import remote

        monkeypatch.setattr(remote.Remote, "_local", lambda self: None)
    origin, a, b = replicas
    with Repository.open(str(a)) as repo:
        ops.create(repo, "more", ME, "later", "new", "yes\n")
        repo.sync("origin")
        more = repo.head("more")
    sh(a, "checkout", "-q", "-b", "hostile", "gitmem/notes")
    (a / "big.bin").write_text("a" * (_BOUND + 1))
    sh(a, "add", "big.bin")
    sh(a, "commit", "-q", "-m", "big")
    sh(a, "push", "-q", "origin", "hostile:gitmem/notes")
    blob = sh(a, "rev-parse", "hostile:big.bin").strip()
    if packed:
        sh(origin, "repack", "-a", "-d", "-q")
    monkeypatch.setattr(pushobjects, "OBJECT_MAX", _BOUND)
    with Repository.open(str(b)) as repo:
        before = repo.head("notes")
    result = CliRunner().invoke(cli, ["--repo", str(b), "sync", "--json"])
    assert result.exit_code == 2, result.output
    rows = {r["store"]: r for r in json.loads(result.output)}
    assert rows["more"]["refused"] == [] and rows["more"]["head"] == more
    refused = rows["notes"]["refused"]
    assert len(refused) == 1
    what = f"object {blob[:12]}" if road == "on this machine" else "an object it brings"
    assert re.fullmatch(
        rf"commit [0-9a-f]{{12}} breaks rule parse: {what} does not read: it "
        rf"holds {_BOUND + 1:,} bytes, past the 0 MiB an object may hold here",
        refused[0],
    )
    with Repository.open(str(b)) as repo:
        assert repo.head("notes") == before and repo.head("more") == more
    missing = subprocess.run(["git", "cat-file", "-e", blob], cwd=b, check=False)
    assert missing.returncode != 0


def _index_of_version_1(origin: Path, _: str) -> None:
    """Every object of ``origin`` in one pack, indexed as git's first version has it."""
    for found in (origin / "objects" / "pack").glob("*.idx"):
        found.unlink()
        pack = found.with_suffix(".pack")
        sh(origin, "index-pack", "--index-version=1", "-o", str(found), str(pack))


def _base_missing(origin: Path, blob: str) -> None:
    """``blob`` stored in ``origin`` only as a delta on an object it lacks."""
    content = git(origin, "cat-file", "blob", blob)
    listed = git(origin, "rev-list", "--objects", "--all").decode().splitlines()
    rest = "".join(line.split()[0] + "\n" for line in listed if not line.startswith(blob))
    folder = origin / "objects" / "pack"
    old = list(folder.iterdir())
    git(origin, "pack-objects", "-q", str(folder / "pack"), stdin=rest.encode())
    for path in old:
        path.unlink()
    packer = Packer()
    packer.inserts_by_id(b"\x11" * 20, 10, content)
    data = packer.pack(checksum=True)
    (folder / "pack-thin.pack").write_bytes(data)
    (folder / "pack-thin.idx").write_bytes(index(data, [bytes.fromhex(blob)], packer.starts, set()))


@pytest.mark.parametrize("stored", [_index_of_version_1, _base_missing])
def test_objects_the_bounded_reader_does_not_read_are_refused_not_handed_on(
    replicas: tuple[Path, Path, Path], stored: Callable[[Path, str], None]
) -> None:
    """A remote on this machine whose objects lie in a form the bounded reader leaves
    alone (a pack index of git's first version, which git still writes when asked, or
    a delta whose base the remote lacks): the sync says which object and what to do
    in one line, and copies nothing. They are never handed to dulwich, which holds no
    object to the bound."""
    origin, a, b = replicas
    with Repository.open(str(a)) as repo:
        ops.create(repo, "notes", ME, "later", "new", "yes\n")
        repo.sync("origin")
        head = repo.head("notes")
        blob = git(origin, "rev-parse", f"{head}:{repo.path('notes', 'later')}").decode().strip()
    sh(origin, "repack", "-a", "-d", "-q")
    stored(origin, blob)
    with Repository.open(str(b)) as repo:
        before = repo.head("notes")
    objects = sorted(p.name for p in (b / ".git" / "objects").rglob("*") if p.is_file())
    result = CliRunner().invoke(cli, ["--repo", str(b), "sync"])
    assert result.exit_code == 1, result.output
    assert re.fullmatch(
        rf"Error: cannot fetch from {origin}: object [0-9a-f]{{40}} is stored there in a "
        r"form a sync does not read from another's repository \(an index of an older "
        r"version, or a delta whose base is missing\); have it repacked there "
        r"\(git repack -a -d\)\n",
        result.output,
    )
    with Repository.open(str(b)) as repo:
        assert repo.head("notes") == before != head
    assert sorted(p.name for p in (b / ".git" / "objects").rglob("*") if p.is_file()) == objects
