"""The kept listing's file: one per store, ``<git dir>/gitmem/listing/<SHA-1 of the
store id>``, holding every row of one root tree (see :mod:`gitmem.store.summaries`).

Its first line is ``gitmem-listing-1-pyX.Y <tree> <rows length> <where length>
<CRC>``, then two ``marshal`` payloads: ``(buckets, rows)`` and ``(folders, blobs)``.
The CRC covers the tree id and both payloads; a file whose framing, lengths or CRC do
not match is not a listing.

Beside it, the repository's summaries file ``<git dir>/gitmem/summaries``: records
appended one write each, every record a marker line ``gitmem-summaries-1 <length>
<CRC>`` (after a newline) and a ``marshal`` payload, a list of ``(md blob id and slug,
description, chars, lines)``; a record that does not read whole is passed over.
"""

from __future__ import annotations

import marshal
import os
import sys
import zlib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from hashlib import sha1
    from typing import cast
else:
    from gitmem.lean.light import cast, sha1


__all__ = [
    "HEADER",
    "encode",
    "listing_path",
    "parse",
    "store_file_name",
    "summaries",
    "summaries_path",
    "summaries_record",
]

HEADER = b"gitmem-listing-1-py%d.%d" % sys.version_info[:2]
"""The first field: ``marshal``'s format may change between Python versions, so another
version writes the listing anew."""

Kept = tuple[str, dict[str, str], list[tuple[str, tuple[str, int, int]]], list[str], list[str]]
"""The tree, its fan-out folders (name → tree id), the rows (slug, (description, chars,
lines)), and for each row its folder and ``.md`` blob id."""


def store_file_name(store: str) -> str:
    """The SHA-1 of a store id, which names the store's derived files."""
    return sha1(store.encode()).hexdigest()


def listing_path(meta: str, store: str) -> str:
    """Where ``store``'s listing is kept, in gitmem's folder ``meta`` of a git directory."""
    return os.path.join(meta, "listing", store_file_name(store))


def encode(
    tree: str,
    buckets: dict[str, str],
    rows: list[tuple[str, tuple[str, int, int]]],
    folders: list[str],
    blobs: list[str],
) -> bytes:
    """The file's bytes for a listing of ``tree``."""
    listed, where = marshal.dumps((buckets, rows)), marshal.dumps((folders, blobs))
    crc = zlib.crc32(where, zlib.crc32(listed, zlib.crc32(tree.encode())))
    head = b" ".join([HEADER, tree.encode(), b"%d %d %d\n" % (len(listed), len(where), crc)])
    return head + listed + where


def parse(data: bytes, *, folders: bool, tree: str | None) -> Kept | None:
    """The listing ``data`` holds (if ``tree`` is given, only a listing of that tree),
    all checked by one CRC (the tree id's too); ``None`` if it does not read whole. The
    folders and blob ids are unmarshalled only when asked for (``folders``): a listing
    of an unchanged store needs neither."""
    line, newline, payload = data.partition(b"\n")
    fields = line.split(b" ")
    if not newline or len(fields) != 5 or fields[0] != HEADER or len(fields[1]) != 40:
        return None
    if tree is not None and fields[1] != tree.encode():
        return None
    if not all(f.isdigit() for f in fields[2:]):
        return None
    rows_len, where_len, crc = (int(f) for f in fields[2:])
    if len(payload) != rows_len + where_len or zlib.crc32(payload, zlib.crc32(fields[1])) != crc:
        return None
    try:
        # as written: the CRC matched, so it is what a listing kept
        found: object = marshal.loads(payload[:rows_len])
        none: tuple[list[str], list[str]] = ([], [])
        where: object = marshal.loads(payload[rows_len:]) if folders else none
    except (EOFError, ValueError, TypeError):
        return None
    if not (_pair(found) and _pair(where)):
        return None
    buckets, rows = cast(tuple[object, object], found)
    kept_folders, blobs = cast(tuple[object, object], where)
    if not (isinstance(buckets, dict) and isinstance(rows, list)):
        return None
    if not (isinstance(kept_folders, list) and isinstance(blobs, list)):
        return None
    count = len(cast(list[object], rows))
    if (
        folders
        and not len(cast(list[object], kept_folders)) == len(cast(list[object], blobs)) == count
    ):
        return None
    return (
        fields[1].decode(),
        cast(dict[str, str], buckets),
        cast(list[tuple[str, tuple[str, int, int]]], rows),
        cast(list[str], kept_folders),
        cast(list[str], blobs),
    )


def _pair(value: object) -> bool:
    return isinstance(value, tuple) and len(cast(tuple[object, ...], value)) == 2


Summaries = dict[str, tuple[str, int, int]]
"""Summaries by ``"<md blob id> <slug>"``: description, chars, lines."""

_MARK = b"\ngitmem-summaries-1 "


def summaries_path(meta: str) -> str:
    """Where the summaries are kept, in gitmem's folder ``meta`` of a git directory."""
    return os.path.join(meta, "summaries")


def summaries_record(found: Summaries) -> bytes:
    """The record that appends ``found`` to the summaries file."""
    payload = marshal.dumps([(sha, *summary) for sha, summary in found.items()])
    return _MARK + b"%d %d\n" % (len(payload), zlib.crc32(payload)) + payload


def summaries(data: bytes) -> Summaries:
    """Every summary the summaries file's bytes ``data`` hold, passing over records that
    do not read whole."""
    known: Summaries = {}
    at = data.find(_MARK)
    while at >= 0:
        start = at + len(_MARK)
        end = data.find(b"\n", start)
        fields = data[start:end].split(b" ") if end >= 0 else []
        if len(fields) == 2 and fields[0].isdigit() and fields[1].isdigit():
            payload = data[end + 1 : end + 1 + int(fields[0])]
            if len(payload) == int(fields[0]) and zlib.crc32(payload) == int(fields[1]):
                _take(payload, known)
        at = data.find(_MARK, start)
    return known


def _take(payload: bytes, known: Summaries) -> None:
    """Add a record's summaries (its CRC matched: it is as a writer made it)."""
    try:
        items = cast(list[tuple[str, str, int, int]], marshal.loads(payload))
        known.update({sha: (description, chars, lines) for sha, description, chars, lines in items})
    except (EOFError, ValueError, TypeError):
        return
