"""One entry found in a tree's raw bytes is the entry parsing the whole tree finds,
whatever bytes the other entries' ids hold."""

from __future__ import annotations

from dulwich.objects import ObjectID, Tree, parse_tree
from hypothesis import example, given, settings
from hypothesis import strategies as st

from gitmem.store.objects import DIR_MODE, FILE_MODE
from gitmem.store.treefind import find_entry

NAMES = st.text(alphabet="ab.-_/0", min_size=1, max_size=4).filter(
    lambda n: "/" not in n and n not in (".", "..")
)
# ids made of the bytes an entry is made of, so that one id can look like an entry
IDS = st.binary(min_size=20, max_size=20) | st.sampled_from(
    [
        b" a\x00" + b"1" * 17,
        b"40000 a\x00" + b"0" * 12,
        b"0 b.md\x00" * 2 + b"\n" * 6,
        b"40000 7f\x00" + b"0" * 11,
    ]
)
ENTRY = st.tuples(st.sampled_from([FILE_MODE, DIR_MODE]), IDS)


def _content(entries: dict[str, tuple[int, bytes]]) -> bytes:
    tree = Tree()
    for name, (mode, sha) in entries.items():
        tree.add(name.encode(), mode, ObjectID(sha.hex().encode()))
    return tree.as_raw_string()


def _parsed(content: bytes, name: str) -> tuple[int, str] | None:
    for found, mode, sha in parse_tree(content, 20):
        if found == name.encode():
            return mode, sha.decode()
    return None


@settings(derandomize=True, max_examples=200, deadline=None)
@given(entries=st.dictionaries(NAMES, ENTRY, max_size=8))
@example(entries={"0": (FILE_MODE, b"40000 a\x00" + b"0" * 12), "a": (DIR_MODE, b"\x01" * 20)})
@example(entries={"a\nb": (FILE_MODE, b"\n" * 20), "a": (DIR_MODE, b"a\nb\x00" * 5)})
def test_an_entry_found_in_raw_bytes_is_the_entry_parsed(
    entries: dict[str, tuple[int, bytes]],
) -> None:
    """For names there and not, ``find_entry`` says what parsing the whole tree says."""
    content = _content(entries)
    for name in [*entries, "a", "b.md", "0", "zz", " a"]:
        assert find_entry(content, name.encode()) == _parsed(content, name)


@settings(derandomize=True, max_examples=40, deadline=None)
@given(
    ids=st.dictionaries(st.integers(0, 255), IDS, max_size=8),
    extra=st.dictionaries(st.sampled_from(["@guard.ts", "1", "7f0", "a0.md", "ff "]), ENTRY),
)
def test_an_entry_found_in_a_store_root_is_the_entry_parsed(
    ids: dict[int, bytes], extra: dict[str, tuple[int, bytes]]
) -> None:
    """In a tree as large as a store's root (256 fan-out folders, read column by column,
    maybe with other entries among them), ``find_entry`` says what parsing says."""
    folders = {f"{i:02x}": (DIR_MODE, ids.get(i, bytes([i]) * 20)) for i in range(256)}
    content = _content(folders | extra)
    names = [*extra, *(f"{i:02x}" for i in [*ids, 0, 1, 127, 254, 255]), "7g", "zz", "@", "0"]
    for name in names:
        assert find_entry(content, name.encode()) == _parsed(content, name)
