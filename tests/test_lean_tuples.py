"""Named tuples made without their class's Python-level ``__new__`` are the ones it makes."""

from __future__ import annotations

from typing import Any

import pytest

from gitmem.lean.totals import Totals
from gitmem.lean.tuples import made
from gitmem.store.incoming import Head
from gitmem.store.message import Edited, Facts, format_message, parse_message
from gitmem.store.pushcheck import PushCommit, PushedEdit, PushedMemory
from gitmem.store.screen import Write

_MEMORY = PushedMemory("a", "about a", "body", "code", "")
_VALUES: list[tuple[Any, tuple[object, ...]]] = [
    (Head, (b"f" * 40, ("a" * 40,), "ana", b"edit a\n", b"committer ana <a@b> 1 +0000\n")),
    (PushedMemory, tuple(_MEMORY)),
    (Edited, ("a", "edit", 2)),
    (Facts, ((Edited("a", "edit", 2),), Totals(1, 2, 3), Totals(1, 2, 3), {}, False)),
    (PushedEdit, ("write", "a", _MEMORY)),
    (Write, ("notes", "ana", (), None, lambda _: None, "edit a", "committer ana")),
    (
        PushCommit,
        ("c" * 40, None, False, None, "ana", {}, Totals(), None, "edit a", []),
    ),
]


@pytest.mark.parametrize(("cls", "values"), _VALUES, ids=[c.__name__ for c, _ in _VALUES])
def test_made_is_what_the_class_makes(cls: Any, values: tuple[object, ...]) -> None:
    """The same class, the same fields, equal and hashed alike where the values hash."""
    ours, theirs = made(cls, values), cls(*values)
    assert type(ours) is cls
    assert ours == theirs
    assert [getattr(ours, f) for f in cls._fields] == [getattr(theirs, f) for f in cls._fields]
    assert len(values) == len(cls._fields)


@pytest.mark.parametrize("peaks", [Totals(3, 40, 5), Totals(4, 40, 5), Totals(3, 40, 6)])
def test_a_message_read_has_the_totals_and_peaks_it_names(peaks: Totals) -> None:
    """Peaks at the store's totals (one value read for both) or past them: each as named."""
    facts = Facts((Edited("a", "edit", 1),), Totals(3, 40, 5), peaks, {})
    read = parse_message(format_message(facts))
    assert read is not None
    assert (read.edits, read.totals, read.peaks, dict(read.extra), read.paths) == (
        facts.edits,
        facts.totals,
        peaks,
        {},
        False,
    )
    assert type(read) is Facts and read == Facts(*read)
