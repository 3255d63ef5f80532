"""What storable text is: a string with no NUL and no lone surrogate (the one rule
every text an agent or an operator gives passes, keywords included); and how its lines
are counted."""

from __future__ import annotations

from gitmem.errors import InvalidText

__all__ = ["check_text", "count_lines", "one_line"]

# Each character str.splitlines ends a line at, as a space.
_FLAT = dict.fromkeys(map(ord, "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"), " ")


def check_text(value: object, what: str) -> str:
    """Return ``value`` if it is storable text (a string, no NUL, no lone surrogate)."""
    if not isinstance(value, str):
        raise InvalidText(f"the {what} must be text, not {type(value).__name__}")
    if "\x00" in value:
        raise InvalidText(f"the {what} holds a NUL character; remove it and send text")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidText(
            f"the {what} holds a lone surrogate at character {exc.start}; send valid Unicode text"
        ) from None
    return value


def one_line(text: str) -> str:
    """``text`` on one line, each line break a space (the length is kept): how a
    description shows where memories are listed one line each (an index, a notice, search
    hits), so that no description shows a line of its own, such as another memory's."""
    return text.translate(_FLAT)


def count_lines(text: str) -> int:
    """Lines in ``text``: 0 for empty text, and a final line without newline counts."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)
