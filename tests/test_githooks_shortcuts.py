"""The push hook's shortcuts decide as the full rules do.

A pushed commit's writes are screened as one write first, and part by part only when a
screen refuses that; a write whose texts hold nothing a secret detector starts at is
passed before its parts are named; a commit's parents and author are read from its bytes
before decoding; a memory's description is read without json's Python layer when it
is one plain JSON string; a pushed memory is read without the values' module, and
``Totals`` is kept free of ``dataclasses``. Each shortcut is held here to the rule it
stands for, over generated inputs.
"""

from __future__ import annotations

import copy
import json
import pickle
import random
from dataclasses import dataclass

import pytest
from helpers_secrets import ORDINARY, SECRETS
from hypothesis import given, settings
from hypothesis import strategies as st

from gitmem.errors import GitmemError, StorageError
from gitmem.lean.totals import totals_of
from gitmem.pushchain import _passes  # pyright: ignore[reportPrivateUsage]
from gitmem.screens import chain
from gitmem.secrets import (
    check_texts,
    fingerprint,
    holds_none,
    memory_fields,
    read_allowlist,
    scan,
)
from gitmem.store.incoming import _read_head  # pyright: ignore[reportPrivateUsage]
from gitmem.store.memoryfiles import decode_md
from gitmem.store.pushcheck import PushedEdit, PushedMemory, Refused
from gitmem.store.screen import SECRETS as SECRETS_SCREEN
from gitmem.store.screen import Write
from gitmem.types import Edit, Memory, Totals

_SCREENS = chain(None)


def _text(rng: random.Random) -> str:
    pool = ORDINARY if rng.random() < 0.8 else [text for _, text in SECRETS]
    return rng.choice(pool)[: rng.randrange(1, 400)] if rng.random() < 0.9 else ""


def _allowlist(texts: list[str], rng: random.Random) -> str | None:
    """An allowlist admitting some of what ``texts`` hold, or none."""
    if rng.random() < 0.5:
        return None
    found = [f.fingerprint for text in texts for f in scan(text)]
    return "\n".join(p for p in found if rng.random() < 0.5) + "\n" + fingerprint("other")


@pytest.mark.parametrize("seed", range(6))
def test_a_commit_screened_whole_passes_exactly_when_each_part_does(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(60):
        memories = [
            Memory(f"m{i}", _text(rng)[:80].replace("\n", " "), _text(rng), _text(rng))
            for i in range(rng.randrange(0, 4))
        ]
        edits = [Edit("write", m.slug, m) for m in memories]
        if rng.random() < 0.3:
            edits.append(Edit("delete", "gone", None))
        message = _text(rng)
        texts = [message, *(t for m in memories for t in (m.description, m.body, m.code))]
        allow = _allowlist(texts, rng)

        def meta(name: str, allow: str | None = allow) -> str | None:
            return allow if name == "@allowlist" else None

        whole = Write("notes", "bench", edits, None, meta, message)
        parts = [whole._replace(edits=())] + [
            Write("notes", "bench", (edit,), None, meta) for edit in edits
        ]
        assert _passes(_SCREENS, whole) == all(_passes(_SCREENS, part) for part in parts)


@pytest.mark.parametrize("seed", range(6))
def test_a_write_that_holds_no_candidate_is_passed_as_the_full_scan_passes_it(seed: int) -> None:
    """The secret screen passes a write whose texts hold nothing a detector starts at
    before naming its parts; its verdict, and its refusal's words, are the full scan's."""
    rng = random.Random(seed)
    for _ in range(80):
        memories = [
            Memory(f"m{i}", _text(rng)[:80].replace("\n", " "), _text(rng), _text(rng))
            for i in range(rng.randrange(0, 3))
        ]
        message, author = _text(rng), rng.choice(["bench", "ghp_" + "a1" * 18])
        files = [("notes/a.md", _text(rng))] if rng.random() < 0.3 else None
        texts = [message, author, *(t for m in memories for t in (m.description, m.body))]
        allow = _allowlist(texts, rng)

        def meta(name: str, allow: str | None = allow) -> str | None:
            return allow if name == "@allowlist" else None

        edits = [] if files else [Edit("write", m.slug, m) for m in memories]
        fields = [f for m in memories if not files for f in memory_fields(m)]
        fields += [("path of a file", p) for p, _ in files or ()]
        fields += [(f"file {p}", t) for p, t in files or ()]
        fields += [("commit message", message), ("author name", author)]
        full: str | None = None
        try:
            check_texts(fields, None if files else read_allowlist(allow))
        except GitmemError as exc:
            full = str(exc)
        screened: str | None = None
        try:
            SECRETS_SCREEN.check(Write("notes", author, edits, files, meta, message))
        except GitmemError as exc:
            screened = str(exc)
        assert screened == full
        if holds_none(t for _, t in fields):
            assert full is None


_DESCRIPTIONS = st.one_of(
    st.text(),
    st.sampled_from(["", " ", "\t", "\\", '"', "\x00", "\x1f", "\u2028", "\ud7ff", "é", "İ"]),
)


def _full(slug: str, data: bytes) -> tuple[str, str]:
    """``decode_md`` as json alone reads the front matter."""
    head = b"---\ndescription: "
    end = data.find(b"\n---\n", len(head))
    if not data.startswith(head) or end < 0:
        raise StorageError("no front matter")
    try:
        description = json.loads(data[len(head) : end])
        body = data[end + 5 :].decode()
    except (ValueError, UnicodeDecodeError) as exc:
        raise StorageError(str(exc)) from None
    if not isinstance(description, str):
        raise StorageError("not text")
    return description, body


def _framed(draw: st.DrawFn) -> bytes:
    description = draw(_DESCRIPTIONS)
    shape = draw(st.sampled_from(["json", "ascii", "raw", "spaced", "number", "bytes"]))
    if shape == "json":
        framed = json.dumps(description, ensure_ascii=False).encode()
    elif shape == "ascii":
        framed = json.dumps(description).encode()
    elif shape == "raw":
        framed = ('"' + description + '"').encode("utf-8", "surrogatepass")
    elif shape == "spaced":
        framed = b" \t" + json.dumps(description).encode() + b"\r "
    elif shape == "number":
        framed = b"12"
    else:
        framed = draw(st.binary(max_size=12))
    return b"---\ndescription: " + framed + b"\n---\n" + draw(st.binary(max_size=8))


@settings(max_examples=400, deadline=None)
@given(st.composite(_framed)())
def test_a_description_read_without_json_reads_as_json_reads_it(data: bytes) -> None:
    try:
        expected: tuple[str, str] | None = _full("m", data)
    except GitmemError:
        expected = None
    try:
        found: tuple[str, str] | None = decode_md("m", data)
    except GitmemError:
        found = None
    assert found == expected


_TEXT = st.text(st.characters(codec="utf-8"), max_size=60)


@settings(max_examples=200, deadline=None)
@given(st.tuples(_TEXT, _TEXT, _TEXT, _TEXT, _TEXT))
def test_a_pushed_memory_is_the_memory_it_names(values: tuple[str, str, str, str, str]) -> None:
    """A memory the hook reads from a pushed commit (without the values' module) has
    the fields, characters and lines of ``Memory(*pushed)``, and the screens read the
    same parts of both: the hook and the store's write path refuse it alike."""
    pushed = PushedMemory(*values)
    memory = Memory(*pushed)
    assert (memory.slug, memory.description, memory.body, memory.code, memory.on_use) == values
    assert (pushed.chars, pushed.lines) == (memory.chars, memory.lines)
    assert memory_fields(pushed) == memory_fields(memory)
    edit = PushedEdit("write", values[0], pushed)
    as_hook = Write("notes", "ana", [edit], None, lambda _: None, "write")
    as_store = Write("notes", "ana", [Edit("write", values[0], memory)], None, lambda _: None)
    assert _passes(_SCREENS, as_hook) == _passes(_SCREENS, as_store._replace(message="write"))


_COUNT = st.integers(min_value=-(10**12), max_value=10**12)


@dataclass(frozen=True)
class _AsDataclass:
    """What ``Totals`` was: a frozen dataclass of the same fields."""

    count: int = 0
    chars: int = 0
    lines: int = 0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_COUNT, _COUNT, _COUNT), min_size=2, max_size=2))
def test_totals_behave_as_the_frozen_dataclass_they_were(pair: list[tuple[int, int, int]]) -> None:
    """``Totals`` (kept free of ``dataclasses`` for the hook) compares, hashes, prints,
    copies and refuses changes as a frozen dataclass of its fields does."""
    (a, b), (x, y) = [Totals(*p) for p in pair], [_AsDataclass(*p) for p in pair]
    assert (a == b) == (x == y) and (a != b) == (x != y)
    assert (hash(a), hash(b)) == (hash(x), hash(y))
    assert repr(a) == repr(x).replace("_AsDataclass", "Totals")
    assert a.peak(b) == Totals(*(max(p, q) for p, q in zip(pair[0], pair[1], strict=True)))
    assert (
        a.to_dict() == a.as_dict() == dict(zip(("count", "chars", "lines"), pair[0], strict=True))
    )
    assert copy.copy(a) == a and pickle.loads(pickle.dumps(a)) == a
    assert Totals() == Totals(0, 0, 0) != (0, 0, 0)
    assert Totals(*pair[0]) == Totals(count=pair[0][0], chars=pair[0][1], lines=pair[0][2])
    made = totals_of(*pair[0])  # as the hook's reading of a message makes them
    assert type(made) is Totals and made == a and hash(made) == hash(a)
    assert repr(made) == repr(a) and pickle.loads(pickle.dumps(made)) == a
    with pytest.raises(AttributeError):
        made.lines = 1  # type: ignore[misc]
    match a:
        case Totals(count, chars, lines):
            assert (count, chars, lines) == pair[0]
    with pytest.raises(AttributeError):
        a.count = 1  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del a.chars  # type: ignore[misc]


def _head_as_read_before(raw: bytes) -> tuple[bytes, tuple[str, ...], str] | None:
    """A commit's tree, parents and author name as the hook once read them (each
    parent decoded, then held to hex; the author decoded whole, then cut)."""
    end = raw.find(b"\n\n")
    header = raw[:end] if end >= 0 else raw
    lines = header.split(b"\n")
    tree = lines[0][5:] if lines[0].startswith(b"tree ") else b""
    parents: list[str] = []
    author = b""
    for line in lines[1:]:
        if line.startswith(b"parent "):
            parents.append(line[7:].decode("ascii", "replace"))
        elif line.startswith(b"author "):
            author = line[7:]
    hexes = "0123456789abcdef"
    readable = len(tree) == 40 and not tree.decode("latin-1").strip(hexes)
    if not readable or any(len(p) != 40 or p.strip(hexes) for p in parents):
        return None
    return tree, tuple(parents), author.decode("utf-8", "replace").split(" <", 1)[0]


_ID_BYTES = st.one_of(
    st.binary(min_size=20, max_size=20).map(lambda b: b.hex().encode()),
    st.binary(min_size=38, max_size=42),
    st.sampled_from([b"A" * 40, b"\xff" * 40, b"g" * 40]),
)
_NAMES = st.one_of(
    st.binary(max_size=30),
    st.text(max_size=20).map(str.encode),
    st.sampled_from([b"a <b> 1 +0000", b"\xe2\x82 <x>", b"\xf0 <", b" <", b"x\xc3 <y> <z>"]),
)


def _git_reads_ident(line: bytes) -> bool:
    """Whether git's fsck takes ``line`` (an author or committer line's value, with its
    newline) as an identity: fsck_ident, step by step."""
    if line.startswith(b"<"):
        return False  # no name before the email
    at = next((i for i, c in enumerate(line) if c in b"<>\n"), len(line))
    if at == len(line) or line[at : at + 1] != b"<" or at == 0 or line[at - 1 : at] != b" ":
        return False
    at += 1
    while at < len(line) and line[at : at + 1] not in (b"<", b">", b"\n"):
        at += 1
    if line[at : at + 2] != b"> ":
        return False
    at += 2
    if line[at : at + 1] == b"0" and line[at + 1 : at + 2] != b" ":
        return False  # a zero-padded date
    start = at
    while line[at : at + 1].isdigit():
        at += 1
    if at == start or at - start > 18 or line[at : at + 1] != b" ":
        return False
    zone = line[at + 1 : at + 7]
    return len(zone) == 6 and zone[:1] in b"+-" and zone[1:5].isdigit() and zone[5:] == b"\n"


@settings(max_examples=400, deadline=None)
@given(_ID_BYTES, st.lists(_ID_BYTES, max_size=3), _NAMES)
def test_a_commit_head_reads_as_it_was_read(tree: bytes, parents: list[bytes], name: bytes) -> None:
    """A commit's tree, parents and author name are read as before the parents were
    held to hex before decoding and the name cut before decoding, or refused: when they
    were refused then, or when git's fsck refuses the author's identity."""
    raw = b"tree " + tree + b"\n" + b"".join(b"parent " + p + b"\n" for p in parents)
    raw += b"author " + name + b"\ncommitter c <c> 1 +0000\n\nmessage\n"
    expected = _head_as_read_before(raw)
    git_reads = b"\0" not in raw and _git_reads_ident(name + b"\n")
    try:
        head = _read_head("c" * 40, raw)
    except Refused:
        assert expected is None or not git_reads
    else:
        assert git_reads
        assert (head.tree, head.parents, head.author) == expected


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.binary(max_size=40),
        st.sampled_from([b"a <b> 1 +0000", b"<b> 1 +0000", b"a <b> 01 +0000", b"a<b> 1 +0000"]),
        st.tuples(
            st.text("ab <>\n", max_size=4),
            st.text("ab<>", max_size=3),
            st.text("0123 ", max_size=4),
        ).map(lambda t: f"{t[0]} <{t[1]}> {t[2]} +0100".encode()),
    )
)
def test_a_commit_head_is_read_when_git_reads_its_identities(ident: bytes) -> None:
    """An author's identity is read when git's fsck reads it, and refused when not."""
    raw = b"tree " + b"a" * 40 + b"\nauthor " + ident + b"\ncommitter c <c> 1 +0000\n\nm\n"
    git_reads = b"\0" not in raw and _git_reads_ident(ident + b"\n")
    try:
        _read_head("c" * 40, raw)
    except Refused:
        assert not git_reads
    else:
        assert git_reads
