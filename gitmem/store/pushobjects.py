"""The objects a push hook reads, straight from the object folders' files.

A hook is a process of its own for every push: what it reads must cost little to set up
and little per object. :class:`Objects` reads the folders a receive-pack leaves the hook
(its quarantine, then the repository's own folder and that folder's alternates) through
their files alone: a pack's version-2 index and data mapped, an object's offset found
in the index (by a dictionary of its names once a push has asked for enough of them),
its zlib stream inflated and a delta applied to its base (each object of a pack read
once and kept, within a budget: a hook reads nearly every object a push brings, each
delta's chain of bases once); a loose object read from its file. dulwich's repository
and pack layers are not loaded: what this reader does not read (an index of another
version, an offset past 2 GiB, a pack that landed since the folder was listed) is
asked of dulwich's object store for that folder, loaded then.
"""

from __future__ import annotations

import mmap
import os
import struct
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

try:
    from dulwich._pack import (
        apply_delta as _native_delta,  # pyright: ignore[reportUnknownVariableType]
    )
except ImportError:  # a dulwich built without its native parts
    from dulwich.pack import (
        apply_delta as _native_delta,  # pyright: ignore[reportUnknownVariableType]
    )

if TYPE_CHECKING:
    from dulwich.object_store import DiskObjectStore

__all__ = ["Objects", "common_dir", "control_dir"]

_APPLY = cast("Callable[[bytes, bytes], list[bytes]]", _native_delta)
_KINDS = {b"commit": 1, b"tree": 2, b"blob": 3, b"tag": 4}
_WHOLE = frozenset(_KINDS.values())
_OFS_DELTA, _REF_DELTA = 6, 7
# a pack is looked up by halves in its index until it has been asked for one in
# _NAMED_SHARE of its objects, then by a dictionary of its names (a push's own pack
# soon, a large repository's pack only when a push asks for much of it)
_NAMED_SHARE = 64
_KEPT_MAX = 64 << 20  # bytes of read objects a pack keeps
_ALTERNATES_DEPTH = 5  # git's own bound on chained alternates
_Found = tuple[int, bytes]
"""An object's type number and content."""


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
        self.main = _with_alternates(main, 0)
        self.folders = ([_Folder(quarantine)] if quarantine else []) + self.main

    def get(self, sha: bytes) -> _Found | None:
        """``(type number, content)`` of the object with hex id ``sha``, or ``None``;
        raises when the object is there but does not read."""
        binary = bytes.fromhex(sha.decode("ascii"))
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

    def holds(self, sha: bytes, main_only: bool = False) -> bool:
        """Whether an object is here (``main_only``: in the repository before the push)."""
        binary = bytes.fromhex(sha.decode("ascii"))
        return any(folder.holds(binary) for folder in (self.main if main_only else self.folders))

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


def _with_alternates(path: str, depth: int) -> list[_Folder]:
    """The folder at ``path`` and those its ``info/alternates`` names, in turn."""
    found = [_Folder(path)]
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
            found += _with_alternates(os.path.normpath(os.path.join(path, line)), depth + 1)
    return found


class _Folder:
    """One object folder: its packs (listed once) and its loose objects."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.packs: list[_Pack] = []
        self.odd = False
        """Whether some pack here is dulwich's to read."""
        self._store: DiskObjectStore | None = None
        folder = os.path.join(path, "pack")
        try:
            names = sorted(n for n in os.listdir(folder) if n.endswith(".idx"))
        except OSError:
            names = []
        for name in names:
            try:
                self.packs.append(_Pack(os.path.join(folder, name[: -len(".idx")])))
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
                    data = f.read()
            except FileNotFoundError:
                return None
            return _loose(data)
        return None

    def holds(self, binary: bytes) -> bool:
        if any(pack.offset(binary) is not None for pack in self.packs):
            return True
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


def _loose(data: bytes) -> _Found:
    """A loose object's type number and content, from its file's bytes."""
    whole = zlib.decompress(data)
    header, _, content = whole.partition(b"\0")
    kind, _, size = header.partition(b" ")
    number = _KINDS.get(kind)
    if number is None or not size.isdigit() or int(size) != len(content):
        raise ValueError("a loose object has a damaged header")
    return number, content


class _Pack:
    """One pack and its version-2 index, mapped."""

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
        if len(idx) < 8 + 1024 or idx[:8] != b"\377tOc\0\0\0\2" or self._data[:4] != b"PACK":
            self.close()
            raise ValueError(f"{base} is not a version-2 pack and index")
        self._fanout = struct.unpack_from(">256L", idx, 8)
        self._count = self._fanout[255]
        self._offsets = 8 + 1024 + self._count * 24
        if len(idx) < self._offsets + self._count * 4 + 40:
            self.close()
            raise ValueError(f"{base}.idx is cut short")
        self._named: dict[bytes, int] | None = None
        self._asked = 0
        self._kept: dict[int, _Found] = {}
        self._kept_bytes = 0

    def offset(self, binary: bytes) -> int | None:
        """Where the object ``binary`` starts in the pack (``None``: not here). An
        offset past 2 GiB is dulwich's to read: ``-1``."""
        self._asked += 1
        if self._named is None and self._asked * _NAMED_SHARE > self._count:
            count = self._count
            names = self._idx[1032 : 1032 + 20 * count]
            starts = struct.unpack_from(f">{count}L", self._idx, self._offsets)
            ids = [names[i : i + 20] for i in range(0, 20 * count, 20)]
            self._named = dict(zip(ids, starts, strict=True))
        at = self._named.get(binary) if self._named is not None else self._search(binary)
        if at is None:
            return None
        return -1 if at & 0x80000000 else at

    def _search(self, binary: bytes) -> int | None:
        first = binary[0]
        low, high = (self._fanout[first - 1] if first else 0), self._fanout[first] - 1
        idx = self._idx
        while low <= high:
            mid = (low + high) // 2
            name = idx[1032 + mid * 20 : 1052 + mid * 20]
            if name < binary:
                low = mid + 1
            elif name > binary:
                high = mid - 1
            else:
                return struct.unpack_from(">L", idx, self._offsets + mid * 4)[0]
        return None

    def read(self, offset: int, base: Callable[[bytes], _Found]) -> _Found | None:
        """The object at ``offset``, its delta chain resolved (``base`` finds a base
        named by id elsewhere); ``None`` for what dulwich is to read."""
        if offset < 0:
            return None
        chain: list[bytes] = []  # the deltas met, newest first
        starts: list[int] = []
        found = self._kept.get(offset)
        at = offset
        while found is None:
            kind, size, start = self._header(at)
            if kind in _WHOLE:
                found = (kind, _inflate(self._data, start, size))
                break
            if kind == _OFS_DELTA:
                data = self._data
                byte = data[start]
                distance, start = byte & 0x7F, start + 1
                while byte & 0x80:
                    byte = data[start]
                    distance, start = ((distance + 1) << 7) | (byte & 0x7F), start + 1
                if not 0 < distance <= at:
                    raise ValueError(f"a packed delta at {at} names no earlier base")
                chain.append(_inflate(data, start, size))
                starts.append(at)
                at -= distance
            elif kind == _REF_DELTA:
                named = self._data[start : start + 20]
                chain.append(_inflate(self._data, start + 20, size))
                starts.append(at)
                inside = self.offset(named)
                if inside is None or inside < 0:
                    found = base(named)
                    break
                at = inside
            else:
                raise ValueError(f"a packed object at {at} has type {kind}")
            found = self._kept.get(at)
        self._keep(at, found)
        for delta, start in zip(reversed(chain), reversed(starts), strict=True):
            found = (found[0], b"".join(_APPLY(found[1], delta)))
            self._keep(start, found)
        return found

    def _keep(self, offset: int, found: _Found) -> None:
        if offset in self._kept:
            return
        self._kept_bytes += len(found[1])
        if self._kept_bytes > _KEPT_MAX:
            self._kept.clear()
            self._kept_bytes = len(found[1])
        self._kept[offset] = found

    def _header(self, offset: int) -> tuple[int, int, int]:
        """A packed object's type, size, and where what follows its header starts."""
        data = self._data
        byte = data[offset]
        kind, size, shift, at = (byte >> 4) & 7, byte & 0x0F, 4, offset + 1
        while byte & 0x80:
            byte = data[at]
            size |= (byte & 0x7F) << shift
            shift, at = shift + 7, at + 1
        return kind, size, at

    def close(self) -> None:
        self._idx.close()
        self._data.close()


def _inflate(data: mmap.mmap, at: int, size: int) -> bytes:
    """The ``size`` bytes the zlib stream at ``at`` inflates to."""
    # deflate grows incompressible input by 5 bytes per 16 KiB block, plus its framing
    inflater = zlib.decompressobj()
    out = inflater.decompress(data[at : at + size + 5 * (size >> 14) + 64], size + 1)
    if len(out) != size or not inflater.eof:
        raise ValueError(f"a packed object at {at} does not inflate to its size")
    return out
