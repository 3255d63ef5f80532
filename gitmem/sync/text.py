"""A three-way merge of texts, line by line (diff3).

Each side is compared with the base (``difflib`` after trimming the common prefix and
suffix, so the usual small edit costs little); base lines that both sides kept are the
stable points, and between them each stretch was changed by one side (that side's
lines win), by both alike, or by both differently: a conflict. Changes on adjacent
lines with no kept line between them overlap, as in git.

Texts past ``MAX_CHARS`` characters or ``MAX_LINES`` lines are not line-merged (a
conflict): difflib's worst case grows faster than the text.
"""

from __future__ import annotations

import difflib

__all__ = ["MAX_CHARS", "MAX_LINES", "merge3", "split_lines"]

MAX_CHARS = 1_000_000
MAX_LINES = 20_000


def split_lines(text: str) -> list[str]:
    """``text`` as lines that keep their ``\\n`` (the last one may lack it)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def merge3(base: str, ours: str, theirs: str) -> str | None:
    """The merge of both sides' changes to ``base``; ``None`` when they overlap."""
    if ours == theirs or theirs == base:
        return ours
    if ours == base:
        return theirs
    if max(len(base), len(ours), len(theirs)) > MAX_CHARS:
        return None
    old, mine, other = split_lines(base), split_lines(ours), split_lines(theirs)
    if max(len(old), len(mine), len(other)) > MAX_LINES:
        return None
    to_mine = _matches(old, mine)
    to_other = _matches(old, other)
    out: list[str] = []
    i = j = k = 0
    for p in range(len(old) + 1):
        if p < len(old) and not (p in to_mine and p in to_other):
            continue
        end_j = to_mine[p] if p < len(old) else len(mine)
        end_k = to_other[p] if p < len(old) else len(other)
        chunk = _resolve(old[i:p], mine[j:end_j], other[k:end_k])
        if chunk is None:
            return None
        out += chunk
        if p < len(old):
            out.append(old[p])
        i, j, k = p + 1, end_j + 1, end_k + 1
    return "".join(out)


def _resolve(base: list[str], ours: list[str], theirs: list[str]) -> list[str] | None:
    if ours == base:
        return theirs
    if theirs == base or ours == theirs:
        return ours
    return None


def _matches(a: list[str], b: list[str]) -> dict[int, int]:
    """Line ``i`` of ``a`` → the line of ``b`` it is kept as, for the lines kept."""
    found: dict[int, int] = {}
    start = 0
    limit = min(len(a), len(b))
    while start < limit and a[start] == b[start]:
        found[start] = start
        start += 1
    end = 0
    while end < limit - start and a[len(a) - 1 - end] == b[len(b) - 1 - end]:
        end += 1
    matcher = difflib.SequenceMatcher(None, a[start : len(a) - end], b[start : len(b) - end])
    for block in matcher.get_matching_blocks():
        for n in range(block.size):
            found[start + block.a + n] = start + block.b + n
    for n in range(end):
        found[len(a) - end + n] = len(b) - end + n
    return found
