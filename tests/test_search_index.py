"""The keyword-search index: candidates from the vocabulary, kept in step with changes."""

from __future__ import annotations

import marshal
import os
import random
import re
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import assert_fsck, git

from gitmem import Author, Memory, Repository, ops
from gitmem.search import BEHIND, SearchIndex, index_file, stored_index
from gitmem.search import ranked as search_ranked
from gitmem.search.stored import SUFFIX, Damaged, encode, write
from gitmem.types import Change


def _index(*memories: Memory) -> SearchIndex:
    index = SearchIndex()
    index.reset(list(memories), None)
    return index


def _slugs(index: SearchIndex, *keywords: str) -> list[str]:
    return [hit.memory.slug for hit in index.search(list(keywords), 0)]


def test_a_keyword_inside_a_longer_word_matches() -> None:
    """A word keyword finds memories where it is only part of a word, any case."""
    index = _index(Memory("a", "", "the DEPLOYMENT went fine"), Memory("b", "", "nothing"))
    assert _slugs(index, "ploy") == ["a"]


def test_a_keyword_with_spaces_and_punctuation_matches_across_words() -> None:
    """A keyword that is not one word is looked for in the whole text."""
    index = _index(Memory("a", "", "roll out, then drain"), Memory("b", "", "roll-out"))
    assert _slugs(index, "out, then") == ["a"]
    assert _slugs(index, "l-o") == ["b"]


def test_slug_and_description_are_searched_but_fields_do_not_run_together() -> None:
    """Slug and description match; a keyword never spans two fields."""
    index = _index(Memory("csv-tools", "vendor exports", "parse"))
    assert _slugs(index, "csv") == ["csv-tools"]
    assert _slugs(index, "exports") == ["csv-tools"]
    assert _slugs(index, "exportsparse") == []


def test_put_and_remove_keep_the_index_in_step() -> None:
    """A replaced memory stops matching its old words; a removed one matches nothing."""
    index = _index(Memory("a", "", "alpha"), Memory("b", "", "alpha beta"))
    index.put(Memory("a", "", "gamma"))
    assert _slugs(index, "alpha") == ["b"]
    assert _slugs(index, "gamma") == ["a"]
    index.remove("b")
    assert _slugs(index, "alpha", "beta") == []


def test_ranking_distinct_then_frequency_then_slug() -> None:
    """More distinct keywords rank first, then more occurrences, then the slug."""
    index = _index(
        Memory("one", "", "red red red"),
        Memory("two", "", "red blue"),
        Memory("three", "", "red red"),
        Memory("four", "", "red red"),
    )
    hits = index.search(["red", "blue"], 3)
    assert [(h.memory.slug, h.distinct, h.frequency) for h in hits] == [
        ("two", 2, 2),
        ("one", 1, 3),
        ("four", 1, 2),
    ]


# -- the index kept on disk: derived data in the git directory ----------------------

S = "profile/s"
ALICE = Author.agent("alice")
QUERIES = [["ploy"], ["roll", "drain"], ["out, then"], ["alpha"], ["zeta", "m1"], ["-"]]


def _put(repo: Repository, op: str, slug: str, body: str = "") -> None:
    memory = None if op == "delete" else Memory(slug, f"about {slug}", body)
    repo.mutate(S, ALICE, lambda _: Change(op, slug, memory))


def _seed(repo: Repository, count: int) -> None:
    words = ["deployment", "roll out, then drain", "alpha", "zeta", "rollback"]
    for i in range(count):
        _put(repo, "create", f"m{i}", f"{words[i % 5]} {words[(i * 3) % 5]} n{i}\n")


def _answers(index: SearchIndex) -> list[list[tuple[str, int, int, str]]]:
    return [
        [(h.memory.slug, h.distinct, h.frequency, h.memory.body) for h in index.search(q, 0)]
        for q in QUERIES
    ]


def _built(repo: Repository) -> SearchIndex:
    """An index built in memory from the head: what a stored one must answer."""
    index = SearchIndex()
    index.follow(repo, S)
    return index


def test_the_first_search_writes_the_index_and_the_next_process_reads_it(
    repo: Repository,
) -> None:
    """The index lands in the git directory (in no branch); a fresh repository object
    stands on it and answers as an index built from the memories does."""
    _seed(repo, 12)
    path = index_file(repo, S)
    assert not os.path.exists(path)
    first = stored_index(repo, S)
    assert not first.stored and os.path.exists(path)
    assert path.startswith(os.path.join(repo.directory, "gitmem", "search"))
    fresh = Repository.open(repo.directory)
    again = stored_index(fresh, S)
    assert again.stored and again.commit == repo.head(S)
    assert _answers(again) == _answers(_built(repo)) == _answers(first)
    assert_fsck(repo.directory)


def test_a_stored_index_is_caught_up_from_its_commit(repo: Repository) -> None:
    """Edits, removals and new memories after the index was written are applied on top
    of it, and the answers are those of an index built afresh."""
    _seed(repo, 10)
    stored_index(repo, S)
    written = Path(index_file(repo, S)).read_bytes()
    _put(repo, "edit", "m1", "now only zeta zeta\n")
    _put(repo, "delete", "m2")
    _put(repo, "create", "new", "deployment of alpha\n")
    caught = stored_index(Repository.open(repo.directory), S)
    assert caught.stored and caught.changed == 3
    assert Path(index_file(repo, S)).read_bytes() == written  # a few changes: not rewritten
    assert caught.commit == repo.head(S)
    assert _answers(caught) == _answers(_built(repo))


def test_a_stored_index_far_behind_is_written_again(repo: Repository) -> None:
    """Once ``BEHIND`` memories changed since, the caught-up index replaces the file."""
    _seed(repo, 3)
    stored_index(repo, S)
    for i in range(BEHIND):
        _put(repo, "create", f"x{i}", "alpha\n")
    stored_index(Repository.open(repo.directory), S)
    reread = SearchIndex.load(index_file(repo, S))
    assert reread is not None and reread.commit == repo.head(S)


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 2],
        lambda data: data[:-1],
        lambda data: b"garbage\n" + data,
        lambda data: data.replace(b"gitmem-search-5", b"gitmem-search-9", 1),
        lambda data: data.replace(b" py3.", b" py2.", 1),
        lambda data: _flip(data, _parts(data)["head"] + 7),
        lambda data: b"",
    ],
    ids=["torn", "short", "garbage", "other-format", "other-python", "flipped-head", "empty"],
)
def test_a_damaged_index_is_rebuilt_never_trusted(
    repo: Repository, damage: Callable[[bytes], bytes]
) -> None:
    """An index file whose head does not read whole is not used: the next search builds
    the index again from the store, answers right, and writes a good file."""
    _seed(repo, 8)
    stored_index(repo, S)
    path = index_file(repo, S)
    good = Path(path).read_bytes()
    with open(path, "wb") as f:
        f.write(damage(good))
    assert SearchIndex.load(path) is None
    rebuilt = stored_index(Repository.open(repo.directory), S)
    assert not rebuilt.stored
    assert _answers(rebuilt) == _answers(_built(repo))
    assert Path(path).read_bytes() == good


def _parts(data: bytes) -> dict[str, int]:
    """Where each part of an index file starts (see ``gitmem.search.stored.Stored``)."""
    line_end = data.index(b"\n") + 1
    head_len = int(data[:line_end].split()[3])
    parts = marshal.loads(data[line_end : line_end + head_len])[4:]
    slugs_len, _, blobs_len, _, postings_len, _, _ = parts
    body = line_end + head_len
    return {
        "head": line_end,
        "slugs": body,
        "blobs": body + slugs_len,
        "postings": body + slugs_len + blobs_len,
        "texts": body + slugs_len + blobs_len + postings_len,
    }


def _flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0x20]) + data[at + 1 :]


def _every_word(repo: Repository) -> list[str]:
    texts = (f"{m.slug} {m.description} {m.body}" for m in repo.snapshot(S).memories())
    return sorted({w for t in texts for w in re.findall(r"\w+", t.lower())})


@pytest.mark.parametrize("part", ["postings", "texts"])
def test_a_damaged_part_is_found_when_read_and_rebuilt(repo: Repository, part: str) -> None:
    """A part past the head is checked when a search first reads it: a damaged one is
    never used; the index is built again from the store, the answers are right, and the
    good file replaces the damaged one. (Byte after byte of the part, so that every
    word's postings are hit; every word is asked for, and ``QUERIES`` holds keywords
    that are not words, which read the texts.)"""
    _seed(repo, 8)
    built = _built(repo)
    words = _every_word(repo)
    expected = [built.search([w], 0) for w in words], _answers(built)
    stored_index(repo, S)
    path = index_file(repo, S)
    good = Path(path).read_bytes()
    end = {"postings": _parts(good)["texts"], "texts": len(good)}[part]
    for where in range(_parts(good)[part], end, 5):
        Path(path).write_bytes(_flip(good, where))
        with Repository.open(repo.directory) as fresh:
            index = stored_index(fresh, S)
            assert index.stored  # the head reads whole: the parts are read when needed
            assert ([index.search([w], 0) for w in words], _answers(index)) == expected, where
            assert not index.stored
        assert Path(path).read_bytes() == good, where


def test_a_damaged_slug_list_is_found_when_catching_up(repo: Repository) -> None:
    """The stored slug list is read when a change since the index was written replaces
    a memory it holds: a damaged one makes the index build itself from the head."""
    _seed(repo, 8)
    stored_index(repo, S)
    path = index_file(repo, S)
    good = Path(path).read_bytes()
    for n, where in enumerate(range(_parts(good)["slugs"], _parts(good)["blobs"], 3)):
        Path(path).write_bytes(_flip(good, where))
        _put(repo, "edit", "m3", f"deployment n3 edit{n}\n")
        with Repository.open(repo.directory) as fresh:
            index = stored_index(fresh, S)
            assert not index.stored and index.commit == repo.head(S)
            assert _answers(index) == _answers(_built(repo))
            assert [h.memory.slug for h in index.search([f"edit{n}"], 0)] == ["m3"]
        reread = SearchIndex.load(path)
        assert reread is not None and reread.commit == repo.head(S)
        good = Path(path).read_bytes()


def test_a_damaged_blob_id_is_never_given(repo: Repository) -> None:
    """The index keeps each memory's ``.md`` blob id (a search's hit is read by it, no
    folder of the tree read); the ids are checked whole when first read, and a damaged
    one is never given out."""
    _seed(repo, 8)
    stored_index(repo, S)
    path = index_file(repo, S)
    good = Path(path).read_bytes()
    index = SearchIndex.load(path)
    assert index is not None
    md = git(repo.directory, "rev-parse", f"refs/heads/{S}:{repo.path(S, 'm3')}").stdout.strip()
    assert index.blob("m3") == md
    assert index.blob("no-such-memory") is None
    for where in range(_parts(good)["blobs"], _parts(good)["postings"], 3):
        Path(path).write_bytes(_flip(good, where))
        damaged = SearchIndex.load(path)
        assert damaged is not None
        with pytest.raises(Damaged):
            damaged.blob("m3")


def test_a_reader_never_sees_half_an_index(repo: Repository) -> None:
    """While other threads keep rewriting the file, every load reads a whole index."""
    _seed(repo, 20)
    index = stored_index(repo, S)
    path = index_file(repo, S)
    stop = threading.Event()

    def write() -> None:
        while not stop.is_set():
            index.save(path)

    writers = [threading.Thread(target=write) for _ in range(2)]
    for w in writers:
        w.start()
    try:
        for _ in range(200):
            loaded = SearchIndex.load(path)
            assert loaded is not None and loaded.commit == repo.head(S)
    finally:
        stop.set()
        for w in writers:
            w.join()
    assert not [n for n in os.listdir(os.path.dirname(path)) if n.endswith(".tmp")]


def test_the_cli_search_uses_the_stored_index(repo: Repository) -> None:
    """`gitmem search` answers from the stored index, caught up after an edit."""
    _seed(repo, 6)
    assert [h.memory.slug for h in ops.search(repo, S, ["kumquat"])] == []
    _put(repo, "edit", "m0", "a kumquat here\n")
    assert [h.memory.slug for h in ops.search(Repository.open(repo.directory), S, ["kumquat"])] == [
        "m0"
    ]
    assert os.path.exists(index_file(repo, S))


@pytest.mark.parametrize("seed", range(6))
def test_the_best_few_of_a_broad_search_are_the_best_of_all(seed: int) -> None:
    """With a limit, the ranking stops reading early; it gives what ranking every
    matching memory gives, ties (broken by slug) included, also after changes."""
    rng = random.Random(seed)
    words = ["rollout", "envelope", "roll", "canary", "ship"]

    def memory(i: int) -> Memory:
        body = " ".join(rng.choice(words) for _ in range(rng.randrange(1, 12)))
        return Memory(f"m{i:04d}", "", body)

    memories = {m.slug: m for m in (memory(i) for i in range(600))}
    index = _index(*memories.values())
    for round_ in range(3):
        for keywords in (["rollout", "envelope"], ["ship"], ["canary", "ship", "rollout"]):
            for limit in (1, 5, 25):
                expected = sorted(
                    (
                        -sum(1 for k in keywords if m.body.count(k)),
                        -sum(m.body.count(k) for k in keywords),
                        m.slug,
                    )
                    for m in memories.values()
                    if any(k in m.body for k in keywords)
                )[:limit]
                got = [
                    (-h.distinct, -h.frequency, h.memory.slug)
                    for h in index.search(keywords, limit)
                ]
                assert got == expected, (round_, keywords, limit)
        for i in rng.sample(range(600), 40):  # changes between rounds
            changed = memory(i)
            memories[changed.slug] = changed
            index.put(changed)


def _brute(texts: dict[str, str], keywords: list[str], limit: int) -> list[tuple[str, int, int]]:
    """Every memory ranked by counting each keyword inside each word of its body."""
    found: list[tuple[int, int, str]] = []
    for slug, body in texts.items():
        counts = [sum(w.count(k) for w in body.split()) for k in dict.fromkeys(keywords)]
        if any(counts):
            found.append((-sum(1 for c in counts if c), -sum(counts), slug))
    return [(slug, -d, -t) for d, t, slug in sorted(found)[:limit]]


@pytest.mark.parametrize("short", [0, 50])
@pytest.mark.parametrize("seed", range(4))
def test_a_ranking_from_groups_is_the_ranking_of_every_memory(
    seed: int, short: int, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Words ranked from their memories grouped by count (here every word, however few
    its memories; a list read whole first when it is ``short``): the best few are what
    ranking every memory gives, ties included, whether the groups were counted by
    this search or read back from the file kept beside the index; a kept record that
    is damaged, or of another index, is never read: the word is counted again."""
    monkeypatch.setattr(search_ranked, "GROUPED_FROM", 0)
    monkeypatch.setattr(search_ranked, "_SHORT", short)
    rng = random.Random(seed)
    words = ["rollout", "envelope", "canary", "ship", "rollback"]

    def texts(count: int) -> dict[str, str]:
        return {
            f"m{i:04d}": " ".join(rng.choice(words) for _ in range(rng.randrange(1, 14)))
            for i in range(count)
        }

    def index_of(memories: dict[str, str], commit: str) -> str:
        write(path, encode(commit, {s: f"{s}\0\0{body}" for s, body in memories.items()}))
        return path

    queries = [
        ["rollout", "envelope"],
        ["ship"],
        ["canary", "ship", "rollout"],
        ["rollou", "rollout"],  # two keywords in one word
        ["rollout", "nothing"],
        ["roll", "ship"],  # a keyword in two words: counted, not grouped
    ]

    def check(memories: dict[str, str]) -> None:
        index = SearchIndex.load(path)
        assert index is not None
        for keywords in queries:
            for limit in (1, 5, 25):
                assert index.rank(keywords, limit) == _brute(memories, keywords, limit)

    path = str(tmp_path / f"index{SUFFIX}")
    ranked = Path(path + ".ranked")
    memories = texts(300)
    index_of(memories, "a" * 40)
    check(memories)  # counted, and kept
    kept = ranked.read_bytes()
    assert kept.count(b"gitmem-ranked-1 ") == 4  # each word ranked from groups, once
    check(memories)  # read back
    assert ranked.read_bytes() == kept
    middle = len(kept) // 2
    ranked.write_bytes(kept[:middle] + bytes([kept[middle] ^ 1]) + kept[middle + 1 :])
    check(memories)  # the damaged record counted again
    others = texts(300)
    index_of(others, "b" * 40)
    assert not ranked.exists()  # gone with the index it was of
    ranked.write_bytes(kept)
    check(others)  # a record of another index is never read
    # a tie the groups read first do not settle: the lower slug, in the group after
    ties = {"m0000": "envelope envelope rollout", "m0001": "rollout rollout envelope"}
    index_of(ties, "c" * 40)
    check(ties)


def test_a_stored_index_ranks_a_broad_search_as_a_built_one(repo: Repository) -> None:
    """Stored postings are read in the order they were written (most occurrences first):
    with a limit, a fresh process's ranking is the one an index built in memory gives."""
    rng = random.Random(7)
    words = ["rollout", "envelope", "roll", "canary", "ship"]
    for i in range(150):
        body = " ".join(rng.choice(words) for _ in range(rng.randrange(1, 12)))
        _put(repo, "create", f"m{i:03d}", body + "\n")
    stored_index(repo, S)
    with Repository.open(repo.directory) as fresh:
        stored = stored_index(fresh, S)
        assert stored.stored
        built = _built(repo)
        for keywords in (["rollout", "envelope"], ["ship"], ["canary", "ship", "roll"]):
            for limit in (1, 5, 25, 0):
                got = [
                    (h.memory.slug, h.distinct, h.frequency) for h in stored.search(keywords, limit)
                ]
                want = [
                    (h.memory.slug, h.distinct, h.frequency) for h in built.search(keywords, limit)
                ]
                assert got == want, (keywords, limit)


# -- built in bulk: the same index as one built a change at a time ---------------------

_PIECES = ["roll", "Out", "rollout", "canary_2", "déploiement", "ÉTÉ", "naïve", "x9", "ß"]
_GLUE = [" ", "  ", "-", ", ", ".\n", "/", "\t", "'", "_", "→"]


def test_words_as_bytes_are_the_words_encoded() -> None:
    """The bulk build files words as UTF-8 bytes: the very words of the text, in order,
    and sorted as bytes they sort as the text does."""
    from gitmem.search.words import encoded, words

    rng = random.Random(5)
    alphabet = [chr(c) for c in range(128)] + ["é", "ß", "İ", "٣", "\u00a0", "_", "😀", "ǅ"]
    seen: set[str] = set()
    for _ in range(2000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 30)))
        assert encoded(text) == [w.encode() for w in words(text)], text
        seen.update(words(text))
    assert [w.decode() for w in sorted(w.encode() for w in seen)] == sorted(seen)


def test_a_bulk_build_leaves_the_collector_as_it_was() -> None:
    """The collector paused while an index is built is on again after (and stays off
    for a caller that had turned it off)."""
    import gc

    from gitmem.search.stored import encode

    for enabled in (True, False):
        (gc.enable if enabled else gc.disable)()
        try:
            encode(None, {"a": "a\0b\0c d c"})
            assert gc.isenabled() is enabled
        finally:
            gc.enable()


def _text(rng: random.Random) -> str:
    return "".join(rng.choice(_PIECES) + rng.choice(_GLUE) for _ in range(rng.randrange(0, 14)))


def _stored_parts(index: SearchIndex, path: str) -> tuple[object, ...]:
    """What a saved index holds, part by part (decoded: marshal's bytes may differ
    with how objects are shared, not with what they hold)."""
    index.save(path)
    loaded = SearchIndex.load(path)
    assert loaded is not None
    base = loaded._base  # pyright: ignore[reportPrivateUsage]
    assert base is not None
    words = base.words()
    postings = [list(base.postings(i).items()) for i in range(len(words))]
    # against a plain count: every word of every text, each list in slug order
    counted: dict[str, dict[str, int]] = {}
    for slug, text in base.texts().items():
        for word in re.findall(r"\w+", text):
            counted.setdefault(word, {}).setdefault(slug, 0)
            counted[word][slug] += 1
    assert words == sorted(counted)
    for word, found in zip(words, postings, strict=True):
        assert found == sorted(counted[word].items()), word
    return (loaded.commit, words, sorted(base.slugs()), base.texts(), postings)


@pytest.mark.parametrize("seed", range(3))
def test_an_index_built_in_bulk_is_the_one_built_a_change_at_a_time(
    repo: Repository, tmp_path: Path, seed: int
) -> None:
    """Random creations, edits and deletions (ASCII and other text, punctuation,
    repeated words); an index that followed every change one at a time and one built
    afresh from the head in one go answer every search alike, scores and order
    included, and write the same file."""
    rng = random.Random(seed)
    slugs = [f"m{i:02d}" for i in range(30)]
    live: set[str] = set()
    stepped = SearchIndex()
    for _ in range(70):
        slug = rng.choice(slugs)
        op = (
            "delete"
            if slug in live and rng.random() < 0.25
            else "edit"
            if slug in live
            else "create"
        )
        memory = None if op == "delete" else Memory(slug, _text(rng)[:80], _text(rng))
        repo.mutate(S, ALICE, lambda _, op=op, slug=slug, memory=memory: Change(op, slug, memory))
        (live.discard if op == "delete" else live.add)(slug)
        stepped.follow(repo, S)
    assert stepped.changed == len(live)
    bulk = stored_index(repo, S)
    assert not bulk.stored
    texts = [f"{m.slug} {m.description} {m.body}".lower() for m in repo.snapshot(S).memories()]
    keywords = [t[i : i + rng.randrange(1, 6)] for t in texts for i in range(0, len(t), 7)]
    keywords += ["roll", "rollout", "é", "-", ", ", "m0", "zzz", "ROLL", "_"]
    for _ in range(120):
        asked = rng.sample(keywords, rng.randrange(1, 4))
        for limit in (0, 1, 3):
            assert [(h.memory, h.distinct, h.frequency) for h in bulk.search(asked, limit)] == [
                (h.memory, h.distinct, h.frequency) for h in stepped.search(asked, limit)
            ], (asked, limit)
    assert _stored_parts(bulk, str(tmp_path / "bulk")) == _stored_parts(
        stepped, str(tmp_path / "stepped")
    )


def test_words_are_what_the_word_pattern_finds() -> None:
    """Text split at C speed (ASCII) gives the words ``\\w+`` finds, in order."""
    from gitmem.search.words import words

    rng = random.Random(3)
    alphabet = [chr(c) for c in range(128)] + ["é", "ß", "İ", "٣", "\u00a0", "\u2028", "_"]
    for _ in range(2000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 30)))
        assert words(text) == re.findall(r"\w+", text), text
        ascii_only = text.encode("ascii", "ignore").decode()
        assert words(ascii_only) == re.findall(r"\w+", ascii_only), ascii_only


def _text(rng: random.Random) -> str:
    pieces = ["Roll", "out", "ROLLOUT", "ünï", "_x", "42", "a-b", "\t", " ", ",", "\n", "ß", "ǅ"]
    return "".join(rng.choice(pieces) for _ in range(rng.randrange(0, 30)))


def test_an_index_built_in_bulk_is_the_file_the_index_writes(tmp_path: Path) -> None:
    """The lean path's bulk build of a fresh index (one pass over the memories' texts) is
    byte for byte the file a ``SearchIndex`` writes of the same memories, built at once
    or changed one memory at a time over a stored base."""
    from gitmem.search.stored import encode

    rng = random.Random(7)
    for case in range(40):
        memories = {
            f"m{rng.randrange(60):02d}": Memory(f"m{rng.randrange(60):02d}", _text(rng), _text(rng))
            for _ in range(rng.randrange(1, 25))
        }
        memories = {m.slug: m for m in memories.values()}
        texts = {m.slug: f"{m.slug}\0{m.description}\0{m.body}".lower() for m in memories.values()}
        path = str(tmp_path / f"{case}{SUFFIX}")
        index = SearchIndex()
        index.reset(list(memories.values()), "c" * 40)
        index.save(path)
        assert Path(path).read_bytes() == encode("c" * 40, texts), case
        stored = SearchIndex.load(path)
        assert stored is not None
        for slug in rng.sample(sorted(memories), len(memories) // 2):
            if rng.random() < 0.5:
                stored.remove(slug)
                del texts[slug]
            else:
                changed = Memory(slug, _text(rng), _text(rng))
                stored.put(changed)
                texts[slug] = f"{slug}\0{changed.description}\0{changed.body}".lower()
        stored.save(path)
        assert Path(path).read_bytes() == encode("c" * 40, texts), case


def test_an_earlier_format_is_never_read_and_goes_when_the_index_is_written(
    repo: Repository,
) -> None:
    """A file an earlier format wrote is not this format's file: the index is built from
    the store, and the earlier file removed when the new one is written."""
    _seed(repo, 4)
    path = index_file(repo, S)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    older = path[: -len(SUFFIX)] + ".4"
    with open(older, "wb") as f:
        f.write(b"gitmem-search-4 py3.11 - 1 0\n")
    index = stored_index(repo, S)
    assert _answers(index) == _answers(_built(repo))
    assert not os.path.exists(older)
    assert SearchIndex.load(path) is not None


def test_a_fresh_clones_first_search_writes_the_index_of_the_memories_the_store_reads(
    repo: Repository,
) -> None:
    """The lean path's first search of a fresh clone (every blob read in one sweep, its
    text framed and lowered there, the file built in bulk) on a varied store (text that
    is not ASCII, empty bodies and descriptions, descriptions with escapes, code
    memories) writes the very file a build of the memories as the store reads them
    writes, each told its ``.md`` blob; every word's postings, read back against its
    CRC, are a plain count of the texts."""
    from gitmem import quick

    bodies = ["", "Roll OUT, then drain.\n", "日本語\nend", "ÜNÏCODE ß ǅ straße", "a_b-c\t42\r\n"]
    descriptions = ["", "plain", 'a "quoted" \\ one', "ünï\ttab", "  spaced  "]
    for i in range(40):
        memory = Memory(f"m{i:02d}", descriptions[i % 5], bodies[(i * 3) % 5] * (i % 4))
        if i % 6 == 0:
            memory = Memory(memory.slug, memory.description, memory.body, code="export {};\n")
        repo.mutate(S, ALICE, lambda _, m=memory: Change("create", m.slug, m))
    meta = os.path.join(repo.directory, "gitmem")
    for name in os.listdir(meta):  # as a fresh clone has it
        at = os.path.join(meta, name)
        shutil.rmtree(at) if os.path.isdir(at) else os.remove(at)
    assert quick.answer(["--repo", repo.directory, "search", "-s", S, "roll"], {}) is not None
    written = Path(index_file(repo, S)).read_bytes()
    memories = repo.snapshot(S).memories()
    texts = {m.slug: f"{m.slug}\0{m.description}\0{m.body}".lower() for m in memories}
    listed = [line.split() for line in git(repo.directory, "ls-tree", "-r", S).stdout.splitlines()]
    blobs = {path.split("/")[1][:-3]: blob for _, _, blob, path in listed if path.endswith(".md")}
    assert sorted(blobs) == sorted(texts)
    assert written == encode(repo.head(S), texts, blobs)
    loaded = SearchIndex.load(index_file(repo, S))
    assert loaded is not None and loaded._base is not None  # pyright: ignore[reportPrivateUsage]
    base = loaded._base  # pyright: ignore[reportPrivateUsage]
    counted: dict[str, list[int]] = {}
    for number, slug in enumerate(sorted(texts)):
        for word in re.findall(r"\w+", texts[slug]):
            counted.setdefault(word, []).append(number)
    assert base.words() == sorted(counted)
    for i, word in enumerate(base.words()):
        assert list(base.occurrences(i)) == sorted(counted[word]), word
