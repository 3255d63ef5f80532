"""Handing memory the C allocator holds free back to the system.

A long-lived server (the console) builds answers of megabytes once, on its first
request of a large store, and frees them. glibc's allocator keeps what it freed for
later use: it raises the size from which a block is mapped on its own (and returned
when freed) to the largest block freed yet, and the free space it leaves at the top of
a heap before returning it to twice that, so the process stays about as large as its
peak. :func:`keep_small` fixes both at their defaults' order of size, and
:func:`give_back` returns the free pages left inside the heaps (``malloc_trim``).
Both are glibc's own calls, safe from any thread (they take each arena's lock); with
another C library, or on another system, there is no such call and nothing is done.
"""

from __future__ import annotations

import functools
import gc
import sys
from typing import Any

__all__ = ["give_back", "keep_small"]

_TRIM_THRESHOLD = -1
_MMAP_THRESHOLD = -3
"""``mallopt``'s numbers for the two thresholds (glibc's ``malloc.h``)."""
_TOP_KEPT = 128 * 1024
"""The free space a heap keeps at its top (glibc's default before it raises it)."""
_MAPPED_FROM = 1024 * 1024
"""The size from which a block is mapped on its own, and so returned when freed."""


def keep_small() -> bool:
    """Keep the allocator from growing its thresholds to the largest block freed (call
    it once, as a long-lived server starts); whether the C library took both."""
    libc = _glibc()
    if libc is None:
        return False
    mapped = libc.mallopt(_MMAP_THRESHOLD, _MAPPED_FROM)
    return bool(mapped and libc.mallopt(_TRIM_THRESHOLD, _TOP_KEPT))


def give_back() -> bool:
    """Free what only cycles of garbage still hold, then return the memory the C
    allocator holds free inside its heaps to the system; whether there was such a call
    (it returned any, or none, to the system)."""
    # a library's reference cycles (dulwich's repository and its object store) outlive
    # the work that made them until a full collection, which an idle process never runs
    gc.collect()
    libc = _glibc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True


@functools.cache
def _glibc() -> Any:
    """The C library, if it is glibc (it has ``malloc_trim`` and ``mallopt``); else
    ``None``."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        libc = ctypes.CDLL(None)
        trim, mallopt = libc.malloc_trim, libc.mallopt
    except (OSError, AttributeError):  # another C library (musl has neither)
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return libc
