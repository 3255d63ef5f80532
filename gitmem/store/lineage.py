"""What a push's checks need of a store's published history, kept between pushes.

A push is checked against the published line its commits go on from: each memory's
latest revision along it (the pushed commits' revision numbers go on from them) and the
capability the line records (the nearest commit that records one). Working them out
walks the line back to the store's first commit, which grows with every write the
store has had. So once a push's commits have all passed, the hook keeps them as of the
pushed head, and a later push that goes on from that head (a fast-forward onto it, or
a merge made on a line that left from it) reads one file. A commit's line never
changes: what a file says of its head stays true whatever becomes of the ref. A file
that does not read whole is passed over, and the line is walked as before.

The files are ``<git dir>/gitmem/lineage/<SHA-1 of the store id>/<head>``, the newest
:data:`KEPT` of a store, and of every store together the newest within :data:`FILES`
files and :data:`ROOM` bytes. Each holds a first line ``gitmem-lineage-1-pyX.Y <head>
<length> <CRC>``, then a ``marshal`` payload ``(revisions, exact, capability)``: each
slug's latest revision along the line, whether the line holds no merge and no
hand-made commit, and the capability trailer's text of the nearest commit that records
one (``None``: none does).
"""

from __future__ import annotations

import marshal
import os
import stat
import sys
import time
import zlib

from gitmem.lean.files import replace_quietly
from gitmem.lean.listing import store_file_name
from gitmem.store.permissions import adjust, shared_mode

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import NamedTuple, TypeVar, cast

    _T = TypeVar("_T")
else:
    from gitmem.lean.light import cast
    from gitmem.lean.tuples import NamedTuple

__all__ = ["FILES", "KEPT", "LINEAGE_MAX", "ROOM", "STALE", "Lineage", "keep", "kept"]

KEPT = 16
"""Heads a store keeps the line of: a merge pushed by someone who synced a few pushes
ago goes on from a head this many pushes old at most, to be served."""
LINEAGE_MAX = 64 << 20
"""The largest lineage file read, or written, in bytes (100,000 memories need some
3 MB)."""
FILES = 1024
"""Lines every store of a repository keeps together at most, the newest: each push of
a store branch keeps one more, a push of a thousand new branches a thousand."""
ROOM = 256 << 20
"""Bytes the lines of every store of a repository take together at most, the newest:
a pusher could otherwise fill the server's disk with copies of one long line, each
branch made to point at it a few more megabytes for a ref of 41 bytes."""
STALE = 600
"""Seconds after which a temporary file in a store's folder is a killed writer's, and
removed."""
_HEADER = b"gitmem-lineage-1-py%d.%d" % sys.version_info[:2]
"""``marshal``'s format may change between Python versions: another version's file is
passed over, and written anew."""


class Lineage(NamedTuple):
    """What a head's first-parent line records, as the push checks read it."""

    revisions: dict[str, int]
    """Each slug's latest revision along the line."""
    exact: bool
    """Whether the line holds no merge and no hand-made commit."""
    capability: str | None
    """The capability trailer's text of the nearest commit that records one."""


def _folder(git_dir: str, store: str) -> str:
    return os.path.join(git_dir, "gitmem", "lineage", store_file_name(store))


def keep(git_dir: str, lines: list[tuple[str, str, Lineage]]) -> None:
    """Keep each of ``lines`` (store, head, what its line records), then let the oldest
    kept lines go (see :func:`_prune`): the lines of one push, its repository's
    permissions read and the bounds swept once for all of them. A failure to write is
    no error: the next push walks the line."""
    written: list[tuple[str, str]] = []  # store folder and head, in the order written
    made: list[str] = []
    for store, head, lineage in lines:
        payload = marshal.dumps(tuple(lineage))
        crc = _crc(head, payload)
        line = b" ".join([_HEADER, head.encode(), b"%d %d\n" % (len(payload), crc)])
        if len(line) + len(payload) > LINEAGE_MAX:
            continue  # never read back
        folder = _folder(git_dir, store)
        if os.path.islink(folder) or os.path.islink(os.path.dirname(folder)):
            continue  # put there by another account: nothing is written through it
        path = os.path.join(folder, head)
        if replace_quietly(path, line + payload):
            written.append((os.path.basename(folder), head))
            made += [folder, path]
    if not written:
        return
    root = os.path.join(git_dir, "gitmem", "lineage")
    shared = shared_mode(git_dir)
    if shared:  # a repository every pusher's own account writes: as git makes its files
        for path in dict.fromkeys([os.path.dirname(root), root, *made]):
            adjust(path, shared)
    _prune(root, time.time_ns(), written)


def _prune(root: str, now: int, written: list[tuple[str, str]]) -> None:
    """Remove from the folder ``root`` of every store's kept lines the oldest past
    :data:`KEPT` of one store, then past :data:`FILES` or :data:`ROOM` of all stores
    together, the temporary files of a writer killed :data:`STALE` seconds ago or more,
    and the folders left empty. Best effort: a file another push removed first is
    passed over. The lines just ``written`` (store folder and head, in the order
    written) count as the newest, the last written first, whatever the clock gave them:
    a file system that stamps times coarsely gives lines kept in one push the same
    time. Each folder is read and changed through a
    descriptor opened without following a link, and only names this module writes are
    touched: a link put in a shared repository's folder leads the removal nowhere
    else."""
    try:
        top = os.open(root, _FOLDER)
    except OSError:
        return
    try:
        heads: list[_Kept] = []
        for store in os.listdir(top):
            if not _is_head(store):  # a store's folder is named by a SHA-1 too
                continue
            try:
                own, writing = _in_folder(top, store, lambda f, s=store: _read(f, s, now))
            except OSError:
                continue  # not a folder: a link, or gone
            if not own and not writing:
                _remove_folder(top, store)
                continue
            own = _newest_first(own, written)
            heads += own[:KEPT]
            _let_go(top, store, own[KEPT:])
        heads = _newest_first(heads, written)
        total = 0
        for number, found in enumerate(heads):
            total += found[1]
            if number >= FILES or total > ROOM:
                _let_go(top, found[2], [found])
                _remove_folder(top, found[2])  # if that was its store's last
    except OSError:
        return  # the folder of every store's lines went
    finally:
        os.close(top)


_FOLDER = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0)
_Kept = tuple[int, int, str, str]
"""A kept line as the bounds weigh it: when written, size, its store's folder name,
its own name."""


def _newest_first(lines: list[_Kept], written: list[tuple[str, str]]) -> list[_Kept]:
    """``lines`` newest first, the lines just ``written`` first of all, the last written
    first."""
    order = {line: number for number, line in enumerate(reversed(written))}
    return sorted(lines, key=lambda line: (order.get(line[2:], len(order)), -line[0], line))


def _in_folder(top: int, store: str, action: Callable[[int], _T]) -> _T:
    """``action`` on the store folder named ``store`` in ``top``, opened as a folder and
    never through a link (``OSError`` if it is not one)."""
    folder = os.open(store, _FOLDER, dir_fd=top)
    try:
        return action(folder)
    finally:
        os.close(folder)


def _read(folder: int, store: str, now: int) -> tuple[list[_Kept], bool]:
    """The kept lines of the store folder ``folder`` (named ``store``), the stale
    temporary files of a killed writer removed; and whether a write is under way in
    it."""
    own: list[_Kept] = []
    writing = False
    for name in os.listdir(folder):
        try:
            found = os.stat(name, dir_fd=folder, follow_symlinks=False)
        except OSError:
            continue  # another push let it go
        if not stat.S_ISREG(found.st_mode):
            continue
        if _is_head(name):
            own.append((found.st_mtime_ns, found.st_size, store, name))
        elif _is_temporary(name):
            if now - found.st_mtime_ns >= STALE * 10**9:
                _remove(folder, [name])  # a killed writer's
            else:
                writing = True
    return own, writing


def _let_go(top: int, store: str, lines: list[_Kept]) -> None:
    """Remove ``lines`` from the folder of ``store`` in ``top``."""
    if not lines:
        return
    try:
        _in_folder(top, store, lambda folder: _remove(folder, [line[3] for line in lines]))
    except OSError:
        return  # its folder went


def _remove(folder: int, names: list[str]) -> None:
    for name in names:
        try:
            os.unlink(name, dir_fd=folder)
        except OSError:
            continue  # another push let it go first


def _remove_folder(top: int, name: str) -> None:
    try:
        os.rmdir(name, dir_fd=top)
    except OSError:
        return  # it holds a line still, or a push keeps one in it now


def _is_temporary(name: str) -> bool:
    """Whether ``name`` is a writer's temporary file for a line:
    ``<head>.<process>.<thread>.tmp``."""
    head, _, rest = name.partition(".")
    pid, _, rest = rest.partition(".")
    thread, _, suffix = rest.partition(".")
    return _is_head(head) and pid.isdigit() and thread.isdigit() and suffix == "tmp"


def _is_head(name: str) -> bool:
    return len(name) == 40 and all(c in "0123456789abcdef" for c in name)


def kept(git_dir: str, store: str, head: str) -> Lineage | None:
    """What was kept of ``store``'s line as of ``head``; ``None`` if nothing was, or
    what was kept does not read whole."""
    if not _is_head(head):
        return None
    try:
        with open(os.path.join(_folder(git_dir, store), head), "rb") as f:
            data = f.read(LINEAGE_MAX + 1)
    except OSError:
        return None
    line, newline, payload = data.partition(b"\n")
    fields = line.split(b" ")
    if not newline or len(fields) != 4 or fields[0] != _HEADER or fields[1] != head.encode():
        return None
    if not (fields[2].isdigit() and fields[3].isdigit()) or len(data) > LINEAGE_MAX:
        return None
    if len(payload) != int(fields[2]) or _crc(head, payload) != int(fields[3]):
        return None
    try:
        found: object = marshal.loads(payload)
    except (EOFError, ValueError, TypeError):
        return None
    return _lineage(found)


def _crc(head: str, payload: bytes) -> int:
    return zlib.crc32(payload, zlib.crc32(head.encode()))


def _lineage(found: object) -> Lineage | None:
    """``found`` as a lineage, if it has a lineage's shape."""
    if not isinstance(found, tuple) or len(cast("tuple[object, ...]", found)) != 3:
        return None
    revisions, exact, capability = cast("tuple[object, object, object]", found)
    if not isinstance(revisions, dict) or not isinstance(exact, bool):
        return None
    if capability is not None and not isinstance(capability, str):
        return None
    for slug, revision in cast("dict[object, object]", revisions).items():
        if type(slug) is not str or type(revision) is not int:
            return None
    return Lineage(cast("dict[str, int]", revisions), exact, capability)
