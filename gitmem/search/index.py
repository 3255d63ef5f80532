"""The search index: an inverted index of one store's memories, kept in step one change
at a time, and kept on disk as derived data so that a fresh process does not build it.

The file (``<git dir>/gitmem/search/<sha1 of the store id>.5``, in no branch) is
written whole beside its place and renamed over it, so a reader sees an old index or a
new one, never part of one. A fresh process maps it and reads only what a search
needs: a small head (the vocabulary, where each word's postings lie, and each one's
CRC) checked whole when the file is opened, then the postings of the words a keyword
falls in, each checked against its own CRC when first read; the memories' lowered texts
(for a keyword that is not one word) and the list of slugs likewise, checked when first
read. Nothing is used before its CRC matched: a damaged part found while searching
makes the index build itself again from the store, and the file is written anew. A
word most memories hold is ranked from its memories grouped by count, kept beside the
file by the first search that ranks it (:mod:`gitmem.search.ranked`).
"""

from __future__ import annotations

import bisect
import heapq
import mmap
import os
from array import array
from itertools import chain
from operator import itemgetter

from gitmem.errors import InvalidArgument
from gitmem.lean.listing import store_file_name
from gitmem.lean.text import check_text
from gitmem.search.ranked import Kept, top, worth_grouping
from gitmem.search.stored import SUFFIX, Damaged, Stored, forget_older, write
from gitmem.search.words import is_word, vocabulary, words

# annotations only at run time: the lean read path searches with this module, in a
# process that loads no typing, no regular expressions and no memory types (and what
# only building or writing an index needs is imported where it is used)
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import cast

    from gitmem.search.hits import Hit
    from gitmem.store import Storage
    from gitmem.types import Memory
else:
    from gitmem.lean.light import cast


__all__ = ["BEHIND", "SearchIndex", "check_keywords", "index_file", "index_path", "stored_index"]

BEHIND = 64
"""How many memories changed since the stored index was written before it is rewritten."""


KEYWORDS_MAX = 64
"""The keywords one search takes at most."""
KEYWORD_MAX = 1_024
"""The characters of one keyword at most."""


def check_keywords(keywords: object) -> list[str]:
    """The keywords, if they are text, at least one is not empty, and there are not too
    many nor any too long."""
    if not isinstance(keywords, list | tuple):
        raise InvalidArgument("keywords must be a list of strings")
    given = cast(list[object], keywords)
    if len(given) > KEYWORDS_MAX:
        raise InvalidArgument(
            f"{len(given):,} keywords were given; search with at most {KEYWORDS_MAX}"
        )
    found = [check_text(k, "keyword") for k in given]
    long = next((k for k in found if len(k) > KEYWORD_MAX), None)
    if long is not None:
        raise InvalidArgument(
            f"a keyword is {len(long):,} characters long; use at most {KEYWORD_MAX} each"
        )
    if not any(found):
        raise InvalidArgument("give at least one non-empty keyword")
    return found


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
        self._base: Stored | None = None
        self._loaded = False  # whether the base was read from disk
        # a base built here: its memories, and its file until it is written
        self._held: dict[str, Memory] = {}
        self._unwritten: bytes | None = None
        self._hidden: set[str] = set()
        self._fetch: Callable[[str], Memory | None] | None = None
        # the store the index follows: where a damaged base is rebuilt from
        self._source: tuple[Storage, str] | None = None
        # memories changed since the base, by slug: each one's text, and the memory where
        # it was given whole (a text alone is a catch-up's that reads no Memory)
        self._docs: dict[str, tuple[Memory | None, str]] = {}
        # word → slug → how often the word occurs in that memory
        self._postings: dict[str, dict[str, int]] = {}
        self._vocab: list[str] = []
        self._vocab_text = ""
        self._vocab_starts: list[int] = []
        # postings lists in most-occurrences-first order, for as long as nothing changes
        self._version = 0
        self._orders: dict[int, tuple[dict[str, int], int, list[tuple[str, int]]]] = {}
        self._stable: set[int] = set()  # ids of this search's lists that are postings
        # the base's words grouped so far, and those kept beside the file it was read from
        self._ranked: Kept | None = None

    def reset(self, memories: list[Memory], commit: str | None) -> None:
        """Index exactly ``memories``, as of ``commit``: built in bulk as the file that
        keeps it (see :func:`gitmem.search.stored.encode`), read as a base is read."""
        from gitmem.search.stored import encode

        held = {m.slug: m for m in memories}
        data = encode(
            commit, {s: f"{s}\0{m.description}\0{m.body}".lower() for s, m in held.items()}
        )
        base = Stored.parse(memoryview(data))
        if base is None:
            raise AssertionError("an index built here reads back whole")
        self._start(base, False)
        self._held, self._unwritten = held, data

    def _afresh(self, repo: Storage, store: str, head: str | None) -> None:
        """Index the store's memories at ``head`` afresh: their texts read straight from
        the packs in one sweep, no ``Memory`` made (a hit reads its memory from the
        store; the next listing reads none of those blobs again), or, when a memory or
        an object does not read that way (loose, moved by a concurrent repack, not as
        gitmem writes it), every memory read by the store's own reader."""
        from gitmem.search.stored import encode
        from gitmem.store.collector import uncollected

        # every memory's text and every word's postings: many objects kept, none freed
        with uncollected():
            found = repo.search_texts(store, head)
            data = None if found is None else encode(head, *found)
        if data is None:
            self.reset(repo.snapshot(store, head).memories(), head)
            return
        base = Stored.parse(memoryview(data))
        if base is None:
            raise AssertionError("an index built here reads back whole")
        self._start(base, False)
        self._unwritten = data

    def _start(self, base: Stored, loaded: bool) -> None:
        """Stand on ``base`` alone: nothing changed since, nothing hidden."""
        self._base, self._loaded = base, loaded
        self._ranked = None
        self._held, self._unwritten = {}, None
        self._hidden.clear()
        self._docs.clear()
        self._postings.clear()
        self._vocab.clear()
        self._vocab_text, self._vocab_starts = "", []
        self._orders.clear()
        self._version += 1
        self.commit = base.commit

    def follow(self, repo: Storage, store: str) -> None:
        """Bring the index up to the store's head, one change at a time."""
        self._source = (repo, store)
        head = repo.head(store)
        if head is not None:
            self._fetch = repo.snapshot(store, head).get
        if self.commit == head:
            return
        changes = repo.revisions_since(store, self.commit, head) if self.commit else []
        if not changes:
            # first use, or the branch was rewritten: index the head afresh
            self._afresh(repo, store, head)
            return
        try:
            for rev in changes:
                if rev.removed:
                    self.remove(rev.slug)
                else:
                    self.put(rev.memory())
        except Damaged:
            self._afresh(repo, store, head)
            return
        self.commit = head

    @property
    def stored(self) -> bool:
        """Whether the index stands on one read from disk."""
        return self._loaded

    @property
    def changed(self) -> int:
        """How many memories the index holds beyond a base read from disk (all, without
        one)."""
        if self._base is not None and not self._loaded:
            kept = self._base.slugs().difference(self._hidden, self._docs)
            return len(kept) + len(self._docs)
        return len(self._docs) + len(self._hidden.difference(self._docs))

    def put(self, memory: Memory) -> None:
        """Index ``memory``, replacing what its slug held."""
        text = f"{memory.slug}\0{memory.description}\0{memory.body}".lower()
        self.put_text(memory.slug, text, memory)

    def put_text(self, slug: str, text: str, memory: Memory | None = None) -> None:
        """Index the memory ``slug`` by its ``text`` (``slug NUL description NUL body``,
        lowered), replacing what its slug held; a hit on it is read from the store
        unless ``memory`` is given."""
        self.remove(slug)
        self._version += 1
        self._docs[slug] = (memory, text)
        from collections import Counter

        for word, count in Counter(words(text)).items():
            slugs = self._postings.get(word)
            if slugs is None:
                slugs = self._postings[word] = {}
                self._vocab.append(word)
            slugs[slug] = count

    def remove(self, slug: str) -> None:
        self._version += 1
        self._orders.clear()
        old = self._docs.pop(slug, None)
        if old is not None:
            for word in set(words(old[1])):
                self._postings[word].pop(slug, None)
        if self._base is not None and slug in self._base.slugs():
            self._hidden.add(slug)

    def search(self, keywords: list[str], limit: int) -> list[Hit]:
        """Rank by distinct keywords mentioned, then by occurrences, then by slug."""
        try:
            return self._search(keywords, limit)
        except Damaged:
            self._rebuild()
            return self._search(keywords, limit)

    def _rebuild(self) -> None:
        """Index the store's memories at this index's commit afresh (its base was found
        damaged), and write the file again for the next process."""
        if self._source is None:
            raise AssertionError("a stored index is searched only after it follows its store")
        repo, store = self._source
        self._afresh(repo, store, self.commit)
        self.save(index_file(repo, store))

    def _search(self, keywords: list[str], limit: int) -> list[Hit]:
        from gitmem.search.hits import Hit

        hits: list[Hit] = []
        for slug, distinct, frequency in self.rank(keywords, limit):
            memory = self._memory(slug)
            if memory is not None:
                hits.append(Hit(memory, distinct, frequency))
        return hits

    def rank(self, keywords: list[str], limit: int) -> list[tuple[str, int, int]]:
        """The ``limit`` best memories (0: all that match) as ``(slug, distinct keywords,
        occurrences)``, ranked as :meth:`search` ranks them; a stored part found damaged
        raises (:meth:`search` rebuilds the index then)."""
        self._stable.clear()
        lowered = list(dict.fromkeys(k.lower() for k in keywords if k))
        ranked = self._rank_by_groups(lowered, limit) if limit else None
        if ranked is not None:
            return ranked
        found = [self._occurrences(k) for k in lowered]
        found = [f for f in found if f]
        if not found:
            return []
        if limit and sum(map(len, found)) > 8 * limit and all(id(f) in self._stable for f in found):
            ranked = self._top(found, limit)
        else:
            from collections import Counter

            distinct = Counter(chain.from_iterable(found))
            frequency = dict(found[0])
            for more in found[1:]:
                for slug, n in more.items():
                    frequency[slug] = frequency.get(slug, 0) + n
            ranked = heapq.nsmallest(
                limit or len(distinct),
                ((-n, -frequency[slug], slug) for slug, n in distinct.items()),
            )
        return [(slug, -n, -f) for n, f, slug in ranked]

    def blob(self, slug: str) -> str | None:
        """The ``.md`` blob id of the memory ``slug`` as the index holds it, if it was
        told it (a memory changed since its base was written: not)."""
        base = self._base
        if base is None or slug in self._docs or slug in self._hidden:
            return None
        return base.blob(slug)

    def _rank_by_groups(self, keywords: list[str], limit: int) -> list[tuple[str, int, int]] | None:
        """As :meth:`rank`, for an index that is a base alone and keywords each found in
        at most one word, once: from each word's memories grouped by how often it occurs
        in them (see :mod:`gitmem.search.ranked`), read from the top only as far as the
        ranking needs, when a word is in enough memories for that to pay. ``None`` for
        any other search."""
        base = self._base
        if base is None or self._docs or self._hidden:
            return None
        words: list[tuple[int, str]] = []
        for keyword in keywords:
            if not is_word(keyword):
                return None
            found = _numbered(keyword, base.starts, base.vocab_text)
            if len(found) > 1 or (found and found[0][1].count(keyword) != 1):
                return None
            words += found
        if not worth_grouping(base.size(i) for i, _ in words):
            return None
        ranked = self._ranked or Kept(None, base.identity)  # an index built here: none kept
        self._ranked = ranked
        lists = [ranked.groups(i, word, base.occurrences, base.size(i)) for i, word in words]
        return [(base.slug(n), k, f) for n, k, f in top(lists, limit)]

    def _top(self, found: list[dict[str, int]], limit: int) -> list[tuple[int, int, str]]:
        """The ``limit`` best-ranked memories, without scoring every one: each keyword's
        memories are read most occurrences first (an order kept per postings list), and
        the reading stops once the ``limit``-th best seen ranks strictly above the best
        any memory not yet seen could reach (it is in at most the lists not yet read to
        the end, with at most the occurrences where each list has got to). That is
        checked a quarter further down each time (at least ``limit`` rows further): a
        check weighs every memory seen, so checks at a fixed step would cost the
        square of a list where every memory ranks alike."""
        lists = [self._descending(f) for f in found]
        seen: dict[str, tuple[int, int, str]] = {}
        longest = max(map(len, lists))
        depth = 0
        check = limit
        while depth < longest:
            for order in lists:
                if depth < len(order):
                    slug = order[depth][0]
                    if slug not in seen:
                        counts = [c for c in (f.get(slug) for f in found) if c]
                        seen[slug] = (-len(counts), -sum(counts), slug)
            depth += 1
            if depth < check:
                continue
            check += max(limit, depth // 4)
            if len(seen) >= limit:
                live = [order for order in lists if depth < len(order)]
                bound = (-len(live), -sum(order[depth][1] for order in live))
                kth = heapq.nsmallest(limit, seen.values())[-1]
                if (kth[0], kth[1]) < bound:
                    break
        return heapq.nsmallest(limit, seen.values())

    def _descending(self, postings: dict[str, int]) -> list[tuple[str, int]]:
        """``postings`` as ``(slug, count)``, most occurrences first, then by slug; kept
        until the index changes. A stored word's postings are read in slug order."""
        key = id(postings)
        cached = self._orders.get(key)
        if cached is None or cached[0] is not postings or cached[1] != self._version:
            base = self._base
            if base is not None and base.ordered(postings):
                # by count alone: the sort keeps the slug order among equal counts
                order = sorted(postings.items(), key=itemgetter(1), reverse=True)
            else:
                order = list(_most_first(postings, False).items())
            cached = self._orders[key] = (postings, self._version, order)
        return cached[2]

    def _memory(self, slug: str) -> Memory | None:
        doc = self._docs.get(slug)
        if doc is not None and doc[0] is not None:
            return doc[0]
        held = self._held.get(slug)
        if held is not None:
            return held
        # a hit on a base read from disk: read from the store at the index's commit
        return self._fetch(slug) if self._fetch is not None else None

    def _occurrences(self, keyword: str) -> dict[str, int]:
        """How often ``keyword`` occurs in each memory that has it."""
        base, hidden = self._base, self._hidden
        if not is_word(keyword):
            texts = [(slug, text) for slug, (_, text) in self._docs.items()]
            if base is not None:
                texts += [(s, t) for s, t in base.texts().items() if s not in hidden]
            found = {slug: text.count(keyword) for slug, text in texts}
            return {slug: n for slug, n in found.items() if n}
        # a word keyword occurs only inside words: its count in a memory is the sum,
        # over the words that contain it, of the word's count times its count in the word
        if len(self._vocab_starts) < len(self._vocab):
            # the vocabulary only grows; a word whose memories are gone matches nothing
            self._vocab_text, self._vocab_starts = vocabulary(self._vocab)
        starts, text = self._vocab_starts, self._vocab_text
        lists = [(word, self._postings[word], False) for word in _containing(keyword, starts, text)]
        if base is not None:
            lists += [
                (word, base.postings(i), True)
                for i, word in _numbered(keyword, base.starts, base.vocab_text)
            ]
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
        the new one, never part of one), or leave the file as it was if it cannot be
        written: it is derived data, which the next reader builds again. The file is
        the one a bulk build of the memories the index now holds makes."""
        from gitmem.search.stored import encode

        if self._unwritten is not None and not self._docs and not self._hidden:
            write(path, self._unwritten)
            return
        texts = {slug: text for slug, (_, text) in self._docs.items()}
        blobs: dict[str, str] = {}
        base = self._base
        if base is not None:
            hidden = self._hidden
            told = base.blobs()  # a memory changed since is not told its
            for slug, text in base.texts().items():
                if slug not in hidden and slug not in texts:
                    texts[slug] = text
                    if slug in told:
                        blobs[slug] = told[slug]
        write(path, encode(self.commit, texts, blobs))

    @classmethod
    def load(cls, path: str) -> SearchIndex | None:
        """The index written at ``path``; ``None`` if there is none, or its head does not
        read whole (a damaged index is never trusted: the caller builds a new one; a part
        found damaged later is rebuilt from the store when it is needed)."""
        try:
            with open(path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                # mapped, not read: a search touches the head and a few words' postings
                data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        except (OSError, ValueError):
            return None
        index = cls.of(data)
        if index is not None and index._base is not None:
            index._ranked = Kept(path, index._base.identity)
        return index

    @classmethod
    def of(cls, data: bytes | mmap.mmap) -> SearchIndex | None:
        """The index the file's bytes ``data`` hold, read as :meth:`load` reads a file;
        ``None`` if its head does not read whole."""
        stored = Stored.parse(memoryview(data))
        if stored is None:
            return None
        index = cls()
        index._start(stored, True)
        return index


def stored_index(repo: Storage, store: str) -> SearchIndex:
    """The store's search index at its head: read from the repository's git directory
    (``gitmem/search/``, derived data, in no branch), caught up from the commit it was
    written at, and written back when it was missing or damaged or has fallen
    :data:`BEHIND` changes behind (a few changes are cheaper to catch up again than
    the whole index is to write). A reading of the past (``repo.as_of``) gets an index
    of that moment built in memory: the file stays the head's."""
    if repo.pinned(store) is not None:
        index = SearchIndex()
        index.follow(repo, store)
        return index
    path = index_file(repo, store)
    index = SearchIndex.load(path) or SearchIndex()
    index.follow(repo, store)
    # no base: built here (none on disk, a damaged one, or a rewritten branch)
    if not index.stored or index.changed >= BEHIND:
        forget_older(path)
        try:
            index.save(path)
        except Damaged:
            index._afresh(repo, store, index.commit)  # pyright: ignore[reportPrivateUsage]
            index.save(path)
    return index


def index_file(repo: Storage, store: str) -> str:
    """Where ``store``'s search index is kept: beside the history index, in no branch."""
    return index_path(repo.directory, store)


def index_path(directory: str, store: str) -> str:
    """Where ``store``'s search index is kept in the git directory ``directory``."""
    return os.path.join(directory, "gitmem", "search", store_file_name(store) + SUFFIX)


def _most_first(postings: dict[str, int], by_slug: bool) -> dict[str, int]:
    """``postings`` most occurrences first, then by slug: sorted by slug (unless they
    are ``by_slug`` already), then by count, which keeps the slugs' order among equal
    counts (Python's sort is stable, reversed too)."""
    if len(postings) < 2:
        return postings
    once = max(postings.values()) == 1
    if by_slug and once:
        return postings
    order = list(postings) if by_slug else sorted(postings)
    count = postings.__getitem__
    if not once:
        order.sort(key=count, reverse=True)
    return dict(zip(order, map(count, order), strict=True))


def _numbered(keyword: str, starts: list[int] | array[int], text: str) -> list[tuple[int, str]]:
    """The words (number and word) of a vocabulary (``text``: as :func:`_vocabulary`
    joins it) that hold ``keyword``."""
    found: list[tuple[int, str]] = []
    at = text.find(keyword)
    while at >= 0:
        i = bisect.bisect_right(starts, at) - 1
        end = starts[i + 1] - 1 if i + 1 < len(starts) else len(text) - 1
        found.append((i, text[starts[i] : end]))
        at = text.find(keyword, end + 1)
    return found


def _containing(keyword: str, starts: list[int], text: str) -> list[str]:
    """The words of a vocabulary that hold ``keyword``."""
    return [word for _, word in _numbered(keyword, starts, text)]
