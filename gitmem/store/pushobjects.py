"""The objects a push hook reads, straight from the object folders' files.

A hook is a process of its own for every push: what it reads must cost little to set up
and little per object. :class:`Objects` reads the folders a receive-pack leaves the hook
(its quarantine, then the repository's own folder and that folder's alternates) through
their files alone: a pack's version-2 index and data mapped, an object's offset found
in the index (by a dictionary of its names once a push has asked for enough of them),
its zlib stream inflated and a delta applied to its base (each object of a pack read
once and kept, within a budget: a hook reads nearly every object a push brings, each
delta's chain of bases once); a loose object read from its file. The pack a push
brought (in the quarantine) is read whole at the first object asked, in the order it
holds its objects: each inflated once, each delta on an earlier entry applied to the
base just read, every object then found by its id in one dictionary. dulwich's repository
and pack layers are not loaded: what this reader does not read (an index of another
version, a pack that landed since the folder was listed) is asked of dulwich's object
store for that folder, loaded then.
"""

from __future__ import annotations

import os
import struct
import zlib
from binascii import hexlify, unhexlify
from itertools import repeat

from gitmem.lean.objects import (
    MappedPack,
    Unreadable,
    entry_header,
    inflate,
    loose_object,
    ofs_base,
    pack_bases,
)
from gitmem.store.native import native

TYPE_CHECKING = False
if TYPE_CHECKING:
    import mmap
    from collections.abc import Callable
    from typing import BinaryIO

    from dulwich.object_store import DiskObjectStore

__all__ = [
    "APPLY_DELTA",
    "CHAIN_MAX",
    "LOOSE_HEAD",
    "MADE_MAX",
    "OBJECT_MAX",
    "Made",
    "Objects",
    "TooLarge",
    "bounded",
    "common_dir",
    "control_dir",
    "delta_target",
    "loose_read",
    "loose_size",
]


def _applier() -> Callable[[bytes, bytes], list[bytes]]:
    """dulwich's delta applier: its native one, else its Python one."""
    found = native("_pack")
    if found is not None:
        return found.apply_delta
    # a dulwich built without its native parts
    from dulwich.pack import apply_delta  # pyright: ignore[reportUnknownVariableType]

    return apply_delta  # pyright: ignore[reportUnknownVariableType]


APPLY_DELTA = _applier()
"""Applies a delta to its base: ``b"".join(APPLY_DELTA(base, delta))``."""
_WHOLE = frozenset((1, 2, 3, 4))  # commit, tree, blob, tag
_OFS_DELTA, _REF_DELTA = 6, 7
# a pack is looked up by halves in its index until it has been asked for one in
# _NAMED_SHARE of its objects, then by a dictionary of its names (a push's own pack
# soon, a large repository's pack only when a push asks for much of it)
_NAMED_SHARE = 64
_KEPT_MAX = 64 << 20  # bytes of read objects a pack keeps
# a quarantined pack up to this size is read whole, in order, at the first object asked
# (a push's own pack, whose objects the check reads nearly all of)
_IN_ORDER_MAX = 32 << 20
_SIZE_SHIFT_MAX = 53  # the last place a size's seven more bits may go (as entry_header)
# an entry this small is inflated in one call: what its window of the pack inflates to
# is bounded (deflate expands at most about a thousandfold), so it need not be stopped
# a byte past its size as a larger one is
_AT_ONCE_MAX = 1 << 14
_ALTERNATES_DEPTH = 5  # git's own bound on chained alternates
_DELTA_HEAD = 32  # bytes of a delta inflated to read its header (two sizes: 20 at most)
_HEAD_FEED = 256  # bytes of a delta's stream given the inflater at a time for them
OBJECT_MAX = 64 << 20
"""Bytes an object a hook reads may hold: checked against the size its header (or a
delta's) declares before anything is inflated, so a few kilobytes that inflate to
gigabytes (a zlib or delta bomb) cost a hook nothing. A memory that large is past what
a store's screens read (a guard runs in 64 MB)."""
_Found = tuple[int, bytes]
"""An object's type number and content."""

CHAIN_MAX = 256 << 20
"""Bytes of deltas along one chain, from an object down to the whole object it is made
from, in objects another wrote: git's own reader applies a chain one delta at a time,
but dulwich's holds every delta of it at once, so a pack kept with a longer chain of
large deltas would make a later read of it hold that much. Git writes a delta on a
delta at most 50 deep by default, so a store's chains come to kilobytes."""

MADE_MAX = 32 << 30
"""Bytes one reader of objects another wrote (a push's, a remote's) may make over all
its reads, what it inflates and what deltas make: some ten times what a store of
100,000 memories and 100,000 commits holds, whose chains of deltas may be read more
than once. Each object is bounded, but a line of deltas each making 64 MiB, read link
by link, would make far more than its pack holds, for as long as the reads went on."""


class Made:
    """The bytes a bounded reader has made, held to :data:`MADE_MAX`."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0

    def spend(self, count: int) -> None:
        self.count += count
        if self.count > MADE_MAX:
            raise ValueError(
                f"the objects read so far made more than {MADE_MAX:,} bytes between them, "
                "past what is read of objects another wrote"
            )


def common_dir(git_dir: str) -> str:
    """The repository a git directory belongs to: a linked worktree's own directory
    (``.git/worktrees/<name>``, which git hands its hooks) names it in ``commondir``."""
    try:
        with open(os.path.join(git_dir, "commondir"), encoding="utf-8") as handle:
            common = handle.read().strip()
    except OSError:
        return git_dir
    return os.path.normpath(os.path.join(git_dir, common)) if common else git_dir


def control_dir(path: str) -> str:
    """The git directory of the repository at ``path``: a work tree's ``.git`` folder
    (or the folder its ``.git`` file names), else ``path`` itself, as git finds it."""
    dotgit = os.path.join(path, ".git")
    if os.path.isdir(dotgit):
        return dotgit
    try:
        with open(dotgit, encoding="utf-8") as handle:
            text = handle.read().strip()
    except (OSError, UnicodeDecodeError):
        return path
    if text.startswith("gitdir:"):
        return os.path.normpath(os.path.join(path, text[len("gitdir:") :].strip()))
    return path


class Objects:
    """The objects of a repository's folders, asked in order: ``quarantine`` (where a
    receive-pack keeps what a push brings; ``None``: nothing waits there), then the
    repository at ``git_dir`` with its alternates."""

    def __init__(self, git_dir: str, quarantine: str | None = None) -> None:
        main = os.path.join(common_dir(control_dir(git_dir)), "objects")
        made = Made()  # what all the packs read make, between them
        self.main = _with_alternates(main, 0, made)
        self.folders = ([_Folder(quarantine, made)] if quarantine else []) + self.main
        self._pushed: dict[bytes, _Found] | None = None if quarantine else {}
        """The quarantined packs' objects read in order, by hex id (``None``: not yet)."""

    def get(self, sha: bytes) -> _Found | None:
        """``(type number, content)`` of the object with hex id ``sha``, or ``None``;
        raises when the object is there but does not read."""
        pushed = self._pushed
        if pushed is None:
            pushed = self._pushed = self._read_pushed()
        found = pushed.get(sha)
        if found is not None:
            return found
        binary = unhexlify(sha)
        for folder in self.folders:
            found = folder.get(binary, self._base)
            if found is not None:
                return found
        # a pack that landed since the folders were listed: dulwich lists them again
        for folder in self.folders:
            found = folder.dulwich_get(binary)
            if found is not None:
                return found
        return None

    def pushed(self, sha: bytes) -> _Found | None:
        """What :meth:`get` gives for ``sha`` when the quarantined packs' pass (made at
        the first :meth:`get`) read it: its keys are ids written in full. ``None``:
        not read there, or no pass made yet; nothing else is asked."""
        pushed = self._pushed
        return pushed.get(sha) if pushed is not None else None

    def holds(self, sha: bytes, main_only: bool = False) -> bool:
        """Whether an object is here (``main_only``: in the repository before the push)."""
        binary = unhexlify(sha)
        # asked for every new commit: no generator made for it
        return any(map(_Folder.holds, self.main if main_only else self.folders, repeat(binary)))

    def _read_pushed(self) -> dict[bytes, _Found]:
        """What the quarantine's packs hold, each read in one pass (see
        :meth:`_Pack.read_in_order`), within one budget of bytes kept."""
        found: dict[bytes, _Found] = {}
        budget = _KEPT_MAX
        for pack in self.folders[0].packs:
            if pack.size <= _IN_ORDER_MAX:
                budget -= pack.read_in_order(found, budget)
        return found

    def _base(self, binary: bytes) -> _Found:
        """A delta's base named by id, wherever it is."""
        for folder in self.folders:
            found = folder.get(binary, self._base)
            if found is not None:
                return found
        raise KeyError(f"the base {binary.hex()[:12]} of a delta is missing")

    def close(self) -> None:
        for folder in self.folders:
            folder.close()


def _with_alternates(path: str, depth: int, made: Made) -> list[_Folder]:
    """The folder at ``path`` and those its ``info/alternates`` names, in turn."""
    found = [_Folder(path, made)]
    if depth >= _ALTERNATES_DEPTH:
        return found
    try:
        with open(os.path.join(path, "info", "alternates"), encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError):
        return found
    for line in lines:
        line = line.strip()
        if line and not line.startswith("#"):
            found += _with_alternates(os.path.normpath(os.path.join(path, line)), depth + 1, made)
    return found


class _Folder:
    """One object folder: its packs (listed once) and its loose objects."""

    def __init__(self, path: str, made: Made) -> None:
        self.path = path
        self.packs: list[_Pack] = []
        self.odd = False
        """Whether some pack here is dulwich's to read."""
        self._store: DiskObjectStore | None = None
        try:
            bases = pack_bases(os.path.join(path, "pack"))
        except OSError:
            bases = []
        for base in bases:
            try:
                self.packs.append(_Pack(base, made))
            except (OSError, ValueError):
                self.odd = True  # gone meanwhile, or a format this reader leaves to dulwich
        try:
            # in a repository whose objects are packed, a lookup then skips a failed open
            self.loose = frozenset(n for n in os.listdir(path) if len(n) == 2)
        except OSError:
            self.loose = frozenset[str]()

    def get(self, binary: bytes, base: Callable[[bytes], _Found]) -> _Found | None:
        for pack in self.packs:
            at = pack.offset(binary)
            if at is not None:
                found = pack.read(at, base)
                return found if found is not None else self.dulwich_get(binary)
        sha = binary.hex()
        if sha[:2] in self.loose:
            try:
                with open(os.path.join(self.path, sha[:2], sha[2:]), "rb") as f:
                    data, _ = loose_read(f)
            except FileNotFoundError:
                return None
            return loose_object(data)
        return None

    def holds(self, binary: bytes) -> bool:
        for pack in self.packs:
            if pack.offset(binary) is not None:
                return True
        if self.loose:  # a folder whose objects are all packed is asked nothing more here
            sha = binary.hex()
            if sha[:2] in self.loose and os.path.exists(os.path.join(self.path, sha[:2], sha[2:])):
                return True
        return self.odd and self.dulwich_get(binary) is not None

    def dulwich_get(self, binary: bytes) -> _Found | None:
        """The object as dulwich's store for this folder reads it (``None``: not here)."""
        from dulwich.objects import ObjectID

        try:
            return self._dulwich().get_raw(ObjectID(binary.hex().encode()))
        except KeyError:
            return None

    def _dulwich(self) -> DiskObjectStore:
        if self._store is None:
            from dulwich.object_store import DiskObjectStore

            self.odd = True
            self._store = DiskObjectStore(self.path)
        return self._store

    def close(self) -> None:
        for pack in self.packs:
            pack.close()
        self.packs = []
        if self._store is not None:
            self._store.close()


class _Pack(MappedPack):
    """One pack and its version-2 index, mapped, its objects kept once read."""

    def __init__(self, base: str, made: Made) -> None:
        super().__init__(base)
        self._made = made
        self._named: dict[bytes, int] | None = None
        self._asked = 0
        self._kept: dict[int, _Found] = {}
        self._chains: dict[int, int] = {}
        """The bytes of deltas down the chain of each kept object made by deltas."""
        self._kept_bytes = 0

    def offset(self, binary: bytes) -> int | None:
        """Where the object ``binary`` starts in the pack (``None``: not here)."""
        self._asked += 1
        if self._named is None and self._asked * _NAMED_SHARE > self._count:
            count = self._count
            names = self._idx[1032 : 1032 + 20 * count]
            starts = struct.unpack_from(f">{count}L", self._idx, self._offsets)
            ids = [names[i : i + 20] for i in range(0, 20 * count, 20)]
            self._named = dict(zip(ids, starts, strict=True))
        at = self._named.get(binary) if self._named is not None else self.find(binary)
        if at is None:
            return None
        return self.large(at) if at & 0x80000000 else at

    @property
    def size(self) -> int:
        """The pack's length in bytes."""
        return len(self._data)

    def read_in_order(self, into: dict[bytes, _Found], budget: int) -> int:
        """Read the pack's objects in the order it holds them into ``into`` (hex id →
        ``(type number, content)``), each inflated once and each offset delta applied
        to the base the pass has just read, until ``budget`` bytes are read; the bytes
        read. A delta whose base is named by id (a thin pack's) or not read, and every
        entry from one that does not read on, are left to :meth:`read`, which reads
        them as it reads any object, and refuses what does not read."""
        count, data = self._count, self._data
        starts: tuple[int, ...] = struct.unpack_from(f">{count}L", self._idx, self._offsets)
        if count == 0 or max(starts) & 0x80000000:
            return 0
        # each entry's id in hex, by where the entry starts
        ids = map(hexlify, struct.unpack_from("20s" * count, self._idx, 1032))
        named = dict(zip(starts, ids, strict=True))
        at_offset: dict[int, _Found] = {}
        chains: dict[int, int] = {}  # each delta's bytes of deltas down its chain
        spent = 0
        inflater, at_once = zlib.decompressobj, zlib.decompress
        # each entry's header, base distance and inflating as entry_header, ofs_base and
        # inflate_whole read them, written out here: a push's pack holds thousands (one
        # statement a step, no tuple made and taken apart)
        for at in sorted(named):
            try:
                byte = data[at]
                kind = (byte >> 4) & 7
                size = byte & 0x0F
                start = at + 1
                if byte & 0x80:
                    byte = data[start]
                    size |= (byte & 0x7F) << 4
                    start += 1
                    shift = 11
                    while byte & 0x80:
                        if shift > _SIZE_SHIFT_MAX:
                            raise ValueError("a size past any object's")
                        byte = data[start]
                        size |= (byte & 0x7F) << shift
                        shift += 7
                        start += 1
                held = None
                if size > OBJECT_MAX:
                    continue  # refused by read, when it is asked for
                if kind == _OFS_DELTA:
                    byte = data[start]
                    distance = byte & 0x7F
                    start += 1
                    while byte & 0x80:
                        byte = data[start]
                        distance = ((distance + 1) << 7) | (byte & 0x7F)
                        start += 1
                    held = at_offset.get(at - distance)
                    if held is None:
                        continue
                    chain = size + chains.get(at - distance, 0)
                    if chain > CHAIN_MAX:
                        continue  # refused by read, when it is asked for
                    chains[at] = chain
                elif kind not in _WHOLE:
                    continue
                if size < _AT_ONCE_MAX:
                    # in one call: refused if the stream (its checksum too) does not end
                    # in the window; what follows it there is passed over
                    content = at_once(data[start : start + size + 64], 15, size + 1)
                else:
                    stream = inflater()
                    stop = start + size + 5 * (size >> 14) + 64
                    content = stream.decompress(data[start:stop], size + 1)
                    if not stream.eof:
                        break
                if len(content) != size:
                    break
                if held is None:
                    found = (kind, content)
                    spent += size
                else:
                    if delta_target(content) > OBJECT_MAX:
                        continue  # refused by read, when it is asked for
                    content = b"".join(APPLY_DELTA(held[1], content))
                    found = (held[0], content)
                    spent += len(content)
            except Exception:  # a damaged entry, read (and refused) when it is asked for
                break
            if spent > budget:
                break
            at_offset[at] = found
            into[named[at]] = found
        return spent

    def read(self, offset: int, base: Callable[[bytes], _Found]) -> _Found | None:
        """The object at ``offset``, its delta chain resolved (``base`` finds a base
        named by id elsewhere)."""
        data = self._data
        found = self._kept.get(offset)
        if found is not None:
            return found
        kind, size, start = entry_header(data, offset)
        made = self._made
        if kind in _WHOLE:  # the most common entries: whole, or one delta on a kept base
            made.spend(bounded(size))
            found = (kind, inflate(data, start, size)[0])
            self._keep(offset, found)
            return found
        if kind == _OFS_DELTA:
            base_at, start = ofs_base(data, start, offset)
            held = self._kept.get(base_at)
            if held is not None:
                made.spend(bounded(size))
                deltas = _within_chain(size + self._chains.get(base_at, 0))
                delta = inflate(data, start, size)[0]
                made.spend(bounded(delta_target(delta)))
                found = (held[0], b"".join(APPLY_DELTA(held[1], delta)))
                self._keep(offset, found, deltas)
                return found
        # the deltas met, newest first: where each entry and its stream start, and the
        # stream's size. Only each delta's header is inflated on the way down (what it
        # makes is bounded before anything is made), each delta whole on the way back,
        # one at a time: a chain of many large deltas is never held at once.
        chain: list[tuple[int, int, int]] = []
        deltas = 0  # their bytes, with those below a kept base: held to CHAIN_MAX
        found = None
        at = offset
        while found is None:
            kind, size, start = entry_header(data, at)
            made.spend(bounded(size))
            if kind in _WHOLE:
                found = (kind, inflate(data, start, size)[0])
                break
            deltas = _within_chain(deltas + size)
            if kind == _OFS_DELTA:
                base_at, start = ofs_base(data, start, at)
                bounded(delta_target(_delta_head(data, start)))
                chain.append((at, start, size))
                at = base_at
            elif kind == _REF_DELTA:
                named = data[start : start + 20]
                bounded(delta_target(_delta_head(data, start + 20)))
                chain.append((at, start + 20, size))
                inside = self.offset(named)
                if inside is None:
                    # a base held elsewhere: nothing at ``at`` but the delta itself
                    found, at = base(named), -1
                    break
                at = inside
            else:
                raise ValueError(f"a packed object at {at} has type {kind}")
            found = self._kept.get(at)
        below = self._chains.get(at, 0)
        _within_chain(deltas + below)
        if at >= 0:
            self._keep(at, found, below)
        for entry, start, size in reversed(chain):
            delta = inflate(data, start, size)[0]
            made.spend(delta_target(delta))
            found = (found[0], b"".join(APPLY_DELTA(found[1], delta)))
            del delta
            below += size
            self._keep(entry, found, below)
        return found

    def _keep(self, offset: int, found: _Found, chain: int = 0) -> None:
        """Keep ``found`` for the next read, and ``chain``, its bytes of deltas."""
        if offset in self._kept:
            return
        self._kept_bytes += len(found[1])
        if self._kept_bytes > _KEPT_MAX:
            self._kept.clear()
            self._chains.clear()
            self._kept_bytes = len(found[1])
        self._kept[offset] = found
        if chain:
            self._chains[offset] = chain


def _within_chain(deltas: int) -> int:
    """``deltas``, the bytes of deltas down a chain, if a chain may hold that many."""
    if deltas > CHAIN_MAX:
        raise ValueError(
            f"a chain of deltas of more than {CHAIN_MAX:,} bytes, which a reader that "
            "holds a chain whole (dulwich's) would hold at once"
        )
    return deltas


def _delta_head(data: mmap.mmap, at: int) -> bytes:
    """The first bytes the delta stream at ``at`` makes: enough for its header (the sizes
    of its base and of what it makes), the rest of the stream left uninflated."""
    inflater = zlib.decompressobj()
    head, fed = b"", at
    try:
        while len(head) < _DELTA_HEAD and not inflater.eof:
            piece = data[fed : fed + _HEAD_FEED]
            if not piece:
                break
            fed += len(piece)
            while piece and len(head) < _DELTA_HEAD:
                head += inflater.decompress(piece, _DELTA_HEAD - len(head))
                piece = inflater.unconsumed_tail
    except zlib.error as exc:
        raise Unreadable(f"a packed delta at {at} does not inflate: {exc}") from None
    return head


class TooLarge(ValueError):
    """An object past :data:`OBJECT_MAX`, found before it was inflated; ``sha`` names it
    and ``commit`` the commit that brought it, once a reader above knows them."""

    def __init__(self, size: int) -> None:
        super().__init__(
            f"it holds {size:,} bytes, past the {OBJECT_MAX >> 20} MiB an object may hold here"
        )
        self.sha = ""
        self.commit = ""

    def refusal(self) -> str:
        """The refusal as a push hook words it: ``commit SHA breaks rule parse: ...``."""
        what = f"object {self.sha[:12]}" if self.sha else "an object it brings"
        return f"commit {self.commit[:12]} breaks rule parse: {what} does not read: {self}"


def bounded(size: int) -> int:
    """``size``, if an object of that many bytes may be read (see :data:`OBJECT_MAX`)."""
    if size > OBJECT_MAX:
        raise TooLarge(size)
    return size


def delta_target(delta: bytes) -> int:
    """The size of what ``delta`` makes (its header's second number)."""
    # the usual header, each size in one or two bytes, read without a loop (a push's
    # pack holds thousands of deltas); any other, by the loop below
    if len(delta) >= 4:
        at = 1 if delta[0] < 0x80 else 2 if delta[1] < 0x80 else 0
        if at:
            low = delta[at]
            if low < 0x80:
                return low
            high = delta[at + 1]
            if high < 0x80:
                return low & 0x7F | high << 7
    at = 0
    size = 0
    for _ in range(2):  # the base's size, then the result's
        size, shift = 0, 0
        while True:
            if at >= len(delta) or shift > _SIZE_SHIFT_MAX:
                raise ValueError("a delta's header does not read")
            byte = delta[at]
            size, shift, at = size | (byte & 0x7F) << shift, shift + 7, at + 1
            if not byte & 0x80:
                break
    return size


LOOSE_HEAD = 4096
"""Bytes of a loose object's file read first: its header inflates from them (a deflate
block's own code tables come first, a few hundred bytes at most)."""


def loose_read(f: BinaryIO) -> tuple[bytes, int]:
    """A loose object's file, read no further than the size its header declares allows
    (its compressed bytes exceed it by zlib's few bytes a block at most), and that size,
    held to :data:`OBJECT_MAX` first. ``ValueError``: the header does not read."""
    data = f.read(LOOSE_HEAD)
    size = bounded(loose_size(data))
    return data + f.read(size + 5 * (size >> 14) + 64), size


def loose_size(data: bytes) -> int:
    """The size a loose object's header declares (its first bytes inflated alone)."""
    try:
        head = zlib.decompressobj().decompress(data, 32)
    except zlib.error as exc:
        raise ValueError(f"a loose object does not inflate: {exc}") from None
    size = head.partition(b"\0")[0].partition(b" ")[2]
    if not size.isdigit():
        raise ValueError("a loose object has a damaged header")
    return int(size)
