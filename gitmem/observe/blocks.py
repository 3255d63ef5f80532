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
blocks stay in the postings, passed over, until they outnumber the live ones (or the
files gone outnumber those there) and the index is made again from the files. It is
mapped and read a part at a time: the head (the files, the blocks and the words) whole,
a word's blocks only when a query holds it, a block's text only when it is a result.

What a teammate pushes costs the index no more than its bounds: it takes at most
:data:`TEXT_MAX` bytes of session files, the newest first, and at most
:data:`BLOCKS_MAX` blocks, :data:`PAIRS_MAX` postings and :data:`WORDS_MAX` words. A
file over 1 MB, one that is not UTF-8 text or not a file, one that another name (a
newer one) already holds, and the files past the bounds are passed over, and the
observer's log names them. A changed file that would take the index past its bounds
makes it anew, the newest files first, within three quarters of them.

    line     ``gitmem-blocks 3 <sessions tree id> <head length>``
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
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from gitmem.errors import GitmemError
from gitmem.observe.capture import log_line, open_own
from gitmem.store import FileSnapshot, Storage

__all__ = ["FILE_MAX", "BlockIndex", "block_index", "index_of", "index_path", "starts"]

FILE_MAX = 1 << 20
"""Session files larger than this are not searched."""
TEXT_MAX = 16 << 20
"""The most bytes of session files the index takes, the newest files first."""
BLOCKS_MAX = 1 << 17
"""The most blocks the index holds."""
PAIRS_MAX = 1 << 21
"""The most (word, block) postings the index holds."""
WORDS_MAX = 1 << 18
"""The most distinct words the index holds."""
TITLE = 1
KEYWORDS = 2
_MAGIC = b"gitmem-blocks 3"  # 2: made before the bounds, so made again
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


class _Added:
    """The blocks an update adds, held as the index file holds them (arrays, and one
    array of postings per word) rather than as an object per block: a block of six
    bytes costs tens of bytes here, not a kilobyte."""

    def __init__(self, first: int) -> None:
        self.first = first
        """The number of the first block added."""
        self.block_file: array[int] = array("I")
        self.block_start: array[int] = array("Q")
        self.texts: list[bytes] = []
        self.postings: dict[str, array[int]] = {}
        self.pairs = 0
        """How many (word, block) postings were added."""

    def file(self, number: int, text: str, lowered: str, every: list[int], first: int) -> None:
        """Add the blocks of session file ``text`` (``every`` their starts) from the one
        starting at ``first`` or after, read as a scan reads them."""
        block = self.first + len(self.block_file)
        for n, start in enumerate(every):
            if start < first:
                continue
            end = every[n + 1] if n + 1 < len(every) else len(lowered)
            self.block_file.append(number)
            self.block_start.append(start)
            self.texts.append(text[start:end].rstrip("\n").encode("utf-8", "surrogatepass"))
            words: dict[str, int] = {}
            for run in _RUN.findall(lowered, start, end):
                words[run] = words.get(run, 0) + 1
            flags: dict[str, int] = {}
            eol = lowered.find("\n", start, end)
            for run in _RUN.findall(lowered, start, end if eol < 0 else eol):
                flags[run] = TITLE
            keys = lowered.find("\n- keywords:", start, end)
            if keys >= 0:
                keys_end = lowered.find("\n", keys + 1, end)
                for run in _RUN.findall(lowered, keys, end if keys_end < 0 else keys_end):
                    flags[run] = flags.get(run, 0) | KEYWORDS
            for word, times in words.items():
                posting = self.postings.get(word)
                if posting is None:
                    posting = self.postings[word] = array("I")
                posting.extend((block, times, flags.get(word, 0)))
            self.pairs += len(words)
            block += 1

    def take(self, other: _Added) -> None:
        """Add ``other``'s blocks (numbered to follow this one's) to this one's."""
        self.block_file.extend(other.block_file)
        self.block_start.extend(other.block_start)
        self.texts.extend(other.texts)
        for word, posting in other.postings.items():
            held = self.postings.get(word)
            if held is None:
                self.postings[word] = posting
            else:
                held.extend(posting)
        self.pairs += other.pairs


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
        self.pairs = _end(self._postings) // 12
        """How many (word, block) postings the index holds, retired blocks' too."""
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

    @property
    def words(self) -> int:
        """How many words the index holds."""
        return len(self._word_starts)

    def grown(self, tree: str, files: list[FileRecord], retired: set[int], new: _Added) -> bytes:
        """This index's bytes for ``tree``: ``files`` (by number: this one's, then any
        new ones), the blocks of the files ``retired`` retired, ``new`` added. A word's
        postings are copied as they are, the new blocks' after them."""
        dead = set(self.dead)
        dead.update(b for b, file in enumerate(self.block_file) if file in retired)
        added = new.postings
        old = {self._word(n)[0]: n for n in range(len(self._word_starts))}
        words = sorted(old.keys() | added.keys())
        postings = [
            bytes(self._chunk(old[word]) if word in old else b"")
            + (added[word].tobytes() if word in added else b"")
            for word in words
        ]
        spans = array("Q", self._spans)
        offset = _end(self._spans)
        for text in new.texts:
            spans.extend((offset, len(text)))
            offset += len(text)
        head = _Head(
            files,
            self.block_file + new.block_file,
            self.block_start + new.block_start,
            spans,
            sorted(dead),
            words,
            postings,
        )
        held = bytes(self._data[self._texts : self._texts + _end(self._spans)])
        return head.pack(tree, [held, *new.texts])

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
    block_file: array[int]
    block_start: array[int]
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
                self.block_file.tobytes(),
                self.block_start.tobytes(),
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


_EMPTY = BlockIndex.read(_Head([], array("I"), array("Q"), array("Q"), [], [], []).pack("-", []))
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


def _update(
    snapshot: FileSnapshot, tree: str, old: BlockIndex | None, path: str, share: float = 1.0
) -> BlockIndex:
    """The index of ``tree`` made from ``old``, reading only the files that changed (and
    made anew from every file when there is none, when retired blocks outnumber the
    rest, or when a changed file would take it past its bounds: then within ``share``
    of them, the newest files first, so that it has room to grow)."""
    if old is not None and len(old.dead) > max(256, len(old.block_file) - len(old.dead)):
        old = None
    base = old or _EMPTY
    assert base is not None
    live = Counter(f for b, f in enumerate(base.block_file) if b not in base.dead)
    wanted, passed = _wanted(snapshot)
    files = list(base.files)
    by_name = {record[0]: n for n, record in enumerate(files) if record[1]}
    retired: set[int] = set()
    new = _Added(len(base.block_file))
    for name, number in by_name.items():
        if name not in wanted:
            retired.add(number)
            files[number] = (name, "", 0, "")
    if old is not None and len(files) > max(256, 2 * len(wanted)):
        return _update(snapshot, tree, None, path, share)  # mostly files gone: made anew
    for name, oid in wanted.items():
        number = by_name.get(name)
        if number is not None and files[number][1] == oid:
            continue
        try:
            text = snapshot.read(f"{_SESSIONS}/{name}") or ""
        except GitmemError:
            text = None
        lowered = "" if text is None else text.lower()
        every = starts(lowered)
        if number is None:
            number = len(files)
            files.append(("", "", 0, ""))
        elif text is not None and _grew(base, number, text, every, live[number]):
            staged = _Added(new.first + len(new.block_file))
            staged.file(number, text, lowered, every, files[number][2])
            if _fits(base, new, staged, share):
                new.take(staged)
                files[number] = (name, oid, len(text), _digest(text))
                continue
        if number < len(base.files):
            retired.add(number)
        files[number] = (name, oid, 0, "")  # passed over until it changes
        if text is None:
            passed.append(f"{name} (not UTF-8 text)")
            continue
        staged = _Added(new.first + len(new.block_file))
        staged.file(number, text, lowered, every, 0)
        if not _fits(base, new, staged, share):
            if old is not None:
                return _update(snapshot, tree, None, path, 0.75)
            passed.append(f"{name} (past the index's bounds)")
            continue
        new.take(staged)
        files[number] = (name, oid, len(text), _digest(text))
    if passed:
        log_line(
            os.path.dirname(os.path.dirname(path)),
            f"search passes over {len(passed)} session files: "
            + ", ".join(passed[:10])
            + (f" and {len(passed) - 10} more" if len(passed) > 10 else ""),
        )
    data = base.grown(tree, files, retired, new)
    with contextlib.suppress(OSError):
        _write(path, data)
    made = BlockIndex.read(data)
    assert made is not None
    return made


def _wanted(snapshot: FileSnapshot) -> tuple[dict[str, str], list[str]]:
    """The session files to index, newest first, by name, with their object ids; and
    those passed over, each with why. A file is indexed once even if many names hold
    it, and the files together hold at most :data:`TEXT_MAX` bytes."""
    wanted: dict[str, str] = {}
    passed: list[str] = []
    seen: set[str] = set()
    total = 0
    ids = snapshot.object_ids(_SESSIONS)
    for name in sorted((n for n in ids if n.endswith(".md")), reverse=True):
        oid = ids[name]
        try:
            size = snapshot.size(f"{_SESSIONS}/{name}")
        except GitmemError:
            size = None
        if size is None:
            passed.append(f"{name} (not a file)")
        elif size > FILE_MAX:
            passed.append(f"{name} (over 1 MB)")
        elif oid in seen:
            passed.append(f"{name} (the same as another)")
        elif total + size > TEXT_MAX:
            passed.append(f"{name} (past {TEXT_MAX >> 20} MB of session files)")
        else:
            wanted[name] = oid
            seen.add(oid)
            total += size
    return wanted, passed


def _fits(base: BlockIndex, new: _Added, staged: _Added, share: float) -> bool:
    """Whether ``staged`` fits in the index within ``share`` of its bounds."""
    blocks = len(base.block_file) + len(new.block_file) + len(staged.block_file)
    pairs = base.pairs + new.pairs + staged.pairs
    words = base.words + len(new.postings) + len(staged.postings)
    return (
        blocks <= BLOCKS_MAX * share and pairs <= PAIRS_MAX * share and words <= WORDS_MAX * share
    )


def _grew(index: BlockIndex, number: int, text: str, every: list[int], held: int) -> bool:
    """Whether file ``number`` (``held`` live blocks) only grew by whole blocks into
    ``text``: what it held is its beginning, with the same blocks, and only blank lines
    before the next block."""
    _, _, length, digest = index.files[number]
    if len(text) < length or _digest(text[:length]) != digest:
        return False
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
