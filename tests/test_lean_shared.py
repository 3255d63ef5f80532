"""A listing read whole in two halves, the second by a forked child
(:mod:`gitmem.lean.halves`): what it gives is what one process reading every folder
gives, on awkward stores (text that is not ASCII, deltas, a large body, odd trees,
damaged entries), and whatever goes wrong in the child is redone here."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from dulwich.objects import Blob, ObjectID, Tree
from dulwich.repo import Repo

from gitmem import Author, Memory, Repository, quick
from gitmem.lean import halves, layout, survey
from gitmem.lean.objects import MappedPack, Objects, Unreadable, pack_bases
from gitmem.lean.survey import build, texts
from gitmem.search import stored, stored_index
from gitmem.store import storage
from gitmem.types import Change

STORE = "profile/notes"
AGENT = Author.agent("agent-1")

pytestmark = pytest.mark.usefixtures("operator_home")


@pytest.fixture(autouse=True)
def _forking(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fork whatever the machine and the test runner's threads: the child is what is
    tested (it only reads objects and makes plain data)."""
    monkeypatch.setattr(halves, "cores", lambda: 2)
    monkeypatch.setattr(halves, "_alone", lambda: True)


def _git(path: str, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    done = subprocess.run(["git", f"--git-dir={path}", *args], env=env, capture_output=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.decode()


def _store(path: str, bodies: dict[str, str]) -> str:
    """A store of memories with ``bodies`` (every fourth with code); its root tree."""
    with Repository.init(path) as repo:
        for i, (slug, body) in enumerate(bodies.items()):
            memory = Memory(slug, f"about {slug} ü" if i % 3 else f'"{slug}"\\', body)
            if i % 4 == 0:
                memory = Memory(slug, memory.description, body, code="export {};\n")
            repo.mutate(STORE, AGENT, lambda _, m=memory: Change("create", m.slug, m))
    return _git(path, "rev-parse", f"{STORE}^{{tree}}").strip()


def _awkward() -> dict[str, str]:
    bodies = {f"m{i:03d}": "line\n" * (i % 3) + "end" * (i % 2) for i in range(60)}
    bodies |= {"wide": "日本語\nend", "accent": "Ünïcode", "empty": "", "emoji": "😀\n" * 3}
    bodies["large"] = "".join(f"a large body's line {n}, not ASCII: é\n" for n in range(9_000))
    return bodies


def _both(
    objects: Callable[[], Objects],
    tree: str,
    known: dict[str, tuple[str, int, int]],
    *,
    split: bool = True,
) -> None:
    """The listing and the texts of ``tree``, shared and not, are equal; ``split``:
    whether the halves answer (else the whole reading does)."""
    for lowered in (False, True):
        halved = survey._shared(objects(), tree, lambda: known, lowered=lowered)  # pyright: ignore[reportPrivateUsage]
        assert (halved is not None) == split
    alone = build(objects(), tree, lambda: known)
    assert build(objects(), tree, lambda: known, shared=True) == alone
    swept = texts(objects(), tree, lambda: known)
    assert texts(objects(), tree, lambda: known, shared=True) == swept
    assert alone is not None and swept is not None


def test_a_listing_read_in_halves_is_the_one_read_whole(tmp_path: Path) -> None:
    """Text that is not ASCII, an empty body, a large body, code halves: the same
    listing, summaries and texts; with summaries kept before, the same ones taken."""
    path = str(tmp_path / "repo.git")
    tree = _store(path, _awkward())
    folder = os.path.join(path, "objects")
    _both(lambda: Objects(folder), tree, {})
    whole = build(Objects(folder), tree, dict)
    assert whole is not None
    _both(lambda: Objects(folder), tree, dict(list(whole[1].items())[::3]))


def test_memories_packed_as_deltas_are_read_in_halves_as_whole(tmp_path: Path) -> None:
    """``.md`` blobs packed as deltas of one another, in one pack and spread over
    several (a child reads its bases as this process does)."""
    path = str(tmp_path / "repo.git")
    shared = "".join(f"a line that every memory shares, number {n}\n" for n in range(40))
    tree = _store(path, {f"d{i:02d}": shared + f"its own line {i}\n" for i in range(50)})
    _git(path, "repack", "-a", "-d", "-f", "-q", "--depth=50", "--window=50")
    listed = _git(path, "verify-pack", "-v", *[b + ".idx" for b in _packs(path)])
    assert any(" blob " in line and len(line.split()) > 5 for line in listed.splitlines())
    folder = os.path.join(path, "objects")
    _both(lambda: Objects(folder), tree, {})


def _packs(path: str) -> list[str]:
    return pack_bases(os.path.join(path, "objects", "pack"))


def _rebuilt(
    path: str, tree: str, edit: Callable[[dict[bytes, dict[bytes, tuple[int, bytes]]]], None]
) -> str:
    """The root ``tree`` with its folders (name → entries: name → (mode, id)) changed
    by ``edit``, written as loose objects; the new root's id."""
    repo = Repo(path)
    try:
        store = repo.object_store
        root = store[ObjectID(tree.encode())]
        assert isinstance(root, Tree)
        folders: dict[bytes, dict[bytes, tuple[int, bytes]]] = {}
        for entry in root.items():
            sub = store[entry.sha]
            assert isinstance(sub, Tree)
            folders[entry.path] = {e.path: (e.mode, e.sha) for e in sub.items()}
        edit(folders)
        new_root = Tree()
        for name, entries in folders.items():
            sub = Tree()
            for entry_name, (mode, sha) in entries.items():
                sub.add(entry_name, mode, ObjectID(sha))
            store.add_object(sub)
            new_root.add(name, 0o040000, sub.id)
        store.add_object(new_root)
        return new_root.id.decode()
    finally:
        repo.close()


def _blob(path: str, data: bytes) -> bytes:
    repo = Repo(path)
    try:
        blob = Blob.from_string(data)
        repo.object_store.add_object(blob)
        return blob.id
    finally:
        repo.close()


def _moved(slug: str, to: bytes) -> Callable[[dict[bytes, dict[bytes, tuple[int, bytes]]]], None]:
    """Move ``slug``'s files to the folder ``to`` (made if need be)."""

    def edit(folders: dict[bytes, dict[bytes, tuple[int, bytes]]]) -> None:
        at = folders[layout.bucket(slug).encode()]
        files = {name: at.pop(name) for name in list(at) if name.startswith(slug.encode() + b".")}
        folders.setdefault(to, {}).update(files)

    return edit


def _copied(slug: str, to: bytes) -> Callable[[dict[bytes, dict[bytes, tuple[int, bytes]]]], None]:
    """Copy ``slug``'s ``.md`` file to the folder ``to`` too."""

    def edit(folders: dict[bytes, dict[bytes, tuple[int, bytes]]]) -> None:
        name = slug.encode() + b".md"
        folders.setdefault(to, {})[name] = folders[layout.bucket(slug).encode()][name]

    return edit


@pytest.mark.parametrize(
    "case", ["misplaced", "in two folders", "in two halves", "no front matter", "not text"]
)
def test_an_odd_tree_read_in_halves_is_read_as_whole(tmp_path: Path, case: str) -> None:
    """A memory out of its folder, a slug in two folders (in one half and across
    both), a memory that does not read as the store's: the same answer (``None``
    where the store's own reading is to say what is wrong)."""
    path = str(tmp_path / "repo.git")
    tree = _store(path, _awkward())
    slug = "m007"
    if case == "misplaced":
        tree = _rebuilt(path, tree, _moved(slug, b"ff" if layout.bucket(slug) < "80" else b"00"))
    elif case == "in two folders":
        near = format(int(layout.bucket(slug), 16) ^ 1, "02x").encode()
        tree = _rebuilt(path, tree, _copied(slug, near))
    elif case == "in two halves":
        tree = _rebuilt(path, tree, _copied(slug, b"ff" if layout.bucket(slug) < "80" else b"00"))
    else:
        data = (
            b"no front matter\n"
            if case == "no front matter"
            else b'---\ndescription: "x"\n---\n\xff'
        )
        sha = _blob(path, data)

        def edit(folders: dict[bytes, dict[bytes, tuple[int, bytes]]]) -> None:
            folders[layout.bucket(slug).encode()][slug.encode() + b".md"] = (0o100644, sha)

        tree = _rebuilt(path, tree, edit)
    folder = os.path.join(path, "objects")
    if case in ("no front matter", "not text"):
        assert build(Objects(folder), tree, dict, shared=True) is None
        assert texts(Objects(folder), tree, dict, shared=True) is None
        assert build(Objects(folder), tree, dict) is None
    else:
        _both(lambda: Objects(folder), tree, {}, split=case == "misplaced")


def _md_entry(path: str, slug: str) -> tuple[str, str, int]:
    """``slug``'s ``.md`` blob id, the one pack of the repository ``path`` (its path
    without the suffix) and where that blob's entry starts in it."""
    md = _git(path, "rev-parse", f"{STORE}:{layout.bucket(slug)}/{slug}.md").strip()
    [base] = _packs(path)
    pack = MappedPack(base)
    try:
        offset = pack.find(bytes.fromhex(md))
    finally:
        pack.close()
    assert offset is not None
    return md, base, offset


def test_a_damaged_entry_is_unreadable_in_either_half(tmp_path: Path) -> None:
    """A damaged ``.md`` entry in the pack, in the first half's folders or the
    child's: :class:`Unreadable`, raised in this process."""
    for slug in ("m003", "m041"):
        path = str(tmp_path / slug / "repo.git")
        tree = _store(path, {f"m{i:03d}": f"body {i}\n" for i in range(50)})
        _git(path, "repack", "-a", "-d", "-q")
        _, base, offset = _md_entry(path, slug)
        os.chmod(base + ".pack", 0o644)
        with open(base + ".pack", "r+b") as f:
            f.seek(offset)
            f.write(bytes([(3 << 4) | 0x0F]) + b"\xff" * 12)
        for read in (build, texts):
            with pytest.raises(Unreadable):
                read(Objects(os.path.join(path, "objects")), tree, dict, shared=True)


def test_halves_are_the_work_of_each_half_in_order() -> None:
    parent = os.getpid()
    got = halves.halves(lambda part: (os.getpid() != parent, sum(part)), list(range(10)), 2)
    assert got == [(False, 10), (True, 35)]
    assert halves.halves(lambda part: sum(part), [1, 2, 3], 4) == [6]


@pytest.mark.parametrize("failure", ["raises", "unmarshalled", "killed"])
def test_a_child_that_fails_leaves_its_half_to_this_process(failure: str) -> None:
    """A child that raises, makes what does not marshal, or dies: its half is done
    here, and an error of this process's half is raised here."""
    parent = os.getpid()

    def work(part: list[int]) -> object:
        if os.getpid() != parent:
            if failure == "raises":
                raise ValueError("in the child")
            if failure == "killed":
                os.kill(os.getpid(), 9)
            return object()
        return sum(part)

    assert halves.halves(work, list(range(10)), 2) == [10, 35]

    def failing(part: list[int]) -> int:
        if os.getpid() == parent and 0 in part:
            raise KeyError("here")
        return sum(part)

    with pytest.raises(KeyError):
        halves.halves(failing, list(range(10)), 2)


def _files(meta: str) -> dict[str, bytes]:
    """Every derived file under gitmem's folder ``meta``, by its path there."""
    found: dict[str, bytes] = {}
    for at, _, names in os.walk(meta):
        for name in names:
            found[os.path.relpath(os.path.join(at, name), meta)] = Path(at, name).read_bytes()
    return found


@pytest.mark.parametrize("argv", [["ls"], ["state"], ["search", "--limit", "5", "line", "é"]])
def test_a_fresh_clones_first_command_shared_prints_and_keeps_what_one_process_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str]
) -> None:
    """The lean read path on a store with nothing kept, its reading shared with a
    child: the very text and derived files of one process reading alone, and of the
    same command run again."""
    path = str(tmp_path / "repo.git")
    _store(path, _awkward())
    meta = os.path.join(path, "gitmem")
    command = ["--repo", path, argv[0], "-s", STORE, *argv[1:]]
    runs: list[tuple[str | bytes | None, dict[str, bytes]]] = []
    for least in (10**9, 1):
        monkeypatch.setattr(quick, "SHARED_FROM", least)
        for name in ("listing", "search", "summaries"):
            at = os.path.join(meta, name)
            shutil.rmtree(at) if os.path.isdir(at) else Path(at).unlink(missing_ok=True)
        runs.append((quick.printed(command, os.environ), _files(meta)))
    assert runs[0][0] is not None
    assert runs[1] == runs[0]
    assert quick.printed(command, os.environ) == runs[0][0]


@pytest.mark.parametrize("change", [-1, 1])
def test_a_small_entry_of_another_size_than_its_stream_is_unreadable(
    tmp_path: Path, change: int
) -> None:
    """A ``.md`` entry whose two-byte header declares a size its stream does not
    inflate to (one byte short, one byte past): the sweep refuses it, as a read of that
    one object does."""
    path = str(tmp_path / "repo.git")
    tree = _store(path, {f"m{i:03d}": f"body {i}\n" for i in range(50)})
    _git(path, "repack", "-a", "-d", "-q")
    md, base, offset = _md_entry(path, "m004")
    with open(base + ".pack", "rb") as f:
        f.seek(offset)
        header = f.read(2)
    assert header[0] & 0x80 and not header[1] & 0x80  # a size of two bytes
    size = (header[0] & 0x0F | header[1] << 4) + change
    os.chmod(base + ".pack", 0o644)
    with open(base + ".pack", "r+b") as f:
        f.seek(offset)
        f.write(bytes([0x80 | (3 << 4) | size & 0x0F, size >> 4]))
    folder = os.path.join(path, "objects")
    with pytest.raises(Unreadable):
        Objects(folder).read(md)
    with pytest.raises(Unreadable):
        list(Objects(folder).each([bytes.fromhex(md)]))
    for read in (build, texts):
        with pytest.raises(Unreadable):
            read(Objects(folder), tree, dict)


def test_words_filed_in_halves_are_filed_as_in_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each word's postings made by two processes, a half each, are those one pass
    makes: the numbers in order, a number repeated as often as its word occurs."""
    texts = [
        f"m{i:03d}\0word {i % 7}\0{'ü ' * (i % 3)}line_{i % 5} line_{i % 5} end" for i in range(60)
    ]
    texts += ["", "\0\0", "日本語 of\0日本語", "one"]
    alone = stored.numbered(texts)
    monkeypatch.setattr(survey, "SHARED_FROM", 2)
    assert stored.numbered(texts) == alone
    vocab, runs = alone
    at = vocab.split("\0").index("line_3")
    assert list(runs[at]) == [n for n in range(60) if n % 5 == 3 for _ in range(2)]


def test_a_search_index_built_in_halves_is_the_one_built_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The library's first search of a store with nothing kept, its sweep and its
    filing shared with children: the very files one process writes, and the same
    hits."""
    path = str(tmp_path / "repo.git")
    _store(path, _awkward())
    meta = os.path.join(path, "gitmem")
    split: list[bool] = []  # for each work asked in halves, whether a child took half
    real = halves.halves

    def spy(work: Callable[[list[object]], object], items: list[object], least: int) -> object:
        split.append(len(items) >= least)
        return real(work, items, least)

    monkeypatch.setattr(survey, "halves", spy)
    monkeypatch.setattr(halves, "halves", spy)
    runs: list[tuple[list[str], dict[str, bytes]]] = []
    for least in (10**9, 1):
        monkeypatch.setattr(storage, "SHARED_FROM", least)
        monkeypatch.setattr(survey, "SHARED_FROM", least)
        for name in ("listing", "search", "summaries"):
            at = os.path.join(meta, name)
            shutil.rmtree(at) if os.path.isdir(at) else Path(at).unlink(missing_ok=True)
        with Repository.open(path) as repo:
            index = stored_index(repo, STORE)
            hits = [hit.memory.slug for hit in index.search(["line"], 5)]
        runs.append((hits, _files(meta)))
    assert split == [True, True]  # the sweep and the filing, in the second run only
    assert runs[0][0] and runs[0][1]
    assert runs[1] == runs[0]
