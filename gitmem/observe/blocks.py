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
data in no branch) is trusted only for the ``sessions/`` tree it was made for: a
search at another tree brings it up to date, reading only the session files whose
object changed, and writes it back. It is mapped and read a part at a time: the head
(the files, the blocks and the words) whole, a word's blocks only when a query holds
it, a block's text only when it is a result. A file over 1 MB is not indexed.

    line     ``gitmem-blocks 1 <sessions tree id> <head length>``
    head     marshalled: (files as (name, object id), newest first; each block's file
             number; each block's text span; the words, newline-separated, sorted;
             each word's start in them; each word's span of postings)
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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from gitmem.store import FileSnapshot

__all__ = ["FILE_MAX", "Block", "BlockIndex", "block_index", "index_path", "starts"]

FILE_MAX = 1 << 20
"""Session files larger than this are not searched."""
TITLE = 1
KEYWORDS = 2
_MAGIC = b"gitmem-blocks 1"
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
    """One block as the index holds it: its file (by number, newest first), its text,
    and its words with their counts and where they appear (title 1, keywords 2)."""

    file: int
    text: str
    words: dict[str, int] = field(default_factory=lambda: dict[str, int]())
    flags: dict[str, int] = field(default_factory=lambda: dict[str, int]())


def _blocks(number: int, text: str) -> list[Block]:
    """The blocks of session file ``text``, tokenized as a scan of it reads them."""
    lowered = text.lower()
    found: list[Block] = []
    at = starts(lowered)
    for n, start in enumerate(at):
        end = at[n + 1] if n + 1 < len(at) else len(lowered)
        block = Block(number, text[start:end].rstrip("\n"))
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


class BlockIndex:
    """The index of one ``sessions/`` tree, read from its mapped file a part at a time
    (or held in memory, as just built)."""

    def __init__(
        self,
        tree: str,
        files: list[tuple[str, str]],
        block_file: array[int],
        spans: array[int],
        vocab: str,
        word_starts: array[int],
        postings: array[int],
        data: bytes | mmap.mmap,
        base: int,
    ) -> None:
        self.tree = tree
        self.files = files
        """(name, object id) of each session file indexed, newest first."""
        self.block_file = block_file
        self._spans = spans
        self._vocab = vocab
        self._word_starts = word_starts
        self._postings = postings
        self._data = data
        self._base = base

    # -- reading -------------------------------------------------------------------

    def name(self, block: int) -> str:
        """The name of the session file block ``block`` is in."""
        return self.files[self.block_file[block]][0]

    def text(self, block: int) -> str:
        """Block ``block``'s text, as its session file holds it."""
        at, size = self._spans[2 * block], self._spans[2 * block + 1]
        return bytes(self._data[at : at + size]).decode("utf-8")

    def _word(self, number: int) -> tuple[str, int]:
        """Word ``number`` and where it ends in the vocabulary."""
        start = self._word_starts[number]
        end = self._vocab.find("\n", start)
        end = len(self._vocab) if end < 0 else end
        return self._vocab[start:end], end

    def _postings_of(self, number: int) -> array[int]:
        at, size = self._postings[2 * number], self._postings[2 * number + 1]
        found = array("I")
        found.frombytes(self._data[self._base + at : self._base + at + size])
        return found

    def tallies(self, term: str) -> dict[int, list[int]]:
        """Each block holding ``term``: [times it appears, in the title, in the
        keywords line]."""
        found: dict[int, list[int]] = {}
        at = self._vocab.find(term)
        while at >= 0:
            number = bisect_right(self._word_starts, at) - 1
            word, end = self._word(number)
            times = word.count(term)
            posting = self._postings_of(number)
            for i in range(0, len(posting), 3):
                tally = found.get(posting[i])
                if tally is None:
                    tally = found[posting[i]] = [0, 0, 0]
                tally[0] += times * posting[i + 1]
                tally[1] |= posting[i + 2] & TITLE
                tally[2] |= posting[i + 2] & KEYWORDS
            at = self._vocab.find(term, end)
        return found

    def blocks(self) -> Iterable[Block]:
        """Every block with its words: the whole index read back (to bring it up to
        date without reading the files that did not change)."""
        made = [Block(self.block_file[n], self.text(n)) for n in range(len(self.block_file))]
        for number in range(len(self._word_starts)):
            word = self._word(number)[0]
            posting = self._postings_of(number)
            for i in range(0, len(posting), 3):
                block = made[posting[i]]
                block.words[word] = posting[i + 1]
                if posting[i + 2]:
                    block.flags[word] = posting[i + 2]
        return made

    # -- making --------------------------------------------------------------------

    @classmethod
    def build(
        cls, tree: str, files: list[tuple[str, str]], blocks: Sequence[Block]
    ) -> tuple[BlockIndex, bytes]:
        """The index of ``blocks`` (in file order, newest file first), and its bytes."""
        words: dict[str, list[int]] = {}
        for number, block in enumerate(blocks):
            for word, times in block.words.items():
                words.setdefault(word, []).extend((number, times, block.flags.get(word, 0)))
        vocab_words = sorted(words)
        vocab = "\n".join(vocab_words)
        word_starts = array("I")
        postings = array("Q")
        packed = bytearray()
        at = 0
        for word in vocab_words:
            word_starts.append(at)
            at += len(word) + 1
            chunk = array("I", words[word]).tobytes()
            postings.extend((len(packed), len(chunk)))
            packed += chunk
        texts = [block.text.encode("utf-8") for block in blocks]
        block_file = array("I", (block.file for block in blocks))
        spans = array("Q")
        offset = len(packed)
        for text in texts:
            spans.extend((offset, len(text)))
            offset += len(text)
        head = marshal.dumps(
            (files, block_file.tobytes(), spans.tobytes(), vocab, word_starts.tobytes(),
             postings.tobytes())
        )  # fmt: skip
        line = b"%s %s %d\n" % (_MAGIC, tree.encode(), len(head))
        base = len(line) + len(head)
        data = b"".join((line, head, packed, *texts))
        spans = array("Q", (v + base if i % 2 == 0 else v for i, v in enumerate(spans)))
        return cls(tree, files, block_file, spans, vocab, word_starts, postings, data, base), data

    @classmethod
    def load(cls, path: str) -> BlockIndex | None:
        """The index kept at ``path`` (``None``: none, or not one this reads)."""
        try:
            with open(path, "rb") as handle:
                data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):
            return None
        try:
            eol = data.find(b"\n", 0, 200)
            magic, _, rest = bytes(data[: max(eol, 0)]).rpartition(b" ")
            size = int(rest)
            kind, _, tree = magic.rpartition(b" ")
            if kind != _MAGIC or eol < 0:
                return None
            base = eol + 1 + size
            loaded = marshal.loads(data[eol + 1 : base])
            files, block_file, spans, vocab, word_starts, postings = loaded
            arrays = [array("I"), array("Q"), array("I"), array("Q")]
            for made, raw in zip(arrays, (block_file, spans, word_starts, postings), strict=True):
                made.frombytes(raw)
            spans = array("Q", (v + base if i % 2 == 0 else v for i, v in enumerate(arrays[1])))
            named = [(str(name), str(oid)) for name, oid in files]
            return cls(
                tree.decode(), named, arrays[0], spans, str(vocab), arrays[2], arrays[3],
                data, base,
            )  # fmt: skip
        except (ValueError, TypeError, EOFError, IndexError, UnicodeDecodeError):
            return None


def index_path(git_dir: str, store: str) -> str:
    """Where the block index of ``store``'s session files is kept."""
    name = hashlib.sha1(store.encode()).hexdigest() + ".idx"
    return os.path.join(git_dir, "gitmem", "observe", "blocks", name)


_held: dict[str, BlockIndex] = {}
"""The index last used per file, while its tree stays the one searched."""


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
    """The index of ``tree`` made from ``old``, reading only the files that changed."""
    ids = snapshot.object_ids(_SESSIONS)
    files = [
        (child.name, ids[child.name])
        for child in reversed(snapshot.children(_SESSIONS))
        if not child.is_dir and child.size <= FILE_MAX and child.name.endswith(".md")
    ]
    kept: dict[tuple[str, str], list[Block]] = {}
    if old is not None:
        wanted = set(files)
        for block in old.blocks():
            key = old.files[block.file]
            if key in wanted:
                kept.setdefault(key, []).append(block)
    blocks: list[Block] = []
    for number, (name, oid) in enumerate(files):
        if (name, oid) in kept:
            for block in kept[(name, oid)]:
                block.file = number
                blocks.append(block)
        else:
            blocks.extend(_blocks(number, snapshot.read(f"{_SESSIONS}/{name}") or ""))
    index, data = BlockIndex.build(tree, files, blocks)
    with contextlib.suppress(OSError):
        _write(path, data)
    return index


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
