"""How many memories, body characters and body lines a store holds (or once held).

A value every commit gitmem makes records twice (its totals and its peaks), read by
the push hook for each commit it checks: kept here, with the standard library alone,
so a process that reads commits never loads ``dataclasses`` for it. It behaves as a
frozen dataclass would: compared and hashed by its fields, printed with them, never
changed in place. :mod:`gitmem.types` re-exports it.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["Totals", "totals_of"]


class Totals:
    """How many memories, body characters and body lines a store holds (or once held)."""

    __slots__ = ("chars", "count", "lines")
    __match_args__ = ("count", "chars", "lines")

    count: int
    chars: int
    lines: int

    def __init__(self, count: int = 0, chars: int = 0, lines: int = 0) -> None:
        setting = object.__setattr__
        setting(self, "count", count)
        setting(self, "chars", chars)
        setting(self, "lines", lines)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Totals)
        return (self.count, self.chars, self.lines) == (other.count, other.chars, other.lines)

    def __hash__(self) -> int:
        return hash((self.count, self.chars, self.lines))

    def __repr__(self) -> str:
        return f"Totals(count={self.count!r}, chars={self.chars!r}, lines={self.lines!r})"

    def __reduce__(self) -> tuple[type[Totals], tuple[int, int, int]]:
        return Totals, (self.count, self.chars, self.lines)

    def peak(self, other: Totals) -> Totals:
        return Totals(
            max(self.count, other.count), max(self.chars, other.chars), max(self.lines, other.lines)
        )

    def to_dict(self) -> dict[str, int]:
        """``{"count", "chars", "lines"}``."""
        return {"count": self.count, "chars": self.chars, "lines": self.lines}

    def as_dict(self) -> dict[str, int]:
        """The same as :meth:`to_dict` (the name earlier versions used)."""
        return self.to_dict()


def _setter(field: str) -> Callable[[Totals, int], None]:
    """The slot's own setter (what ``__init__`` reaches through ``__setattr__``)."""
    return getattr(Totals, field).__set__


_NEW = object.__new__
_SET_COUNT, _SET_CHARS, _SET_LINES = map(_setter, ("count", "chars", "lines"))


def totals_of(count: int, chars: int, lines: int) -> Totals:
    """``Totals(count, chars, lines)``, made without calling its ``__init__`` (a push
    hook makes two for every commit it reads): the same value."""
    made = _NEW(Totals)
    _SET_COUNT(made, count)
    _SET_CHARS(made, chars)
    _SET_LINES(made, lines)
    return made
