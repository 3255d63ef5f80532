"""The block index: what ``mem_search`` needs of every block of the session files, kept
on disk so that no search reads and lower-cases a year of files.

A block's score (see :mod:`gitmem.observe.search`) depends, for each query word, only
on how many times the word appears in the block's lower-cased text, and whether it
appears in the block's title line or its keywords line. A query word is made of
``[0-9a-z]``, so each of its appearances lies inside one maximal run of those
characters: a *word* of the index. The index keeps every distinct word, and for each
the blocks holding it (how many times, and whether in the title or the keywords line);
a query word's appearances in a block are the sum, over the index words holding it, of
its appearances in the word times the word's in the block. So the scores are the ones
a scan of the text gives, exactly.

The file (``<git directory>/gitmem/observe/blocks/<sha1 of the store>.idx``, derived
data in no branch) is trusted only for the ``sessions/`` tree it was made for. A search
at another tree brings it up to date from the files whose object changed: a file that
only grew by whole blocks (as the observer appends a day's entries) has just its new
blocks added; any other change retires the file's blocks and adds it anew. Retired
blocks stay in the postings, passed over, until they outnumber the live ones and the
index is made again from the files. It is mapped and read a part at a time: the head
(the files, the blocks and the words) whole, a word's blocks only when a query holds
it, a block's text only when it is a result. A file over 1 MB is not indexed.

    line     ``gitmem-blocks 2 <sessions tree id> <head length>``
    head     marshalled: (files as (name, object id, length, sha1 of the text); each
             block's file, start and text span; the retired blocks; the words,
             newline-separated, sorted; each word's start in them and span of
             postings; the postings' length)
    postings per word, unsigned 32-bit triples (block, times, 1 title | 2 keywords)
    texts    each block's text, UTF-8
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import mmap
import os
import re
import tempfile
from array import array
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import cast

from gitmem.observe.capture import open_own
from gitmem.store import FileSnapshot, Storage

__all__ = ["FILE_MAX", "Block", "BlockIndex", "block_index", "index_of", "index_path", "starts"]

FILE_MAX = 1 << 20
"""Session files larger than this are not searched."""
TITLE = 1
KEYWORDS = 2
_MAGIC = b"gitmem-blocks 2"
_RUN = re.compile(r"[0-9a-z]{2,}")  # a query word has two characters or more
_SESSIONS = "sessions"


def starts(lowered: str) -> list[int]:
    """Where each block of a session file (lower-cased) starts."""
    found = [0] if lowered.startswith("## ") else []
    at = lowered.find("\n## ")
    while at >= 0:
        found.append(at + 1)
        at = lowered.find("\n## ", at + 1)
    return found


@dataclass
class Block:
    """One block as the index takes it: its file (by number), where it starts in the
    file, its text, and its words with their counts and where they appear (title 1,
    keywords 2)."""

    file: int
    start: int
    text: str
    words: dict[str, int] = field(default_factory=lambda: dict[str, int]())
    flags: dict[str, int] = field(default_factory=lambda: dict[str, int]())


def _blocks(number: int, text: str, lowered: str, every: list[int], first: int) -> list[Block]:
    """The blocks of session file ``text`` (``every`` their starts) from the one
    starting at ``first`` or after, read as a scan reads them."""
    found: list[Block] = []
    for n, start in enumerate(every):
        if start < first:
            continue
        end = every[n + 1] if n + 1 < len(every) else len(lowered)
        block = Block(number, start, text[start:end].rstrip("\n"))
        for run in _RUN.findall(lowered, start, end):
            block.words[run] = block.words.get(run, 0) + 1
        eol = lowered.find("\n", start, end)
        for run in _RUN.findall(lowered, start, end if eol < 0 else eol):
            block.flags[run] = TITLE
        keys = lowered.find("\n- keywords:", start, end)
        if keys >= 0:
            keys_end = lowered.find("\n", keys + 1, end)
            for run in _RUN.findall(lowered, keys, end if keys_end < 0 else keys_end):
                block.flags[run] = block.flags.get(run, 0) | KEYWORDS
        found.append(block)
    return found


def _digest(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()


FileRecord = tuple[str, str, int, str]
"""A session file as indexed: name, object id, length in characters, sha1 of its text."""


class BlockIndex:
    """The index of one ``sessions/`` tree, read from its mapped file a part at a time."""

    def __init__(self, tree: str, head: tuple[object, ...], data: bytes | mmap.mmap, base: int):
        files, block_file, block_start, spans, dead, vocab, word_starts, postings, size = head
        self.tree = tree
        self.files = _records(files)
        """Every session file indexed (retired ones too), by number."""
        self.block_file = _array("I", block_file)
        self.block_start = _array("Q", block_start)
        self._spans = _array("Q", spans)
        self.dead = set(_array("I", dead))
        """The retired blocks."""
        self._vocab = str(vocab)
        self._word_starts = _array("I", word_starts)
        self._postings = _array("Q", postings)
        self._data = data
        self._base = base
        self._texts = base + int(size)  # pyright: ignore[reportArgumentType]

    # -- reading -------------------------------------------------------------------

    def name(self, block: int) -> str:
        """The name of the session file block ``block`` is in."""
        return self.files[self.block_file[block]][0]

    def text(self, block: int) -> str:
        """Block ``block``'s text, as its session file holds it."""
        at, size = self._texts + self._spans[2 * block], self._spans[2 * block + 1]
        return bytes(self._data[at : at + size]).decode("utf-8", "surrogatepass")

    def _word(self, number: int) -> tuple[str, int]:
        """Word ``number`` and where it ends in the vocabulary."""
        start = self._word_starts[number]
        end = self._vocab.find("\n", start)
        end = len(self._vocab) if end < 0 else end
        return self._vocab[start:end], end

    def _chunk(self, number: int) -> bytes | mmap.mmap:
        at, size = self._base + self._postings[2 * number], self._postings[2 * number + 1]
        return self._data[at : at + size]

    def tallies(self, term: str) -> dict[int, list[int]]:
        """Each live block holding ``term``: [times it appears, in the title, in the
        keywords line]."""
        found: dict[int, list[int]] = {}
        dead = self.dead
        at = self._vocab.find(term)
        while at >= 0:
            number = bisect_right(self._word_starts, at) - 1
            word, end = self._word(number)
            times = word.count(term)
            posting = _array("I", self._chunk(number))
            for i in range(0, len(posting), 3):
                block = posting[i]
                if block in dead:
                    continue
                tally = found.get(block)
                if tally is None:
                    tally = found[block] = [0, 0, 0]
                tally[0] += times * posting[i + 1]
                tally[1] |= posting[i + 2] & TITLE
                tally[2] |= posting[i + 2] & KEYWORDS
            at = self._vocab.find(term, end)
        return found

    # -- making --------------------------------------------------------------------

    def grown(
        self, tree: str, files: list[FileRecord], retired: set[int], new: Sequence[Block]
    ) -> bytes:
        """This index's bytes for ``tree``: ``files`` (by number: this one's, then any
        new ones), the blocks of the files ``retired`` retired, ``new`` added. A word's
        postings are copied as they are, the new blocks' after them."""
        dead = set(self.dead)
        dead.update(b for b, file in enumerate(self.block_file) if file in retired)
        added: dict[str, array[int]] = {}
        for number, block in enumerate(new, len(self.block_file)):
            for word, times in block.words.items():
                triple = (number, times, block.flags.get(word, 0))
                added.setdefault(word, array("I")).extend(triple)
        old = {self._word(n)[0]: n for n in range(len(self._word_starts))}
        words = sorted(old.keys() | added.keys())
        postings = [
            bytes(self._chunk(old[word]) if word in old else b"")
            + (added[word].tobytes() if word in added else b"")
            for word in words
        ]
        spans = array("Q", self._spans)
        offset = _end(self._spans)
        texts = [block.text.encode("utf-8", "surrogatepass") for block in new]
        for text in texts:
            spans.extend((offset, len(text)))
            offset += len(text)
        head = _Head(
            files,
            [*self.block_file, *(b.file for b in new)],
            [*self.block_start, *(b.start for b in new)],
            spans,
            sorted(dead),
            words,
            postings,
        )
        held = bytes(self._data[self._texts : self._texts + _end(self._spans)])
        return head.pack(tree, [held, *texts])

    @classmethod
    def load(cls, path: str) -> BlockIndex | None:
        """The index kept at ``path`` (``None``: none, or not one this reads)."""
        try:
            with os.fdopen(open_own(path, os.O_RDONLY), "rb") as handle:  # never a FIFO
                data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):
            return None
        return cls.read(data)

    @classmethod
    def read(cls, data: bytes | mmap.mmap) -> BlockIndex | None:
        """The index ``data`` holds (``None``: not one this reads)."""
        try:
            eol = data.find(b"\n", 0, 200)
            fields = bytes(data[: max(eol, 0)]).split(b" ")
            if eol < 0 or len(fields) != 4 or b" ".join(fields[:2]) != _MAGIC:
                return None
            base = eol + 1 + int(fields[3])
            head = marshal.loads(data[eol + 1 : base])
            if not isinstance(head, tuple) or len(head) != 9:  # pyright: ignore[reportUnknownArgumentType]
                return None
            return cls(fields[2].decode(), head, data, base)  # pyright: ignore[reportUnknownArgumentType]
        except (ValueError, TypeError, EOFError, IndexError, UnicodeDecodeError):
            return None


def _array(kind: str, raw: object) -> array[int]:
    if not isinstance(raw, bytes):
        raise TypeError("not an index")
    found: array[int] = array(kind)
    found.frombytes(raw)
    return found


def _records(raw: object) -> list[FileRecord]:
    """The files' records as the head holds them: four lists, one per field."""
    if not isinstance(raw, tuple) or len(cast(tuple[object, ...], raw)) != 4:
        raise TypeError("not an index")
    names, ids, lengths, digests = cast(tuple[object, ...], raw)
    counted = _array("Q", lengths)
    columns = [_strings(c, len(counted)) for c in (names, ids, digests)]
    return list(zip(columns[0], columns[1], counted, columns[2], strict=True))


def _strings(raw: object, count: int) -> list[str]:
    if not isinstance(raw, list):
        raise TypeError("not an index")
    found = cast(list[object], raw)
    if len(found) != count or not all(isinstance(v, str) for v in found):
        raise TypeError("not an index")
    return cast(list[str], found)


def _end(spans: array[int]) -> int:
    """Where the last text ends."""
    return max((spans[i] + spans[i + 1] for i in range(0, len(spans), 2)), default=0)


@dataclass
class _Head:
    files: list[FileRecord]
    block_file: list[int]
    block_start: list[int]
    spans: array[int]
    dead: list[int]
    words: list[str]
    postings: list[bytes]

    def pack(self, tree: str, texts: Sequence[bytes]) -> bytes:
        """The index file's bytes."""
        word_starts = array("I")
        spans = array("Q")
        at = offset = 0
        for word, chunk in zip(self.words, self.postings, strict=True):
            word_starts.append(at)
            at += len(word) + 1
            spans.extend((offset, len(chunk)))
            offset += len(chunk)
        names, ids, lengths, digests = zip(*self.files, strict=True) if self.files else ((),) * 4
        head = marshal.dumps(
            (
                (list(names), list(ids), array("Q", lengths).tobytes(), list(digests)),
                array("I", self.block_file).tobytes(),
                array("Q", self.block_start).tobytes(),
                self.spans.tobytes(),
                array("I", self.dead).tobytes(),
                "\n".join(self.words),
                word_starts.tobytes(),
                spans.tobytes(),
                offset,
            )
        )
        line = b"%s %s %d\n" % (_MAGIC, tree.encode(), len(head))
        return b"".join((line, head, *self.postings, *texts))


def index_path(git_dir: str, store: str) -> str:
    """Where the block index of ``store``'s session files is kept."""
    name = hashlib.sha1(store.encode()).hexdigest() + ".idx"
    return os.path.join(git_dir, "gitmem", "observe", "blocks", name)


_EMPTY = BlockIndex.read(_Head([], [], [], array("Q"), [], [], []).pack("-", []))
_held: dict[str, BlockIndex] = {}
"""The index last used per file, while its tree stays the one searched."""


def index_of(repo: Storage, store: str) -> BlockIndex | None:
    """The block index of file store ``store``'s session files as of its head (``None``:
    it has none); see :func:`block_index`."""
    head = repo.head(store)
    if head is None:
        return None
    return block_index(repo.files(store, head), repo.directory, store)


def block_index(snapshot: FileSnapshot, git_dir: str, store: str) -> BlockIndex | None:
    """The block index of ``snapshot``'s session files (``None``: it has none): the one
    held or kept on disk if it was made for this ``sessions/`` tree, else brought up to
    date and kept (best effort: derived data, made again by the next reader)."""
    tree = snapshot.object_ids().get(_SESSIONS)
    if tree is None:
        return None
    path = index_path(git_dir, store)
    held = _held.get(path)
    if held is None or held.tree != tree:
        held = BlockIndex.load(path)
    if held is None or held.tree != tree:
        held = _update(snapshot, tree, held, path)
    _held[path] = held
    return held


def _update(snapshot: FileSnapshot, tree: str, old: BlockIndex | None, path: str) -> BlockIndex:
    """The index of ``tree`` made from ``old``, reading only the files that changed (and
    made anew from every file when there is none, or retired blocks outnumber the rest)."""
    if old is not None and len(old.dead) > max(256, len(old.block_file) - len(old.dead)):
        old = None
    base = old or _EMPTY
    assert base is not None
    ids = snapshot.object_ids(_SESSIONS)
    wanted = {
        child.name: ids[child.name]
        for child in snapshot.children(_SESSIONS)
        if not child.is_dir and child.size <= FILE_MAX and child.name.endswith(".md")
    }
    files = list(base.files)
    by_name = {record[0]: n for n, record in enumerate(files) if record[1]}
    retired: set[int] = set()
    new: list[Block] = []
    for name, number in by_name.items():
        if name not in wanted:
            retired.add(number)
            files[number] = (name, "", 0, "")
    for name, oid in sorted(wanted.items()):
        number = by_name.get(name)
        if number is not None and files[number][1] == oid:
            continue
        text = snapshot.read(f"{_SESSIONS}/{name}") or ""
        lowered = text.lower()
        every = starts(lowered)
        first = 0
        if number is None:
            number = len(files)
            files.append(("", "", 0, ""))
        elif _grew(base, number, text, every):
            first = files[number][2]
        else:
            retired.add(number)
        files[number] = (name, oid, len(text), _digest(text))
        new.extend(_blocks(number, text, lowered, every, first))
    data = base.grown(tree, files, retired, new)
    with contextlib.suppress(OSError):
        _write(path, data)
    made = BlockIndex.read(data)
    assert made is not None
    return made


def _grew(index: BlockIndex, number: int, text: str, every: list[int]) -> bool:
    """Whether file ``number`` only grew by whole blocks into ``text``: what it held is
    its beginning, with the same blocks, and only blank lines before the next block."""
    _, _, length, digest = index.files[number]
    if len(text) < length or _digest(text[:length]) != digest:
        return False
    held = sum(
        1 for b, file in enumerate(index.block_file) if file == number and b not in index.dead
    )
    if sum(1 for start in every if start < length) != held:
        return False
    following = next((start for start in every if start >= length), len(text))
    return not text[length:following].strip("\n")


def _write(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` whole or not at all."""
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=folder, prefix=".blocks-")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(temporary)
        raise
