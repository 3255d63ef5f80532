"""The search index as kept on disk, one file per store: its format, written whole and
renamed into place, and read a part at a time (see :mod:`gitmem.search.index`).

The file: one line ``<magic> <commit or -> <head length> <head CRC>``; the head, a
marshalled tuple (vocabulary text, word starts, postings spans, postings CRCs, then the
length and CRC of the slug list, of the blob ids, of the postings (length only) and of
the texts); then the slug list (sorted: a memory's number is its place in it; how many,
where each starts, then each ended by a NUL, so that a few are read without reading
all), each memory's ``.md`` blob id (20 bytes; zeros where the index was not told it),
every word's postings (see :data:`NUMBERS`), and the memories' lowered texts in slug
order. A part is used only once its CRC matched.

A word's postings are kept as they are filed, one number for each time the word occurs
(how often it occurs in a memory is counted when a search reads the word): a build
files every word of every memory once and does nothing more per word.
"""

from __future__ import annotations

import bisect
import marshal
import sys
import zlib
from array import array
from itertools import accumulate, repeat

from gitmem.lean.files import remove_quietly, replace_quietly
from gitmem.search.ranked import forget as forget_ranked
from gitmem.search.words import encoded

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections import defaultdict
    from collections.abc import Callable, Mapping
    from typing import cast
else:
    from gitmem.lean.light import cast


__all__ = ["NUMBERS", "SUFFIX", "Damaged", "Stored", "encode", "forget_older", "numbered", "write"]

# marshal's format and array's item sizes and byte order are this interpreter's and
# this machine's: another writes anew
MAGIC = f"gitmem-search-5-{sys.byteorder} py{sys.version_info[0]}.{sys.version_info[1]}"
SUFFIX = ".5"
OLDER = (".1", ".2", ".3", ".4")  # earlier formats' files, never read: removed when one is written
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


def encode(
    commit: str | None, texts: dict[str, str], blobs: Mapping[str, str] | None = None
) -> bytes:
    """The file of an index built afresh, as of ``commit``, of memories whose lowered
    texts (``slug NUL description NUL body``) are ``texts`` and whose ``.md`` blob ids
    are ``blobs`` (hex, of those it gives): the very bytes
    :meth:`gitmem.search.index.SearchIndex.save` writes for the same memories."""
    slugs = sorted(texts)
    ordered = [texts[slug] for slug in slugs]
    ids: list[str | None] = [blobs.get(slug) for slug in slugs] if blobs else [None] * len(slugs)
    return Stored.build(commit, slugs, ordered, *numbered(ordered), ids)


def write(path: str, data: bytes) -> bool:
    """Write the index file ``data`` at ``path`` whole (renamed into place: a reader sees
    the old file or the new one), and remove earlier formats' files; whether it was
    written (derived data: a failure to write is no error, the next search builds it)."""
    if not replace_quietly(path, data):
        return False
    forget_older(path)
    forget_ranked(path)  # of the index this one replaced
    return True


def _u64(values: list[int]) -> bytes:
    return array("Q", values).tobytes()


_BLOB = 20
_UNTOLD = bytes(_BLOB)  # a memory whose blob id the index was not told
_COUNT = array("I")  # how many slugs, and where each starts in the slug list's text


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
        parts: tuple[int, int, int, int, int, int, int],
        data: memoryview,
        identity: str,
    ) -> None:
        self.commit = commit
        self.identity = identity
        """What the file's first line says of it: its commit (or ``-``) and its head's
        CRC."""
        self.vocab_text = vocab_text
        self.starts = starts
        self._spans = spans
        self._crcs = crcs
        (
            self._slugs_len,
            self._slugs_crc,
            self._blobs_len,
            self._blobs_crc,
            self._postings_len,
            self._texts_len,
            self._texts_crc,
        ) = parts
        self._postings_at = self._slugs_len + self._blobs_len
        self._data = data
        self._cache: dict[int, dict[str, int]] = {}
        self._ordered: set[int] = set()
        self._slug_table: tuple[array[int], memoryview] | None = None
        self._numbers: dict[str, int] = {}  # the slugs read one by one, and their numbers
        self._blob_ids: memoryview | None = None
        self._slug_order: list[str] | None = None
        self._slugs: frozenset[str] | None = None
        self._texts: dict[str, str] | None = None

    @staticmethod
    def build(
        commit: str | None,
        slugs: list[str],
        texts: list[str],
        vocab: str,
        runs: list[array[int]],
        blobs: list[str | None],
    ) -> bytes:
        """The file for an index as of ``commit`` of the memories ``slugs`` (sorted) with
        the lowered ``texts``, its words (``vocab``: sorted, each ended by a NUL), each
        word's postings (``runs``, in the words' order, each an array as
        :data:`NUMBERS`) and each memory's ``.md`` blob id (hex, ``None`` if not told)."""
        whole = b"".join(runs)  # their bytes, copied as they are
        # each word's span and CRC (of its array's bytes, as read back from the file),
        # with no Python step per word
        spans = list(accumulate(map(NUMBERS.itemsize.__mul__, map(len, runs)), initial=0))
        crcs = array("I", map(zlib.crc32, runs)).tobytes()
        starts = list(accumulate(map((1).__add__, map(len, vocab.split("\0"))), initial=0))
        del starts[-2:]  # the place after the last NUL, and after that
        named = ("\0".join(slugs) + "\0").encode() if slugs else b""
        ends = accumulate(map((1).__add__, map(len, map(str.encode, slugs))), initial=0)
        table = array(_COUNT.typecode, [len(slugs), *ends])
        slug_part = table.tobytes() + named
        blob_part = b"".join(bytes.fromhex(blob) if blob else _UNTOLD for blob in blobs)
        text_part = marshal.dumps(texts)
        parts = (
            len(slug_part),
            zlib.crc32(slug_part),
            len(blob_part),
            zlib.crc32(blob_part),
            spans[-1],
            len(text_part),
            zlib.crc32(text_part),
        )
        head = marshal.dumps((vocab, _u64(starts), _u64(spans), crcs, *parts))
        line = f"{MAGIC} {commit or '-'} {len(head)} {zlib.crc32(head)}\n"
        return b"".join([line.encode(), head, slug_part, blob_part, whole, text_part])

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
        if not isinstance(vocab_text, str) or len(parts) != 7:
            return None
        if not all(isinstance(p, int) and p >= 0 for p in parts):
            return None
        sizes = cast(tuple[int, int, int, int, int, int, int], tuple(parts))
        slugs_len, _, blobs_len, _, postings_len, texts_len, _ = sizes
        body = data[end + 1 + int(head_len) :]
        if (
            len(spans) != len(starts) + 1
            or len(crcs) != len(starts)
            or spans[-1] != postings_len
            or len(body) != slugs_len + blobs_len + postings_len + texts_len
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
            f"{commit} {head_crc}",
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

    def size(self, i: int) -> int:
        """How many times word ``i`` occurs in the memories, all told."""
        return (self._spans[i + 1] - self._spans[i]) // NUMBERS.itemsize

    def occurrences(self, i: int) -> array[int]:
        """Word ``i``'s postings as kept: a memory's number each time the word occurs in
        it, in number order."""
        start, end = self._spans[i], self._spans[i + 1]
        piece = self._piece(self._postings_at + start, end - start, self._crcs[i])
        if len(piece) % NUMBERS.itemsize:
            raise Damaged
        numbers = array("I")  # as NUMBERS
        numbers.frombytes(piece)
        return numbers

    def _slugs_read(self) -> tuple[array[int], memoryview]:
        """Where each slug starts in the slug list's text (one more: where it ends), and
        that text."""
        if self._slug_table is None:
            part = self._piece(0, self._slugs_len, self._slugs_crc)
            size = _COUNT.itemsize
            if len(part) < size:
                raise Damaged
            count = int.from_bytes(part[:size], sys.byteorder)
            table = array("I")  # as _COUNT
            table.frombytes(part[size : size * (count + 2)])
            text = part[size * (count + 2) :]
            if (
                len(table) != count + 1
                or table[-1] != len(text)
                or count * _BLOB != self._blobs_len
            ):
                raise Damaged
            self._slug_table = table, text
        return self._slug_table

    def slug(self, number: int) -> str:
        """The slug of memory ``number``, read alone."""
        table, text = self._slugs_read()
        if not 0 <= number < len(table) - 1 or not table[number] < table[number + 1]:
            raise Damaged  # a number past the slug list
        try:
            found = bytes(text[table[number] : table[number + 1] - 1]).decode()
        except UnicodeDecodeError:
            raise Damaged from None
        self._numbers[found] = number
        return found

    def blobs(self) -> dict[str, str]:
        """Every ``.md`` blob id the index was told (hex), by slug."""
        slugs = self._slug_list()
        hexed = bytes(self._blob_part()).hex()
        width = 2 * _BLOB
        untold = _UNTOLD.hex()
        found = {slug: hexed[n * width : (n + 1) * width] for n, slug in enumerate(slugs)}
        return {slug: blob for slug, blob in found.items() if blob != untold}

    def _blob_part(self) -> memoryview:
        if self._blob_ids is None:
            self._blob_ids = self._piece(self._slugs_len, self._blobs_len, self._blobs_crc)
        return self._blob_ids

    def blob(self, slug: str) -> str | None:
        """The ``.md`` blob id of the memory ``slug`` (hex), if the index was told it;
        ``None`` for a slug it does not hold."""
        number = self._numbers.get(slug)
        if number is None:
            slugs = self._slug_list()
            number = bisect.bisect_left(slugs, slug)
            if number == len(slugs) or slugs[number] != slug:
                return None
        found = bytes(self._blob_part()[number * _BLOB : (number + 1) * _BLOB])
        return found.hex() if found != _UNTOLD else None

    def postings(self, i: int) -> dict[str, int]:
        """Word ``i``'s postings: slug → occurrences, in slug order."""
        found = self._cache.get(i)
        if found is None:
            numbers = self.occurrences(i)
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
            table, text = self._slugs_read()
            try:
                slugs = bytes(text).decode().split("\0")
            except UnicodeDecodeError:
                raise Damaged from None
            if slugs.pop() or len(slugs) != len(table) - 1:  # each slug ends in a NUL
                raise Damaged
            self._slug_order = slugs
        return self._slug_order

    def slugs(self) -> frozenset[str]:
        """The slugs of every memory the stored index holds."""
        if self._slugs is None:
            self._slugs = frozenset(self._slug_list())
        return self._slugs

    def texts(self) -> dict[str, str]:
        """Every memory's lowered text, by slug."""
        if self._texts is None:
            at = self._postings_at + self._postings_len
            part = self._part(at, self._texts_len, self._texts_crc)
            slugs = self._slug_list()
            if not isinstance(part, list) or len(cast(list[str], part)) != len(slugs):
                raise Damaged
            self._texts = dict(zip(slugs, cast(list[str], part), strict=True))
        return self._texts


def numbered(texts: list[str]) -> tuple[str, list[array[int]]]:
    """The words of ``texts`` (lowered texts in slug order), sorted, each ended by a NUL,
    and each word's postings (an array as :data:`NUMBERS`) in the same order, for the
    memories numbered by their place in ``texts``. From as many memories as a first
    listing shares its sweep at (``survey.SHARED_FROM``), on two cores, a forked child
    files the second half's words while this process files the first's (see
    :mod:`gitmem.lean.halves`): every number of the first half is below every number
    of the second, so each word's postings are its first half's followed by its second
    half's, in order, as one pass files them."""
    from gitmem.lean.halves import halves, shared
    from gitmem.lean.survey import SHARED_FROM

    if len(texts) > 1 << 32:
        raise ValueError("too many memories for one index")
    if not shared(len(texts), SHARED_FROM):  # in one pass, nothing marshalled
        runs = _filed(texts, 0, len(texts))
    else:
        # the halves are told by their first number: what they hand back is marshalled,
        # each word's numbers as their bytes
        parts = halves(
            lambda numbers: _as_bytes(_filed(texts, numbers[0], numbers[-1] + 1)),
            list(range(len(texts))),
            SHARED_FROM,
        )
        runs = _runs()
        for part in parts:
            for word, numbers in part.items():
                runs[word].frombytes(numbers)
    vocab = sorted(runs)  # as the text sorts: UTF-8 keeps the order of code points
    text = (b"\0".join(vocab) + b"\0").decode() if vocab else ""
    return text, list(map(runs.__getitem__, vocab))


def _filed(texts: list[str], first: int, end: int) -> dict[bytes, array[int]]:
    """Every word of ``texts[first:end]`` filed under its memory's number (its place in
    ``texts``), each word's numbers an array as :data:`NUMBERS` holds them: in one
    pass, with no Python step per word (the words as bytes, cheaper to make and to hash
    than text), and nothing more done per word."""
    from collections import deque

    from gitmem.store.collector import uncollected  # here: only a build pauses it

    # a build makes millions of words and no cycle: the collections it would
    # trigger would walk all it made so far, a cost that grows faster than the store
    with uncollected():
        # each word's numbers filed straight into an array as NUMBERS holds them: the
        # file's postings are then their bytes joined, with no Python number read back
        runs = _runs()
        file = runs.__getitem__
        append: Callable[[array[int], int], None] = array.append  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        for number, text in enumerate(texts[first:end], first):
            deque(map(append, map(file, encoded(text)), repeat(number)), maxlen=0)
        return runs


def _runs() -> defaultdict[bytes, array[int]]:
    """An empty table of each word's numbers: a new word gets its empty array (as
    :data:`NUMBERS`) without a Python step."""
    from collections import defaultdict
    from functools import partial

    return defaultdict(partial(array, NUMBERS.typecode))


def _as_bytes(runs: dict[bytes, array[int]]) -> dict[bytes, bytes]:
    """Each word's numbers as their bytes: what ``marshal`` writes."""
    return {word: numbers.tobytes() for word, numbers in runs.items()}
