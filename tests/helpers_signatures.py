"""The reading the runtime's signature scan is held to: a reader of every token, in Python.

It reads a module's text token by token from the start, and reads a declaration wherever
a word one may start with begins (``function``, ``const``, ``let``, ``var``,
``export``), going on from the first token the declaration did not consume; each
signature is then read from a window of 2,000 characters after its declaration. Slow,
and plain enough to check by eye: the runtime's scan, which passes over most tokens
without reading them, must find what this finds.

A token is a word (``[A-Za-z_$][\\w$]*``), a comment or a string (passed over whole, to
the end of the text if unclosed; a backslash escapes the character after it), or any
other single character; whitespace, and digits or letters outside ASCII that start no
word, are passed over.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

WINDOW = 2_000
"""Characters one signature may span; a longer one is shown as ``name(...)``."""

_TOKEN = re.compile(r"[A-Za-z_$][\w$]*|//[^\n]*|/\*|[\"'`]|[^\s\w$]")
_PAIRS = {"(": ")", "[": "]", "{": "}", "<": ">"}


class Tokens:
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
                self.at = string_end(source, self.at, token)
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


def string_end(text: str, at: int, quote: str) -> int:
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


def declarations(source: str) -> dict[str, tuple[int, bool]]:
    """Each declared function's name → (where its signature starts, whether an arrow),
    in the order first declared; the first declaration of a name counts."""
    found: dict[str, tuple[int, bool]] = {}
    at = 0
    while True:
        tokens = Tokens(source, at)
        token = tokens.word(0)
        if not token:
            return found
        if token in ("function", "const", "let", "var", "export"):
            at = _declaration(tokens, found)
        else:
            at = tokens.end(0)


def _is_name(token: str) -> bool:
    return token[:1].isalpha() or (token[:1] != "" and token[:1] in "_$")


def _declaration(tokens: Tokens, found: dict[str, tuple[int, bool]]) -> int:
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


def signatures(source: str, names: Sequence[str]) -> list[str]:
    """``name(params): Return`` as written in ``source``, for each name; ``name(...)`` if
    it is not declared there."""
    found = declarations(source)
    result: list[str] = []
    for name in names:
        at, arrow = found.get(name, (-1, False))
        if at < 0:
            result.append(f"{name}(...)")
            continue
        window = source[at : at + WINDOW]
        result.append(_signature_at(window.lstrip(), name, arrow))
    return result


def _balanced(text: str, start: int) -> int:
    """The index just past the bracket group opening at ``start`` (``len`` if unclosed)."""
    stack: list[str] = []
    i = start
    while i < len(text):
        c = text[i]
        if c in "\"'`":
            i = string_end(text, i + 1, c)
            continue
        if text.startswith("=>", i):
            i += 2
            continue
        if c in _PAIRS:
            stack.append(_PAIRS[c])
        elif stack and c == stack[-1]:
            stack.pop()
            if not stack:
                return i + 1
        i += 1
    return len(text)


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
        if i >= len(text):
            return ""  # ran past the window: shown without a return type
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
        elif depth == 0 and arrow and (c in ";\n" or text.startswith("=>", i)):
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
