"""Values worked out from a store's whole history, kept between processes.

Some answers (the console's ledger of every memory a store ever held) take a walk of
every revision to work out: tens of seconds on a store of 50,000 revisions. Such a
value is kept, with the head it was worked out at, in
``<git dir>/gitmem/<kind>/<SHA-1 of the store id>``, so the next process reads one file
and goes on from that head rather than walking the history again.

A kept file is a header line (the format, with the Python version, since marshal's
format may change between versions; the head; the payload's length and CRC), then the
value as marshal wrote it. It is derived data: replaced whole (written aside, then
renamed over), and read only if its header, length and CRC match; any other file is
passed over, and written again by the next reader that works the value out.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import re
import sys
import zlib
from typing import TYPE_CHECKING, Any, NamedTuple

from gitmem.lean.files import replace_quietly

if TYPE_CHECKING:
    from gitmem.store.summaries import Summaries, Summary
    from gitmem.store.view import StoreView

__all__ = ["Keeping", "Kept"]

_FORMAT = b"gitmem-kept-1-py%d.%d" % sys.version_info[:2]
_KIND = re.compile(r"[a-z][a-z-]{0,31}")


class Kept(NamedTuple):
    """A value as kept: the head it was worked out at, and the value."""

    head: str
    value: object


class Keeping:
    """The part of a repository that keeps values worked out from a store's history,
    and reads the listing kept of a store's head alone (a base of ``Storage``)."""

    _meta: str
    _summaries: Summaries

    def snapshot(self, store: str, commit: str | None = None) -> StoreView:
        """The store as of ``commit`` (``Storage`` gives it)."""
        raise NotImplementedError

    def kept_summaries(self, store: str) -> list[tuple[str, Summary]] | None:
        """``summaries(store)`` when the listing kept for the store is of its head's
        tree, read from that file alone (no tree or blob is read, nothing is written);
        ``None`` when no such listing is kept."""
        if not self._summaries.kept(store):
            # said without reading an object: a long-lived reader that opened the
            # store's pack for it would stay that much larger
            return None
        root = self.snapshot(store).root
        return self._summaries.listing(store, root) if root is not None else []

    def kept(self, kind: str, store: str) -> Kept | None:
        """The value of ``kind`` last kept for ``store``, with its head; ``None`` if there
        is none that reads whole."""
        try:
            with open(self._kept_path(kind, store), "rb") as f:
                data = f.read()
        except OSError:
            return None
        return _parse(data)

    def keep(self, kind: str, store: str, head: str, value: Any) -> bool:
        """Keep ``value`` (of what marshal writes) as ``store``'s ``kind`` at ``head``
        (best effort: derived data, worked out again by the next reader if it is lost);
        whether it was written."""
        payload = marshal.dumps(value)
        crc = zlib.crc32(payload, zlib.crc32(head.encode()))
        header = b"%s %s %d %d\n" % (_FORMAT, head.encode(), len(payload), crc)
        path = self._kept_path(kind, store)
        return replace_quietly(path, header + payload)

    def _kept_path(self, kind: str, store: str) -> str:
        if not _KIND.fullmatch(kind):
            raise ValueError(f"{kind!r} is not a kind of kept value")
        name = hashlib.sha1(store.encode()).hexdigest()
        return os.path.join(self._meta, kind, name)


def _parse(data: bytes) -> Kept | None:
    """The value ``data`` holds, checked by its CRC (the head's too); ``None`` if it does
    not read whole."""
    line, newline, payload = data.partition(b"\n")
    fields = line.split(b" ")
    if not newline or len(fields) != 4 or fields[0] != _FORMAT or len(fields[1]) != 40:
        return None
    if not (fields[2].isdigit() and fields[3].isdigit()):
        return None
    if len(payload) != int(fields[2]) or zlib.crc32(payload, zlib.crc32(fields[1])) != int(
        fields[3]
    ):
        return None
    try:
        # as written: the CRC matched, so it is what a writer kept
        value: object = marshal.loads(payload)
    except (EOFError, ValueError, TypeError):
        return None
    return Kept(fields[1].decode("ascii", "replace"), value)
