"""What storable text is: a string with no NUL and no lone surrogate (the one rule
every text an agent or an operator gives passes, keywords included), and what a line
is (a description: text without a line break); how its lines are counted; and how a
refusal names a value it was given."""

from __future__ import annotations

from gitmem.errors import InvalidText

__all__ = ["SHOWN", "check_line", "check_text", "count_lines", "one_line", "shown"]

SHOWN = 40
"""The characters of a value a refusal shows at most."""

_LINE_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"
"""What ends a line (``str.splitlines``'s separators)."""
_BREAKS = frozenset(_LINE_BREAKS)
_FLAT = dict.fromkeys(map(ord, _LINE_BREAKS), " ")  # each of them as a space


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


def check_line(value: object, what: str) -> str:
    """Return ``value`` if it is storable text on one line: a description is one line
    of the index every holder of the store reads, so a line break in it would add lines
    that pass for entries of their own."""
    text = check_text(value, what)
    if not _BREAKS.isdisjoint(text):
        raise InvalidText(
            f"the {what} holds a line break; keep it to one line and put the rest in the body"
        )
    return text


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


def shown(value: object, *, quoted: bool = False) -> str:
    """``value`` as a refusal names it: a short printable text as it is (in quotes if
    ``quoted``); any other text quoted, its unprintable characters (a lone surrogate
    among them) escaped, and cut at :data:`SHOWN` characters; anything else as its
    type. A refusal never echoes a caller's argument back whole, nor holds text that
    cannot be written out."""
    if value is None or isinstance(value, bool | int | float):
        return repr(value)[:SHOWN]
    if not isinstance(value, str):
        return f"a {type(value).__name__}"
    if len(value) <= SHOWN and value.isprintable() and not quoted:
        return value
    return repr(value[:SHOWN]) + ("..." if len(value) > SHOWN else "")
