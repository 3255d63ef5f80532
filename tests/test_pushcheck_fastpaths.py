"""The push hook's quick readings decide as the general ones do, over awkward inputs.

A delta's header whose sizes take one or two bytes each is read without a loop. Each is
held here to the reading it stands for.
"""

from __future__ import annotations

import itertools
import random

from gitmem.store.pushobjects import _delta_target  # pyright: ignore[reportPrivateUsage]


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
        return _delta_target(delta)
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
