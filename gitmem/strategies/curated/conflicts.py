"""Conflict candidates: pairs of live rows of one owner whose claims share wording."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from gitmem.strategies.curated.rows import Row

_WORDS = re.compile(r"[a-z0-9][a-z0-9_-]*")
_STOP = frozenset(
    [
        "the",
        "and",
        "for",
        "with",
        "that",
        "this",
        "from",
        "into",
        "over",
        "when",
        "what",
        "which",
        "where",
        "have",
        "has",
        "are",
        "was",
        "were",
        "not",
        "but",
        "all",
        "any",
        "its",
        "their",
        "there",
        "then",
        "than",
        "them",
        "they",
        "you",
        "your",
        "our",
        "per",
        "via",
        "use",
        "used",
        "uses",
        "only",
        "also",
        "just",
        "more",
        "most",
        "less",
        "each",
        "every",
    ]
)


def _wording(row: Row) -> frozenset[str]:
    words = _WORDS.findall(row.description.lower()[:4096])
    return frozenset(w for w in words[1:] if len(w) > 2 and w not in _STOP)


def conflicts(rows: Iterable[Row], owner: str | None = None) -> list[tuple[Row, Row, list[str]]]:
    """Pairs of live rows of one owner whose descriptions share wording: candidates to
    read side by side, never a verdict. ``owner`` (``user``, ``host``, ``project <key>``)
    narrows the list. Most shared words first."""
    groups: dict[str, list[tuple[Row, frozenset[str]]]] = {}
    for row in rows:
        if row.live and row.role != "log" and (owner is None or row.whose == owner):
            groups.setdefault(row.whose, []).append((row, _wording(row)))
    found: list[tuple[Row, Row, list[str]]] = []
    for members in groups.values():
        postings: dict[str, list[int]] = {}
        for i, (_, words) in enumerate(members):
            for w in words:
                postings.setdefault(w, []).append(i)
        shared: Counter[tuple[int, int]] = Counter()
        for ids in postings.values():
            if len(ids) > 50:
                continue  # a word this common says nothing about a pair
            for a in range(len(ids)):
                for b in range(a + 1, len(ids)):
                    shared[(ids[a], ids[b])] += 1
        for (a, b), n in shared.items():
            wa, wb = members[a][1], members[b][1]
            if n >= 2 and n * 2 >= min(len(wa), len(wb)):
                ra, rb = sorted((members[a][0], members[b][0]), key=lambda r: r.name)
                found.append((ra, rb, sorted(wa & wb)))
    found.sort(key=lambda c: (-len(c[2]), c[0].name, c[1].name))
    return found


def conflicts_text(found: list[tuple[Row, Row, list[str]]]) -> str:
    if not found:
        return "No two live rows of one owner share wording."
    lines = [f"{len(found)} candidate pair(s); only reading both says whether they disagree:"]
    for a, b, words in found:
        lines.append(f"- `{a.name}` and `{b.name}` ({a.whose}) share: {', '.join(words)}")
    return "\n".join(lines)
