"""The TypeScript signature scanner: ``name(params): Return`` as written in the source.

Signatures come from the source text: the runtime knows which exports are functions, the
source still has the types the transpiler erased. The source is an agent's text, so the
scan is one forward pass over tokens (no backtracking regular expression), and each
signature is read from a bounded window after its declaration.
"""

from __future__ import annotations

import functools
import re

__all__ = ["signatures"]

_PAIRS = {"(": ")", "[": "]", "{": "}", "<": ">"}
_WINDOW = 2_000
"""Characters one signature may span; a longer one is shown as ``name(...)``."""

# One token: a word, a line comment, the start of a block comment or a string, or any
# other single character. Each alternative is a plain run, so matching is linear.
_TOKEN = re.compile(r"[A-Za-z_$][\w$]*|//[^\n]*|/\*|[\"'`]|[^\s\w$]")


def _tokens(source: str) -> list[tuple[str, int]]:
    """``(token, index just past it)`` for the code tokens of ``source``, in order."""
    found: list[tuple[str, int]] = []
    at = 0
    while True:
        match = _TOKEN.search(source, at)
        if match is None:
            return found
        token, at = match.group(), match.end()
        if token.startswith("//"):
            continue
        if token == "/*":
            close = source.find("*/", at)
            at = len(source) if close < 0 else close + 2
            continue
        if token in "\"'`":
            at = _string_end(source, at, token)
            continue
        found.append((token, at))


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


def _declarations(source: str) -> dict[str, tuple[int, bool]]:
    """Each declared function's name → (where its signature starts, whether an arrow)."""
    tokens = _tokens(source)
    found: dict[str, tuple[int, bool]] = {}
    n = len(tokens)
    i = 0

    def word(k: int) -> str:
        return tokens[k][0] if k < n else ""

    while i < n:
        token = tokens[i][0]
        if token == "default" and i > 0 and word(i - 1) == "export":
            k = i + 1
            if word(k) == "async":
                k += 1
            if word(k) == "function":
                k += 1
                if word(k) == "*":
                    k += 1
                if word(k) not in ("(", "<"):
                    k += 1
                if word(k) in ("(", "<"):
                    found.setdefault("default", (tokens[k - 1][1], False))
            i = k
            continue
        if token == "function":
            k = i + 1
            if word(k) == "*":
                k += 1
            name = word(k)
            if name[:1].isalpha() or name[:1] in "_$":
                found.setdefault(name, (tokens[k][1], False))
            i = k + 1
            continue
        if token in ("const", "let", "var"):
            k = i + 1
            name = word(k)
            if not (name[:1].isalpha() or name[:1] in "_$"):
                i = k
                continue
            k += 1
            if word(k) == ":":
                # A type annotation: up to the `=` that is not part of an arrow type.
                depth = 0
                while k < n:
                    t = word(k)
                    if t in "([{<" and t:
                        depth += 1
                    elif t in ")]}>" and t and depth:
                        depth -= 1
                    elif depth == 0 and (t == ";" or (t == "=" and word(k + 1) != ">")):
                        break
                    k += 1
            if word(k) != "=" or word(k + 1) == ">":
                i = k
                continue
            k += 1
            if word(k) == "async":
                k += 1
            arrow = True
            if word(k) == "function":
                arrow = False
                k += 1
                if word(k) == "*":
                    k += 1
                if word(k) not in ("(", "<"):
                    k += 1
            if word(k) in ("(", "<"):
                found.setdefault(name, (tokens[k - 1][1], arrow))
            i = k
            continue
        i += 1
    return found


@functools.lru_cache(maxsize=64)
def signatures(source: str, names: tuple[str, ...]) -> dict[str, str]:
    """``name(params): Return`` as written in ``source``, for each name; ``name(...)`` if unseen."""
    found = _declarations(source)
    result: dict[str, str] = {}
    for name in names:
        at, arrow = found.get(name, (-1, False))
        if at < 0:
            result[name] = f"{name}(...)"
            continue
        window = source[at : at + _WINDOW]
        result[name] = _signature_at(window.lstrip(), name, arrow)
    return result


def _balanced(text: str, start: int) -> int:
    """The index just past the bracket group opening at ``start`` (``len`` if unclosed)."""
    stack: list[str] = []
    i = start
    while i < len(text):
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
    while i < len(text):
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
    if i >= len(text):
        return ""  # ran past the window: shown without a return type
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
