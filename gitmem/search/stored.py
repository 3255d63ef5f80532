"""The search index as kept on disk, one file per store: its format, written whole and
renamed into place, and read a part at a time (see :mod:`gitmem.search.index`).

The file: one line ``<magic> <commit or -> <head length> <head CRC>``; the head, a
marshalled tuple (vocabulary text, word starts, postings spans, postings CRCs, then the
length and CRC of the slug list and of the texts); then the slug list (sorted: a
memory's number is its place in it), every word's postings (see :data:`NUMBERS`), and
the memories' lowered texts in slug order. A part is used only once its CRC matched.

A word's postings are kept as they are filed, one number for each time the word occurs
(how often it occurs in a memory is counted when a search reads the word): a build
files every word of every memory once and does nothing more per word.
"""

from __future__ import annotations

import marshal
import sys
import zlib
from array import array
from itertools import accumulate, repeat

from gitmem.lean.files import remove_quietly, replace_quietly
from gitmem.search.words import encoded

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import cast
else:

    def cast(_: object, value: object) -> object:
        return value


__all__ = ["NUMBERS", "SUFFIX", "Damaged", "Stored", "encode", "forget_older", "numbered", "write"]

# marshal's format and array's item sizes and byte order are this interpreter's and
# this machine's: another writes anew
MAGIC = f"gitmem-search-4-{sys.byteorder} py{sys.version_info[0]}.{sys.version_info[1]}"
SUFFIX = ".4"
OLDER = (".1", ".2", ".3")  # earlier formats' files, never read: removed when one is written
NUMBERS = array("I")
"""A word's postings are kept as numbers: that of the memory (its place in slug order)
for each time the word occurs in it, in slug order (a memory's number repeats as often
as the word occurs in it)."""


class Damaged(Exception):
    """A part of a stored index did not match its CRC (never leaves the search index)."""


def forget_older(path: str) -> None:
    """Remove the files earlier formats kept beside ``path`` (a reader never opens them)."""
    for suffix in OLDER:
        remove_quietly(path[: -len(SUFFIX)] + suffix)


def encode(commit: str | None, texts: dict[str, str]) -> bytes:
    """The file of an index built afresh, as of ``commit``, of memories whose lowered
    texts (``slug NUL description NUL body``) are ``texts``: the very bytes
    :meth:`gitmem.search.index.SearchIndex.save` writes for the same memories."""
    slugs = sorted(texts)
    ordered = [texts[slug] for slug in slugs]
    return Stored.build(commit, slugs, ordered, *numbered(ordered))


def write(path: str, data: bytes) -> bool:
    """Write the index file ``data`` at ``path`` whole (renamed into place: a reader sees
    the old file or the new one), and remove earlier formats' files; whether it was
    written (derived data: a failure to write is no error, the next search builds it)."""
    if not replace_quietly(path, data):
        return False
    forget_older(path)
    return True


def _u64(values: list[int]) -> bytes:
    return array("Q", values).tobytes()


class Stored:
    """A search index as written (see the module's description), read a part at a
    time: a word's postings are given as slug → occurrences, in slug order."""

    def __init__(
        self,
        commit: str | None,
        vocab_text: str,
        starts: array[int],
        spans: array[int],
        crcs: array[int],
        parts: tuple[int, int, int, int, int],
        data: memoryview,
    ) -> None:
        self.commit = commit
        self.vocab_text = vocab_text
        self.starts = starts
        self._spans = spans
        self._crcs = crcs
        self._slugs_len, self._slugs_crc, self._postings_len, self._texts_len, self._texts_crc = (
            parts
        )
        self._data = data
        self._cache: dict[int, dict[str, int]] = {}
        self._ordered: set[int] = set()
        self._slug_order: list[str] | None = None
        self._slugs: frozenset[str] | None = None
        self._texts: dict[str, str] | None = None

    @staticmethod
    def build(
        commit: str | None, slugs: list[str], texts: list[str], vocab: str, runs: list[array[int]]
    ) -> bytes:
        """The file for an index as of ``commit`` of the memories ``slugs`` (sorted) with
        the lowered ``texts``, its words (``vocab``: sorted, each ended by a NUL) and
        each word's postings (``runs``, in the words' order, each an array as
        :data:`NUMBERS`)."""
        whole = b"".join(runs)  # their bytes, copied as they are
        # each word's span and CRC, with no Python step per word
        spans = list(accumulate(map(NUMBERS.itemsize.__mul__, map(len, runs)), initial=0))
        pieces = map(memoryview(whole).__getitem__, map(slice, spans, spans[1:]))
        crcs = array("I", map(zlib.crc32, pieces)).tobytes()
        starts = list(accumulate(map((1).__add__, map(len, vocab.split("\0"))), initial=0))
        del starts[-2:]  # the place after the last NUL, and after that
        slug_part = marshal.dumps(slugs)
        text_part = marshal.dumps(texts)
        parts = (
            len(slug_part),
            zlib.crc32(slug_part),
            spans[-1],
            len(text_part),
            zlib.crc32(text_part),
        )
        head = marshal.dumps((vocab, _u64(starts), _u64(spans), crcs, *parts))
        line = f"{MAGIC} {commit or '-'} {len(head)} {zlib.crc32(head)}\n"
        return b"".join([line.encode(), head, slug_part, whole, text_part])

    @classmethod
    def parse(cls, data: memoryview) -> Stored | None:
        """The index ``data`` holds, if its first line and head read whole."""
        end = bytes(data[:200]).find(b"\n")
        fields = bytes(data[: max(end, 0)]).decode("ascii", "replace").split(" ")
        if end < 0 or len(fields) != 5 or " ".join(fields[:2]) != MAGIC:
            return None
        commit, head_len, head_crc = fields[2:]
        if not (head_len.isdigit() and head_crc.isdigit()):
            return None
        if commit != "-" and len(commit) != 40:
            return None
        head = data[end + 1 : end + 1 + int(head_len)]
        if len(head) != int(head_len) or zlib.crc32(head) != int(head_crc):
            return None
        try:
            vocab_text, starts_raw, spans_raw, crcs_raw, *parts = marshal.loads(head)
            starts, spans, crcs = array("Q"), array("Q"), array("I")
            starts.frombytes(starts_raw)
            spans.frombytes(spans_raw)
            crcs.frombytes(crcs_raw)
        except (EOFError, ValueError, TypeError):
            return None
        if not isinstance(vocab_text, str) or len(parts) != 5:
            return None
        if not all(isinstance(p, int) and p >= 0 for p in parts):
            return None
        sizes = cast(tuple[int, int, int, int, int], tuple(parts))
        slugs_len, _, postings_len, texts_len, _ = sizes
        body = data[end + 1 + int(head_len) :]
        if (
            len(spans) != len(starts) + 1
            or len(crcs) != len(starts)
            or spans[-1] != postings_len
            or len(body) != slugs_len + postings_len + texts_len
        ):
            return None
        return cls(
            commit if commit != "-" else None,
            vocab_text,
            starts,
            spans,
            crcs,
            sizes,
            body,
        )

    def _piece(self, at: int, length: int, crc: int) -> memoryview:
        """The part at ``at``, if it matches ``crc``."""
        piece = self._data[at : at + length]
        if zlib.crc32(piece) != crc:
            raise Damaged
        return piece

    def _part(self, at: int, length: int, crc: int) -> object:
        """The marshalled part at ``at``, if it matches ``crc``."""
        try:
            return marshal.loads(self._piece(at, length, crc))
        except (EOFError, ValueError, TypeError):
            raise Damaged from None

    def postings(self, i: int) -> dict[str, int]:
        """Word ``i``'s postings: slug → occurrences, in slug order."""
        found = self._cache.get(i)
        if found is None:
            start, end = self._spans[i], self._spans[i + 1]
            piece = self._piece(self._slugs_len + start, end - start, self._crcs[i])
            if len(piece) % NUMBERS.itemsize:
                raise Damaged
            numbers = array("I")  # as NUMBERS
            numbers.frombytes(piece)
            slugs = self._slug_list()
            from collections import Counter

            counts = Counter(numbers)  # in the order the numbers first come: slug order
            try:
                found = dict(zip(map(slugs.__getitem__, counts), counts.values(), strict=True))
            except IndexError:  # a number past the slug list
                raise Damaged from None
            self._cache[i] = found
            self._ordered.add(id(found))
        return found

    def ordered(self, postings: dict[str, int]) -> bool:
        """Whether ``postings`` is a stored word's, in slug order."""
        return id(postings) in self._ordered  # each is held in the cache: ids stay unique

    def words(self) -> list[str]:
        """Every word, in the order of their numbers."""
        return self.vocab_text.split("\0")[:-1]

    def _slug_list(self) -> list[str]:
        """The slugs of every memory the stored index holds, in the order of their
        numbers (sorted)."""
        if self._slug_order is None:
            part = self._part(0, self._slugs_len, self._slugs_crc)
            if not isinstance(part, list):
                raise Damaged
            self._slug_order = cast(list[str], part)
        return self._slug_order

    def slugs(self) -> frozenset[str]:
        """The slugs of every memory the stored index holds."""
        if self._slugs is None:
            self._slugs = frozenset(self._slug_list())
        return self._slugs

    def texts(self) -> dict[str, str]:
        """Every memory's lowered text, by slug."""
        if self._texts is None:
            at = self._slugs_len + self._postings_len
            part = self._part(at, self._texts_len, self._texts_crc)
            slugs = self._slug_list()
            if not isinstance(part, list) or len(cast(list[str], part)) != len(slugs):
                raise Damaged
            self._texts = dict(zip(slugs, cast(list[str], part), strict=True))
        return self._texts


def numbered(texts: list[str]) -> tuple[str, list[array[int]]]:
    """The words of ``texts`` (lowered texts in slug order), sorted, each ended by a NUL,
    and each word's postings (an array as :data:`NUMBERS`) in the same order, for the
    memories numbered by their place in ``texts``: every word of every text filed under
    its memory's number in one pass, with no Python step per word (the words as bytes,
    cheaper to make and to hash than text), and nothing more done per word."""
    from collections import defaultdict, deque
    from functools import partial

    if len(texts) > 1 << 32:
        raise ValueError("too many memories for one index")
    from gitmem.store.collector import uncollected  # here: only a build pauses it

    # a build makes millions of words and no cycle: the collections it would
    # trigger would walk all it made so far, a cost that grows faster than the store
    with uncollected():
        # each word's numbers filed straight into an array as NUMBERS holds them: the
        # file's postings are then their bytes joined, with no Python number read back
        runs: defaultdict[bytes, array[int]] = defaultdict(partial(array, NUMBERS.typecode))
        file = runs.__getitem__  # a new word gets its empty array without a Python step
        append: Callable[[array[int], int], None] = array.append  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        for number, text in enumerate(texts):
            deque(map(append, map(file, encoded(text)), repeat(number)), maxlen=0)
        vocab = sorted(runs)  # as the text sorts: UTF-8 keeps the order of code points
        text = (b"\0".join(vocab) + b"\0").decode() if vocab else ""
        return text, list(map(runs.__getitem__, vocab))
