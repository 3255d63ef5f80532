"""Handing memory the C allocator holds free back to the system.

A long-lived server (the console) builds answers of megabytes once, on its first
request of a large store, and frees them. glibc's allocator keeps what it freed for
later use, so the process stays as large as its peak; ``malloc_trim`` returns the free
pages. It is glibc's own (safe from any thread: it takes each arena's lock); on any
other C library or system there is no such call and nothing is done.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable

__all__ = ["give_back"]


def give_back() -> None:
    """Return the memory the C allocator holds free to the system, where it can."""
    trim = _trim()
    if trim is not None:
        trim(0)


@functools.cache
def _trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or ``None`` where there is none."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # a C library other than glibc (musl has none)
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim
