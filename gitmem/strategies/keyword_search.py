"""keyword-search: nothing pinned; memories are found by ranked keyword search."""

from __future__ import annotations

import bisect
import heapq
import re
from collections import Counter
from dataclasses import dataclass
from itertools import chain
from typing import Literal, cast

from gitmem.errors import InvalidArgument
from gitmem.store import Repository
from gitmem.strategies import calls
from gitmem.strategies.base import Desk, PromptContext, Tool
from gitmem.types import Memory, check_text

__all__ = ["Hit", "KeywordSearch", "SearchIndex", "search_text"]


class KeywordSearch:
    name = "keyword-search"
    aggregate_limits = frozenset({"maxCount"})
    loads_code_on: Literal["write", "read"] = "read"
    notice_bodies = False
    notice_tail = "Read one with `read_memory` if it bears on what you are doing."
    find_hint = "find one with search_memories"
    pinned_in_prompt = False
    revise_call = "edit_memory"

    def __init__(self) -> None:
        self.tools: tuple[Tool, ...] = (
            calls.create_memory(description_optional=True),
            calls.read_memory(),
            calls.edit_memory(),
            calls.delete_memory(),
            search_memories(),
        )

    def pinned(self, memories: list[Memory]) -> str:
        return ""

    def in_context(self) -> str:
        return (
            "Nothing about your memories is in the window until you look: find them with "
            "search_memories, then read one with read_memory."
        )

    def index_line(self, memory: Memory) -> str:
        return ""  # nothing is pinned, so maxLenIndex never applies

    def pinned_from(self, repo: Repository, store: str, cache: dict[str, object]) -> str | None:
        return None

    def prompt_section(self, context: PromptContext) -> str | None:
        return None

    def operator_refusal(self, op: str, slug: str) -> str | None:
        return None


def search_memories() -> Tool:
    """Ranked keyword search over the holder's store, through an index kept in step."""

    def run(desk: Desk, args: dict[str, object]) -> str:
        keywords = check_keywords(args["keywords"])
        index = desk.cache.get("search-index")
        if not isinstance(index, SearchIndex):
            index = desk.cache["search-index"] = SearchIndex()
        index.follow(desk.repo, desk.store_id)
        return search_text(index.search(keywords, desk.rules.limits.max_results), keywords)

    return Tool(
        "search_memories",
        "Search memories by keywords (case-insensitive substrings of name, description and "
        "body); the best matches come first, each with an excerpt.",
        {
            "keywords": {
                "type": "array",
                "items": {"type": "string"},
                "minItems": 1,
                "description": "Keywords to look for.",
            }
        },
        ("keywords",),
        run,
        writes=False,
    )


def check_keywords(keywords: object) -> list[str]:
    """The keywords, if they are text and at least one is not empty."""
    if not isinstance(keywords, list | tuple):
        raise InvalidArgument("keywords must be a list of strings")
    found = [check_text(k, "keyword") for k in cast(list[object], keywords)]
    if not any(found):
        raise InvalidArgument("give at least one non-empty keyword")
    return found


def search_text(
    hits: list[Hit], keywords: list[str], noun: tuple[str, str] = ("memory", "memories")
) -> str:
    """What ``search_memories`` answers for ``hits`` (``noun``: singular and plural)."""
    if not hits:
        return f"No {noun[0]} mentions " + ", ".join(f"`{k}`" for k in keywords) + "."
    lowered = [k.lower() for k in keywords if k]
    lines = [f"{len(hits)} {noun[0] + ' matches' if len(hits) == 1 else noun[1] + ' match'}:"]
    for hit in hits:
        m = hit.memory
        head = f"- `{m.slug}` — {m.description}" if m.description else f"- `{m.slug}`"
        lines.append(f"{head}\n  {hit.excerpt(lowered)}")
    return "\n".join(lines)


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


class SearchIndex:
    """An inverted index of one store's memories, kept in step one change at a time.

    Each memory is lowered to ``slug NUL description NUL body``. A keyword made only of
    word characters can occur only inside one word of that text, so the words that
    contain it (found by one scan of the vocabulary, far smaller than the text) name
    every memory that can match, and only those are counted. Any other keyword is
    looked for in every memory.
    """

    def __init__(self) -> None:
        self.commit: str | None = None
        """The commit the index reflects."""
        self._docs: dict[str, tuple[Memory, str]] = {}
        # word → slug → how often the word occurs in that memory
        self._postings: dict[str, dict[str, int]] = {}
        self._vocab: list[str] = []
        self._vocab_text = ""
        self._vocab_starts: list[int] = []

    def reset(self, memories: list[Memory], commit: str | None) -> None:
        """Index exactly ``memories``, as of ``commit``."""
        self._docs.clear()
        self._postings.clear()
        self._vocab.clear()
        self._vocab_text, self._vocab_starts = "", []
        for memory in memories:
            self.put(memory)
        self.commit = commit

    def follow(self, repo: Repository, store: str) -> None:
        """Bring the index up to the store's head, one change at a time."""
        head = repo.head(store)
        if self.commit == head:
            return
        changes = repo.revisions_since(store, self.commit, head) if self.commit else []
        if not changes:
            # first use, or the branch was rewritten: index the head afresh
            self.reset(repo.snapshot(store, head).memories(), head)
            return
        for rev in changes:
            if rev.removed:
                self.remove(rev.slug)
            else:
                self.put(Memory(rev.slug, rev.description, rev.body, rev.code, rev.on_use))
        self.commit = head

    def put(self, memory: Memory) -> None:
        """Index ``memory``, replacing what its slug held."""
        self.remove(memory.slug)
        text = f"{memory.slug}\0{memory.description}\0{memory.body}".lower()
        self._docs[memory.slug] = (memory, text)
        for word, count in Counter(_WORD.findall(text)).items():
            slugs = self._postings.get(word)
            if slugs is None:
                slugs = self._postings[word] = {}
                self._vocab.append(word)
            slugs[memory.slug] = count

    def remove(self, slug: str) -> None:
        old = self._docs.pop(slug, None)
        if old is not None:
            for word in set(_WORD.findall(old[1])):
                self._postings[word].pop(slug, None)

    def search(self, keywords: list[str], limit: int) -> list[Hit]:
        """Rank by distinct keywords mentioned, then by occurrences, then by slug."""
        found = [self._occurrences(k) for k in dict.fromkeys(k.lower() for k in keywords if k)]
        found = [f for f in found if f]
        if not found:
            return []
        distinct = Counter(chain.from_iterable(found))
        frequency = dict(found[0])
        for more in found[1:]:
            for slug, n in more.items():
                frequency[slug] = frequency.get(slug, 0) + n
        ranked = heapq.nsmallest(
            limit or len(distinct), ((-n, -frequency[slug], slug) for slug, n in distinct.items())
        )
        return [Hit(self._docs[slug][0], -n, -f) for n, f, slug in ranked]

    def _occurrences(self, keyword: str) -> dict[str, int]:
        """How often ``keyword`` occurs in each memory that has it."""
        if not _WORD.fullmatch(keyword):
            found = {slug: text.count(keyword) for slug, (_, text) in self._docs.items()}
            return {slug: n for slug, n in found.items() if n}
        # a word keyword occurs only inside words: its count in a memory is the sum,
        # over the words that contain it, of the word's count times its count in the word
        words = self._words_containing(keyword)
        if len(words) == 1 and words[0].count(keyword) == 1:
            return self._postings[words[0]]  # the common case: read, never changed
        counts: dict[str, int] = {}
        for word in words:
            per = word.count(keyword)
            for slug, n in self._postings[word].items():
                counts[slug] = counts.get(slug, 0) + n * per
        return counts

    def _words_containing(self, keyword: str) -> list[str]:
        if len(self._vocab_starts) < len(self._vocab):
            # the vocabulary only grows; a word whose memories are gone matches nothing
            self._vocab_text = "\0".join(self._vocab) + "\0"
            self._vocab_starts, offset = [], 0
            for word in self._vocab:
                self._vocab_starts.append(offset)
                offset += len(word) + 1
        words: list[str] = []
        text, starts = self._vocab_text, self._vocab_starts
        at = text.find(keyword)
        while at >= 0:
            i = bisect.bisect_right(starts, at) - 1
            words.append(self._vocab[i])
            at = text.find(keyword, starts[i + 1] if i + 1 < len(starts) else len(text))
        return words


_WORD = re.compile(r"\w+")
