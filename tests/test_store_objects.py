"""The commit path's raw objects: trees swapped entry by entry, commits and facts made
without a parse, each equal to what dulwich and the message parser make of them."""

from __future__ import annotations

import os

import pytest
from dulwich.objects import Blob, Commit, ObjectID, Tree
from hypothesis import given, settings
from hypothesis import strategies as st

from gitmem.store.message import (
    KEYS,
    Edited,
    Facts,
    as_read,
    format_message,
    parse_edits,
    parse_message,
)
from gitmem.store.objects import (
    BLOB,
    DIR_MODE,
    EMPTY_TREE,
    FILE_MODE,
    TREE,
    NewObjects,
    RawTree,
    object_id,
)
from gitmem.types import Totals

NAMES = st.text(alphabet="ab.-_/0", min_size=1, max_size=4).filter(
    lambda n: "/" not in n and n not in (".", "..")
)
ENTRY = st.tuples(st.sampled_from([FILE_MODE, DIR_MODE]), st.binary(min_size=20, max_size=20))


def _dulwich(entries: dict[str, tuple[int, bytes]]) -> bytes:
    tree = Tree()
    for name, (mode, sha) in entries.items():
        tree.add(name.encode(), mode, ObjectID(sha.hex().encode()))
    return tree.as_raw_string()


def _hex(entries: dict[str, tuple[int, bytes]]) -> dict[str, tuple[int, bytes]]:
    return {name: (mode, sha.hex().encode()) for name, (mode, sha) in entries.items()}


@settings(derandomize=True, max_examples=200, deadline=None)
@given(
    before=st.dictionaries(NAMES, ENTRY, max_size=8),
    changes=st.dictionaries(NAMES, st.none() | ENTRY, max_size=4),
)
def test_a_swapped_tree_is_the_tree_dulwich_writes(
    before: dict[str, tuple[int, bytes]], changes: dict[str, tuple[int, bytes] | None]
) -> None:
    """Replacing, adding and removing entries (a file turned folder sorts anew, as
    "name/") gives byte for byte the tree dulwich serializes for the same entries."""
    after = {**before, **{k: v for k, v in changes.items() if v is not None}}
    for name, change in changes.items():
        if change is None:
            after.pop(name, None)
    tree = RawTree.parse(_dulwich(before)).replaced(
        {k: None if v is None else (v[0], v[1].hex().encode()) for k, v in changes.items()}
    )
    assert tree.content() == _dulwich(after)
    assert RawTree.parse(tree.content()).entries() == tree.entries()
    assert {name: tree.get(name) for name in after} == _hex(after)
    assert object_id(TREE, tree.content()) == bytes.fromhex(
        Tree.from_string(_dulwich(after)).id.decode()
    )


def test_a_swap_shares_the_unchanged_entries() -> None:
    """Replacing one entry of 256 copies no other entry and keeps the index."""
    root = RawTree.parse(_dulwich({f"{i:02x}": (DIR_MODE, bytes([i]) * 20) for i in range(256)}))
    swapped = root.replaced({"7f": (DIR_MODE, b"ab" * 20)})
    assert swapped.index is root.index
    assert sum(a is not b for a, b in zip(root.chunks, swapped.chunks, strict=True)) == 1
    assert swapped.get("7f") == (DIR_MODE, b"ab" * 20)
    assert root.get("7f") == (DIR_MODE, b"7f" * 20)


@pytest.mark.parametrize(
    "content",
    [b"100644 a\x00" + b"x" * 19, b"100644 a" + b"x" * 21, b"abc a\x00" + b"x" * 20, b"1006"],
)
def test_a_damaged_tree_does_not_parse(content: bytes) -> None:
    """A cut-short entry, a missing name end or a mode that is not octal is refused."""
    with pytest.raises(ValueError):
        RawTree.parse(content)


def test_a_tree_keeps_its_bytes_as_stored() -> None:
    """Entries are sliced from the content as stored: a mode spelled with a leading zero
    (as some old tools wrote) is kept, so the unchanged tree keeps its id."""
    content = b"040000 a\x00" + b"\x01" * 20 + b"100644 b.md\x00" + b"\x02" * 20
    tree = RawTree.parse(content)
    assert tree.content() == content
    assert tree.get("a") == (DIR_MODE, b"01" * 20)
    assert tree.entries() == [("a", DIR_MODE, b"01" * 20), ("b.md", FILE_MODE, b"02" * 20)]
    swapped = tree.replaced({"b.md": (FILE_MODE, b"03" * 20)})
    assert swapped.chunks[0] == content[:29]


def test_new_objects_are_the_objects_dulwich_makes() -> None:
    """Blob, tree and commit ids and contents equal dulwich's; an object added twice is
    packed once."""
    new = NewObjects()
    blob = new.add_blob(b"hello\n", "hello\n")
    assert new.add_blob(b"hello\n") == blob == Blob.from_string(b"hello\n").id
    tree = new.add_tree(EMPTY_TREE.replaced({"a.md": (FILE_MODE, blob)}))
    parent = "ab" * 20
    sha = new.add_commit(tree, [parent], b"alice <alice@agents.gitmem>", 1700000000, b"m\n\nx\n")
    commit = Commit()
    commit.tree = ObjectID(tree)
    commit.parents = [ObjectID(parent.encode())]
    commit.author = commit.committer = b"alice <alice@agents.gitmem>"
    commit.author_time = commit.commit_time = 1700000000
    commit.author_timezone = commit.commit_timezone = 0
    commit.message = b"m\n\nx\n"
    assert new.commit_raw == commit.as_raw_string()
    assert sha == commit.id.decode()
    assert [r[2] for r in new.records] == [
        bytes.fromhex(blob.decode()),
        bytes.fromhex(tree.decode()),
        bytes.fromhex(sha),
    ]
    assert object_id(BLOB, b"hello\n").hex() == blob.decode()


TRAILER_KEYS = st.sampled_from(["Gitmem-Reason", "Gitmem-X", "Reason", "Gitmem-Capability"])
VALUES = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    max_size=30,
)


@settings(derandomize=True, max_examples=200, deadline=None)
@given(
    extra=st.dictionaries(TRAILER_KEYS, VALUES, max_size=3),
    paths=st.booleans(),
    revisions=st.lists(st.integers(min_value=0, max_value=10**6), min_size=0, max_size=3),
)
def test_facts_as_read_are_the_facts_parsed(
    extra: dict[str, str], paths: bool, revisions: list[int]
) -> None:
    """as_read(facts) equals parse_message(format_message(facts)): trailers folded onto
    one line, only Gitmem- ones kept."""
    names = [f"d/f{i}.md" if paths else f"s{i}" for i in range(len(revisions))]
    facts = Facts(
        tuple(Edited(n, "edit", r) for n, r in zip(names, revisions, strict=True)),
        Totals(3, 40, 5),
        Totals(4, 50, 6),
        extra,
        paths=paths,
    )
    assert as_read(facts) == parse_message(format_message(facts))


def test_fsync_together_syncs_every_file(
    tmp_path: os.PathLike[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each file and folder handed to fsync_together is fsynced, a folder included."""
    from gitmem.store.locking import fsync_together

    synced: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real(fd)))
    fds = [os.open(os.path.join(tmp_path, n), os.O_WRONLY | os.O_CREAT, 0o644) for n in "ab"]
    folder = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for fd in fds:
            os.write(fd, b"data")
        fsync_together(*fds, folder)
    finally:
        for fd in [*fds, folder]:
            os.close(fd)
    assert synced == [*fds, folder]


_LINES = st.sampled_from(
    [
        "Gitmem-Slug: a",
        "Gitmem-Slug: b",
        "Gitmem-Slug: a b",
        "Gitmem-Path: d/f.md",
        "Gitmem-Op: edit",
        "Gitmem-Op: Edit",
        "Gitmem-Revision: 2",
        "Gitmem-Revision: -1",
        "Gitmem-Revision: ٣",
        "Gitmem-Count: 7",
        "Gitmem-Count: x",
        "Gitmem-Peak-Lines: 9",
        "Gitmem-Session: s é",
        "Gitmem-Opinion: yes",
        "Gitmem-Session: again",
        "Gitmem-Count: 08",
        "Gitmem-Slug:a",
        "",
        " ",
        "\r",
        "\x85Gitmem-Slug: c",
        "text",
    ]
)


@settings(derandomize=True, max_examples=600, deadline=None)
@given(
    slugs=st.lists(st.sampled_from(["a", "b", "c-1", "x" * 65]), max_size=3),
    op=st.sampled_from(["edit", "create", "Edit", "x" * 33]),
    subject=st.sampled_from(["edit a", "", "  ", "a\rb"]),
    spliced=st.lists(st.tuples(st.integers(0, 30), _LINES), max_size=3),
    cut=st.integers(0, 400),
    tail=st.sampled_from(["", "\n", "\n\n", "\n\nGitmem-Slug: z\n", "\xff"]),
)
def test_edits_read_by_the_quick_match_are_those_the_full_reading_finds(
    slugs: list[str], op: str, subject: str, spliced: list[tuple[int, str]], cut: int, tail: str
) -> None:
    """parse_edits and parse_message (one match for a message as gitmem writes it) find
    exactly the edits, totals, peaks and extra trailers (in their order) the full
    reading finds, or refuse as it does, for messages as written, with lines spliced
    in, cut short, or followed by more."""
    facts = Facts(
        tuple(Edited(s, "edit", i) for i, s in enumerate(slugs)),
        Totals(3, 40, 5),
        Totals(4, 50, 6),
        {"Gitmem-Session": "run 1"},
    )
    written = format_message(facts).decode()
    lines = written.replace("Gitmem-Op: edit", f"Gitmem-Op: {op}").split("\n")
    lines[0] = subject if subject != "edit a" else lines[0]
    for at, line in spliced:
        lines.insert(min(at, len(lines)), line)
    text = "\n".join(lines)
    for message in (text.encode(), text.encode()[: len(text) - cut], (text + tail).encode()):
        full = _fully_read(message)
        facts = parse_message(message)
        assert parse_edits(message) == (full[0] if full is not None else None)
        # read where it starts inside a raw commit, as a walk reads it: alike
        assert parse_edits(b"tree x\n\n" + message, 8) == parse_edits(message)
        assert full == (
            None
            if facts is None
            else (
                facts.edits,
                [*_numbers(facts.totals), *_numbers(facts.peaks)],
                list(facts.extra.items()),
                facts.paths,
            )
        )


def _numbers(totals: Totals) -> list[int]:
    return [totals.count, totals.chars, totals.lines]


def _fully_read(message: bytes) -> tuple[object, ...] | None:
    """What the full reading of a message finds: edits, totals and peaks, the extra
    trailers in their order, whether it names paths."""
    from gitmem.store import message as reading

    read = reading._trailers(message)  # pyright: ignore[reportPrivateUsage]
    if read is None:
        return None
    edits, numbers, trailers, paths = read
    return edits, numbers, [(k, v) for k, v in trailers.items() if k not in KEYS], paths


def test_a_message_as_gitmem_writes_it_takes_the_quick_match(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A message as written, extra trailers and all, is read without the full reading."""
    from gitmem.store import message

    edits = (Edited("a", "rename", 2), Edited("b-1", "create", 1))
    written = format_message(Facts(edits, Totals(), Totals(), {"Gitmem-Session": "é"}))
    monkeypatch.setattr(message, "_trailers", lambda _: pytest.fail("the full reading ran"))
    assert parse_edits(written) == edits
    facts = parse_message(written)
    assert facts is not None and dict(facts.extra) == {"Gitmem-Session": "é"}
    assert parse_edits(format_message(Facts((), Totals(), Totals(), {}))) == ()


_HEADER_LINES = st.sampled_from(
    [
        b"parent " + b"a" * 40,
        b"parent " + b"b" * 40,
        b"parent " + b"A" * 40,
        b"parent " + b"c" * 39,
        b"author a <a@b> 1 +0000",
        b"committer c <c@d> 2 +0000",
        b"encoding latin-1",
        b"gpgsig -----BEGIN-----",
        b" parent " + b"d" * 40,
        b"tree " + b"e" * 40,
        b"author \xff\xfe 3 +0000",
    ]
)


@settings(derandomize=True, max_examples=400, deadline=None)
@given(
    tree=st.sampled_from([b"tree " + b"f" * 40, b"tree " + b"f" * 39, b"parent " + b"a" * 40]),
    lines=st.lists(_HEADER_LINES, max_size=5),
    slugs=st.lists(st.sampled_from(["a", "b-1", "c"]), max_size=2, unique=True),
    blank=st.sampled_from([b"\n\n", b"\n", b"\n \n"]),
    after=st.sampled_from([b"", b"\nGitmem-Slug: z\n", b"\n\nmore\n", b"\xff"]),
)
def test_a_commit_read_in_one_match_has_the_parents_and_edits_its_lines_give(
    tree: bytes, lines: list[bytes], slugs: list[str], blank: bytes, after: bytes
) -> None:
    """The walk's reading of a raw commit (one match for a header as gitmem writes it)
    gives the parents and edits that its header read line by line and its message read
    after the first blank line give, for headers as written and otherwise (two
    parents, other lines, lines out of order, a message not gitmem's)."""
    from gitmem.store.objects import _heading, _parents  # pyright: ignore[reportPrivateUsage]

    facts = Facts(tuple(Edited(s, "edit", 1) for s in slugs), Totals(1, 2, 3), Totals(1, 2, 3), {})
    raw = b"\n".join([tree, *lines]) + blank + format_message(facts) + after
    header, _, message = raw.partition(b"\n\n")
    assert _heading(raw) == (_parents(header), parse_edits(message))


def test_a_commit_as_gitmem_writes_it_is_read_in_one_match(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A commit as gitmem writes it (one parent or none) is read without its header's
    lines or the message's full reading."""
    from gitmem.store import message, objects

    monkeypatch.setattr(objects, "_parents", lambda _: pytest.fail("the header read by lines"))
    monkeypatch.setattr(message, "_trailers", lambda _: pytest.fail("the full reading ran"))
    edits = (Edited("a", "create", 1),)
    text = format_message(Facts(edits, Totals(1, 2, 3), Totals(1, 2, 3), {}))
    ident = b"a <a@b> 1 +0000\n"
    for parent in (b"parent " + b"0" * 40 + b"\n", b""):
        raw = b"tree " + b"1" * 40 + b"\n" + parent + b"author " + ident + b"committer " + ident
        got = objects._heading(raw + b"\n" + text)  # pyright: ignore[reportPrivateUsage]
        assert got == (["0" * 40] if parent else [], edits)


@pytest.mark.parametrize(
    "message",
    [
        b"by hand\n\n" + b"x" * 2_000_000,
        b"by hand\n\nSigned-off-by: A <a@x>\n\n" + b"Gitmem-Count: 1\n" * 125_000,
    ],
)
def test_a_long_message_gitmem_did_not_write_is_read_without_a_copy(message: bytes) -> None:
    """A message whose paragraph after the subject names no ``Gitmem-`` trailer is no
    gitmem message, found so by the full reader and the lean one without decoding or
    copying it: a read of a long one holds little more than the message."""
    import tracemalloc

    from gitmem.lean import heads

    tracemalloc.start()
    try:
        found = parse_message(message), parse_edits(message), heads.facts(message)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert found == (None, None, None)
    assert peak < 100_000, peak
