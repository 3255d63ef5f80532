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
"""

from __future__ import annotations

import zlib
from typing import IO

from gitmem.store.pushobjects import bounded, delta_target

__all__ = ["ENTRIES_MAX", "check_pack"]

ENTRIES_MAX = 2_000_000
"""Objects one fetched pack holds at most: the library keeps a record of each while it
stores the pack (a store of 100,000 memories and 100,000 commits is some 400,000)."""

_OFS_DELTA, _REF_DELTA = 6, 7
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
    for _ in range(count):
        byte = reader.byte()
        kind, size, shift = (byte >> 4) & 7, byte & 0x0F, 4
        while byte & 0x80:
            if shift > _SHIFT_MAX:
                raise ValueError("an entry of the remote's pack has a size that does not read")
            byte = reader.byte()
            size, shift = size | (byte & 0x7F) << shift, shift + 7
        if kind == _OFS_DELTA:
            for _ in range(_SHIFT_MAX // 7 + 1):
                if not reader.byte() & 0x80:
                    break
            else:
                raise ValueError("a delta of the remote's pack names a base that does not read")
        elif kind == _REF_DELTA:
            reader.take(20)
        elif not 1 <= kind <= 4:
            raise ValueError(f"the remote's pack holds an entry of unknown type {kind}")
        first = reader.inflate(bounded(size))
        if kind in (_OFS_DELTA, _REF_DELTA):
            bounded(delta_target(first))
    reader.take(20)  # the checksum, which the library checks
    if reader.more():
        raise ValueError("the remote's pack goes on past its last object")


class _Reader:
    """The stream read a chunk at a time; what is not yet used is kept, read from an
    offset (never cut off the front byte by byte)."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        self._data = b""
        self._at = 0

    def _fill(self) -> None:
        chunk = self._stream.read(_CHUNK)
        if not chunk:
            raise ValueError("the remote's pack is cut short")
        self._data = self._data[self._at :] + chunk
        self._at = 0

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
