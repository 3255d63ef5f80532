"""keyword-search: nothing pinned; memories are found by ranked keyword search."""

from __future__ import annotations

import bisect
import contextlib
import hashlib
import heapq
import marshal
import os
import re
import sys
import threading
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from itertools import chain
from typing import Literal, cast

from gitmem.errors import InvalidArgument
from gitmem.store import Repository
from gitmem.strategies import calls
from gitmem.strategies.base import Desk, PromptContext, Tool
from gitmem.types import Memory, check_text

__all__ = ["Hit", "KeywordSearch", "SearchIndex", "search_text", "stored_index"]


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
            index = desk.cache["search-index"] = stored_index(desk.repo, desk.store_id)
        else:
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

    An index read from disk (:func:`stored_index`) is a *base* that stays as written,
    read one word's postings at a time, plus the memories changed since it was written
    (held in memory, as an index built here is); a base memory they replace or remove
    is hidden. The base holds no ``Memory``: a hit on it is read from the store.
    """

    def __init__(self) -> None:
        self.commit: str | None = None
        """The commit the index reflects."""
        self._base: _Stored | None = None
        self._hidden: set[str] = set()
        self._fetch: Callable[[str], Memory | None] | None = None
        self._docs: dict[str, tuple[Memory, str]] = {}
        # word → slug → how often the word occurs in that memory
        self._postings: dict[str, dict[str, int]] = {}
        self._vocab: list[str] = []
        self._vocab_text = ""
        self._vocab_starts: list[int] = []
        # postings lists in most-occurrences-first order, for as long as nothing changes
        self._version = 0
        self._orders: dict[int, tuple[dict[str, int], int, list[tuple[int, str]]]] = {}
        self._stable: set[int] = set()  # ids of this search's lists that are postings

    def reset(self, memories: list[Memory], commit: str | None) -> None:
        """Index exactly ``memories``, as of ``commit``."""
        self._base = None
        self._hidden.clear()
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
        if head is not None:
            self._fetch = repo.snapshot(store, head).get
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

    @property
    def stored(self) -> bool:
        """Whether the index stands on one read from disk."""
        return self._base is not None

    @property
    def changed(self) -> int:
        """How many memories the index holds beyond its base (all, without a base)."""
        return len(self._docs) + len(self._hidden.difference(self._docs))

    def put(self, memory: Memory) -> None:
        """Index ``memory``, replacing what its slug held."""
        self.remove(memory.slug)
        self._version += 1
        text = f"{memory.slug}\0{memory.description}\0{memory.body}".lower()
        self._docs[memory.slug] = (memory, text)
        for word, count in Counter(_WORD.findall(text)).items():
            slugs = self._postings.get(word)
            if slugs is None:
                slugs = self._postings[word] = {}
                self._vocab.append(word)
            slugs[memory.slug] = count

    def remove(self, slug: str) -> None:
        self._version += 1
        self._orders.clear()
        old = self._docs.pop(slug, None)
        if old is not None:
            for word in set(_WORD.findall(old[1])):
                self._postings[word].pop(slug, None)
        if self._base is not None and slug in self._base.slugs:
            self._hidden.add(slug)

    def search(self, keywords: list[str], limit: int) -> list[Hit]:
        """Rank by distinct keywords mentioned, then by occurrences, then by slug."""
        self._stable.clear()
        found = [self._occurrences(k) for k in dict.fromkeys(k.lower() for k in keywords if k)]
        found = [f for f in found if f]
        if not found:
            return []
        if limit and sum(map(len, found)) > 8 * limit and all(id(f) in self._stable for f in found):
            ranked = self._top(found, limit)
        else:
            distinct = Counter(chain.from_iterable(found))
            frequency = dict(found[0])
            for more in found[1:]:
                for slug, n in more.items():
                    frequency[slug] = frequency.get(slug, 0) + n
            ranked = heapq.nsmallest(
                limit or len(distinct),
                ((-n, -frequency[slug], slug) for slug, n in distinct.items()),
            )
        hits: list[Hit] = []
        for n, f, slug in ranked:
            memory = self._memory(slug)
            if memory is not None:
                hits.append(Hit(memory, -n, -f))
        return hits

    def _top(self, found: list[dict[str, int]], limit: int) -> list[tuple[int, int, str]]:
        """The ``limit`` best-ranked memories, without scoring every one: each keyword's
        memories are read most occurrences first (an order kept per postings list), and
        the reading stops once the ``limit``-th best seen ranks strictly above the best
        any memory not yet seen could reach (it is in at most the lists not yet read to
        the end, with at most the occurrences where each list has got to)."""
        lists = [self._descending(f) for f in found]
        seen: dict[str, tuple[int, int, str]] = {}
        longest = max(map(len, lists))
        depth = 0
        while depth < longest:
            for order in lists:
                if depth < len(order):
                    slug = order[depth][1]
                    if slug not in seen:
                        counts = [c for c in (f.get(slug) for f in found) if c]
                        seen[slug] = (-len(counts), -sum(counts), slug)
            depth += 1
            if depth % limit == 0 and len(seen) >= limit:
                live = [order for order in lists if depth < len(order)]
                bound = (-len(live), sum(order[depth][0] for order in live))
                kth = heapq.nsmallest(limit, seen.values())[-1]
                if (kth[0], kth[1]) < bound:
                    break
        return heapq.nsmallest(limit, seen.values())

    def _descending(self, postings: dict[str, int]) -> list[tuple[int, str]]:
        """``postings`` as ``(-count, slug)``, most occurrences first; kept until the
        index changes."""
        key = id(postings)
        cached = self._orders.get(key)
        if cached is None or cached[0] is not postings or cached[1] != self._version:
            order = sorted((-n, slug) for slug, n in postings.items())
            cached = self._orders[key] = (postings, self._version, order)
        return cached[2]

    def _memory(self, slug: str) -> Memory | None:
        doc = self._docs.get(slug)
        if doc is not None:
            return doc[0]
        # a hit on the base: read from the store at the index's commit
        return self._fetch(slug) if self._fetch is not None else None

    def _occurrences(self, keyword: str) -> dict[str, int]:
        """How often ``keyword`` occurs in each memory that has it."""
        base, hidden = self._base, self._hidden
        if not _WORD.fullmatch(keyword):
            texts = [(slug, text) for slug, (_, text) in self._docs.items()]
            if base is not None:
                texts += [(s, t) for s, t in base.texts().items() if s not in hidden]
            found = {slug: text.count(keyword) for slug, text in texts}
            return {slug: n for slug, n in found.items() if n}
        # a word keyword occurs only inside words: its count in a memory is the sum,
        # over the words that contain it, of the word's count times its count in the word
        if len(self._vocab_starts) < len(self._vocab):
            # the vocabulary only grows; a word whose memories are gone matches nothing
            self._vocab_text, self._vocab_starts = _vocabulary(self._vocab)
        words = _containing(keyword, self._vocab, self._vocab_starts, self._vocab_text)
        lists = [(word, self._postings[word], False) for word in words]
        if base is not None:
            stored = _containing(keyword, base.vocab, base.starts, base.vocab_text)
            lists += [(word, base.postings(word), True) for word in stored]
        if len(lists) == 1 and lists[0][0].count(keyword) == 1 and not (lists[0][2] and hidden):
            self._stable.add(id(lists[0][1]))
            return lists[0][1]  # the common case: read, never changed
        counts: dict[str, int] = {}
        for word, postings, stale in lists:
            per = word.count(keyword)
            if not counts and per == 1:
                counts = dict(postings)  # a copy at C speed, then take out what changed
                for slug in hidden if stale else ():
                    counts.pop(slug, None)
                continue
            for slug, n in postings.items():
                if not (stale and slug in hidden):
                    counts[slug] = counts.get(slug, 0) + n * per
        return counts

    # -- kept on disk --------------------------------------------------------------------

    def save(self, path: str) -> None:
        """Write the whole index to ``path``, atomically (a reader sees the old file or
        the new one, never part of one)."""
        texts = {slug: text for slug, (_, text) in self._docs.items()}
        postings = {w: p for w, p in self._postings.items() if p}
        if self._base is not None:
            base = self._base
            for slug, text in base.texts().items():
                if slug not in self._hidden and slug not in texts:
                    texts[slug] = text
            for word in base.vocab:
                kept = {s: n for s, n in base.postings(word).items() if s not in self._hidden}
                if kept:
                    postings[word] = {**kept, **postings.get(word, {})}
        vocab = sorted(postings)
        blobs = [marshal.dumps(postings[w]) for w in vocab]
        spans: list[int] = []
        offset = 0
        for blob in blobs:
            spans.append(offset)
            offset += len(blob)
        spans.append(offset)
        text_blob = marshal.dumps(texts)
        meta = marshal.dumps((vocab, spans, sorted(texts), offset, len(text_blob)))
        body = meta + b"".join(blobs) + text_blob
        head = f"{_MAGIC} {self.commit or '-'} {len(meta)} {len(body)} {zlib.crc32(body)}\n"
        tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(tmp, "wb") as f:
                f.write(head.encode() + body)
            os.replace(tmp, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.remove(tmp)

    @classmethod
    def load(cls, path: str) -> SearchIndex | None:
        """The index written at ``path``; ``None`` if there is none, or it does not read
        whole (a damaged index is never trusted: the caller builds a new one)."""
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            return None
        stored = _Stored.parse(data)
        if stored is None:
            return None
        index = cls()
        index._base = stored
        index.commit = stored.commit
        return index


def stored_index(repo: Repository, store: str) -> SearchIndex:
    """The store's search index at its head: read from the repository's git directory
    (``gitmem/search/``, derived data, in no branch), caught up from the commit it was
    written at, and written back when it was missing or damaged or has fallen
    :data:`BEHIND` changes behind (a few changes are cheaper to catch up again than
    the whole index is to write)."""
    path = index_file(repo, store)
    index = SearchIndex.load(path) or SearchIndex()
    index.follow(repo, store)
    # no base: built here (none on disk, a damaged one, or a rewritten branch)
    if not index.stored or index.changed >= BEHIND:
        with contextlib.suppress(OSError):  # derived data: the next reader builds it again
            index.save(path)
    return index


def index_file(repo: Repository, store: str) -> str:
    """Where ``store``'s search index is kept: beside the history index, in no branch."""
    name = hashlib.sha1(store.encode()).hexdigest() + ".1"
    return os.path.join(repo.directory, "gitmem", "search", name)


BEHIND = 64
"""How many memories changed since the stored index was written before it is rewritten."""

_MAGIC = f"gitmem-search-1 py{sys.version_info[0]}.{sys.version_info[1]}"


@dataclass
class _Stored:
    """A search index as written: its words, each word's postings read when first asked
    for, and every memory's lowered text, read when a keyword is not a word."""

    commit: str | None
    vocab: list[str]
    vocab_text: str
    starts: list[int]
    slugs: frozenset[str]
    data: memoryview
    spans: list[int]
    texts_span: tuple[int, int]
    cache: dict[str, dict[str, int]]
    text_cache: dict[str, str] | None = None

    @classmethod
    def parse(cls, data: bytes) -> _Stored | None:
        line, newline, rest = data.partition(b"\n")
        fields = line.decode("ascii", "replace").split(" ")
        if not newline or len(fields) != 6 or " ".join(fields[:2]) != _MAGIC:
            return None
        commit, meta_len, body_len, crc = fields[2:]
        if not (meta_len.isdigit() and body_len.isdigit() and crc.isdigit()):
            return None
        if len(rest) != int(body_len) or zlib.crc32(rest) != int(crc):
            return None
        try:
            vocab, spans, slugs, texts_at, texts_len = marshal.loads(rest[: int(meta_len)])
        except (EOFError, ValueError, TypeError):
            return None
        if (commit != "-" and len(commit) != 40) or len(spans) != len(vocab) + 1:
            return None
        vocab_text, starts = _vocabulary(vocab)
        return cls(
            commit if commit != "-" else None,
            vocab,
            vocab_text,
            starts,
            frozenset(slugs),
            memoryview(rest)[int(meta_len) :],
            spans,
            (texts_at, texts_len),
            {},
        )

    def postings(self, word: str) -> dict[str, int]:
        found = self.cache.get(word)
        if found is None:
            i = bisect.bisect_left(self.vocab, word)
            found = self.cache[word] = marshal.loads(self.data[self.spans[i] : self.spans[i + 1]])
        return found

    def texts(self) -> dict[str, str]:
        found = self.text_cache
        if found is None:
            at, length = self.texts_span
            found = self.text_cache = marshal.loads(self.data[at : at + length])
        return found


def _vocabulary(words: list[str]) -> tuple[str, list[int]]:
    """The words as one NUL-separated text, and where each starts in it."""
    starts: list[int] = []
    offset = 0
    for word in words:
        starts.append(offset)
        offset += len(word) + 1
    return "\0".join(words) + "\0", starts


def _containing(keyword: str, vocab: list[str], starts: list[int], text: str) -> list[str]:
    """The words of ``vocab`` (``text``: as :func:`_vocabulary` joins them) that hold
    ``keyword``."""
    words: list[str] = []
    at = text.find(keyword)
    while at >= 0:
        i = bisect.bisect_right(starts, at) - 1
        words.append(vocab[i])
        at = text.find(keyword, starts[i + 1] if i + 1 < len(starts) else len(text))
    return words


_WORD = re.compile(r"\w+")
