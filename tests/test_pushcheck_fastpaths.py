"""The push hook's quick readings decide as the general ones do, over awkward inputs.

A delta's header whose sizes take one or two bytes each is read without a loop; a tree
of plain files is held to git's form by its names alone; the secret screen's first
question skips a probe when the text lacks a character the probe holds; a message's
peaks spelled as its totals are read once. Each is held here to the reading it stands
for.
"""

from __future__ import annotations

import itertools
import random

import pytest

from gitmem.secrets import (
    _BY_PROBE,  # pyright: ignore[reportPrivateUsage]
    _GENERIC_BY_PROBE,  # pyright: ignore[reportPrivateUsage]
    _bare,  # pyright: ignore[reportPrivateUsage]
    _folded,  # pyright: ignore[reportPrivateUsage]
    scan,
)
from gitmem.store.message import _trailers, parse_message  # pyright: ignore[reportPrivateUsage]
from gitmem.store.pushobjects import delta_target
from gitmem.store.treeform import _problem, form_problem  # pyright: ignore[reportPrivateUsage]


def _read_sizes(delta: bytes) -> int | str:
    """A delta's result size, read byte by byte as git reads the header (at most 8
    bytes a size), or the refusal's words."""
    at = 0
    size = 0
    for _ in range(2):
        size, shift = 0, 0
        while True:
            if at >= len(delta) or shift > 53:
                return "a delta's header does not read"
            byte = delta[at]
            size, shift, at = size | (byte & 0x7F) << shift, shift + 7, at + 1
            if not byte & 0x80:
                break
    return size


def _target(delta: bytes) -> int | str:
    try:
        return delta_target(delta)
    except ValueError as exc:
        return str(exc)


def test_a_deltas_header_reads_as_byte_by_byte() -> None:
    values = [0x00, 0x01, 0x0A, 0x7F, 0x80, 0x81, 0xC3, 0xFF]
    for length in range(6):
        for header in itertools.product(values, repeat=length):
            delta = bytes(header)
            assert _target(delta) == _read_sizes(delta), delta
    for first, second in itertools.product(range(11), repeat=2):
        for high in (0x80, 0xFF):
            for tail in (b"", b"\x00", b"\x7f\x80"):
                delta = bytes([high]) * first + b"\x05" + bytes([high]) * second + tail
                assert _target(delta) == _read_sizes(delta), delta
    rng = random.Random(7)
    for _ in range(20_000):
        delta = bytes(
            rng.randrange(0x80, 0x100) if rng.random() < 0.4 else rng.randrange(0x80)
            for _ in range(rng.randrange(12))
        )
        assert _target(delta) == _read_sizes(delta), delta


_MODES = [b"100644"] * 6 + [b"40000", b"100755", b"0100644", b"644", b"120000", b"10064"]
_NAMES = [b"a", b"a.md", b"a-", b"a.code.js", b"b", b"a b", b"\xff", b"", b"100644 x", b"@guard"]
_IDS = [b"\x11" * 20, b"\0" * 20, b"100644 a\0" + b"\x22" * 11, b"\0100644 b" + b"\x33" * 11]


def _tree(rng: random.Random) -> bytes:
    """Entries of git's form or nearly: usually plain files in order, sometimes a
    folder, another mode or spelling, a name twice or out of order, an id that holds
    an entry's bytes, a cut or a stray byte."""
    names = sorted(rng.sample(_NAMES, rng.randrange(0, 5)))
    if names and rng.random() < 0.2:
        names.insert(rng.randrange(len(names) + 1), rng.choice(names))
    if rng.random() < 0.15:
        rng.shuffle(names)
    modes = [_MODES[0] if rng.random() < 0.8 else rng.choice(_MODES) for _ in names]
    content = b"".join(
        mode + b" " + name + b"\0" + rng.choice(_IDS)
        for mode, name in zip(modes, names, strict=True)
    )
    shape = rng.random()
    if shape < 0.05 and content:
        content = content[: rng.randrange(len(content))]
    elif shape < 0.1:
        content += rng.choice([b"\0", b"1", b"100644 ", b"100644 z\0"])
    return content


@pytest.mark.parametrize("seed", range(4))
def test_a_tree_of_plain_files_is_held_to_gits_form_as_any_tree(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(5_000):
        content = _tree(rng)
        assert form_problem(content) == _problem(content), content


_PIECES = [
    *_BY_PROBE,
    *_GENERIC_BY_PROBE,
    *(probe[:-1] for probe in _BY_PROBE),
    *(probe[1:] for probe in _GENERIC_BY_PROBE),
    "PASS",
    "To\u212aen",  # a Kelvin sign, which lower-cases to k
    "\u0130",  # a capital dotted I, which lower-cases to two characters
    "\u03a3",
    "J",
    "B",
    "_",
    "x",
    "/",
    "k",
    "w",
    "ey",
    "BEGIN",
    "lorem ipsum ",
    "Gitmem-Slug: m1\n",
    "\0",
]


def _bare_probing_all(text: str) -> bool:
    """The first question as every probe asks it, no character looked for first."""
    low = _folded(text)
    return not any(probe in text for probe in _BY_PROBE) and not any(
        probe in low for probe in _GENERIC_BY_PROBE
    )


@pytest.mark.parametrize("seed", range(4))
def test_a_text_is_bare_exactly_when_no_probe_is_in_it(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(5_000):
        text = "".join(rng.choice(_PIECES) for _ in range(rng.randrange(8)))
        bare = _bare(text)
        assert bare == _bare_probing_all(text), text
        if bare:
            assert not list(scan(text)), text


@pytest.mark.parametrize(
    ("totals", "peaks"),
    [
        ("3\nGitmem-Chars: 40\nGitmem-Lines: 5", "3\nGitmem-Peak-Chars: 40\nGitmem-Peak-Lines: 5"),
        ("3\nGitmem-Chars: 40\nGitmem-Lines: 5", "03\nGitmem-Peak-Chars: 40\nGitmem-Peak-Lines: 5"),
        ("3\nGitmem-Chars: 040\nGitmem-Lines: 5", "3\nGitmem-Peak-Chars: 40\nGitmem-Peak-Lines: 5"),
        ("3\nGitmem-Chars: 40\nGitmem-Lines: 5", "4\nGitmem-Peak-Chars: 40\nGitmem-Peak-Lines: 5"),
        ("0\nGitmem-Chars: 0\nGitmem-Lines: 0", "0\nGitmem-Peak-Chars: 0\nGitmem-Peak-Lines: 00"),
    ],
)
def test_a_messages_peaks_read_as_its_numbers_say(totals: str, peaks: str) -> None:
    """Peaks spelled as the totals are, or otherwise, read as the full reading reads them."""
    message = (
        "edit a\n\nGitmem-Slug: a\nGitmem-Op: edit\nGitmem-Revision: 1\n"
        f"Gitmem-Count: {totals}\nGitmem-Peak-Count: {peaks}\n"
    ).encode()
    facts = parse_message(message)
    full = _trailers(message)
    assert facts is not None and full is not None
    read = [facts.totals.count, facts.totals.chars, facts.totals.lines]
    read += [facts.peaks.count, facts.peaks.chars, facts.peaks.lines]
    assert read == full[1]
