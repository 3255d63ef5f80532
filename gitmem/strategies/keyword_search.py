"""keyword-search: nothing pinned; memories are found by ranked keyword search."""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from gitmem.types import Memory


class KeywordSearch:
    name: str = "keyword-search"
    calls: tuple[str, ...] = (
        "create_memory",
        "read_memory",
        "edit_memory",
        "delete_memory",
        "search_memories",
    )
    read_calls: tuple[str, ...] = ("read_memory", "search_memories")
    aggregate_limits: frozenset[str] = frozenset({"maxCount"})
    loads_code_on: str = "read"
    description_optional: bool = True
    notice_bodies: bool = False

    def pinned(self, memories: list[Memory]) -> str:
        return ""

    def in_context(self) -> str:
        return (
            "Nothing about your memories is in the window until you look: find them with "
            "search_memories, then read one with read_memory."
        )


@dataclass(frozen=True)
class Hit:
    """One search result: the memory, the distinct keywords it mentions, how often."""

    memory: Memory
    distinct: int
    frequency: int

    def excerpt(self, keywords: list[str], width: int = 160) -> str:
        """A short piece of the body around the first keyword found in it."""
        body = self.memory.body
        lowered = body.lower()
        found = [i for i in (lowered.find(k) for k in keywords) if i >= 0]
        start = max(0, min(found) - width // 3) if found else 0
        piece = " ".join(body[start : start + width].split())
        prefix = "…" if start > 0 else ""
        suffix = "…" if start + width < len(body) else ""
        return f"{prefix}{piece}{suffix}"


class Corpus:
    """Every memory of one commit, lowered into one UTF-8 string for fast substring scans.

    Each memory is ``slug NUL description NUL body NUL``; NUL never occurs in stored
    text, so no match spans two fields or two memories. Matching lowered UTF-8 bytes is
    matching lowered characters, and ``bytes.find`` scans at memory speed. A corpus
    built with ``previous`` reuses the lowered text of every memory that did not change.
    """

    def __init__(self, memories: list[Memory], previous: Corpus | None = None) -> None:
        self.memories = memories
        known = previous._lowered if previous is not None else {}
        self._lowered: dict[Memory, bytes] = {}
        parts: list[bytes] = []
        self._starts: list[int] = []
        offset = 0
        for m in memories:
            text = known.get(m)
            if text is None:
                text = f"{m.slug}\0{m.description}\0{m.body}\0".lower().encode()
            self._lowered[m] = text
            self._starts.append(offset)
            parts.append(text)
            offset += len(text)
        self._text = b"".join(parts)
        self._ends = [*self._starts[1:], offset]

    def search(self, keywords: list[str], limit: int) -> list[Hit]:
        """Rank by distinct keywords mentioned, then by occurrences, then by slug."""
        distinct: dict[int, int] = {}
        frequency: dict[int, int] = {}
        text, starts, ends = self._text, self._starts, self._ends
        for keyword in dict.fromkeys(k.lower().encode() for k in keywords if k):
            at = text.find(keyword)
            while at >= 0:
                doc = bisect.bisect_right(starts, at) - 1
                distinct[doc] = distinct.get(doc, 0) + 1
                frequency[doc] = frequency.get(doc, 0) + text.count(keyword, at, ends[doc])
                at = text.find(keyword, ends[doc])
        ranked = sorted(
            distinct, key=lambda d: (-distinct[d], -frequency[d], self.memories[d].slug)
        )
        if limit:
            ranked = ranked[:limit]
        return [Hit(self.memories[d], distinct[d], frequency[d]) for d in ranked]
