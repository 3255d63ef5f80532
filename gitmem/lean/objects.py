"""Reading git objects with the standard library alone: loose objects, and packs with a
version-2 index, their deltas (against an earlier offset or an object id) applied here.

A command that only reads a few objects (a store's head commit, a memory's blobs)
spends less reading them than importing a git library would cost it. Whatever does not
read as git writes it (a damaged header, a size that does not match, an index of
another version, a delta chain past :data:`MAX_CHAIN`) raises :class:`Unreadable`, and
the caller leaves the work to the full reader.
"""

from __future__ import annotations

import mmap
import os
import struct
import zlib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

__all__ = [
    "BLOB",
    "COMMIT",
    "MAX_CHAIN",
    "TREE",
    "MappedPack",
    "Objects",
    "Unreadable",
    "apply_delta",
    "entry_header",
    "inflate",
    "inflate_whole",
    "loose_object",
    "ofs_base",
    "pack_bases",
    "tree_entries",
    "tree_items",
    "tree_named",
]

COMMIT, TREE, BLOB, TAG = 1, 2, 3, 4
_OFS_DELTA, _REF_DELTA = 6, 7
_NAMES = {b"commit": COMMIT, b"tree": TREE, b"blob": BLOB, b"tag": TAG}
_HEX = frozenset("0123456789abcdef")
MAX_CHAIN = 64
"""The longest delta chain read (git's own default depth is 50)."""
_SCANNED = 256  # names of an index searched as bytes rather than halved
_KEPT = 1 << 24  # bytes of resolved delta chains a pack keeps
_TABLED = 4  # objects asked of a pack, past a quarter of it, found through its table


class Unreadable(ValueError):
    """An object that is not here as git writes it."""


def _varint(delta: bytes, at: int) -> tuple[int, int]:
    """A size in a delta's header (7 bits a byte, least significant first) and where
    what follows it starts."""
    value = shift = 0
    while True:
        if at >= len(delta):
            raise Unreadable("a delta ends inside its header")
        byte = delta[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at


def apply_delta(base: bytes, delta: bytes) -> bytes:
    """``base`` with git's ``delta`` (its copy and insert instructions) applied."""
    source, at = _varint(delta, 0)
    if source != len(base):
        raise Unreadable("a delta names a base of another size")
    wanted, at = _varint(delta, at)
    out: list[bytes] = []
    end = len(delta)
    try:
        while at < end:
            op = delta[at]
            at += 1
            if op & 0x80:
                # the offset's and the length's bytes, each there only if its bit is set
                offset = length = 0
                if op & 0x01:
                    offset = delta[at]
                    at += 1
                if op & 0x02:
                    offset |= delta[at] << 8
                    at += 1
                if op & 0x04:
                    offset |= delta[at] << 16
                    at += 1
                if op & 0x08:
                    offset |= delta[at] << 24
                    at += 1
                if op & 0x10:
                    length = delta[at]
                    at += 1
                if op & 0x20:
                    length |= delta[at] << 8
                    at += 1
                if op & 0x40:
                    length |= delta[at] << 16
                    at += 1
                length = length or 0x10000
                if offset + length > source:
                    raise Unreadable("a delta copies past its base")
                out.append(base[offset : offset + length])
            elif op:
                if at + op > end:
                    raise Unreadable("a delta inserts past its end")
                out.append(delta[at : at + op])
                at += op
            else:
                raise Unreadable("a delta holds a reserved instruction")
    except IndexError:
        raise Unreadable("a delta ends inside an instruction") from None
    result = b"".join(out)
    if len(result) != wanted:
        raise Unreadable("a delta makes an object of another size")
    return result


def tree_items(content: bytes) -> list[tuple[str, int, bytes]]:
    """A tree's entries in the order it holds them: (name, mode, 20-byte object id)."""
    found: list[tuple[str, int, bytes]] = []
    at, end = 0, len(content)
    while at < end:
        space = content.find(b" ", at)
        nul = content.find(b"\0", space + 1)
        if space < 0 or nul < 0 or nul + 21 > end:
            raise Unreadable("a tree entry is cut short")
        try:
            mode = int(content[at:space], 8)
            name = content[space + 1 : nul].decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            raise Unreadable("a tree entry does not read") from None
        at = nul + 21
        found.append((name, mode, content[nul + 1 : at]))
    return found


def tree_named(content: bytes, names: tuple[str, ...]) -> dict[str, tuple[int, str]]:
    """The entries of a tree named ``names`` (those it has), as :func:`tree_entries`
    has them, without making a table of every entry (a folder of a store of 100,000
    memories holds about 390): each entry stepped over from the first as git reads
    them (``<mode> <name>\\0<20-byte id>``), so a name inside an id is never taken
    for one."""
    wanted = {name.encode("utf-8"): name for name in names}
    found: dict[str, tuple[int, str]] = {}
    at, end = 0, len(content)
    while at < end:
        nul = content.find(b"\0", at)
        space = content.find(b" ", at, nul)
        if space < 0 or nul + 21 > end:
            raise Unreadable("a tree entry is cut short")
        name = wanted.get(content[space + 1 : nul])
        if name is not None:
            try:
                mode = int(content[at:space], 8)
            except ValueError:
                raise Unreadable("a tree entry does not read") from None
            found[name] = mode, content[nul + 1 : nul + 21].hex()
        at = nul + 21
    return found


def tree_entries(content: bytes) -> dict[str, tuple[int, str]]:
    """A tree's entries: name → (mode, object id)."""
    return {name: (mode, sha.hex()) for name, mode, sha in tree_items(content)}


_SIZE_SHIFT_MAX = 53
"""The last place a size's seven more bits may go: a size of 60 bits is past any
object's (git's fit in 64), and past what an inflate can be asked to stop at."""


def entry_header(data: mmap.mmap, offset: int) -> tuple[int, int, int]:
    """A packed object's type, size, and where what follows its header starts."""
    byte = data[offset]
    kind, size, shift, at = (byte >> 4) & 7, byte & 0x0F, 4, offset + 1
    while byte & 0x80:
        if shift > _SIZE_SHIFT_MAX:
            raise Unreadable(f"a packed object at {offset} declares a size past any object's")
        byte = data[at]
        size |= (byte & 0x7F) << shift
        shift, at = shift + 7, at + 1
    return kind, size, at


def ofs_base(data: mmap.mmap, at: int, offset: int) -> tuple[int, int]:
    """Where the base of the offset delta at ``offset`` starts (its distance is read
    at ``at``), and where the delta's zlib stream starts."""
    byte = data[at]
    distance, at = byte & 0x7F, at + 1
    while byte & 0x80:
        byte = data[at]
        distance, at = ((distance + 1) << 7) | (byte & 0x7F), at + 1
    if not 0 < distance <= offset:
        raise Unreadable(f"a packed delta at {offset} names no earlier base")
    return offset - distance, at


_INFLATE_IN_PLACE = 4096
"""Bytes of an object from which its stream is inflated where it lies in the pack: below,
copying it out costs less than the view that spares the copy."""


def inflate(data: mmap.mmap, at: int, size: int) -> tuple[bytes, int]:
    """The ``size`` bytes that the zlib stream at ``at`` inflates to, and where the
    stream ends."""
    # deflate grows incompressible input by 5 bytes per 16 KiB block, plus its framing
    stop = at + size + 5 * (size >> 14) + 64
    if size < _INFLATE_IN_PLACE:
        out, end, whole = _inflated(data[at:stop], at, size)
    else:
        # a large stream is inflated where it lies, not copied out first (only what
        # follows it in the chunk is, as the inflater's unused data), and let go of
        # before returning, so the pack's mapping can be closed
        view = memoryview(data)
        try:
            with view[at:stop] as chunk:
                out, end, whole = _inflated(chunk, at, size)
        finally:
            view.release()
    if len(out) != size or not whole:
        raise Unreadable(f"a packed object at {at} does not inflate to its size")
    return out, end


def _inflated(chunk: bytes | memoryview, at: int, size: int) -> tuple[bytes, int, bool]:
    """What the stream at the start of ``chunk`` (at ``at`` in the pack) inflates to, up
    to one byte past ``size``; where it ends in the pack; whether it ended."""
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(chunk, size + 1)
    except zlib.error as exc:
        raise Unreadable(f"a packed object at {at} does not inflate: {exc}") from None
    return out, at + len(chunk) - len(inflater.unused_data), inflater.eof


def inflate_whole(data: mmap.mmap | memoryview, at: int, size: int) -> bytes:
    """The ``size`` bytes that the zlib stream at ``at`` inflates to (as :func:`inflate`,
    without finding where the stream ends: what follows it is passed over). A stream
    that would inflate past ``size`` is refused after ``size + 1`` bytes, never inflated
    whole."""
    inflater = zlib.decompressobj()
    try:
        content = inflater.decompress(data[at : at + size + 5 * (size >> 14) + 64], size + 1)
    except zlib.error as exc:
        raise Unreadable(f"a packed object at {at} does not inflate: {exc}") from None
    if len(content) != size or not inflater.eof:
        raise Unreadable(f"a packed object at {at} does not inflate to its size")
    return content


def loose_object(data: bytes) -> tuple[int, bytes]:
    """A loose object's type number and content, from its file's bytes."""
    try:
        whole = zlib.decompress(data)
    except zlib.error as exc:
        raise Unreadable(f"a loose object does not inflate: {exc}") from None
    header, _, content = whole.partition(b"\0")
    name, _, size = header.partition(b" ")
    kind = _NAMES.get(name)
    if kind is None or not size.isdigit() or int(size) != len(content):
        raise Unreadable("a loose object has a damaged header")
    return kind, content


def pack_bases(folder: str) -> list[str]:
    """The packs of a pack folder in name order, each as its path without ``.idx``
    (none if there is no folder)."""
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".idx"))
    except FileNotFoundError:
        return []
    return [os.path.join(folder, name[: -len(".idx")]) for name in names]


class MappedPack:
    """One pack and its version-2 index, mapped: ``find`` looks an object up in the
    index; what reads the entries is the reader's own."""

    def __init__(self, base: str) -> None:
        with open(base + ".idx", "rb") as f:
            self._idx = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            with open(base + ".pack", "rb") as f:
                self._data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except BaseException:
            self._idx.close()
            raise
        idx = self._idx
        if len(idx) < 8 + 1024 or idx[:8] != b"\377tOc\0\0\0\2":
            self.close()
            raise Unreadable(f"{base}.idx is not a version-2 index")
        if self._data[:4] != b"PACK" or self._data[4:8] not in (b"\0\0\0\2", b"\0\0\0\3"):
            self.close()
            raise Unreadable(f"{base}.pack is not a pack")
        self._fanout = struct.unpack_from(">256L", idx, 8)
        self._count = self._fanout[255]
        self.count = self._count
        """How many objects the pack holds."""
        self._offsets = 8 + 1024 + self._count * 24
        if len(idx) < self._offsets + self._count * 4 + 40:
            self.close()
            raise Unreadable(f"{base}.idx is cut short")

    def find(self, sha: bytes) -> int | None:
        """The index's offset entry for ``sha`` (20 bytes), or ``None`` if it is not
        here; an entry with its top bit set names an offset past 2 GiB."""
        idx = self._idx
        first = sha[0]
        low = self._fanout[first - 1] if first else 0
        high = self._fanout[first]
        while high - low > _SCANNED:
            middle = (low + high) // 2
            at = 1032 + middle * 20
            name = idx[at : at + 20]
            if name < sha:
                low = middle + 1
            elif name > sha:
                high = middle
            else:
                return struct.unpack_from(">L", idx, self._offsets + middle * 4)[0]
        # the last few names: one search of their bytes costs less than halving on
        end = 1032 + high * 20
        at = idx.find(sha, 1032 + low * 20, end)
        while at >= 0 and (at - 1032) % 20:  # found across two names: look on
            at = idx.find(sha, at + 1, end)
        if at < 0:
            return None
        return struct.unpack_from(">L", idx, self._offsets + (at - 1032) // 20 * 4)[0]

    def large(self, entry: int) -> int:
        """Where in the pack an index offset entry with its top bit set points: its
        place in the index's table of 8-byte offsets (an object past 2 GiB)."""
        at = self._offsets + 4 * self._count + 8 * (entry & 0x7FFFFFFF)
        if at + 8 > len(self._idx) - 40:
            raise Unreadable("a pack index names an offset past its table of large offsets")
        return struct.unpack_from(">Q", self._idx, at)[0]

    def find_sorted(self, shas: list[bytes]) -> list[int | None]:
        """The index's offset entry for each of ``shas`` (20 bytes each, in ascending
        order), as :meth:`find` says it: one walk through the index's sorted names, each
        search starting where the one before found its name."""
        idx, fanout, offsets = self._idx, self._fanout, self._offsets
        found: list[int | None] = []
        at = 1032
        for sha in shas:
            first = sha[0]
            end = 1032 + fanout[first] * 20
            start = 1032 + fanout[first - 1] * 20 if first else 1032
            hit = idx.find(sha, at if at > start else start, end)
            while hit >= 0 and (hit - 1032) % 20:  # found across two names: look on
                hit = idx.find(sha, hit + 1, end)
            if hit < 0:
                found.append(None)
                continue
            at = hit  # an id asked twice is found again here
            found.append(struct.unpack_from(">L", idx, offsets + (hit - 1032) // 20 * 4)[0])
        return found

    def table(self) -> dict[bytes, int]:
        """Every object's index offset entry by its id (20 bytes), read from the index
        at once: finding many objects costs less through this than one by one. Not
        kept: a pack's table takes as much memory as its index."""
        idx, count = self._idx, self._count
        names = idx[1032 : 1032 + 20 * count]
        offsets = struct.unpack_from(f">{count}L", idx, self._offsets)
        ids = [names[i : i + 20] for i in range(0, 20 * count, 20)]
        return dict(zip(ids, offsets, strict=True))

    def sweep(
        self, offsets: list[int], other: Callable[[int], tuple[int, bytes] | None]
    ) -> list[tuple[int, bytes] | None]:
        """``(type, content)`` of the objects at ``offsets`` (sorted: one pass through
        the pack), those held whole inflated in one loop, ``other`` reading the rest
        (deltas: each reader resolves them its own way)."""
        return list(self.sweeping(offsets, other))

    def sweeping(
        self, offsets: list[int], other: Callable[[int], tuple[int, bytes] | None]
    ) -> Iterator[tuple[int, bytes] | None]:
        """As :meth:`sweep`, each object given as it is read (what reads them one by one
        holds one object at a time, not all of them)."""
        data, end = self._data, len(self._data)
        decompress = zlib.decompress
        with memoryview(data) as view:
            for offset in offsets:
                if offset >= end:
                    raise Unreadable("an index names an offset past its pack")
                byte = data[offset]
                if byte & 0x80 and offset + 1 < end and not data[offset + 1] & 0x80:
                    # a header of two bytes (a size below 2 KiB), read here as
                    # entry_header reads it
                    kind, size, at = (
                        (byte >> 4) & 7,
                        byte & 0x0F | data[offset + 1] << 4,
                        offset + 2,
                    )
                else:  # the one reader of an entry's header, whose bounds every read keeps
                    kind, size, at = entry_header(data, offset)
                if not COMMIT <= kind <= TAG:
                    yield other(offset)
                    continue
                if size >= _INFLATE_IN_PLACE:
                    # read through the view: the stream is not copied out of the map
                    yield kind, inflate_whole(view, at, size)
                    continue
                # a small object (most of a store's): inflated in one call, bounded by
                # what its stream can hold, then held to its size as inflate_whole does
                try:
                    content = decompress(view[at : at + size + 64], 15, size)
                except zlib.error as exc:
                    raise Unreadable(f"a packed object at {at} does not inflate: {exc}") from None
                if len(content) != size:
                    raise Unreadable(f"a packed object at {at} does not inflate to its size")
                yield kind, content

    def close(self) -> None:
        self._idx.close()
        self._data.close()


class _Pack(MappedPack):
    """One pack, its objects read with their deltas applied here. What a delta chain
    resolves is kept (up to :data:`_KEPT` bytes), so reading a chain's objects one
    after another (a file's revisions, as git packs them) applies each delta once,
    not once for every object read through it."""

    def __init__(self, base: str) -> None:
        super().__init__(base)
        self._bases: dict[int, tuple[int, bytes]] = {}
        self._held = 0

    def offset(self, sha: bytes) -> int | None:
        """Where ``sha`` (20 bytes) starts in the pack, or ``None`` if it is not here."""
        offset = self.find(sha)
        if offset is not None and offset & 0x80000000:
            raise Unreadable("an object past 2 GiB of its pack")
        return offset

    def read(
        self, offset: int, by_id: Callable[[bytes, int], tuple[int, bytes]], depth: int
    ) -> tuple[int, bytes]:
        """``(type, content)`` of the object at ``offset``, deltas applied."""
        if depth > MAX_CHAIN:
            raise Unreadable("a delta chain longer than gitmem reads")
        found = self._bases.get(offset)
        if found is not None:
            return found
        data = self._data
        if offset >= len(data):
            raise Unreadable("an index names an offset past its pack")
        kind, size, at = entry_header(data, offset)
        if kind in (COMMIT, TREE, BLOB, TAG):
            found = kind, inflate_whole(data, at, size)
            if depth:  # the base of a delta: the next object of its chain needs it too
                self._keep(offset, found)
            return found
        if kind == _OFS_DELTA:
            start, at = ofs_base(data, at, offset)
            base = self.read(start, by_id, depth + 1)
        elif kind == _REF_DELTA:
            base = by_id(data[at : at + 20], depth + 1)
            at += 20
        else:
            raise Unreadable(f"a packed object of unknown type {kind}")
        found = base[0], apply_delta(base[1], inflate(data, at, size)[0])
        self._keep(offset, found)
        return found

    def _keep(self, offset: int, found: tuple[int, bytes]) -> None:
        if self._held + len(found[1]) > _KEPT:
            self._bases.clear()
            self._held = 0
        self._bases[offset] = found
        self._held += len(found[1])


class Objects:
    """The objects of one git directory's ``objects`` folder, read on demand."""

    def __init__(self, folder: str) -> None:
        self._folder = folder
        self._packs: list[_Pack] | None = None

    def read(self, sha: str) -> tuple[int, bytes]:
        """``(type, content)`` of the object ``sha`` (40 hex digits); ``KeyError`` if
        it is not here, :class:`Unreadable` if it does not read whole."""
        if len(sha) != 40 or not _HEX.issuperset(sha):
            raise Unreadable(f"{sha!r} is not an object id")
        return self._by_id(bytes.fromhex(sha), 0)

    def read_many(self, shas: Iterable[str]) -> dict[str, tuple[int, bytes]]:
        """``(type, content)`` of each object of ``shas`` (hex ids, as trees name them),
        read as :meth:`read_each` reads them."""
        wanted = list(shas)
        return dict(
            zip(wanted, self.read_each([bytes.fromhex(sha) for sha in wanted]), strict=True)
        )

    def read_each(self, ids: list[bytes]) -> list[tuple[int, bytes]]:
        """``(type, content)`` of each object of ``ids`` (20 bytes each), in their
        order, read as :meth:`each` reads them."""
        found: list[tuple[int, bytes]] = [(0, b"")] * len(ids)
        for i, got in self.each(ids):
            found[i] = got
        return found

    def each(self, ids: list[bytes]) -> Iterator[tuple[int, tuple[int, bytes]]]:
        """Each object of ``ids`` (20 bytes each) as it is read: its place in ``ids``
        and ``(type, content)``. Those in packs are read in the order each pack holds
        them: one walk through its index, one sweep through the pack, not a seek per
        object. Errors as :meth:`read`'s."""
        packs = self._all_packs()
        rest = list(range(len(ids)))
        by_id = False  # whether ``rest`` is in the order of the ids, as indexes sort them
        # the largest packs first: most objects are found in the first one asked
        for pack in sorted(packs, key=lambda pack: -pack.count):
            if not rest:
                break
            if len(rest) * _TABLED < pack.count:
                if not by_id:  # sorted only for a walk: a table is asked in any order
                    rest.sort(key=ids.__getitem__)
                    by_id = True
                found = pack.find_sorted([ids[i] for i in rest])
            else:  # most of the pack: its whole table costs less than a walk
                table = pack.table()
                found = [table.get(ids[i]) for i in rest]
            here = [i for i, offset in zip(rest, found, strict=True) if offset is not None]
            offsets = [offset for offset in found if offset is not None]
            if offsets and max(offsets) & 0x80000000:
                raise Unreadable("an object past 2 GiB of its pack")
            if len(here) < len(rest):
                rest = [i for i, offset in zip(rest, found, strict=True) if offset is None]
            else:
                rest = []
            # in the pack's order, by offset alone (a sort of plain numbers)
            by_offset = sorted(range(len(offsets)), key=offsets.__getitem__)
            read = pack.sweeping(
                [offsets[k] for k in by_offset],
                lambda offset, pack=pack: pack.read(offset, self._by_id, 0),
            )
            try:
                for i, got in zip([here[k] for k in by_offset], read, strict=True):
                    if got is None:  # not so: this reader resolves every delta itself
                        raise Unreadable("a packed object was not read")
                    yield i, got
            except (IndexError, struct.error) as exc:
                raise Unreadable(f"a pack entry is cut short: {exc}") from None
        if not by_id:
            rest.sort(key=ids.__getitem__)
        for i in rest:
            yield i, self._loose(ids[i].hex())

    def _by_id(self, binsha: bytes, depth: int) -> tuple[int, bytes]:
        packs = self._all_packs()
        for i, pack in enumerate(packs):
            offset = pack.offset(binsha)
            if offset is not None:
                if i:  # objects read together sit together: ask this pack first next time
                    packs.insert(0, packs.pop(i))
                try:
                    return pack.read(offset, self._by_id, depth)
                except (IndexError, struct.error) as exc:
                    raise Unreadable(f"a pack entry is cut short: {exc}") from None
        return self._loose(binsha.hex())

    def _loose(self, sha: str) -> tuple[int, bytes]:
        try:
            with open(os.path.join(self._folder, sha[:2], sha[2:]), "rb") as f:
                data = f.read()
        except FileNotFoundError:
            raise KeyError(sha) from None
        except OSError as exc:
            raise Unreadable(f"object {sha} does not read: {exc}") from None
        try:
            return loose_object(data)
        except Unreadable as exc:
            raise Unreadable(f"object {sha}: {exc}") from None

    def _all_packs(self) -> list[_Pack]:
        if self._packs is None:
            packs: list[_Pack] = []
            for base in pack_bases(os.path.join(self._folder, "pack")):
                try:
                    packs.append(_Pack(base))
                except FileNotFoundError:
                    continue  # a pack replaced meanwhile
                except (OSError, ValueError) as exc:
                    name = os.path.basename(base)
                    raise Unreadable(f"pack {name}.idx does not read: {exc}") from None
            self._packs = packs
        return self._packs
