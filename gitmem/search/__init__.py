"""Ranked keyword search over a store's memories, and its index kept on disk.

Below the strategies: ``gitmem search`` and ``search_memories`` share this one index,
and a command that searches loads no strategy (see :mod:`gitmem.search.index`). The
names are imported when first used, so that the lean read path, which searches a
stored index with :mod:`gitmem.search.index` alone, loads no ``typing`` through here.
"""

from __future__ import annotations

from gitmem.lazy import on_first_use

TYPE_CHECKING = False
if TYPE_CHECKING:
    from gitmem.search.hits import Hit
    from gitmem.search.index import (
        BEHIND,
        SearchIndex,
        check_keywords,
        index_file,
        stored_index,
    )

_LAZY = {
    "BEHIND": "gitmem.search.index",
    "Hit": "gitmem.search.hits",
    "SearchIndex": "gitmem.search.index",
    "check_keywords": "gitmem.search.index",
    "index_file": "gitmem.search.index",
    "stored_index": "gitmem.search.index",
}


__getattr__, __dir__ = on_first_use(globals(), _LAZY)

__all__ = ["BEHIND", "Hit", "SearchIndex", "check_keywords", "index_file", "stored_index"]
