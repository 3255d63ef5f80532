"""Python's garbage collector, paused over work that makes many objects and frees none.

A build of a derived index over a whole store (every commit of a history, every
memory of a listing) makes a few objects per commit or memory and keeps them all; the
collector would go over every one of them again and again as their number grows (a
quarter of a build of 100,000 commits), and finds nothing to free.
"""

from __future__ import annotations

import gc
from collections.abc import Generator
from contextlib import contextmanager

__all__ = ["uncollected"]


@contextmanager
def uncollected() -> Generator[None]:
    """No garbage collection inside the block (it resumes after, if it ran before)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
