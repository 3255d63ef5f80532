"""The TypeScript signature scanner: ``name(params): Return`` as written in the source.

Signatures come from the source text: the runtime knows which exports are functions, the
source still has the types the transpiler erased.
"""

from __future__ import annotations

import functools
import re

__all__ = ["signatures"]

_PAIRS = {"(": ")", "[": "]", "{": "}", "<": ">"}


def _balanced(text: str, start: int) -> int:
    """The index just past the bracket group opening at ``start``."""
    stack: list[str] = []
    i = start
    while i < len(text):
        c = text[i]
        if c in "\"'`":
            end = text.find(c, i + 1)
            while end != -1 and text[end - 1] == "\\":
                end = text.find(c, end + 1)
            i = len(text) if end == -1 else end + 1
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
    rest = text[at:]
    stripped = rest.lstrip()
    if not stripped.startswith(":"):
        return ""
    i = at + (len(rest) - len(stripped)) + 1
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
    return " ".join(text[begin:i].split())


_DECLARATION = re.compile(
    r"\b(?:(?P<fn>function)\s*\*?\s*(?P<f>[A-Za-z_$][\w$]*)"
    r"|(?:const|let|var)\s+(?P<v>[A-Za-z_$][\w$]*)\s*(?::[^=;]+)?=\s*(?:async\s+)?"
    r"(?P<vfn>function\b\s*\*?\s*[\w$]*)?)\s*(?=[<(])"
)
_FLAT_PARAMS = re.compile(r"\([^()\[\]{}<>\"'`=]*\)")
_SIMPLE_RETURN = re.compile(r"\s*(?::\s*([\w$.\[\]|&?<>][\w$.\[\]|&, ?<>]*?))?\s*(?:\{|=>)")
_DEFAULT = re.compile(r"\bexport\s+default\s+(?:async\s+)?function\s*\*?\s*[\w$]*\s*(?=[<(])")


@functools.lru_cache(maxsize=64)
def signatures(source: str, names: tuple[str, ...]) -> dict[str, str]:
    """``name(params): Return`` as written in ``source``, for each name; ``name(...)`` if unseen."""
    found: dict[str, tuple[int, bool]] = {}
    for match in _DECLARATION.finditer(source):
        name = match.group("f") or match.group("v")
        arrow = match.group("v") is not None and match.group("vfn") is None
        found.setdefault(name, (match.end(), arrow))
    default = _DEFAULT.search(source)
    if default is not None:
        found["default"] = (default.end(), False)
    return {name: _signature_at(source, name, *found.get(name, (-1, False))) for name in names}


def _signature_at(source: str, name: str, at: int, arrow: bool) -> str:
    if at < 0:
        return f"{name}(...)"
    generics = ""
    if source[at] == "<":
        end = _balanced(source, at)
        generics = source[at:end]
        at = end
    if at >= len(source) or source[at] != "(":
        return f"{name}(...)"
    # Most signatures are flat; the regular expressions answer those quickly and
    # the bracket scanner takes the rest.
    flat = _FLAT_PARAMS.match(source, at)
    end = flat.end() if flat is not None else _balanced(source, at)
    params = " ".join(source[at + 1 : end - 1].split())
    simple = _SIMPLE_RETURN.match(source, end)
    if simple is not None:
        returns = " ".join((simple.group(1) or "").split())
    else:
        returns = _return_type(source, end, arrow)
    return f"{name}{generics}({params})" + (f": {returns}" if returns else "")
