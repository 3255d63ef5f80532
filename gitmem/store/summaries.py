"""What a listing shows of a memory, kept by the id of its ``.md`` blob.

``gitmem ls`` shows each memory's description and size; reading 10,000 blobs to find
them costs a second. A blob's id names its content, so what it says never changes:
``<git dir>/gitmem/summaries`` keeps ``(md blob id, slug) → (description, chars,
lines)`` for
every blob a listing has read, and the next listing reads only the blobs it does not
know. It is derived data: appended in records of one write each, every record framed
by a marker line with its length and CRC; a record that does not read whole (a killed
writer, damage) is passed over, and its blobs are read again when next asked for.

Reading known summaries still walks the store's 256 fan-out trees and 10,000 entries.
So the whole listing of a tree is kept too, in ``<git dir>/gitmem/listing/`` (one file
per store, named by the SHA-1 of its id), keyed by the root tree id it lists: a listing
of an unchanged store reads that one file. With it are the tree ids of the root's
fan-out folders, and the folder and ``.md`` blob id of each row, so that the listing
of a changed tree reads only the folders whose tree id changed, takes the other rows
from the last listing, and reads only the memories whose blob changed. It is replaced whole
(written aside, then renamed over), and read only if its framing, length and CRC
match; any other file is passed over and written again by the next listing.
"""

from __future__ import annotations

import os
import threading
from typing import NamedTuple

from gitmem.lean import listing as kept_file
from gitmem.lean.files import append_quietly, replace_quietly

__all__ = ["Buckets", "KeptListing", "Listing", "Summaries", "Summary"]

Summary = tuple[str, int, int]
"""A memory's description, and its body's characters and lines."""

Listing = list[tuple[str, Summary]]
"""Every memory of a tree: slug and summary, sorted by slug."""

Buckets = dict[str, str]
"""A store's root tree's fan-out folders: name → tree id."""


class KeptListing(NamedTuple):
    """A listing as kept: the root tree it lists, that tree's fan-out folders, the rows,
    and for each row the folder it was read from and its ``.md`` blob id (these two
    are empty unless asked for)."""

    tree: str
    buckets: Buckets
    rows: Listing
    folders: list[str]
    blobs: list[str]


class Summaries:
    """The summaries file of one repository, read on first use, appended as it grows."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._known: dict[str, Summary] | None = None
        self._mutex = threading.Lock()

    def known(self) -> dict[str, Summary]:
        """Every summary the file holds, by ``"<md blob id> <slug>"``."""
        with self._mutex:
            if self._known is None:
                self._known = _read(self._path)
            return self._known

    def stored(self) -> dict[str, Summary]:
        """As ``known``, but read without keeping what the file holds in this process
        if it was not kept already (a listing read whole asks once; keeping them would
        keep every summary it reads from then on)."""
        with self._mutex:
            if self._known is not None:
                return self._known
        return _read(self._path)

    def add(self, found: dict[str, Summary]) -> None:
        """Keep ``found`` for the next listing, in this process and on disk (best effort:
        a summary that is not written is read again next time)."""
        if not found:
            return
        with self._mutex:
            if self._known is not None:  # else the file is read when first asked for
                self._known.update(found)
        append_quietly(self._path, kept_file.summaries_record(found))

    def kept(self, store: str) -> bool:
        """Whether a listing is kept for ``store`` (of any tree; it may not read whole)."""
        return os.path.exists(self._listing_path(store))

    def listing(self, store: str, tree: str) -> Listing | None:
        """The listing kept for ``store`` if it lists ``tree``, else ``None``."""
        last = self._last(store, folders=False, tree=tree)
        return last.rows if last is not None else None

    def last_listing(self, store: str) -> KeptListing | None:
        """The last listing kept for ``store`` (of any tree), with what a listing of a
        changed tree needs; ``None`` if there is none that reads whole."""
        return self._last(store, folders=True)

    def _last(self, store: str, *, folders: bool, tree: str | None = None) -> KeptListing | None:
        try:
            with open(self._listing_path(store), "rb") as f:
                data = f.read()
        except OSError:
            return None
        found = kept_file.parse(data, folders=folders, tree=tree)
        return KeptListing(*found) if found is not None else None

    def keep_listing(
        self,
        store: str,
        tree: str,
        buckets: Buckets,
        listing: Listing,
        folders: list[str],
        blobs: list[str],
    ) -> None:
        """Keep ``listing`` as ``store``'s listing of ``tree``, whose fan-out folders are
        ``buckets``, each row read from the folder ``folders`` names and the ``.md``
        blob ``blobs`` names (best effort: derived data, written again by the next
        listing if it is lost)."""
        data = kept_file.encode(tree, buckets, listing, folders, blobs)
        path = self._listing_path(store)
        replace_quietly(path, data)

    def _listing_path(self, store: str) -> str:
        return kept_file.listing_path(os.path.dirname(self._path), store)


def _read(path: str) -> dict[str, Summary]:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return {}
    return kept_file.summaries(data)
