"""The words of a memory's text, as the search index files them: runs of word
characters, what ``\\w+`` finds, and the vocabulary they make."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re

__all__ = ["encoded", "is_word", "vocabulary", "words"]

_word: list[re.Pattern[str]] = []
_SPACES = bytes(c if chr(c).isalnum() or c == 0x5F else 0x20 for c in range(128)) + b" " * 128


def words(text: str) -> list[str]:
    """The words (runs of word characters) of ``text``: what ``\\w+`` finds. In ASCII
    text a word character is a letter, a digit or ``_``: every other byte becomes a
    space and the text is split on spaces, at C speed, with the very same words."""
    if text.isascii():
        return text.encode("ascii").translate(_SPACES).decode("ascii").split()
    if not _word:
        import re  # here: a search of a stored index splits no text

        _word.append(re.compile(r"\w+"))
    return _word[0].findall(text)


def encoded(text: str) -> list[bytes]:
    """The words of ``text``, as :func:`words` finds them, each UTF-8 encoded: ASCII text
    split as bytes, with no ``str`` made per word (cheaper to make and to hash). UTF-8
    keeps the order of code points, so sorted words stay sorted once decoded."""
    if text.isascii():
        return text.encode("ascii").translate(_SPACES).split()
    found = words(text)
    # a word holds no space: joined by spaces and split again, each word encoded in C
    return " ".join(found).encode().split(b" ") if found else []


def is_word(keyword: str) -> bool:
    """Whether ``keyword`` is one word: what ``\\w+`` matches whole (a word character is
    a letter, a digit, a number or ``_``, as ``str.isalnum`` says)."""
    return bool(keyword) and all(c.isalnum() or c == "_" for c in keyword)


def vocabulary(words: list[str]) -> tuple[str, list[int]]:
    """The words as one NUL-separated text, and where each starts in it."""
    from itertools import accumulate

    starts = list(accumulate(map((1).__add__, map(len, words)), initial=0))
    starts.pop()
    return "\0".join(words) + "\0", starts
