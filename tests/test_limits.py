"""A file store's limits: each refuses a write that breaches it and does not reduce it."""

from __future__ import annotations

import pytest

from gitmem import FileLimits, InvalidArgument, LimitExceeded
from gitmem.types import Totals

# a store of two files, 10 characters in all
TOTALS = Totals(count=2, chars=10)


@pytest.mark.parametrize(
    ("limits", "writes", "refused"),
    [
        (FileLimits(max_file_chars=5), [(None, "123456")], ("max_file_chars", 6, 5)),
        (FileLimits(max_file_chars=5), [("12345678", "1234567")], None),  # it shrinks
        (FileLimits(max_file_chars=5), [("123", "12345")], None),
        (FileLimits(max_files=2), [(None, "x")], ("max_files", 3, 2)),
        (FileLimits(max_files=2), [("old", "new")], None),  # a replace adds no file
        (FileLimits(max_total_chars=12), [(None, "123")], ("max_total_chars", 13, 12)),
        (FileLimits(max_total_chars=12), [("12", "1234")], None),
        (FileLimits(max_total_chars=8), [("1234", "123")], None),  # over, but it shrinks
        (FileLimits(), [(None, "x" * 10_000)] * 3, None),  # 0: no limit
    ],
)
def test_file_limits(
    limits: FileLimits, writes: list[tuple[str | None, str]], refused: tuple[str, int, int] | None
) -> None:
    """The refusal names the limit, the figure the writes would reach and the maximum."""
    if refused is None:
        limits.check(TOTALS, writes)
        return
    with pytest.raises(LimitExceeded) as caught:
        limits.check(TOTALS, writes)
    assert (caught.value.limit, caught.value.attempted, caught.value.maximum) == refused


@pytest.mark.parametrize("value", [-1, True, 1.5, "3"])
def test_a_file_limit_is_a_whole_number(value: object) -> None:
    """A limit that is not a whole number >= 0 is refused when the limits are made."""
    with pytest.raises(InvalidArgument, match=r"max_files must be a whole number >= 0"):
        FileLimits(max_files=value)  # type: ignore[arg-type]
