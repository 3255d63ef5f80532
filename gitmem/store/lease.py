"""Leases: a named ref under ``refs/gitmem/leases/`` saying who runs a job, and until
when, so that two processes never run it at once.

A lease is a root commit with an empty tree whose message names its holder and its
expiry::

    lease retain

    Gitmem-Lease-Holder: host:4242:9f1c2a
    Gitmem-Lease-Expires: 1764614400

Taking one is the ref's compare-and-swap (:meth:`~gitmem.store.refs.Refs.swap`) from
the commit read to a new lease commit, done only when the ref names nothing, an
expired lease or the taker's own; of two processes that read the same lease, exactly
one moves the ref. Giving it back moves the ref to a lease that expired at once, so
the ref's log of holders stays a chain of commits anyone can read with ``git log``.
"""

from __future__ import annotations

import re
import time
from typing import NamedTuple

from dulwich.refs import Ref

from gitmem.errors import InvalidArgument
from gitmem.store.layout import MARKER_PREFIX, check_store
from gitmem.store.locking import WriteLock, storage_error
from gitmem.store.objects import NewObjects, ObjectReader
from gitmem.store.refs import Refs
from gitmem.store.trees import EMPTY_TREE

__all__ = ["LEASES", "Lease", "Leases", "check_holder", "give_back", "read", "take"]

LEASES = "leases/"
"""Where leases live, under ``refs/gitmem/``."""
_HOLDER = "Gitmem-Lease-Holder"
_EXPIRES = "Gitmem-Lease-Expires"
_HOLDER_RE = re.compile(r"[A-Za-z0-9._:@-]{1,128}")
_IDENT = b"gitmem lease <lease@gitmem.invalid>"


class Lease(NamedTuple):
    """Who holds a lease, and until when (seconds since the epoch)."""

    holder: str
    expires: int

    def live(self, now: float) -> bool:
        """Whether the lease still holds at ``now``."""
        return now < self.expires


def check_holder(holder: str) -> str:
    """Return ``holder`` if it is a usable holder name, else refuse it."""
    if not _HOLDER_RE.fullmatch(holder):
        raise InvalidArgument(
            f"lease holder {holder!r} is not usable; use 1-128 letters, digits and ._:@-"
        )
    return holder


def _ref(name: str) -> Ref:
    check_store(name)
    return Ref((MARKER_PREFIX + LEASES + name).encode())


def read(reader: ObjectReader, refs: Refs, name: str) -> tuple[str | None, Lease | None]:
    """The commit lease ``name``'s ref names and the lease it records (``None``, ``None``
    if it was never taken; a lease of no holder if the commit is not a lease's)."""
    commit = refs.read(_ref(name))
    if commit is None:
        return None, None
    found: dict[str, str] = {}
    for line in reader.commit(commit).message.decode("utf-8", "replace").splitlines()[:8]:
        key, sep, value = line.partition(": ")
        if sep:
            found[key] = value.strip()
    expires = found.get(_EXPIRES, "")
    if _HOLDER not in found or not expires.isdigit() or len(expires) > 18:
        return commit, Lease("", 0)
    return commit, Lease(found[_HOLDER], int(expires))


def take(
    reader: ObjectReader, refs: Refs, name: str, holder: str, seconds: float, now: float
) -> bool:
    """Take (or renew) lease ``name`` for ``holder`` until ``now + seconds``; ``False``
    if another holder's lease is live or another process moved the ref first. Must
    hold the write lock."""
    check_holder(holder)
    old, lease = read(reader, refs, name)
    if lease is not None and lease.holder != holder and lease.live(now):
        return False
    return _point(refs, name, old, Lease(holder, int(now + seconds)), now)


def give_back(reader: ObjectReader, refs: Refs, name: str, holder: str, now: float) -> bool:
    """End ``holder``'s lease ``name`` now; ``False`` if it is not theirs (any more).
    Must hold the write lock."""
    old, lease = read(reader, refs, name)
    if lease is None or lease.holder != holder:
        return False
    return _point(refs, name, old, Lease(holder, int(now)), now)


def _point(refs: Refs, name: str, old: str | None, lease: Lease, now: float) -> bool:
    new = NewObjects()
    tree = new.add_tree(EMPTY_TREE)
    message = f"lease {name}\n\n{_HOLDER}: {lease.holder}\n{_EXPIRES}: {lease.expires}\n"
    commit = new.add_commit(tree, [], _IDENT, int(now), message.encode())
    return refs.swap(_ref(name), old, commit, new.records)


class Leases:
    """A repository's leases, each move under its write lock (``Storage.leases``)."""

    def __init__(self, reader: ObjectReader, refs: Refs, lock: WriteLock) -> None:
        self._reader = reader
        self._refs = refs
        self._lock = lock

    def take(self, name: str, holder: str, seconds: float) -> bool:
        """Take (or renew) lease ``name`` for ``holder`` for ``seconds``; ``False``
        while another holder's lease is live."""
        try:
            with self._lock.held():
                return take(self._reader, self._refs, name, holder, seconds, time.time())
        except OSError as exc:
            raise storage_error(exc, f"taking lease {name}") from exc

    def give_back(self, name: str, holder: str) -> bool:
        """End ``holder``'s lease ``name`` now; ``False`` if it is not theirs."""
        try:
            with self._lock.held():
                return give_back(self._reader, self._refs, name, holder, time.time())
        except OSError as exc:
            raise storage_error(exc, f"giving back lease {name}") from exc

    def read(self, name: str) -> Lease | None:
        """Who holds lease ``name`` and until when (``None``: never taken)."""
        return read(self._reader, self._refs, name)[1]
