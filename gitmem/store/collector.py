"""Python's garbage collector, paused over work that makes many objects and frees none.

A build of a derived index over a whole store (every commit of a history, every
memory of a listing) makes a few objects per commit or memory and keeps them all; the
collector would go over every one of them again and again as their number grows (a
quarter of a build of 100,000 commits), and finds nothing to free.
"""

from __future__ import annotations

import gc

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import TracebackType

__all__ = ["uncollected"]


class uncollected:  # named as the statement reads: `with uncollected():`
    """No garbage collection inside a ``with`` block (it resumes after, if it ran before).

    A plain class rather than a generator made a context manager: the read path loads
    this module, and loading ``contextlib`` would cost a fresh process more than it says.
    """

    __slots__ = ("_was",)

    def __init__(self) -> None:
        self._was = False

    def __enter__(self) -> None:
        self._was = gc.isenabled()
        gc.disable()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self._was:
            gc.enable()
