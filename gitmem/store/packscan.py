"""A pack as a remote sends it over the pack protocol, read through once before anything
of it is stored: each object held to the bound a push hook holds objects to.

The git library stores a fetched pack by inflating every object whole, in memory. So a
remote could send a few kilobytes that declare, or inflate to, gigabytes. Here each
entry's declared size, and a delta's declared result, is held to
:data:`~gitmem.store.pushobjects.OBJECT_MAX` before its stream is inflated, and the
stream is inflated no further than one byte past what it declares, its output counted
and dropped. Whatever does not read as git writes a pack (a bad signature, an unknown
entry type, a stream that ends early or inflates to another size, a pack cut short) is
a ``ValueError``; an object past the bound is :class:`~gitmem.store.pushobjects.TooLarge`.
Object ids and the pack's checksum are left to the library, which checks both.

Bounding each object does not bound the pack: a delta of a few bytes may declare a
result of 64 MiB, so a pack of some kilobytes can have the library make gigabytes, and
hold many of them at once. The library makes every object of the pack once, walking
each delta tree depth first, and holds an object made while a delta on it still waits
its turn. So the pack as a whole is held to more bounds, from what its entries
declare: the bytes of all its objects made whole (:data:`INFLATED_MAX`, which bounds
the library's work), and the bytes it may have to hold at once in the worst order it
could walk them (:data:`HELD_MAX`, which bounds its memory). The pack is stored as it
came, and the library reads a stored object by holding every delta down its chain at
once: the deltas along any chain are held to
:data:`~gitmem.store.pushobjects.CHAIN_MAX`, as a push hook holds them, so what a fetch
stores cannot later make a read of it hold more.
"""

from __future__ import annotations

import zlib
from array import array
from bisect import bisect_left
from heapq import nlargest
from typing import IO

from gitmem.store import pushobjects
from gitmem.store.pushobjects import bounded, delta_target

__all__ = ["ENTRIES_MAX", "HELD_MAX", "INFLATED_MAX", "check_pack"]

ENTRIES_MAX = 2_000_000
"""Objects one fetched pack holds at most: the library keeps a record of each while it
stores the pack (a store of 100,000 memories and 100,000 commits is some 400,000)."""

INFLATED_MAX = 8 << 30
"""Bytes one fetched pack's objects come to at most, each made whole: what the library
makes as it stores the pack. A store of 100,000 memories and 100,000 commits, fetched
whole, comes to some 3 GiB, nearly all of it its trees."""

HELD_MAX = 256 << 20
"""Bytes of made objects the library may have to hold at once as it stores one fetched
pack, beside the object it is making: in the worst order it could walk the pack's
deltas, every object it holds is one a later delta still waits on. Git writes a delta
on a delta at most 50 deep by default, so a store's pack comes to a few megabytes."""

_OFS_DELTA, _REF_DELTA = 6, 7
_WHOLE, _NAMED = -1, -2  # the parents of a whole object, and of a delta whose base is
# named by id (which only the base's id, once it is made, places)
_CHUNK = 1 << 16
_FEED = 4096  # bytes of a stream given the inflater at a time
_HEAD_KEPT = 32  # bytes of a delta's output kept: its header's two sizes fit in 20
_SHIFT_MAX = 70  # a size of more than ten 7-bit groups is no size git writes


def check_pack(stream: IO[bytes]) -> None:
    """Read the pack ``stream`` from where it stands to its end (see the module)."""
    reader = _Reader(stream)
    head = reader.take(12)
    if head[:4] != b"PACK" or head[4:8] not in (b"\0\0\0\2", b"\0\0\0\3"):
        raise ValueError("what the remote sent is not a pack")
    count = int.from_bytes(head[8:12], "big")
    if count > ENTRIES_MAX:
        raise ValueError(
            f"the remote's pack holds {count:,} objects, past the {ENTRIES_MAX:,} a fetch takes"
        )
    offsets = array("q")  # where each entry starts, rising
    sizes = array("q")  # what each entry makes whole
    parents = array("q")  # the entry each is a delta on, or _WHOLE, or _NAMED
    chains = array("q")  # the deltas down to each entry's whole object, in bytes
    inflated = 0
    for _ in range(count):
        at = reader.position()
        byte = reader.byte()
        kind, size, shift = (byte >> 4) & 7, byte & 0x0F, 4
        while byte & 0x80:
            if shift > _SHIFT_MAX:
                raise ValueError("an entry of the remote's pack has a size that does not read")
            byte = reader.byte()
            size, shift = size | (byte & 0x7F) << shift, shift + 7
        parent = _WHOLE
        if kind == _OFS_DELTA:
            parent = _entry_at(offsets, at - _distance(reader))
        elif kind == _REF_DELTA:
            reader.take(20)
            parent = _NAMED
        elif not 1 <= kind <= 4:
            raise ValueError(f"the remote's pack holds an entry of unknown type {kind}")
        first = reader.inflate(bounded(size))
        chain = 0
        if kind in (_OFS_DELTA, _REF_DELTA):
            chain = size + (chains[parent] if parent >= 0 else 0)
            size = bounded(delta_target(first))
        inflated += size
        if inflated > INFLATED_MAX:
            raise ValueError(
                f"the remote's pack makes more than {INFLATED_MAX:,} bytes of objects, "
                "past what a fetch takes"
            )
        offsets.append(at)
        sizes.append(size)
        parents.append(parent)
        chains.append(chain)
    reader.take(20)  # the checksum, which the library checks
    if reader.more():
        raise ValueError("the remote's pack goes on past its last object")
    named = parents.count(_NAMED)
    if _held(sizes, parents, named) > HELD_MAX:
        raise ValueError(
            f"the remote's pack could have this side hold more than {HELD_MAX:,} bytes "
            "of objects at once as it stores them, past what a fetch takes"
        )
    # the library reads a stored object by holding every delta down its chain at once
    longest = pushobjects.CHAIN_MAX
    if sum(nlargest(named + 1, chains)) > longest:
        raise ValueError(
            f"the remote's pack holds a chain of deltas of more than {longest:,} bytes, "
            "which reading one of its objects would hold at once, past what a fetch takes"
        )


def _distance(reader: _Reader) -> int:
    """How far back from its own entry a delta's base starts, as git writes it."""
    byte = reader.byte()
    distance = byte & 0x7F
    for _ in range(_SHIFT_MAX // 7):
        if not byte & 0x80:
            return distance
        byte = reader.byte()
        distance = (distance + 1) << 7 | byte & 0x7F
    raise ValueError("a delta of the remote's pack names a base that does not read")


def _entry_at(offsets: array[int], at: int) -> int:
    """The number of the entry that starts at ``at``."""
    found = bisect_left(offsets, at)
    if found == len(offsets) or offsets[found] != at:
        raise ValueError("a delta of the remote's pack names a base that is none of its objects")
    return found


def _held(sizes: array[int], parents: array[int], named: int) -> int:
    """The most the library could hold at once, walking each delta tree depth first in
    the worst order: along one path down a tree, every object with a second delta on it
    (which waits its turn). A delta whose base is named by id is placed by the library
    once that base is made, in this pack or (if none of it makes the base) among the
    objects held here, so it could hang under any object: the path may pass from one
    tree into another through each such delta, and each may have its base held while
    another delta on it waits. So the bound adds up the most held down as many trees as
    there are such deltas (``named``), and one more, and as many of the pack's largest
    objects."""
    count = len(sizes)
    deltas = array("q", bytes(8 * count))  # deltas on each entry
    below = array("q", bytes(8 * count))  # the most held below each, on one path
    trees: list[int] = []  # the most held down each tree, from its root
    for at in range(count - 1, -1, -1):  # a delta comes after its base
        held = (sizes[at] if deltas[at] > 1 else 0) + below[at]
        parent = parents[at]
        if parent >= 0:
            deltas[parent] += 1
            below[parent] = max(below[parent], held)
        else:
            trees.append(held)
    return sum(nlargest(named + 1, trees)) + sum(nlargest(named, sizes))


class _Reader:
    """The stream read a chunk at a time; what is not yet used is kept, read from an
    offset (never cut off the front byte by byte)."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        self._data = b""
        self._at = 0
        self._dropped = 0  # bytes read and let go, before _data

    def _fill(self) -> None:
        chunk = self._stream.read(_CHUNK)
        if not chunk:
            raise ValueError("the remote's pack is cut short")
        self._dropped += self._at
        self._data = self._data[self._at :] + chunk
        self._at = 0

    def position(self) -> int:
        """How far into the pack the next byte is."""
        return self._dropped + self._at

    def more(self) -> bool:
        return self._at < len(self._data) or bool(self._stream.read(1))

    def byte(self) -> int:
        if self._at >= len(self._data):
            self._fill()
        self._at += 1
        return self._data[self._at - 1]

    def take(self, count: int) -> bytes:
        while len(self._data) - self._at < count:
            self._fill()
        self._at += count
        return self._data[self._at - count : self._at]

    def inflate(self, size: int) -> bytes:
        """Inflate the zlib stream that starts here, which must make exactly ``size``
        bytes; its first few bytes, and the stream left where it ends. ``ValueError``
        if it makes another number of bytes or does not read."""
        inflater = zlib.decompressobj()
        made, first = 0, b""
        while not inflater.eof:
            if self._at >= len(self._data):
                self._fill()
            # fed a piece at a time: what follows the stream is given back, and the
            # inflater copies no more of it than one piece
            data = self._data[self._at : self._at + _FEED]
            self._at += len(data)
            while data and not inflater.eof:
                try:
                    out = inflater.decompress(data, size + 1 - made)
                except zlib.error as exc:
                    raise ValueError(
                        f"an object of the remote's pack does not inflate: {exc}"
                    ) from None
                made += len(out)
                if made > size:
                    raise ValueError("an object of the remote's pack inflates past its size")
                if len(first) < _HEAD_KEPT:
                    first += out[: _HEAD_KEPT - len(first)]
                data = inflater.unconsumed_tail
            self._at -= len(inflater.unused_data)
        if made != size:
            raise ValueError("an object of the remote's pack inflates short of its size")
        return first
