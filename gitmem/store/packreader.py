"""Reading objects straight from a repository's packs, through their mapped files.

dulwich's ``Pack`` layers cost several times what inflating an object does; a copy
between repositories and the reads that build the derived indexes (every commit of a
history, every memory of a store) go through this reader instead, and leave to dulwich
whatever it does not handle: loose objects, a pack that landed since the folder was
read, an index not of version 2, a delta whose base is a loose object.
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Callable, Generator
from contextlib import contextmanager
from typing import TypeVar

from dulwich.pack import OFS_DELTA

from gitmem.lean.objects import (
    MappedPack,
    entry_header,
    inflate,
    inflate_whole,
    ofs_base,
    pack_bases,
)
from gitmem.store.pushobjects import (
    APPLY_DELTA,
    LOOSE_HEAD,
    Made,
    TooLarge,
    bounded,
    delta_target,
    loose_size,
)

__all__ = ["Pack", "PackedObjects", "Packs", "inflate", "packed_reads"]

T = TypeVar("T")

_TREE = 2
REF_HOPS = 64
"""Deltas whose base is named by id that one read follows at most (a pack's index could
name a delta as its own base)."""
_KEPT = 257  # objects a pack keeps as the bases of later reads
_KEPT_BYTES = 64 << 20  # and the bytes they come to, at most
_WHOLE = (1, 2, 3, 4)  # commit, tree, blob, tag
_REF_DELTA = 7
_DELTA_HEAD = 20  # a delta's two sizes take at most ten bytes each


class PackedObjects:
    """Objects of a pack folder by hex id, through ``Packs`` made when first asked and
    made again when packs came or went and an object is in none of those it read
    (``folder`` ``None``: a repository without one, whose objects this never finds)."""

    def __init__(self, folder: object) -> None:
        self.folder = folder if isinstance(folder, str) else None
        self._packs: Packs | None = None

    def get(self, sha: str) -> tuple[int, bytes] | None:
        """``(type number, content)`` of object ``sha``, or ``None`` if no pack holds
        it in a form this reader reads; ``ValueError`` if its pack entry is damaged."""
        found = self._ask(Packs.get, sha)
        return None if found is None else (found[0], found[1])

    def read(self, sha: str) -> tuple[int, bytes] | None:
        """As ``get``, for a read of many objects one by one (a walk of a history)."""
        return self._ask(Packs.read, sha)

    def _ask(self, how: Callable[[Packs, bytes], T | None], sha: str) -> T | None:
        """``how`` asked of the packs for ``sha``; asked again of the folder listed
        anew when packs came or went since (a concurrent repack moves objects)."""
        if self.folder is None:
            return None
        if self._packs is None:
            self._packs = Packs(self.folder)
        found = how(self._packs, bytes.fromhex(sha))
        if found is None and self._packs.stale():
            self._packs.close()
            self._packs = Packs(self.folder)
            found = how(self._packs, bytes.fromhex(sha))
        return found

    def whole(self, sha: str, kind: int) -> bytes | None:
        """The content of object ``sha`` when a pack read so far holds it whole (not as a
        delta) and of type ``kind``; ``None`` otherwise, for ``read`` or dulwich (the
        walk of a history reads every commit this way: no layer it does not need).
        ``ValueError`` as ``get``."""
        if self._packs is None:
            if self.folder is None:
                return None
            self._packs = Packs(self.folder)
        binsha = bytes.fromhex(sha)
        for pack in self._packs.packs:
            at = pack.find(binsha)
            if at is not None:
                try:
                    return None if at & 0x80000000 else pack.whole(at, kind)
                except (ValueError, IndexError, zlib.error) as exc:
                    raise ValueError(f"object {sha} does not read from its pack: {exc}") from None
        return None

    def size(self, sha: str) -> int | None:
        """The size of object ``sha``'s content as its pack entry declares it (a delta's,
        from the delta's first bytes) or its loose file beside the packs does, nothing
        inflated whole; ``None`` if neither is found or reads: the caller reads the
        object whole, and learns what is wrong with it."""
        if self.folder is None:
            return None
        if self._packs is None:
            self._packs = Packs(self.folder)
        binsha = bytes.fromhex(sha)
        try:
            for pack in self._packs.packs:
                at = pack.find(binsha)
                if at is not None:
                    return None if at & 0x80000000 else pack.declared(at)
            loose = os.path.join(os.path.dirname(self.folder), sha[:2], sha[2:])
            with open(loose, "rb") as f:
                return loose_size(f.read(LOOSE_HEAD))
        except (OSError, ValueError, IndexError, zlib.error):
            return None

    def get_many(self, shas: list[str]) -> dict[str, tuple[int, bytes]]:
        """``(type number, content)`` of each object of ``shas`` that the packs hold in
        a form this reader reads, read in the order each pack holds them (one sweep,
        not a seek per object); the others are left out. ``ValueError`` as ``get``."""
        if self.folder is None or not shas:
            return {}
        if self._packs is None or self._packs.stale():
            self.forget()
            self._packs = Packs(self.folder)
        return self._packs.get_many(shas)

    def forget(self) -> None:
        """Let go of the packs read so far: the next read lists the folder again."""
        if self._packs is not None:
            self._packs.close()
            self._packs = None


class Packs:
    """The packs of a folder read directly through their mapped files: an object's
    offset found in its index's sorted names (by dulwich's ``bisect_find_sha``), its
    content inflated from the pack, a delta applied to its base (dulwich's
    ``apply_delta``); dulwich's ``Pack`` layers spend most of a read's time. A delta's
    base named by id is read from whichever of these packs holds it, else through
    ``elsewhere``. Anything unusual (an index not of version 2, a delta whose base
    neither gives, a pack being replaced) is left to the caller: ``get`` says ``None``.
    The pack folder is read once: a pack that lands later is dulwich's to find, or a
    new reader's (``stale``).

    ``bounded``: the packs are another repository's (a remote's, copied from): an object
    past :data:`~gitmem.store.pushobjects.OBJECT_MAX` is refused (``TooLarge``) from
    the size its header, or its delta's, declares, before it is inflated, as a push
    hook refuses it."""

    def __init__(
        self,
        folder: str,
        bounded: bool = False,
        elsewhere: Callable[[str], tuple[int, bytes] | None] | None = None,
        made: Made | None = None,
    ) -> None:
        """``elsewhere`` reads a delta's base, by hex id, that no pack here holds
        (``None``: such a delta is left to the caller); ``made`` counts a bounded
        reader's bytes made (by default, its own count)."""
        self.folder = folder
        self._elsewhere = elsewhere
        self._packs: list[Pack] = []
        self._stamp = _stamp(folder)
        self._base = self._named()
        if not bounded:
            made = None
        elif made is None:
            made = Made()
        for base in pack_bases(folder):
            try:
                self._packs.append(Pack(base, made))
            except (OSError, ValueError):
                continue  # gone meanwhile, or a format this reader leaves to dulwich

    @property
    def packs(self) -> list[Pack]:
        """The packs read, the one that last answered first."""
        return self._packs

    def __contains__(self, sha: bytes) -> bool:
        return any(pack.offset(sha) is not None for pack in self._packs)

    def stale(self) -> bool:
        """Whether packs came or went in the folder since this reader listed it."""
        return _stamp(self.folder) != self._stamp

    def get(self, sha: bytes) -> tuple[int, bytes, bytes] | None:
        """``(type number, content, packed)``: ``packed`` is the object as its pack holds
        it (header and zlib stream) when it is held whole there, else empty; ``None`` if
        no pack of this reader holds it in a form it reads."""
        for i, pack in enumerate(self._packs):
            at = pack.offset(sha)
            if at is None:
                continue
            if i:  # a commit's objects sit together: the pack that answered asked first
                self._packs.insert(0, self._packs.pop(i))
            try:
                return pack.entry(at, self._base)
            except TooLarge:
                raise
            except (ValueError, IndexError, struct.error, RecursionError, zlib.error) as exc:
                raise ValueError(f"object {sha.hex()} does not read from its pack: {exc}") from None
        return None

    def read(self, sha: bytes) -> tuple[int, bytes] | None:
        """``(type number, content)``, as ``get`` without the packed form."""
        for pack in self._packs:
            at = pack.offset(sha)
            if at is None:
                continue
            try:
                return pack.read(at, self._base)
            except (ValueError, IndexError, struct.error, RecursionError, zlib.error) as exc:
                raise ValueError(f"object {sha.hex()} does not read from its pack: {exc}") from None
        return None

    def _named(self, hops: int = 0) -> Callable[[bytes], tuple[int, bytes] | None]:
        """A reader of a delta's base named by an id its own pack lacks, from the pack
        that holds it (``None`` if none does), each such step counted as one of the
        :data:`REF_HOPS` a read follows."""

        def base(sha: bytes) -> tuple[int, bytes] | None:
            if hops >= REF_HOPS:
                raise ValueError(f"a chain of deltas names bases by id past {REF_HOPS} times")
            for pack in self._packs:
                at = pack.offset(sha)
                if at is not None:
                    return pack.read(at, self._named(hops + 1))
            return self._elsewhere(sha.hex()) if self._elsewhere is not None else None

        return base

    def get_many(self, shas: list[str]) -> dict[str, tuple[int, bytes]]:
        """``(type number, content)`` of each object of ``shas`` some pack of this reader
        holds in a form it reads, each pack's read in the order it holds them."""
        found: dict[str, tuple[int, bytes]] = {}
        rest = shas
        for pack in self._packs:
            # the whole index's table once it costs less than a search per object
            table = pack.table() if len(rest) * 16 > pack.count else None
            placed: list[tuple[int, str]] = []
            missing: list[str] = []
            for sha in rest:
                binsha = bytes.fromhex(sha)
                at = table.get(binsha) if table is not None else pack.find(binsha)
                if at is None or at & 0x80000000:
                    missing.append(sha)
                else:
                    placed.append((at, sha))
            placed.sort()
            try:
                read = pack.sweep([at for at, _ in placed], pack.read)
            except (ValueError, IndexError, struct.error, RecursionError, zlib.error) as exc:
                raise ValueError(f"an object does not read from its pack: {exc}") from None
            for (_, sha), got in zip(placed, read, strict=True):
                if got is None:
                    missing.append(sha)
                else:
                    found[sha] = got
            rest = missing
        return found

    def close(self) -> None:
        for pack in self._packs:
            pack.close()
        self._packs = []


class Pack(MappedPack):
    """One pack and its version-2 index, mapped. Not dulwich's ``load_pack_index``: it
    reads an index's fan-out table entry by entry, 400 us an index against 40 here (a
    sync opens each pack of both sides, up to 32 each: 10% of a sync of 100 changes)."""

    def __init__(self, base: str, made: Made | None = None) -> None:
        super().__init__(base)
        self._bases: dict[int, tuple[int, bytes]] = {}
        self._kept_bytes = 0
        self._made = made
        """Bounded reads (see ``Packs``): sizes are held to ``OBJECT_MAX`` before anything
        is inflated, and all the bytes made, with the other packs', to ``MADE_MAX``."""

    def offset(self, sha: bytes) -> int | None:
        """Where ``sha`` starts in the pack, or ``None`` if the pack lacks it."""
        at = self.find(sha)
        if at is None:
            return None
        return self.large(at) if at & 0x80000000 else at

    # Not dulwich's unpack_object_at: 6.5 us an object against 2.5 here (4% of a sync).
    def entry(
        self, offset: int, base: Callable[[bytes], tuple[int, bytes] | None] | None = None
    ) -> tuple[int, bytes, bytes] | None:
        """``(type number, content, packed)`` of the object at ``offset``: ``packed``
        is its header and zlib stream when it is held whole (empty for a delta);
        ``base`` as :meth:`read` takes it."""
        data = self._data
        kind, size, at = entry_header(data, offset)
        if kind not in _WHOLE:
            found = self.read(offset, base)
            return None if found is None else (*found, b"")
        if self._made is not None:
            self._made.spend(bounded(size))
        content, end = inflate(data, at, size)
        return kind, content, data[offset:end]

    def declared(self, offset: int) -> int:
        """The size of the content of the object at ``offset``: its header's, or for a
        delta the size of what the delta makes, from its first bytes inflated alone."""
        data = self._data
        kind, size, at = entry_header(data, offset)
        if kind in _WHOLE:
            return size
        if kind == OFS_DELTA:
            at = ofs_base(data, at, offset)[1]
        elif kind == _REF_DELTA:
            at += 20
        else:
            raise ValueError(f"an entry of type {kind}, which git does not write")
        inflater = zlib.decompressobj()
        head = b""
        while len(head) < _DELTA_HEAD and not inflater.eof and at < len(data):
            head += inflater.decompress(data[at : at + 256], _DELTA_HEAD - len(head))
            at += 256  # what it left unread is past what it was asked for
        return delta_target(head)

    def whole(self, offset: int, kind: int) -> bytes | None:
        """The content of the object at ``offset`` if it is held whole and of type
        ``kind``, else ``None`` (one per commit of a history)."""
        data = self._data
        if (data[offset] >> 4) & 7 != kind:
            return None
        _, size, at = entry_header(data, offset)
        return inflate_whole(data, at, size)

    def read(
        self, offset: int, base: Callable[[bytes], tuple[int, bytes] | None] | None = None
    ) -> tuple[int, bytes] | None:
        """``(type number, content)`` of the object at ``offset`` (deltas resolved);
        ``base`` reads a delta's base named by an id this pack lacks (``None``: such a
        delta is left to the caller, as the base is)."""
        found = self._bases.get(offset)
        if found is not None:
            return found
        data = self._data
        # down the chain to a whole object or a kept one, then back up, each delta
        # inflated and applied in turn: a chain however long takes no stack, and holds
        # one delta at a time
        chain: list[tuple[int, int, int]] = []  # each delta met: entry, stream, size
        named_hops = 0
        at = offset
        while found is None:
            kind, size, start = entry_header(data, at)
            if self._made is not None:
                self._made.spend(bounded(size))
            if kind in _WHOLE:
                found = (kind, inflate_whole(data, start, size))
                if kind == _TREE:
                    self._keep(at, found)  # trees are the bases of delta chains
            elif kind == OFS_DELTA:
                base_at, start = ofs_base(data, start, at)
                chain.append((at, start, size))
                at = base_at
                found = self._bases.get(at)
            elif kind == _REF_DELTA:
                named = bytes(data[start : start + 20])
                chain.append((at, start + 20, size))
                named_hops += 1
                if named_hops > REF_HOPS:
                    raise ValueError(f"a chain of deltas names bases by id past {REF_HOPS} times")
                inside = self.offset(named)
                if inside is None:
                    found = base(named) if base is not None else None
                    if found is None:
                        return None
                else:
                    at = inside
                    found = self._bases.get(at)
            else:
                return None  # no type git writes: dulwich says what is wrong
        for at, start, size in reversed(chain):
            delta = inflate(data, start, size)[0]
            if self._made is not None:
                self._made.spend(bounded(delta_target(delta)))
            found = (found[0], b"".join(APPLY_DELTA(found[1], delta)))
            del delta
            self._keep(at, found)  # a chain is read once, not per link
        return found

    def _keep(self, offset: int, found: tuple[int, bytes]) -> None:
        """Keep ``found`` for the next read, within :data:`_KEPT` objects and
        :data:`_KEPT_BYTES` bytes."""
        if len(self._bases) >= _KEPT or self._kept_bytes + len(found[1]) > _KEPT_BYTES:
            self._bases.clear()
            self._kept_bytes = 0
        self._bases[offset] = found
        self._kept_bytes += len(found[1])


def _stamp(folder: str) -> int | None:
    """The folder's modification time: it changes whenever a pack is added or removed."""
    try:
        return os.stat(folder).st_mtime_ns
    except FileNotFoundError:
        return None


@contextmanager
def packed_reads(
    objects: str, fallback: Callable[[str, int], bytes]
) -> Generator[Callable[[str, int], bytes]]:
    """A reader of many objects at once (a blame reads a file's every revision):
    ``read(sha, type number)`` reads each straight from the packs in the folder
    ``objects``, mapped while this lasts; one they do not hold whole or as a delta on
    what they hold, or that does not read, or is not of that type, ``fallback`` reads
    (and refuses as it refuses)."""
    packs = Packs(os.path.join(objects, "pack"))

    def read(sha: str, kind: int) -> bytes:
        try:
            found = packs.get(bytes.fromhex(sha))
        except ValueError:
            found = None
        return found[1] if found is not None and found[0] == kind else fallback(sha, kind)

    try:
        yield read
    finally:
        packs.close()
