"""Ranked keyword search over a store's memories, and its index kept on disk.

Below the strategies: ``gitmem search`` and ``search_memories`` share this one index,
and a command that searches loads no strategy (see :mod:`gitmem.search.index`).
"""

from __future__ import annotations

from gitmem.search.index import (
    BEHIND,
    Hit,
    SearchIndex,
    check_keywords,
    index_file,
    stored_index,
)

__all__ = ["BEHIND", "Hit", "SearchIndex", "check_keywords", "index_file", "stored_index"]
