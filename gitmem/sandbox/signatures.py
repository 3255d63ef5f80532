"""The TypeScript signature scanner: ``name(params): Return`` as written in the source.

Signatures come from the source text: the runtime knows which exports are functions, the
source still has the types the transpiler erased. The source is an agent's text, so the
scan is one forward pass with nothing to backtrack: one search finds every comment and
string whole, one literal search per word finds each word a declaration starts with,
and a walk over those words in order, passing the ones inside a comment or a string,
reads each declaration token by token (the two plainest shapes with one match each);
each signature is read from a bounded window after its declaration.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

__all__ = ["declarations", "signatures"]

_PAIRS = {"(": ")", "[": "]", "{": "}", "<": ">"}
_WINDOW = 2_000
"""Characters one signature may span; a longer one is shown as ``name(...)``."""

# One token: a word, a line comment, the start of a block comment or a string, or any
# other single character. Each alternative is a plain run, so matching is linear.
_TOKEN = re.compile(r"[A-Za-z_$][\w$]*|//[^\n]*|/\*|[\"'`]|[^\s\w$]")
# Comments and strings, each matched whole as the token reader passes over them: a line
# comment up to its newline, a block comment past its `*/`, a string past its closing
# quote (a backslash escapes the character after it), each to the end of the source if
# unclosed. Possessive throughout, so no character is tried twice.
_PASSED = re.compile(
    r"//[^\n]*+"
    r"|/\*(?:[^*]++|\*(?!/))*+(?:\*/)?"
    r"|\"(?:[^\"\\]++|\\.)*+\\?\"?"
    r"|'(?:[^'\\]++|\\.)*+\\?'?"
    r"|`(?:[^`\\]++|\\.)*+\\?`?",
    re.DOTALL,
)
# The words a declaration starts with, by their first letter (each a different one), and
# a search of its own for each: a literal search skips ahead without trying every letter.
# A 32 KB module has some 8,000 tokens, and a few hundred of these words.
_FIRST_WORDS = {word[0]: word for word in ("function", "const", "let", "var", "export")}
_FIRST_WORD_SEARCHES = tuple(re.compile(word).finditer for word in _FIRST_WORDS.values())


def _starts_token(source: str, at: int) -> bool:
    """Whether the tokenizer starts a word at ``at``: every word character before it, back
    to the last other character, is one it passes over (a digit, or a letter outside
    ASCII)."""
    i = at - 1
    while i >= 0 and source[i].isalnum() and not (source[i].isascii() and source[i].isalpha()):
        i -= 1
    return i < 0 or not (source[i].isalnum() or source[i] in "_$")


class _Tokens:
    """The code tokens of ``source`` from ``at`` on, ``(token, index just past it)``,
    read only as far as they are asked for."""

    def __init__(self, source: str, at: int) -> None:
        self.source = source
        self.at = at
        self.read: list[tuple[str, int]] = []

    def _more(self) -> bool:
        source = self.source
        while True:
            match = _TOKEN.search(source, self.at)
            if match is None:
                return False
            token, self.at = match.group(), match.end()
            if token.startswith("//"):
                continue
            if token == "/*":
                close = source.find("*/", self.at)
                self.at = len(source) if close < 0 else close + 2
                continue
            if token in "\"'`":
                self.at = _string_end(source, self.at, token)
                continue
            self.read.append((token, self.at))
            return True

    def word(self, k: int) -> str:
        """Token ``k``, or ``""`` past the end."""
        while k >= len(self.read):
            if not self._more():
                return ""
        return self.read[k][0]

    def end(self, k: int) -> int:
        """The index just past token ``k`` (which :meth:`word` has read)."""
        return self.read[k][1]

    def start(self, k: int) -> int:
        """Where token ``k`` begins, or the end of the source past the last token."""
        if not self.word(k):
            return len(self.source)
        token, end = self.read[k]
        return end - len(token)


def _string_end(text: str, at: int, quote: str) -> int:
    """The index just past the string whose opening ``quote`` ends at ``at``."""
    while True:
        close = text.find(quote, at)
        if close < 0:
            return len(text)
        # An odd run of backslashes escapes the quote.
        slashes = 0
        while close - 1 - slashes >= at and text[close - 1 - slashes] == "\\":
            slashes += 1
        if slashes % 2 == 0:
            return close + 1
        at = close + 1


@functools.lru_cache(maxsize=16)
def declarations(source: str) -> dict[str, tuple[int, bool]]:
    """Each declared function's name → (where its signature starts, whether an arrow).

    Kept for the last few sources, so a caller can scan while the runtime loads and
    :func:`signatures` finds the scan done.

    One forward pass: each declaration is read from its first word, token by token
    unless it is a plain one (:func:`_plain_declaration`), and the scan goes on from the
    first token it did not consume.
    """
    found: dict[str, tuple[int, bool]] = {}
    # Where each comment and string starts and ends, in order. A declaration's reading
    # passes over them as they are found here, and never stops inside one.
    passed = [match.span() for match in _PASSED.finditer(source)]
    passed.append((len(source) + 1, len(source) + 1))  # past every word: the walk's end
    words = sorted(match.start() for search in _FIRST_WORD_SEARCHES for match in search(source))
    at = 0
    k = 0
    start, end = passed[0]
    for where in words:
        if where < at:
            continue
        while end <= where:
            k += 1
            start, end = passed[k]
        if start <= where:
            continue  # in a comment or a string
        at = _past(source, where, _FIRST_WORDS[source[where]], found)
    return found


def _past(source: str, where: int, word: str, found: dict[str, tuple[int, bool]]) -> int:
    """Where the scan goes on after the ``word`` found at ``where`` outside comments and
    strings: past a declaration as far as it was read, else just past the word."""
    end = where + len(word)
    follows = source[end : end + 1]
    if (follows and (follows.isalnum() or follows in "_$")) or not _starts_token(source, where):
        return end
    quick = _export_function(source, word, end, found)
    if quick < 0:
        quick = _plain_declaration(source, word, end, found)
    return quick if quick >= 0 else _declaration(_Tokens(source, where), found)


# The two shapes most declarations take, read with one match each rather than token by
# token: `export` before a word other than `default` or before a plain character, and
# `function [*] name` before a word or a plain character. "Plain" leaves out what the
# token reader would skip or read past (comments, strings, a lone slash, a digit or
# another word character that cannot start a word), so wherever one of these matches,
# the token reader would read the same name and go on from the same place; where none
# does, the token reader reads the declaration.
_PLAIN_NEXT = r"(?:[A-Za-z_$]|[^\s\w$/\"'`])"
_EXPORT_PLAIN = re.compile(r"\s*+(?!default(?![\w$]))" + _PLAIN_NEXT)
_FUNCTION_PLAIN = re.compile(r"\s*+(?:\*\s*+)?([A-Za-z_$][\w$]*+)\s*+(?=" + _PLAIN_NEXT + ")")


def _plain_declaration(source: str, token: str, at: int, found: dict[str, tuple[int, bool]]) -> int:
    """:func:`_declaration` for a plain ``export`` or ``function`` whose word ends at
    ``at``: where to go on, or -1 when the declaration is not one of those shapes."""
    if token == "export":
        return at if _EXPORT_PLAIN.match(source, at) else -1
    if token != "function":
        return -1
    head = _FUNCTION_PLAIN.match(source, at)
    if head is None:
        return -1
    found.setdefault(head.group(1), (head.end(1), False))
    return head.end()


# `export function name`, the commonest shape of all, read with one match: where the
# plain `export` would be read, and then the plain `function` right after it.
_EXPORT_FUNCTION = re.compile(r"\s++function(?![\w$])" + _FUNCTION_PLAIN.pattern)


def _export_function(source: str, token: str, at: int, found: dict[str, tuple[int, bool]]) -> int:
    """The two plain declarations of ``export function name`` at once, for an ``export``
    whose word ends at ``at``: where to go on, or -1 when it is not that shape."""
    if token != "export":
        return -1
    head = _EXPORT_FUNCTION.match(source, at)
    if head is None:
        return -1
    found.setdefault(head.group(1), (head.end(1), False))
    return head.end()


def _is_name(token: str) -> bool:
    # Not the empty word past the end: a source may stop right after `function`.
    return token[:1].isalpha() or (token[:1] != "" and token[:1] in "_$")


def _declaration(tokens: _Tokens, found: dict[str, tuple[int, bool]]) -> int:
    """Read the declaration whose first word is token 0 into ``found``; where to go on."""
    word = tokens.word
    token = word(0)
    if token == "export":
        if word(1) != "default":
            return tokens.end(0)
        k, arrow = _function_head(word, 2)
        if not arrow and word(k) in ("(", "<"):
            found.setdefault("default", (tokens.end(k - 1), False))
        return tokens.start(k)
    if token == "function":
        k = 1
        if word(k) == "*":
            k += 1
        name = word(k)
        if _is_name(name):
            found.setdefault(name, (tokens.end(k), False))
        return tokens.start(k + 1)
    # const, let or var
    k = 1
    name = word(k)
    if not _is_name(name):
        return tokens.start(k)
    k += 1
    if word(k) == ":":
        # A type annotation: up to the `=` that is not part of an arrow type.
        depth = 0
        while True:
            t = word(k)
            if not t:
                break
            if t in "([{<":
                depth += 1
            elif t in ")]}>" and depth:
                depth -= 1
            elif depth == 0 and (t == ";" or (t == "=" and word(k + 1) != ">")):
                break
            k += 1
    if word(k) != "=" or word(k + 1) == ">":
        return tokens.start(k)
    k, arrow = _function_head(word, k + 1)
    if word(k) in ("(", "<"):
        found.setdefault(name, (tokens.end(k - 1), arrow))
    return tokens.start(k)


def _function_head(word: Callable[[int], str], k: int) -> tuple[int, bool]:
    """Past an optional ``async`` and ``function [*] [name]`` from token ``k``: the token
    where the parameters would start, and whether no ``function`` was read (an arrow)."""
    if word(k) == "async":
        k += 1
    if word(k) != "function":
        return k, True
    k += 1
    if word(k) == "*":
        k += 1
    if word(k) not in ("(", "<"):
        k += 1
    return k, False


@functools.lru_cache(maxsize=64)
def signatures(source: str, names: tuple[str, ...]) -> dict[str, str]:
    """``name(params): Return`` as written in ``source``, for each name; ``name(...)`` if unseen."""
    found = declarations(source)
    result: dict[str, str] = {}
    for name in names:
        at, arrow = found.get(name, (-1, False))
        if at < 0:
            result[name] = f"{name}(...)"
            continue
        window = source[at : at + _WINDOW]
        result[name] = _signature_at(window.lstrip(), name, arrow)
    return result


# The characters :func:`_balanced` acts on; every other one it passes over.
_BRACKETING = re.compile(r"[\"'`=(\[{<)\]}>]")


def _balanced(text: str, start: int) -> int:
    """The index just past the bracket group opening at ``start`` (``len`` if unclosed)."""
    stack: list[str] = []
    i = start
    while True:
        found = _BRACKETING.search(text, i)
        if found is None:
            return len(text)
        i = found.start()
        c = text[i]
        if c in "\"'`":
            i = _string_end(text, i + 1, c)
            continue
        if c == "=" and text.startswith("=>", i):
            i += 2
            continue
        if c in _PAIRS:
            stack.append(_PAIRS[c])
        elif stack and c == stack[-1]:
            stack.pop()
            if not stack:
                return i + 1
        i += 1


# The characters :func:`_return_type` acts on; every other one it passes over.
_TYPING = re.compile(r"[(\[<)\]>{=;\n]")


def _return_type(text: str, at: int, arrow: bool) -> str:
    """A ``: Type`` annotation starting at ``at``, or ``""``."""
    i = at
    while i < len(text) and text[i].isspace():
        i += 1
    if i >= len(text) or text[i] != ":":
        return ""
    i += 1
    begin = i
    depth = 0
    while True:
        found = _TYPING.search(text, i)
        if found is None:
            return ""  # ran past the window: shown without a return type
        i = found.start()
        c = text[i]
        if c in "([<":
            depth += 1
        elif c in ")]>" and depth and not (c == ">" and text[i - 1] == "="):
            depth -= 1
        elif c == "{":
            before = text[begin:i].rstrip()
            if depth == 0 and before and not before.endswith((":", "|", "&", "=>", ",", "<")):
                break
            i = _balanced(text, i)
            continue
        elif (depth == 0 and arrow and text.startswith("=>", i)) or (
            depth == 0 and c in ";\n" and arrow
        ):
            break
        i += 1
    return " ".join(text[begin:i].split())


def _signature_at(text: str, name: str, arrow: bool) -> str:
    generics = ""
    at = 0
    if text[:1] == "<":
        end = _balanced(text, 0)
        generics = text[:end]
        at = end
        while at < len(text) and text[at].isspace():
            at += 1
    if at >= len(text) or text[at] != "(":
        return f"{name}(...)"
    end = _balanced(text, at)
    if end >= len(text):
        return f"{name}(...)"
    params = " ".join(text[at + 1 : end - 1].split())
    returns = _return_type(text, end, arrow)
    return f"{name}{generics}({params})" + (f": {returns}" if returns else "")
