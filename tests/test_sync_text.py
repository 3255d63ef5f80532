"""The three-way line merge and the memory reconciliation rules, without a repository."""

from __future__ import annotations

import pytest
from hypothesis import given, seed, settings
from hypothesis import strategies as st

from gitmem import Memory
from gitmem.sync.reconcile import conflict_slug, merge_memory
from gitmem.sync.text import MAX_LINES, merge3, split_lines
from gitmem.types import SLUG_MAX, check_slug

BASE = "one\ntwo\nthree\nfour\nfive\n"


@pytest.mark.parametrize(
    ("ours", "theirs", "merged"),
    [
        (BASE, BASE, BASE),
        ("ONE\ntwo\nthree\nfour\nfive\n", BASE, "ONE\ntwo\nthree\nfour\nfive\n"),
        (BASE, "one\ntwo\nthree\nfour\nFIVE\n", "one\ntwo\nthree\nfour\nFIVE\n"),
        (
            "ONE\ntwo\nthree\nfour\nfive\n",
            "one\ntwo\nthree\nfour\nFIVE\n",
            "ONE\ntwo\nthree\nfour\nFIVE\n",
        ),
        ("zero\n" + BASE, BASE + "six\n", "zero\n" + BASE + "six\n"),
        (
            "one\nthree\nfour\nfive\n",
            "one\ntwo\nthree\nfour\nfive\nsix",
            "one\nthree\nfour\nfive\nsix",
        ),
        (
            "one\nTWO\nthree\nfour\nfive\n",
            "one\nTWO\nthree\nfour\nfive\n",
            "one\nTWO\nthree\nfour\nfive\n",
        ),
    ],
)
def test_changes_that_do_not_overlap_merge(ours: str, theirs: str, merged: str) -> None:
    """Each side's change to separate lines lands in the result."""
    assert merge3(BASE, ours, theirs) == merged


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        ("one\ntwo\nOURS\nfour\nfive\n", "one\ntwo\nTHEIRS\nfour\nfive\n"),
        ("one\nTWO\nthree\nfour\nfive\n", "one\ntwo\nTHREE\nfour\nfive\n"),  # adjacent lines
        ("", "one\ntwo\nthree\nfour\nFIVE\n"),
    ],
)
def test_overlapping_changes_are_a_conflict(ours: str, theirs: str) -> None:
    """Changes to the same or adjacent lines (or a whole-text removal) do not merge."""
    assert merge3(BASE, ours, theirs) is None


def test_add_add_of_different_texts_is_a_conflict() -> None:
    """Two texts written from nothing conflict unless they are equal."""
    assert merge3("", "a\n", "b\n") is None
    assert merge3("", "a\n", "a\n") == "a\n"


def test_huge_texts_are_not_line_merged() -> None:
    """Past the line cap the merge gives up (a conflict) rather than run long."""
    base = "x\n" * (MAX_LINES + 1)
    assert merge3(base, "a\n" + base, base + "b\n") is None


def test_split_lines_round_trips() -> None:
    """Lines keep their newline; a last line without one stays so."""
    for text in ("", "a", "a\n", "a\nb", "a\n\nb\n"):
        assert "".join(split_lines(text)) == text


@seed(10)
@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.sampled_from(["a\n", "b\n", "c\n", "d\n"]), max_size=12),
    st.data(),
)
def test_merge_of_one_sided_change_is_that_side(base_lines: list[str], data: st.DataObject) -> None:
    """Whatever the texts, a change on one side only comes out exactly; a merge of both
    keeps every line the two sides agree to keep."""
    base = "".join(base_lines)
    edited = "".join(data.draw(st.lists(st.sampled_from(["a\n", "b\n", "x\n"]), max_size=12)))
    assert merge3(base, edited, base) == edited
    assert merge3(base, base, edited) == edited
    assert merge3(base, edited, edited) == edited


def test_memories_merge_field_by_field() -> None:
    """A description changed on one side and bodies changed apart merge into one memory."""
    code = "const a = 1;\n// kept\nconst b = 2;\n"
    base = Memory("m", "old", BASE, code)
    ours = Memory("m", "new", "ONE\ntwo\nthree\nfour\nfive\n", code.replace("1;", "10;"))
    theirs = Memory("m", "old", "one\ntwo\nthree\nfour\nFIVE\n", code.replace("2;", "20;"))
    merged = merge_memory(base, ours, theirs)
    assert merged == Memory(
        "m", "new", "ONE\ntwo\nthree\nfour\nFIVE\n", "const a = 10;\n// kept\nconst b = 20;\n"
    )
    assert merge_memory(base, Memory("m", "x", BASE), Memory("m", "y", BASE)) is None


def test_conflict_slugs_are_valid_and_free() -> None:
    """The companion slug is a usable slug, at most 64 characters, never one taken."""
    long = "s" * SLUG_MAX
    name = conflict_slug(long, "abcdef1", set())
    assert len(name) == SLUG_MAX and name.endswith(".conflict-abcdef1")
    assert check_slug(name) == name
    assert conflict_slug("m", "abcdef1", {"m.conflict-abcdef1"}) == "m.conflict-abcdef1-2"
