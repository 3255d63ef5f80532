"""Writing new objects durably as one small pack, and keeping the number of packs small.

Every write path (a commit, a merge, a marker's origin commit) hands its new objects to
``write_objects``, a copy between repositories (``transfer``) its raw objects and deltas
to ``write_pack``, and ``consolidate`` the packs it combines: all three end in one
writer, which puts the objects on disk as ONE pack and its index: both written to
temporary files in ``objects/pack``, fsynced together, renamed into place (the pack first,
as git does, so no reader ever finds an index without its pack), then made durable by
one fsync of the folder. Three fsyncs, whatever the number of objects; a loose object
costs a file fsync and a folder fsync each, and a lock-file dance.

Each write adds a pack, and a reader looks an object up pack by pack, so
``consolidate`` combines them once more than ``PACK_LIMIT`` have piled up: the small
packs (and any loose objects another tool wrote) are rolled into one, chosen so that the
packs left form a geometric progression by object count, as ``git repack --geometric=2``
does: rewriting stays proportional to what was written, not to the repository. The
combined pack is durable before any pack it replaces is deleted, so a kill at any
instant leaves every object readable; a duplicate left by a kill is harmless and the
next consolidation folds it in.

Readers in other processes find new packs by themselves: dulwich rescans the pack
folder when an object is in none of the packs it knows, and rescans when a pack it
knew disappears.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import secrets
import struct
import time
import zlib
from collections.abc import Iterable, Iterator
from contextlib import suppress
from io import BufferedWriter, BytesIO
from itertools import accumulate

from dulwich.object_format import DEFAULT_OBJECT_FORMAT
from dulwich.objects import RawObjectID, ShaFile, hex_to_sha, valid_hexsha
from dulwich.pack import OFS_DELTA, REF_DELTA, Pack, load_pack_index_file, pack_object_header

from gitmem.store.locking import flocked, fsync_dir, fsync_together, storage_error

__all__ = [
    "PACKED",
    "PACK_LIMIT",
    "Record",
    "Staged",
    "consolidate",
    "pack_count",
    "pack_folder",
    "stage",
    "write_objects",
    "write_pack",
]

PACK_LIMIT = 32
"""Packs allowed to pile up before ``consolidate`` combines them (``git gc --auto``
allows 50; fewer keeps a lookup, which tries pack after pack, cheap)."""
STALE_SECONDS = 3600
"""Age after which a temporary file or an index-less pack is a killed writer's leftover:
no writer takes that long between creating it and renaming it into place."""
_TEMP = "tmp_gitmem_"
# git's own temporary names in objects/pack, which `git gc` prunes once old
_FOREIGN_TEMPS = ("tmp_pack_", "tmp_idx_")
_KEEP_SUFFIXES = (".keep", ".promisor")
_WHOLE = frozenset({1, 2, 3, 4})  # commit, tree, blob, tag: the other types are deltas
_TREE = 2
_SMALL = 4096  # bytes: up to this, an object is deflated with a 4 KiB window
_SIBLINGS = (".idx", ".rev", ".bitmap", ".mtimes", ".pack")


def write_objects(objects_dir: str, objects: Iterable[ShaFile], *, sync_folder: bool = True) -> str:
    """Write ``objects`` durably as one pack; returns the folder it went into.

    With ``sync_folder=False`` the pack's name is not yet durable: the caller must fsync
    the folder it returns before anything (a ref) names what the pack holds.
    Raises ``OSError``; a failure leaves no pack that a reader would see.
    """
    unique = {obj.id: obj for obj in objects}
    records = ((o.type_num, o.as_raw_string(), o.sha().digest(), None) for o in unique.values())
    return write_pack(objects_dir, records, len(unique), sync_folder=sync_folder)


def write_pack(
    objects_dir: str,
    records: Iterable[Record],
    count: int,
    *,
    level: int | None = -1,
    sync_folder: bool = True,
) -> str:
    """Write ``count`` records durably as one pack and its index; returns the pack folder.

    The one way gitmem puts a pack on disk (a commit, a consolidation, a copy between
    repositories): pack and index written to temporary names, fsynced together, renamed
    pack first, then the folder fsynced (left to the caller with ``sync_folder=False``,
    who must do it before a ref names what the pack holds). ``level`` is zlib's
    (``None``: chosen per object, see ``stage``).
    Raises ``OSError``; a failure leaves no pack that a reader would see.
    """
    pack_dir = pack_folder(objects_dir)
    if count:
        _write_pack(pack_dir, iter(records), count, level, sync_folder)
    return pack_dir


def pack_count(objects_dir: str) -> int:
    """How many packs (with their index) ``objects/pack`` holds."""
    try:
        names = os.listdir(os.path.join(objects_dir, "pack"))
    except FileNotFoundError:
        return 0
    return sum(1 for n in names if n.endswith(".idx"))


def consolidate(objects_dir: str, *, everything: bool = False) -> int:
    """Roll small packs and loose objects into one pack; returns how many objects it wrote.

    ``everything`` combines every pack (but those git is told to keep); otherwise only
    those the geometric rule picks. The caller holds the packing lock: two runs at once
    would each delete what the other just combined.
    """
    pack_dir = pack_folder(objects_dir)
    _remove_leftovers(pack_dir)
    listing = set(os.listdir(pack_dir))
    packs = _packs(pack_dir, listing)
    chosen = packs if everything else _roll_up(packs)
    loose = _loose(objects_dir)
    if len(chosen) < 2 and not loose:
        return 0
    opened: list[_Opened] = []
    try:
        sources: dict[bytes, Source] = {}
        for name in chosen:
            base = os.path.join(pack_dir, name)
            with open(base + ".pack", "rb") as f:
                data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            opened.append(_Opened(base, data))
            spans = sorted(_index_entries(base + ".idx"), key=lambda e: e[1])
            ends = [e[1] for e in spans[1:]] + [len(data) - 20]
            for (sha, start, crc), end in zip(spans, ends, strict=True):
                sources.setdefault(sha, (len(opened) - 1, start, end, crc))
        for hexsha, path in loose.items():
            sources.setdefault(hex_to_sha(hexsha), path)
        written = _write_pack(pack_dir, _records(sources, opened), len(sources), -1, True)
    finally:
        for pack in opened:
            pack.close()
    # only now that the combined pack is durable may what it replaces go
    for name in chosen:
        if name != written:
            _remove_pack(pack_dir, name, listing)
    for path in loose.values():
        with suppress(FileNotFoundError):
            os.unlink(path)
    fsync_dir(pack_dir)
    return len(sources)


# -- writing a pack -----------------------------------------------------------------


Record = tuple[int, bytes, bytes, bytes | None]
"""An object to write: ``(type, payload, binary id, delta base's binary id)``. With no
base, the payload is the object's content (type 1 to 4: commit, tree, blob, tag); with
a base, it is a git delta that makes the object from the base, written as an offset
delta when the base is earlier in the same pack, else as a ref delta. Type ``PACKED``:
the payload is the object already packed (header and zlib stream), copied as it is."""
PACKED = 0

Source = str | tuple[int, int, int, int | None]
"""Where an object to combine is: a loose object's path, or (which pack, start, end,
CRC-32 if its index records one)."""
Entry = tuple[bytes, int, int]
"""An index entry: binary id, offset in the pack, CRC-32 of the packed object."""


# as `git gc --auto`: pack once about 6,700 loose objects have piled up, judged by
# sampling the objects/17 fan-out directory (6700 / 256 ≈ 27)
_GC_SAMPLE_LIMIT = 27


def needs_packing(objects_dir: str) -> bool:
    """Whether enough packs have piled up to combine, or loose objects (which other
    tools write) to pack, as ``git gc --auto`` would judge."""
    if pack_count(objects_dir) > PACK_LIMIT:
        return True
    try:
        return len(os.listdir(os.path.join(objects_dir, "17"))) > _GC_SAMPLE_LIMIT
    except FileNotFoundError:
        return False


def pack_under(lock: str, objects_dir: str, *, everything: bool) -> int | None:
    """``consolidate`` under the pack lock file ``lock``; ``None`` (and nothing done)
    if another process is at it. Writers need not wait: they only add packs, and a
    pack is deleted only once the one that replaces it is durable."""
    with flocked(lock, blocking=False) as mine:
        if not mine:
            return None
        try:
            return consolidate(objects_dir, everything=everything)
        except OSError as exc:
            raise storage_error(exc, "packing objects") from exc


def _write_pack(
    pack_dir: str, records: Iterator[Record], count: int, level: int | None, sync: bool
) -> str:
    staged = stage(pack_dir, records, count, level=level)
    try:
        fsync_together(*staged.fds)
        name = staged.install()
    except BaseException:
        staged.discard()
        raise
    if sync:
        fsync_dir(pack_dir)
    return name


class Staged:
    """A pack and its index written to temporary files in ``objects/pack``: neither
    durable nor seen by any reader until the caller fsyncs ``fds`` and calls
    ``install``; ``discard`` removes them. (A commit fsyncs them in one flush with its
    ref's lock file.)"""

    def __init__(
        self, pack_dir: str, name: str, temps: tuple[str, str], fds: tuple[int, int]
    ) -> None:
        self.pack_dir = pack_dir
        self.name = name
        """``pack-<checksum>``, the name ``install`` gives the pair."""
        self._temps = temps
        self.fds = fds
        """The open temporary pack and index, to fsync."""
        self._open = True

    def _close(self) -> None:
        if self._open:
            self._open = False
            for fd in self.fds:
                os.close(fd)

    def install(self) -> str:
        """Rename the pack and then its index into place (so no reader ever finds an
        index without its pack); returns the pack's name. Its name in the folder is not
        yet durable: fsync ``pack_dir`` before a ref names what it holds."""
        self._close()
        temp_pack, temp_idx = self._temps
        base = os.path.join(self.pack_dir, self.name)
        os.rename(temp_pack, base + ".pack")
        os.rename(temp_idx, base + ".idx")
        return self.name

    def discard(self) -> None:
        """Remove the temporary files (after a failure, or when nothing is published)."""
        self._close()
        for path in self._temps:
            with suppress(OSError):
                os.unlink(path)


def stage(
    pack_dir: str, records: Iterable[Record], count: int, *, level: int | None = None
) -> Staged:
    """Write ``count`` records as a pack and its index to temporary files in
    ``pack_dir`` (see ``Staged``). ``level`` is zlib's; ``None`` chooses per object: a
    tree is stored as it is (its object ids, most of it, do not shrink, and deflating it
    costs more than the rest of a commit), anything small is deflated with a small
    window. Raises ``OSError`` and leaves nothing behind."""
    token = secrets.token_hex(8)
    # no .pack/.idx suffix: a reader scanning the folder must not take them for a pack
    temps = (
        os.path.join(pack_dir, f"{_TEMP}pack_{token}"),
        os.path.join(pack_dir, f"{_TEMP}idx_{token}"),
    )
    fds: list[int] = []
    try:
        for path in temps:
            fds.append(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444))
        with os.fdopen(fds[0], "wb", closefd=False) as pack:
            entries, checksum = _pack_data(pack, iter(records), count, level)
        index = _index(entries, checksum)
        written = 0
        while written < len(index):
            written += os.write(fds[1], index[written:])
    except BaseException:
        for fd in fds:
            os.close(fd)
        for path in temps[: len(fds)]:
            with suppress(OSError):
                os.unlink(path)
        raise
    return Staged(pack_dir, "pack-" + checksum.hex(), temps, (fds[0], fds[1]))


# The pack's framing and its index (gitformat-pack) are written here, each object's
# header by dulwich's pack_object_header, rather than by dulwich's general writers, which for a commit's four objects cost about ten times as
# much Python (a write call per fan-out entry, a generator per chunk).


def _pack_data(
    f: BufferedWriter, records: Iterator[Record], count: int, level: int | None
) -> tuple[list[Entry], bytes]:
    """Write a version-2 pack of ``count`` records; returns the index entries and the
    pack's checksum."""
    digest = hashlib.sha1()
    head = b"PACK" + struct.pack(">LL", 2, count)
    f.write(head)
    digest.update(head)
    offset = len(head)
    entries: list[Entry] = []
    offsets: dict[bytes, int] = {}
    for type_num, payload, sha, base in records:
        if type_num == PACKED:
            packed = payload
        elif base is None:
            header = pack_object_header(type_num, None, len(payload), DEFAULT_OBJECT_FORMAT)
            packed = bytes(header) + _deflate(type_num, payload, level)
        elif (at := offsets.get(base)) is not None:
            header = pack_object_header(OFS_DELTA, offset - at, len(payload), DEFAULT_OBJECT_FORMAT)
            packed = bytes(header) + _deflate(type_num, payload, level)
        else:
            header = pack_object_header(REF_DELTA, base, len(payload), DEFAULT_OBJECT_FORMAT)
            packed = bytes(header) + _deflate(type_num, payload, level)
        crc = zlib.crc32(packed)
        f.write(packed)
        digest.update(packed)
        entries.append((sha, offset, crc))
        offsets[sha] = offset
        offset += len(packed)
    if len(entries) != count:
        raise AssertionError(f"packed {len(entries)} objects, announced {count}")
    checksum = digest.digest()
    f.write(checksum)
    return entries, checksum


def _deflate(type_num: int, payload: bytes, level: int | None) -> bytes:
    """``payload`` as a zlib stream (git reads any level, stored included)."""
    if level is not None:
        return zlib.compress(payload, level)
    if type_num == _TREE:
        return zlib.compress(payload, 0)
    if len(payload) <= _SMALL:
        # zlib's default window and hash table take longer to set up than a small
        # object takes to deflate
        deflate = zlib.compressobj(6, zlib.DEFLATED, 12, 4)
        return deflate.compress(payload) + deflate.flush()
    return zlib.compress(payload)


def _index(entries: list[Entry], checksum: bytes) -> bytes:
    """A version-2 pack index of ``entries`` for the pack whose checksum is ``checksum``."""
    entries = sorted(entries)
    counts = [0] * 256
    for sha, _, _ in entries:
        counts[sha[0]] += 1
    fanout = accumulate(counts)
    small: list[int] = []
    large: list[int] = []
    for _, offset, _ in entries:
        if offset < 0x80000000:
            small.append(offset)
        else:  # past 2 GiB: an entry in the table of 8-byte offsets
            small.append(0x80000000 | len(large))
            large.append(offset)
    n = len(entries)
    body = b"".join(
        [
            b"\xfftOc",
            struct.pack(">L", 2),
            struct.pack(">256L", *fanout),
            b"".join(sha for sha, _, _ in entries),
            struct.pack(f">{n}L", *(crc for _, _, crc in entries)),
            struct.pack(f">{n}L", *small),
            struct.pack(f">{len(large)}Q", *large),
            checksum,
        ]
    )
    return body + hashlib.sha1(body).digest()


class _Opened:
    """A pack being combined: its data mapped, and dulwich's reader of it, made only
    if a delta (a pack git or a fetch wrote) has to be resolved."""

    def __init__(self, base: str, data: mmap.mmap) -> None:
        self.base = base
        self.data = data
        self._pack: Pack | None = None

    def get_raw(self, sha: bytes) -> tuple[int, bytes]:
        if self._pack is None:
            self._pack = Pack(self.base, object_format=DEFAULT_OBJECT_FORMAT)
        return self._pack.get_raw(RawObjectID(sha))

    def close(self) -> None:
        self.data.close()
        if self._pack is not None:
            self._pack.close()


def _index_entries(path: str) -> list[tuple[bytes, int, int | None]]:
    """Every entry of a pack index (binary id, offset, CRC-32, ``None`` if a version-1
    index records none), read with a few slices rather than an object per entry."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\xfftOc\x00\x00\x00\x02":
        index = load_pack_index_file(path, BytesIO(data), DEFAULT_OBJECT_FORMAT)
        return [(bytes(sha), offset, crc) for sha, offset, crc in index.iterentries()]
    n = struct.unpack_from(">L", data, 8 + 255 * 4)[0]
    names_at = 8 + 256 * 4
    crcs_at = names_at + 20 * n
    offsets_at = crcs_at + 4 * n
    large_at = offsets_at + 4 * n
    if len(data) < large_at + 40:
        raise OSError(f"pack index {path} is cut short")
    crcs = struct.unpack_from(f">{n}L", data, crcs_at)
    offsets = list(struct.unpack_from(f">{n}L", data, offsets_at))
    for i, offset in enumerate(offsets):
        if offset & 0x80000000:  # an entry in the table of 8-byte offsets
            offsets[i] = struct.unpack_from(">Q", data, large_at + 8 * (offset & 0x7FFFFFFF))[0]
    return [
        (data[names_at + 20 * i : names_at + 20 * i + 20], offsets[i], crcs[i]) for i in range(n)
    ]


def _records(sources: dict[bytes, Source], opened: list[_Opened]) -> Iterator[Record]:
    for sha, source in sources.items():
        if isinstance(source, str):
            obj = ShaFile.from_path(source)
            yield obj.type_num, obj.as_raw_string(), sha, None
            continue
        which, start, end, crc = source
        pack = opened[which]
        packed = pack.data[start:end]
        # a whole object is copied as it is packed, with no zlib round trip; a delta (a
        # pack git or a fetch wrote) is resolved and packed whole
        if (packed[0] >> 4) & 7 in _WHOLE and crc in (None, zlib.crc32(packed)):
            yield PACKED, packed, sha, None
        else:
            type_num, raw = pack.get_raw(sha)
            yield type_num, raw, sha, None


def pack_folder(objects_dir: str) -> str:
    """``objects/pack``, made (and made durable) if it is missing."""
    pack_dir = os.path.join(objects_dir, "pack")
    if not os.path.isdir(pack_dir):
        os.makedirs(pack_dir, exist_ok=True)
        fsync_dir(objects_dir)
    return pack_dir


# -- choosing and removing packs ----------------------------------------------------------


def _packs(pack_dir: str, names: set[str]) -> dict[str, int]:
    """Every pack that may be combined (name → object count): indexed, not kept.
    ``names``: what the folder holds."""
    found: dict[str, int] = {}
    for name in names:
        if not name.endswith(".idx"):
            continue
        base = name[: -len(".idx")]
        if base + ".pack" not in names or any(base + s in names for s in _KEEP_SUFFIXES):
            continue
        with suppress(OSError):
            found[base] = _idx_count(os.path.join(pack_dir, name))
    return found


def _idx_count(path: str) -> int:
    """The object count of a version-2 pack index (its fan-out table's last entry)."""
    with open(path, "rb") as f:
        head = f.read(8 + 256 * 4)
    if head[:4] == b"\xfftOc":
        return int.from_bytes(head[8 + 255 * 4 : 8 + 256 * 4], "big")
    return int.from_bytes(head[255 * 4 : 256 * 4], "big")  # version 1: no header


def _roll_up(packs: dict[str, int]) -> list[str]:
    """The packs to combine so that the rest, with the combined one, grow at least
    twofold from one to the next (``git repack --geometric=2``)."""
    if len(packs) <= PACK_LIMIT:
        return []
    order = sorted(packs, key=lambda n: (packs[n], n))
    counts = [packs[n] for n in order]
    # the largest split below which the packs above already form the progression
    split = 0
    for i in range(len(counts) - 1, 0, -1):
        if counts[i] < 2 * counts[i - 1]:
            split = i
            break
    rolled = sum(counts[:split])
    while split < len(counts) and counts[split] < 2 * rolled:
        rolled += counts[split]
        split += 1
    return order[: max(split, 2)]


def _remove_pack(pack_dir: str, name: str, names: set[str]) -> None:
    # the index first: a reader never finds an index whose pack is gone
    for suffix in _SIBLINGS:
        if name + suffix in names:
            with suppress(FileNotFoundError):
                os.unlink(os.path.join(pack_dir, name + suffix))


def _remove_leftovers(pack_dir: str) -> None:
    """Remove what a killed writer left in ``objects/pack``: temporary files, and a pack
    renamed into place whose index never followed (it was never acknowledged)."""
    names = set(os.listdir(pack_dir))
    now = time.time()
    for name in names:
        temp = name.startswith(_TEMP) or name.startswith(_FOREIGN_TEMPS)
        orphan = name.endswith(".pack") and name[: -len(".pack")] + ".idx" not in names
        if not (temp or orphan):
            continue
        path = os.path.join(pack_dir, name)
        with suppress(FileNotFoundError):
            if now - os.stat(path).st_mtime > STALE_SECONDS:
                os.unlink(path)


def _loose(objects_dir: str) -> dict[str, str]:
    """Every loose object (hex id → path)."""
    found: dict[str, str] = {}
    for fanout in os.listdir(objects_dir):
        if len(fanout) != 2:
            continue
        folder = os.path.join(objects_dir, fanout)
        with suppress(NotADirectoryError, FileNotFoundError):
            for rest in os.listdir(folder):
                if len(rest) == 38 and valid_hexsha(fanout + rest):
                    found[fanout + rest] = os.path.join(folder, rest)
    return found
