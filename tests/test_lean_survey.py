"""A whole listing's one builder (:func:`gitmem.lean.survey.build`) and the reads under
it: a memory summed up from its bytes as from its decoded text, objects found by one
walk of each pack index as one by one, and the store's first listing built by it
deciding and keeping what the store's own reading of every folder does."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitmem import Author, Memory, Repository
from gitmem.errors import StorageError
from gitmem.lean import layout, listing
from gitmem.lean.objects import MappedPack, Objects, Unreadable, pack_bases
from gitmem.lean.survey import READ_DIRECTLY, build, summary, survey, texts
from gitmem.search import stored_index
from gitmem.store.snapshot import Snapshot
from gitmem.store.summaries import Summaries
from gitmem.types import Change

STORE = "profile/notes"
AGENT = Author.agent("agent-1")

pytestmark = pytest.mark.usefixtures("operator_home")


def _by_decoding(md: bytes) -> tuple[str, int, int] | None:
    """A memory's summary as its reader makes it: the body decoded, then counted."""
    framed = layout.split_md(md)
    if framed is None:
        return None
    found = layout.description(framed[0])
    if found is None:
        return None
    try:
        body = framed[1].decode()
    except UnicodeDecodeError:
        return None
    return found, len(body), body.count("\n") + (0 if not body or body.endswith("\n") else 1)


_TEXT = st.text(st.sampled_from(["a", " ", "\n", "\r", "é", "日", "😀", '"', "\\", "\0"]))
_BODY = st.one_of(
    _TEXT.map(str.encode),
    st.binary(max_size=40),  # often not UTF-8
    st.lists(st.sampled_from([b"a", b"\n", b"\xc3\xa9", b"\xc3", b"\xff", b"\xe6\x97"])).map(
        b"".join
    ),
)
_FRAMED = st.one_of(
    _TEXT.map(lambda text: json.dumps(text, ensure_ascii=False).encode()),
    _TEXT.map(lambda text: b" " + json.dumps(text).encode() + b"\n"),
    st.binary(max_size=12),
)


@settings(max_examples=400, derandomize=True, deadline=None)
@given(_FRAMED, _BODY, st.booleans())
def test_a_summary_counted_in_bytes_is_the_decoded_texts(
    framed: bytes, body: bytes, framing: bool
) -> None:
    """Characters and lines counted in the body's bytes (decoded only when not ASCII)
    are those of its decoded text, and what does not read does not read either way."""
    md = layout.OPEN + framed + layout.CLOSE + body if framing else framed + body
    assert summary(md) == _by_decoding(md)


def _store(path: str, count: int) -> None:
    with Repository.init(path) as repo:
        for i in range(count):
            memory = Memory(f"m{i:03d}", f"note {i} ü", "line\n" * (i % 3) + "end" * (i % 2))
            if i % 4 == 0:
                memory = Memory(memory.slug, memory.description, memory.body, code="export {};\n")
            repo.mutate(STORE, AGENT, lambda _, m=memory: Change("create", m.slug, m))


def _git(path: str, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    done = subprocess.run(["git", f"--git-dir={path}", *args], env=env, capture_output=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.decode()


def test_objects_read_together_are_those_read_one_by_one(tmp_path: Path) -> None:
    """Objects in several packs (one of deltas) and loose, one asked twice: each read by
    the walk of the indexes and the sweeps as it reads alone, in the order asked; an
    object that is nowhere is a ``KeyError``, as alone."""
    path = str(tmp_path / "repo.git")
    _store(path, 30)
    _git(path, "repack", "-a", "-d", "-q", "--depth=10")
    with Repository.open(path) as repo:
        for i in range(5):
            memory = Memory(f"n{i}", "later", f"after the pack {i}\n")
            repo.mutate(STORE, AGENT, lambda _, m=memory: Change("create", m.slug, m))
    loose = Path(tmp_path / "loose.txt")
    loose.write_text("never packed\n")
    _git(path, "hash-object", "-w", str(loose))
    every = _git(path, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)")
    ids = [bytes.fromhex(sha) for sha in every.split()]
    assert len(pack_bases(os.path.join(path, "objects", "pack"))) > 1
    objects = Objects(os.path.join(path, "objects"))
    asked = [*ids[::-1], ids[3]]
    alone = [Objects(os.path.join(path, "objects")).read(sha.hex()) for sha in asked]
    assert objects.read_each(asked) == alone
    assert objects.read_many(sha.hex() for sha in asked) == {
        sha.hex(): got for sha, got in zip(asked, alone, strict=True)
    }
    with pytest.raises(KeyError):
        objects.read_each([*asked[:3], b"\x01" * 20])
    for base in pack_bases(os.path.join(path, "objects", "pack")):
        pack = MappedPack(base)
        try:
            wanted = sorted([*ids, b"\x00" * 20, b"\xff" * 20, ids[0]])
            assert pack.find_sorted(wanted) == [pack.find(sha) for sha in wanted]
        finally:
            pack.close()


def _forget_derived(path: str) -> None:
    meta = os.path.join(path, "gitmem")
    for name in ("listing", "summaries"):
        at = os.path.join(meta, name)
        if os.path.isdir(at):
            for file in os.listdir(at):
                os.remove(os.path.join(at, file))
        elif os.path.exists(at):
            os.remove(at)


def _kept(path: str) -> tuple[listing.Kept | None, listing.Summaries]:
    meta = os.path.join(path, "gitmem")
    with open(listing.listing_path(meta, STORE), "rb") as f:
        kept = listing.parse(f.read(), folders=True, tree=None)
    with open(listing.summaries_path(meta), "rb") as f:
        return kept, listing.summaries(f.read())


@pytest.mark.parametrize("count", [3, 40])
def test_a_first_listing_built_whole_is_the_folder_by_folder_reading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count: int
) -> None:
    """The store's first listing, built whole, lists and keeps what its reading of
    every folder lists and keeps; kept or not, as asked."""
    path = str(tmp_path / "repo.git")
    _store(path, count)
    _forget_derived(path)
    built: list[object] = []
    whole_read = Snapshot._read_whole  # pyright: ignore[reportPrivateUsage]

    def spied(self: Snapshot, kept: Summaries, root: str, *, remember: bool, write: bool) -> object:
        built.append(whole_read(self, kept, root, remember=remember, write=write))
        return built[-1]

    monkeypatch.setattr(Snapshot, "_read_whole", spied)
    with Repository.open(path) as repo:
        assert repo.summaries(STORE, keep=False) == repo.summaries(STORE, keep=False)
        meta = os.path.join(path, "gitmem")
        assert not os.path.exists(listing.listing_path(meta, STORE))
        assert not os.path.exists(listing.summaries_path(meta))
        whole = repo.summaries(STORE)
    assert len(built) == 3 and None not in built  # each built whole
    whole_kept = _kept(path)
    _forget_derived(path)
    monkeypatch.setattr(Snapshot, "_read_whole", lambda *_, **__: None)
    with Repository.open(path) as repo:
        assert repo.summaries(STORE) == whole
        memories = repo.snapshot(STORE).memories()
    assert _kept(path) == whole_kept
    assert whole == [(m.slug, (m.description, m.chars, m.lines)) for m in memories]


def test_a_memory_the_builder_does_not_read_is_the_stores_to_refuse(tmp_path: Path) -> None:
    """A memory file without front matter, made by hand: the store's own reading says
    what is wrong, as it did before a listing was built whole."""
    path = str(tmp_path / "repo.git")
    _store(path, 3)
    work = str(tmp_path / "work")
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    subprocess.run(["git", "clone", "-q", "-b", STORE, path, work], env=env, check=True)
    Path(work, layout.bucket("m001"), "m001.md").write_text("no front matter\n")
    for args in (
        ["-c", "user.name=x", "-c", "user.email=x@x", "commit", "-qam", "by hand"],
        ["push", "-q", "origin", STORE],
    ):
        subprocess.run(["git", "-C", work, *args], env=env, check=True)
    _forget_derived(path)
    with Repository.open(path) as repo, pytest.raises(StorageError):
        repo.summaries(STORE)


def _damaged(tmp_path: Path, damage: bytes) -> tuple[str, str]:
    """A store of a few memories in one pack, ``m002``'s ``.md`` entry overwritten from
    its first byte with ``damage``; the path and the root tree."""
    path = str(tmp_path / "repo.git")
    _store(path, 6)
    _git(path, "repack", "-a", "-d", "-q")
    md = _git(path, "rev-parse", f"{STORE}:{layout.bucket('m002')}/m002.md").strip()
    [base] = pack_bases(os.path.join(path, "objects", "pack"))
    pack = MappedPack(base)
    try:
        offset = pack.find(bytes.fromhex(md))
    finally:
        pack.close()
    assert offset is not None
    os.chmod(base + ".pack", 0o644)
    with open(base + ".pack", "r+b") as f:
        f.seek(offset)
        f.write(damage)
    return path, _git(path, "rev-parse", f"{STORE}^{{tree}}").strip()


@pytest.mark.parametrize(
    "damage",
    [
        bytes([0x80 | (3 << 4) | 0x0F]) + b"\xff" * 9 + b"\x01",  # a size past any object's
        bytes([(3 << 4) | 0x0F]) + b"\xff" * 12,  # a stream that does not inflate
        bytes([(5 << 4) | 0x01]),  # an entry of no type git writes
    ],
)
def test_a_damaged_pack_entry_is_unreadable_to_the_builder(tmp_path: Path, damage: bytes) -> None:
    """A memory's ``.md`` entry damaged in the pack: the sweep that reads every memory
    refuses it as unreadable (the full reader's to read, and say what is wrong), as a
    read of that one object does, and keeps nothing."""
    path, tree = _damaged(tmp_path, damage)
    md = _git(path, "rev-parse", f"{STORE}:{layout.bucket('m002')}/m002.md").strip()
    with pytest.raises(Unreadable):
        Objects(os.path.join(path, "objects")).read(md)
    with pytest.raises(Unreadable):
        build(Objects(os.path.join(path, "objects")), tree, dict)
    meta = os.path.join(path, "gitmem")
    _forget_derived(path)
    with pytest.raises(Unreadable):
        survey(Objects(os.path.join(path, "objects")), meta, STORE, tree)
    assert not os.path.exists(listing.listing_path(meta, STORE))


def test_memories_packed_as_deltas_are_listed_as_read_whole(tmp_path: Path) -> None:
    """``.md`` blobs that git packed as deltas of one another (bodies alike but for a
    line) are summed up by the builder as the store's own reading sums them."""
    path = str(tmp_path / "repo.git")
    shared = "".join(f"a line that every memory shares, number {n}\n" for n in range(40))
    with Repository.init(path) as repo:
        for i in range(40):
            memory = Memory(f"d{i:02d}", f"alike {i}", shared + f"and its own line {i}\n")
            repo.mutate(STORE, AGENT, lambda _, m=memory: Change("create", m.slug, m))
    _git(path, "repack", "-a", "-d", "-f", "-q", "--depth=50", "--window=50")
    deltas = [
        line
        for line in _git(path, "verify-pack", "-v", *_indexes(path)).splitlines()
        if " blob " in line and len(line.split()) > 5
    ]
    assert deltas, "the repack made no delta of a blob"
    tree = _git(path, "rev-parse", f"{STORE}^{{tree}}").strip()
    found = build(Objects(os.path.join(path, "objects")), tree, dict)
    assert found is not None
    _forget_derived(path)
    with Repository.open(path) as repo:
        memories = repo.snapshot(STORE).memories()
    assert found[0][2] == [(m.slug, (m.description, m.chars, m.lines)) for m in memories]


def _indexes(path: str) -> list[str]:
    """The index file of each pack of the repository at ``path``."""
    return [base + ".idx" for base in pack_bases(os.path.join(path, "objects", "pack"))]


def test_summaries_kept_before_are_taken_not_read_again(tmp_path: Path) -> None:
    """Past :data:`READ_DIRECTLY` memories, a summary the kept summaries hold is taken
    from them (its blob not read); the listing is the one read whole, and only what was
    not kept is returned to keep."""
    path = str(tmp_path / "repo.git")
    _store(path, READ_DIRECTLY + 8)
    tree = _git(path, "rev-parse", f"{STORE}^{{tree}}").strip()
    whole = build(Objects(os.path.join(path, "objects")), tree, dict)
    assert whole is not None
    kept_before = dict(list(whole[1].items())[::2])
    asked: list[bytes] = []

    class Counted(Objects):
        def each(self, ids: list[bytes]) -> Iterator[tuple[int, tuple[int, bytes]]]:
            asked.extend(ids)
            return super().each(ids)

    again = build(Counted(os.path.join(path, "objects")), tree, lambda: kept_before)
    assert again is not None
    assert again[0] == whole[0]
    assert again[1] == {k: v for k, v in whole[1].items() if k not in kept_before}
    known_blobs = {bytes.fromhex(key.split(" ")[0]) for key in kept_before}
    assert asked and not known_blobs & set(asked)


def _mixed_store(path: str) -> None:
    """Past :data:`READ_DIRECTLY` memories, some with text that is not ASCII and a last
    line without a newline."""
    _store(path, READ_DIRECTLY + 8)
    with Repository.open(path) as repo:
        for slug, body in [("wide", "日本語\nend"), ("accent", "Ünïcode"), ("empty", "")]:
            memory = Memory(slug, f"about {slug} ü", body)
            repo.mutate(STORE, AGENT, lambda _, m=memory: Change("create", m.slug, m))


def test_a_search_sweep_sums_up_each_memory_as_a_listing_does(tmp_path: Path) -> None:
    """The search index's one sweep of every memory gives each one's text as the index
    holds it, and the listing and summaries the listing's builder gives: the summaries
    of the memories ``known()`` does not hold (asked only past :data:`READ_DIRECTLY`)."""
    path = str(tmp_path / "repo.git")
    _mixed_store(path)
    tree = _git(path, "rev-parse", f"{STORE}^{{tree}}").strip()
    objects = Objects(os.path.join(path, "objects"))
    whole = build(objects, tree, dict)
    swept = texts(objects, tree, dict)
    assert whole is not None and swept is not None
    assert swept[1:] == whole
    with Repository.open(path) as repo:
        memories = repo.snapshot(STORE).memories()
    assert swept[0] == {m.slug: f"{m.slug}\0{m.description}\0{m.body}".lower() for m in memories}
    kept_before = dict(list(whole[1].items())[::2])
    again = texts(objects, tree, lambda: kept_before)
    assert again is not None and again[:2] == swept[:2]
    assert again[2] == {k: v for k, v in whole[1].items() if k not in kept_before}


def test_a_listing_after_a_search_built_afresh_reads_no_blob(tmp_path: Path) -> None:
    """A search index built afresh keeps the listing and summaries its sweep makes: the
    listing after it reads no blob (it keeps no summary more) and lists what a listing
    with nothing kept lists; a search of the past keeps the summaries, not its listing."""
    path = str(tmp_path / "repo.git")
    _mixed_store(path)
    with Repository.open(path) as repo:
        listed = repo.summaries(STORE, keep=False)
    meta = os.path.join(path, "gitmem")
    for name in ("listing", "search"):
        shutil.rmtree(os.path.join(meta, name), ignore_errors=True)
    Path(listing.summaries_path(meta)).unlink(missing_ok=True)
    with Repository.open(path) as repo:
        stored_index(repo, STORE)
        kept = Path(listing.summaries_path(meta)).read_bytes()
        assert len(listing.summaries(kept)) == len(listed)
        assert repo.summaries(STORE) == listed
    assert Path(listing.summaries_path(meta)).read_bytes() == kept
    with Repository.open(path) as repo:
        assert repo.summaries(STORE) == listed
    with Repository.open(path) as repo:
        first = repo.head(STORE)
        assert first is not None
        repo.mutate(STORE, AGENT, lambda _: Change("create", "later", Memory("later", "x", "y")))
    kept_listing = Path(listing.listing_path(meta, STORE)).read_bytes()
    shutil.rmtree(os.path.join(meta, "search"))
    with Repository.open(path) as repo:
        stored_index(repo.as_of(STORE, first), STORE)
    assert Path(listing.listing_path(meta, STORE)).read_bytes() == kept_listing
