"""Packs written byte by byte, as git writes them or as a hostile remote or pusher
might: whole entries, and deltas placed on their base by offset or by id."""

from __future__ import annotations

import hashlib
import struct
import zlib
from pathlib import Path

BLOB, OFS_DELTA, REF_DELTA = 3, 6, 7


def header(kind: int, size: int) -> bytes:
    """An entry's header as git writes it: type and size, 7 bits a byte after the 4."""
    byte = kind << 4 | size & 0x0F
    size >>= 4
    out = bytearray()
    while size:
        out.append(byte | 0x80)
        byte, size = size & 0x7F, size >> 7
    out.append(byte)
    return bytes(out)


def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        out.append(value & 0x7F | (0x80 if value > 0x7F else 0))
        value >>= 7
        if not value:
            return bytes(out)


def pack(*entries: bytes, count: int | None = None) -> bytes:
    body = b"PACK" + struct.pack(">LL", 2, len(entries) if count is None else count)
    return body + b"".join(entries) + b"\0" * 20  # a checksum the library checks


def blob(content: bytes, declared: int | None = None) -> bytes:
    size = len(content) if declared is None else declared
    return header(BLOB, size) + zlib.compress(content)


class Packer:
    """A pack built entry by entry, each delta placed on its base by offset or by id."""

    def __init__(self) -> None:
        self.body = bytearray()
        self.starts: list[int] = []
        self.sizes: list[int] = []

    def _add(self, entry: bytes, size: int) -> int:
        self.starts.append(12 + len(self.body))
        self.sizes.append(size)
        self.body += entry
        return len(self.starts) - 1

    def blob(self, content: bytes) -> int:
        return self._add(blob(content), len(content))

    def delta(self, base: int, result: int) -> int:
        """A delta on entry ``base`` that makes ``result`` bytes, copying its base again
        and again: a few bytes that declare, and make, as much as they like."""
        return self._delta(base, copies(self.sizes[base], result), result)

    def inserts(self, base: int, content: bytes) -> int:
        """A delta on entry ``base`` that makes ``content`` out of its own bytes alone:
        a delta as large as what it makes."""
        return self._delta(base, inserted(self.sizes[base], content), len(content))

    def _delta(self, base: int, data: bytes, result: int) -> int:
        back = distance(12 + len(self.body) - self.starts[base])
        return self._add(header(OFS_DELTA, len(data)) + back + zlib.compress(data), result)

    def delta_by_id(self, sha: bytes, base_size: int, result: int) -> int:
        return self._by_id(sha, copies(base_size, result), result)

    def inserts_by_id(self, sha: bytes, base_size: int, content: bytes) -> int:
        """A delta on the object named ``sha`` that makes ``content`` of its own bytes."""
        return self._by_id(sha, inserted(base_size, content), len(content))

    def _by_id(self, sha: bytes, data: bytes, result: int) -> int:
        return self._add(header(REF_DELTA, len(data)) + sha + zlib.compress(data), result)

    def pack(self, *, checksum: bool = False) -> bytes:
        """The pack; ``checksum``: with its true checksum, as git takes it."""
        data = pack(bytes(self.body), count=len(self.starts))
        return data[:-20] + hashlib.sha1(data[:-20]).digest() if checksum else data


def inserted(base_size: int, content: bytes) -> bytes:
    """A delta that makes ``content`` out of its own bytes, whatever its base holds."""
    parts = (content[at : at + 127] for at in range(0, len(content), 127))
    ops = b"".join(bytes([len(part)]) + part for part in parts)
    return varint(base_size) + varint(len(content)) + ops


def copies(base_size: int, result: int) -> bytes:
    ops = bytearray()
    left = result
    while left:
        n = min(left, base_size, 0xFFFFFF)
        ops += b"\xf0" + n.to_bytes(3, "little")  # copy n bytes from the base's start
        left -= n
    return varint(base_size) + varint(result) + bytes(ops)


def distance(value: int) -> bytes:
    """How far back a delta's base starts, as git writes it."""
    out = bytearray([value & 0x7F])
    value >>= 7
    while value:
        value -= 1
        out.insert(0, 0x80 | value & 0x7F)
        value >>= 7
    return bytes(out)


def index(pack_data: bytes, names: list[bytes], starts: list[int], large: set[bytes]) -> bytes:
    """A version-2 index of ``pack_data`` naming its entries (which start at ``starts``)
    ``names``; those in ``large`` placed through the table of 8-byte offsets, as git
    places an object past 2 GiB of its pack."""
    entries = sorted(zip(names, starts, strict=True))
    ends = dict(zip(starts, [*starts[1:], len(pack_data) - 20], strict=True))
    fanout = [sum(1 for name, _ in entries if name[0] <= byte) for byte in range(256)]
    table: list[int] = []
    offsets: list[int] = []
    for name, at in entries:
        if name in large:
            offsets.append(0x80000000 | len(table))
            table.append(at)
        else:
            offsets.append(at)
    body = b"\377tOc" + struct.pack(">L", 2) + struct.pack(">256L", *fanout)
    body += b"".join(name for name, _ in entries)
    body += b"".join(struct.pack(">L", zlib.crc32(pack_data[at : ends[at]])) for _, at in entries)
    body += b"".join(struct.pack(">L", offset) for offset in offsets)
    body += b"".join(struct.pack(">Q", at) for at in table) + pack_data[-20:]
    return body + hashlib.sha1(body).digest()


def blob_id(content: bytes) -> bytes:
    """The id git gives a blob of ``content`` (20 bytes)."""
    return hashlib.sha1(b"blob %d\0" % len(content) + content).digest()


def placed_far(folder: Path, small: bytes, big: bytes) -> list[bytes]:
    """A pack of two blobs written in ``folder``, each placed through its index's table
    of 8-byte offsets (git's for an object past 2 GiB of its pack); their ids."""
    packer = Packer()
    packer.blob(small)
    packer.blob(big)
    data = packer.pack(checksum=True)
    names = [blob_id(small), blob_id(big)]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pack-a.pack").write_bytes(data)
    (folder / "pack-a.idx").write_bytes(index(data, names, packer.starts, set(names)))
    return names
