"""What a listing shows of a memory, kept by the id of its ``.md`` blob.

``gitmem ls`` shows each memory's description and size; reading 10,000 blobs to find
them costs a second. A blob's id names its content, so what it says never changes:
``<git dir>/gitmem/summaries`` keeps ``(md blob id, slug) → (description, chars,
lines)`` for
every blob a listing has read, and the next listing reads only the blobs it does not
know. It is derived data: appended in records of one write each, every record framed
by a marker line with its length and CRC; a record that does not read whole (a killed
writer, damage) is passed over, and its blobs are read again when next asked for.
"""

from __future__ import annotations

import marshal
import os
import threading
import zlib

__all__ = ["Summaries", "Summary"]

Summary = tuple[str, int, int]
"""A memory's description, and its body's characters and lines."""

_MARK = b"\ngitmem-summaries-1 "


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

    def add(self, found: dict[str, Summary]) -> None:
        """Keep ``found`` for the next listing, in this process and on disk (best effort:
        a summary that is not written is read again next time)."""
        if not found:
            return
        self.known().update(found)
        payload = marshal.dumps([(sha, *summary) for sha, summary in found.items()])
        record = _MARK + f"{len(payload)} {zlib.crc32(payload)}\n".encode() + payload
        try:
            fd = os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, record)
            finally:
                os.close(fd)
        except OSError:
            pass


def _read(path: str) -> dict[str, Summary]:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return {}
    known: dict[str, Summary] = {}
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


def _take(payload: bytes, known: dict[str, Summary]) -> None:
    """Add a record's summaries (its CRC matched: it is as a writer made it)."""
    try:
        items: list[tuple[str, str, int, int]] = marshal.loads(payload)
        known.update({sha: (description, chars, lines) for sha, description, chars, lines in items})
    except (EOFError, ValueError, TypeError):
        return
