"""Derived files: what a store keeps beside its objects so that a later read need not
work it out again (listings, summaries, indexes, folds). Each is written whole and
renamed into place, so a reader sees the old file or the new one, never half of one;
a failure to write one is no error, since the next read makes it again."""

from __future__ import annotations

import os
from _thread import get_ident


def replace_quietly(path: str, data: bytes) -> bool:
    """Write ``data`` as the whole file at ``path`` (its folder made if need be), or
    leave the file as it was; whether it was written. The temporary file is named for
    this process and thread, so writers in other threads never share one."""
    tmp = f"{path}.{os.getpid()}.{get_ident()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError:
        return False
    finally:
        remove_quietly(tmp)  # renamed into place already, or never made
    return True


def append_quietly(path: str, record: bytes) -> None:
    """Add ``record`` at the end of the file at ``path`` (made if need be) in one write,
    or leave it as it was: a record that is not written is worked out again next time.
    Readers check each record whole, so one cut short by a full disk is passed over."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, record)
        finally:
            os.close(fd)
    except OSError:
        return


def remove_quietly(path: str) -> None:
    """Remove the file at ``path`` if it is there and may be removed (derived data: a
    file that stays is made again or passed over by the next read)."""
    try:
        os.remove(path)
    except OSError:
        return
