"""Trees read once for a piece of work (``gitmem.store.trees``), and the fan-out folders a
merge encodes (``gitmem.store.merge``): each shortcut answers as the whole reading does."""

from __future__ import annotations

import random

import pytest
from dulwich.objects import ObjectID, Tree
from hypothesis import given, settings
from hypothesis import strategies as st

from gitmem.store.merge import _files_tree  # pyright: ignore[reportPrivateUsage]
from gitmem.store.trees import BadTree, Trees, only_in, parse, spliced, starts_in, starts_of


def _tree(entries: dict[bytes, tuple[int, bytes]]) -> bytes:
    made = Tree()
    for name, (mode, sha) in entries.items():
        made.add(name, mode, ObjectID(sha))
    return made.as_raw_string()


@pytest.mark.parametrize("case", range(40))
def test_what_two_trees_hold_differently_is_what_a_whole_parse_finds_asked_again(
    case: int,
) -> None:
    """``Trees.differing`` finds what parsing both trees whole finds, for a line of
    versions each changing a few entries of its parent, asked once, asked again (the
    answer kept), and asked of a fresh reader that met the pairs in another order."""
    rng = random.Random(case)

    def sha() -> bytes:
        return rng.randbytes(20).hex().encode()

    names = [f"m{n:05d}.md".encode() for n in range(rng.choice((8, 60, 400)))]
    current = {n: (0o100644, sha()) for n in rng.sample(names, len(names) * 2 // 3)}
    versions = [_tree(current)]
    for _ in range(5):
        for _ in range(rng.randrange(1, 4)):
            name = rng.choice(names)
            if name in current and rng.random() < 0.3:
                del current[name]
            else:
                current[name] = (0o100644, sha())
        versions.append(_tree(current))
    contents = {f"{i:040x}".encode(): content for i, content in enumerate(versions)}
    ids = list(contents)
    pairs = [(ids[i], ids[i + 1]) for i in range(len(ids) - 1)] + [(ids[0], ids[-1])]
    wanted = {
        (old, new): (
            only_in(parse(contents[old]), parse(contents[new])),
            only_in(parse(contents[new]), parse(contents[old])),
        )
        for old, new in pairs
    }
    read = contents.__getitem__
    trees = Trees()
    for pair in pairs:
        assert trees.differing(*pair, read) == wanted[pair]
    for pair in pairs:
        assert trees.differing(*pair, read) == wanted[pair]
    other = Trees()
    for pair in reversed(pairs):
        assert other.differing(*pair, read) == wanted[pair]


def _files_tree_one_by_one(entries: dict[str, bytes]) -> list[bytes]:
    """A fan-out folder encoded entry by entry, as dulwich encodes one."""
    return [
        b"100644 " + n.encode() + b"\0" + bytes.fromhex(entries[n].decode())
        for n in sorted(entries)
    ]


_NAMES = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12)
_IDS = st.binary(min_size=20, max_size=20).map(lambda b: b.hex().encode())


@settings(derandomize=True, max_examples=200, deadline=None)
@given(st.dictionaries(_NAMES, _IDS, max_size=40))
def test_a_merged_fan_out_folder_is_encoded_as_entry_by_entry(entries: dict[str, bytes]) -> None:
    """The folder a merge writes (names and ids converted at once) is byte for byte
    the one encoded entry by entry, whatever the names (a NUL in one takes the
    entry-by-entry road), and indexes each name at its entry."""
    made = _files_tree(entries)
    assert made.chunks == _files_tree_one_by_one(entries)
    assert [made.chunks[made.index[n]] for n in sorted(entries)] == made.chunks
    if entries and all("\0" not in n for n in entries):
        expected = Tree()
        for name, sha in entries.items():
            expected.add(name.encode(), 0o100644, ObjectID(sha))
        assert made.content() == expected.as_raw_string()


def test_an_id_that_is_not_forty_digits_is_encoded_or_refused_as_before() -> None:
    """An id that is not forty hex digits is encoded, or refused, as entry by entry."""
    odd = (b"12", b"zz" * 20, b"2" * 39, b"12 34" + b"5" * 35, b"a" * 42)
    for bad in odd:
        entries = {"a.md": b"1" * 40, "b.md": bad}
        try:
            expected = _files_tree_one_by_one(entries)
        except ValueError:
            with pytest.raises(ValueError):
                _files_tree(entries)
        else:
            assert _files_tree(entries).chunks == expected


_FILE_NAMES = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\0/"), min_size=1, max_size=8
)


@settings(derandomize=True, max_examples=200, deadline=None)
@given(
    st.dictionaries(_FILE_NAMES, _IDS, max_size=30),
    st.dictionaries(_FILE_NAMES, st.one_of(st.none(), _IDS), max_size=6),
)
def test_a_folder_spliced_is_the_folder_encoded_whole(
    entries: dict[str, bytes], changes: dict[str, bytes | None]
) -> None:
    """A merge's folder spliced into its bytes (replaced entries in place, new ones
    where git's order puts them, removed ones cut out) is byte for byte the folder
    encoded whole from its files."""
    content = _files_tree(entries).content()
    starts = starts_of(parse(content), len(content))
    assert starts is not None
    merged = dict(entries)
    for name, sha in changes.items():
        if sha is None:
            merged.pop(name, None)
        else:
            merged[name] = sha
    found = spliced(content, starts, {n.encode(): sha for n, sha in changes.items()})
    assert found == (_files_tree(merged).content() if merged else b"")


def test_files_are_found_in_raw_bytes_as_a_whole_parse_finds_them() -> None:
    """``Trees.files`` finds an entry by its whole name only: not a name inside another
    entry's name, nor bytes of another entry's id that spell the name; of a name
    given twice, the last; nothing unless the tree's entry starts are kept."""
    spelled = b"a.md\0" + b"1" * 15  # an id whose bytes spell " a.md\0" after a space
    content = b"".join(
        [
            b"100644 b a.md\0" + bytes(20),
            b"100644 ca.md\0" + b" " + spelled[:19],
            b"100644 d.md\0" + b"\x02" * 20,
            b"40000 e\0" + b"\x03" * 20,
            b"100644 e\0" + b"\x04" * 20,
        ]
    )
    entries = parse(content)
    trees = Trees()
    assert trees.files(b"1" * 40, [b"a.md"]) is None
    trees.keep(b"1" * 40, content, starts_of(entries, len(content)))
    wanted = [b"a.md", b"b a.md", b"ca.md", b"d.md", b"e", b"a"]
    by_name = {name: (mode, sha) for name, mode, sha in entries}
    assert trees.files(b"1" * 40, wanted) == [by_name.get(name) for name in wanted]


_MODES = st.sampled_from(
    [b"100644", b"40000", b"100755", b"120000", b"160000", b"040000", b"0100644", b"644", b"1x"]
)
_RAW_NAMES = st.binary(max_size=6).map(lambda name: name.replace(b"\0", b""))
# ids are drawn from bytes that spell modes, spaces and NULs, so an id may read as
# the start of another entry
_RAW_IDS = st.binary(min_size=20, max_size=20) | st.lists(
    st.sampled_from([b"\0", b" ", b"1", b"0", b"100644 a\0"]), min_size=20, max_size=20
).map(lambda parts: b"".join(parts)[:20].ljust(20, b"\0"))


@settings(derandomize=True, max_examples=400, deadline=None)
@given(st.lists(st.tuples(_MODES, _RAW_NAMES, _RAW_IDS), max_size=30), st.integers(0, 3))
def test_entry_starts_found_in_raw_bytes_are_where_a_whole_parse_puts_them(
    entries: list[tuple[bytes, bytes, bytes]], cut: int
) -> None:
    """``starts_in`` places a tree's entries where git's parse of it does, whatever
    bytes the ids hold; a tree with a mode spelled otherwise, an empty name, or bytes
    that are no whole entry is left to the parse (``None``)."""
    content = b"".join(mode + b" " + name + b"\0" + sha for mode, name, sha in entries)
    cut = min(cut, len(content))
    content = content[: len(content) - cut]
    found = starts_in(content)
    try:
        parsed = parse(content)
    except BadTree:
        assert found is None
        return
    usual = (b"100644", b"40000", b"100755", b"120000", b"160000")
    if cut or not all(mode in usual and name for mode, name, _ in entries):
        assert found is None
    else:
        assert found is not None
        assert found == starts_of(parsed, len(content))


_STEMS = st.sampled_from([b"a", b"b a", b"ba", b"a.b", b"a a", b"1 a"])
_SUFFIXES = st.sampled_from([b".md", b".code.ts", b".onuse.ts", b"", b".md.x"])
_SPELLING_IDS = st.lists(
    st.sampled_from([b" a.md\0", b" a.code.ts\0", b"100644 a.md\0", b"\0", b"x"]), max_size=6
).map(lambda parts: b"".join(parts)[:20].ljust(20, b"\1"))


@settings(derandomize=True, max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from([b"100644", b"40000"]), _STEMS, _SUFFIXES, _SPELLING_IDS),
        max_size=12,
    ),
    _STEMS,
)
def test_a_memorys_files_found_in_one_search_are_what_a_whole_parse_finds(
    entries: list[tuple[bytes, bytes, bytes, bytes]], stem: bytes
) -> None:
    """``Trees.files`` asked for the files of one memory at once (names sharing a stem,
    found in one search of the bytes) answers as a parse does: an entry by its whole
    name only, not a name inside another's or bytes of an id, of a name given twice
    the last; names given twice in the tree, out of order or not."""
    content = b"".join(
        mode + b" " + stem_ + suffix + b"\0" + sha for mode, stem_, suffix, sha in entries
    )
    parsed = parse(content)
    starts = starts_in(content)
    assert starts is not None
    trees = Trees()
    trees.keep(b"1" * 40, content, starts)
    wanted = [stem + b".md", stem + b".code.ts", stem + b".onuse.ts", b"a"]
    by_name = {name: (mode, sha) for name, mode, sha in parsed}
    assert trees.files(b"1" * 40, wanted) == [by_name.get(name) for name in wanted]
