"""The ``memory_state`` event: a store's memories, totals, limits and peaks, and the
limits it is over.

Holders stream it and ``gitmem state`` prints it; it needs no holder, so a read of a
store's state loads none of the holder's machinery.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from gitmem.limits import Limits, exceeded
from gitmem.store import Snapshot
from gitmem.store.summaries import Listing
from gitmem.types import Memory

__all__ = ["Event", "state_event"]

Event = dict[str, Any]


class _Row(NamedTuple):
    slug: str
    description: str
    chars: int
    lines: int


def state_event(
    snapshot: Snapshot,
    scope: str,
    writable: bool,
    limits: Limits,
    applies: frozenset[str] = frozenset(),
    index_line: Callable[[Memory], str] | None = None,
    listing: Listing | None = None,
) -> Event:
    """The ``memory_state`` event of a store as of ``snapshot``; ``exceeded`` lists the
    limits the set is over (a merge of two replicas can leave it so). Given its
    memories' summaries (``listing``), no memory is read unless the index is bounded."""
    if listing is None:
        rows = [_Row(m.slug, m.description, m.chars, m.lines) for m in snapshot.memories()]
    else:
        rows = [_Row(slug, *summary) for slug, summary in listing]
    index = None if index_line is None else (lambda: [index_line(m) for m in snapshot.memories()])
    return {
        "type": "memory_state",
        "store": snapshot.store,
        "scope": scope,
        "writable": writable,
        "memories": [
            {"slug": r.slug, "description": r.description, "chars": r.chars, "lines": r.lines}
            for r in rows
        ],
        "totals": snapshot.totals.to_dict(),
        "limits": limits.as_params(),
        "peaks": snapshot.peaks.to_dict(),
        "exceeded": [e.to_dict() for e in exceeded(limits, applies, snapshot.totals, rows, index)],
    }
