"""A word's memories by how often the word occurs in each, most first, kept beside the
search index for the words a search has ranked, and the best memories for a few such
words found from them without counting every memory.

A stored word's postings are its memory numbers, one for each time it occurs (see
:mod:`gitmem.search.stored`): what a build files at no cost per word. Ranking the
memories of a word most of a store's memories hold (``rollout`` in 78,000 of 100,000)
then means counting 150,000 numbers and sorting 78,000 memories, each search again.
So the first search that ranks such a word keeps its memories grouped by how often
the word occurs in them (most first; each group's memory numbers ascending, which is
slug order), and the next reads that group by group, from the top, only as far as the
ranking needs (:func:`top`).

The file is ``<search index file>.ranked``: records appended one search each, every
record a line ``gitmem-ranked-1 <index commit or -> <index head CRC> <word> <length>
<CRC>`` and the groups as unsigned 32-bit numbers in this machine's order: how many
groups, each group's count and size, then every group's memory numbers. A record is
taken only for the very index it was made of (its commit and its head's CRC) and only
if its CRC matches; any other is passed over, and the word counted again. The file
is removed whenever the index is written anew.
"""

from __future__ import annotations

import heapq
import mmap
import os
import zlib
from array import array
from bisect import bisect_left

from gitmem.lean.files import append_quietly, remove_quietly

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

__all__ = ["GROUPED_FROM", "SUFFIX", "Groups", "Kept", "forget", "grouped", "top", "worth_grouping"]

SUFFIX = ".ranked"

Groups = list[tuple[int, "array[int]"]]
"""A word's memories grouped by how often it occurs in them: ``(count, numbers)``, the
counts descending, each group's memory numbers ascending."""

GROUPED_FROM = 4096
"""How many times a word occurs, all told, past which a search ranks its memories from
their groups (and keeps them): fewer are counted at once."""

_SHORT = 1024
"""A list of at most this many memories is read whole before any other."""
_MARK = b"gitmem-ranked-1 "
_NUMBERS = "I"  # as the index's postings


def forget(index_path: str) -> None:
    """Remove the ranked words kept beside the index at ``index_path`` (it is being
    written anew: they are of the old one)."""
    remove_quietly(index_path + SUFFIX)


def grouped(occurrences: array[int]) -> Groups:
    """A word's groups, from its postings as stored (a memory's number for each time
    the word occurs in it, in number order)."""
    from collections import Counter

    counts = Counter(occurrences)  # in the order the numbers first come: ascending
    # by count alone: the sort keeps the numbers' order among equal counts
    order = sorted(counts, key=counts.__getitem__, reverse=True)
    sizes = Counter(counts.values())
    groups: Groups = []
    at = 0
    for count in sorted(sizes, reverse=True):
        groups.append((count, array(_NUMBERS, order[at : at + sizes[count]])))
        at += sizes[count]
    return groups


def worth_grouping(sizes: Iterable[int]) -> bool:
    """Whether words that occur ``sizes`` times, all told, are best ranked from their
    groups: one of them more than :data:`GROUPED_FROM` times."""
    return any(size > GROUPED_FROM for size in sizes)


def _count(groups: Groups, number: int) -> int:
    """How often the word of ``groups`` occurs in memory ``number`` (0: not at all)."""
    for count, numbers in groups:
        at = bisect_left(numbers, number)
        if at < len(numbers) and numbers[at] == number:
            return count
    return 0


def top(lists: list[Groups], limit: int) -> list[tuple[int, int, int]]:
    """The ``limit`` best memories for keywords each of one word (``lists``: each
    keyword's groups) as ``(number, distinct keywords, occurrences)``, best first:
    most keywords, then most occurrences, then the lowest number (slug order).

    The groups are read from the top, the list whose next group counts most first;
    each memory met is scored whole (its count in every list looked up). Reading stops
    once the ``limit``-th best met ranks strictly above the best a memory not met yet
    could reach: one in no group read has in each list at most the count of that
    list's next group."""
    # each list's groups as a memory's count in it is looked up: the largest first,
    # where a memory is likeliest to be
    by_size = [sorted(groups, key=lambda group: len(group[1]), reverse=True) for groups in lists]
    best: list[tuple[int, int, int]] = []  # (keywords, occurrences, -number), worst first
    seen: set[int] = set()
    # a short list is read whole first: once it is read to its end, no memory not met
    # yet can have every keyword, which a long list's top groups alone never shows
    at = [0 if sum(len(n) for _, n in g) > _SHORT else len(g) for g in lists]
    for j, read in enumerate(at):
        for count, numbers in lists[j][:read]:
            _score(numbers, count, by_size[:j] + by_size[j + 1 :], seen, best, limit)
    while True:
        bounds = [g[i][0] if i < len(g) else 0 for g, i in zip(lists, at, strict=True)]
        if len(best) == limit:
            reach = (sum(1 for b in bounds if b), sum(bounds))
            if (best[0][0], best[0][1]) > reach:
                break
        j = max(range(len(lists)), key=bounds.__getitem__)
        if not bounds[j]:
            break  # every list read to its end
        count, numbers = lists[j][at[j]]
        at[j] += 1
        _score(numbers, count, by_size[:j] + by_size[j + 1 :], seen, best, limit)
    return [(-number, keywords, n) for keywords, n, number in sorted(best, reverse=True)]


def _score(
    numbers: array[int],
    count: int,
    others: list[Groups],
    seen: set[int],
    best: list[tuple[int, int, int]],
    limit: int,
) -> None:
    """Score each memory of a group (``count``: how often its word occurs in them) not
    met before, whole, and keep it among the ``limit`` best met if it is one."""
    for number in numbers:
        if number in seen:
            continue
        seen.add(number)
        keywords, occurrences = 1, count
        for groups in others:
            found = _count(groups, number)
            if found:
                keywords, occurrences = keywords + 1, occurrences + found
        scored = (keywords, occurrences, -number)
        if len(best) < limit:
            heapq.heappush(best, scored)
        elif scored > best[0]:
            heapq.heapreplace(best, scored)


def _record(identity: bytes, word: bytes, groups: Groups) -> bytes:
    numbers = array(_NUMBERS, [len(groups)])
    for count, members in groups:
        numbers.extend((count, len(members)))
    for _, members in groups:
        numbers.extend(members)
    payload = numbers.tobytes()
    crc = zlib.crc32(payload, zlib.crc32(word))
    return b"%s%s %s %d %d\n" % (_MARK, identity, word, len(payload), crc) + payload


def _groups(payload: memoryview) -> Groups | None:
    """The groups a record's payload holds, if they are in their shape."""
    numbers = array(_NUMBERS)
    numbers.frombytes(payload)
    if not numbers or len(numbers) < 1 + 2 * numbers[0]:
        return None
    heads = numbers[1 : 1 + 2 * numbers[0]]
    at = 1 + 2 * numbers[0]
    groups: Groups = []
    for i in range(0, len(heads), 2):
        count, size = heads[i], heads[i + 1]
        groups.append((count, numbers[at : at + size]))
        at += size
    return groups if at == len(numbers) else None


class Kept:
    """The words of one search index grouped so far, and those kept beside its file
    (``index_path``; ``None``: an index built in memory, none kept) for the index
    whose first line names ``identity`` (its commit and its head's CRC)."""

    def __init__(self, index_path: str | None, identity: str) -> None:
        self._path = index_path + SUFFIX if index_path is not None else None
        self._identity = identity.encode()
        self._records: dict[bytes, memoryview] | None = None
        self._grouped: dict[int, Groups] = {}

    def groups(
        self, i: int, word: str, occurrences: Callable[[int], array[int]], size: int
    ) -> Groups:
        """The groups of word number ``i``: as grouped before, or kept, else counted
        from its ``occurrences`` and kept if it occurs more than :data:`GROUPED_FROM`
        times (``size``)."""
        found = self._grouped.get(i)
        if found is None:
            payload = self._read().get(word.encode())
            found = _groups(payload) if payload is not None else None
        if found is None:
            found = grouped(occurrences(i))
            if size > GROUPED_FROM:
                self._add(word, found)
        self._grouped[i] = found
        return found

    def _add(self, word: str, groups: Groups) -> None:
        """Keep ``word``'s ``groups`` for the next search (best effort: derived data,
        counted again if it is lost)."""
        if self._path is None:
            return
        append_quietly(self._path, _record(self._identity, word.encode(), groups))

    def _read(self) -> dict[bytes, memoryview]:
        """Each word's payload in the file, of records of this index whose CRC matches
        (the first of a word), found by their lines."""
        if self._records is not None:
            return self._records
        self._records = {}
        if self._path is None:
            return self._records
        try:
            with open(self._path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        except (OSError, ValueError):
            return self._records
        view = memoryview(data)
        at = data.find(_MARK)
        while at >= 0:
            end = data.find(b"\n", at)
            fields = bytes(view[at + len(_MARK) : end]).split(b" ") if end >= 0 else []
            start = end + 1
            if len(fields) == 5 and fields[3].isdigit() and fields[4].isdigit():
                identity, word = b" ".join(fields[:2]), fields[2]
                payload = view[start : start + int(fields[3])]
                if (
                    identity == self._identity
                    and word not in self._records
                    and len(payload) == int(fields[3])
                    and len(payload) % array(_NUMBERS).itemsize == 0
                    and zlib.crc32(payload, zlib.crc32(word)) == int(fields[4])
                ):
                    self._records[word] = payload
                    start += len(payload)  # the next record follows (else: search on)
            at = data.find(_MARK, start)
        return self._records
