"""keyword-search: nothing pinned; memories are found by ranked keyword search."""

from __future__ import annotations

from typing import Literal

from gitmem.lean.text import one_line, shown
from gitmem.search import Hit, SearchIndex, check_keywords, stored_index
from gitmem.strategies import calls
from gitmem.strategies.base import Desk, StrategyBase, Tool
from gitmem.types import Memory

# the index lives in gitmem.search (below the strategies, so `gitmem search` loads no
# strategy); named here too for the strategies that rank with it
__all__ = [
    "Hit",
    "KeywordSearch",
    "SearchIndex",
    "check_keywords",
    "search_text",
    "stored_index",
]


class KeywordSearch(StrategyBase):
    name = "keyword-search"
    aggregate_limits = frozenset({"maxCount"})
    loads_code_on: Literal["write", "read"] = "read"
    notice_bodies = False
    notice_tail = "Read one with `read_memory` if it bears on what you are doing."
    find_hint = "find one with search_memories"
    revise_call = "edit_memory"

    def __init__(self) -> None:
        self.tools: tuple[Tool, ...] = (
            calls.create_memory(description_optional=True),
            calls.read_memory(),
            calls.edit_memory(),
            calls.delete_memory(),
            search_memories(),
        )

    def pinned(self, memories: list[Memory]) -> str:
        return ""

    def in_context(self) -> str:
        return (
            "Nothing about your memories is in the window until you look: find them with "
            "search_memories, then read one with read_memory."
        )

    def index_line(self, memory: Memory) -> str:
        return ""  # nothing is pinned, so maxLenIndex never applies


def search_memories() -> Tool:
    """Ranked keyword search over the holder's store, through an index kept in step."""

    def run(desk: Desk, args: dict[str, object]) -> str:
        keywords = check_keywords(args["keywords"])
        index = desk.cache.get("search-index")
        view = desk.snapshot()
        if view.overlaid:
            # pending memories are in no stored index: search what the holder reads
            index = SearchIndex()
            index.reset(view.memories(), view.commit)
        elif not isinstance(index, SearchIndex):
            index = desk.cache["search-index"] = stored_index(desk.repo, desk.store_id)
        else:
            index.follow(desk.repo, desk.store_id)
        return search_text(index.search(keywords, desk.rules.limits.max_results), keywords)

    return Tool(
        "search_memories",
        "Search memories by keywords (case-insensitive substrings of name, description and "
        "body); the best matches come first, each with an excerpt.",
        {
            "keywords": {
                "type": "array",
                "items": {"type": "string"},
                "minItems": 1,
                "description": "Keywords to look for.",
            }
        },
        ("keywords",),
        run,
        writes=False,
    )


def search_text(
    hits: list[Hit], keywords: list[str], noun: tuple[str, str] = ("memory", "memories")
) -> str:
    """What ``search_memories`` answers for ``hits`` (``noun``: singular and plural)."""
    if not hits:
        return f"No {noun[0]} mentions " + ", ".join(f"`{shown(k)}`" for k in keywords) + "."
    lowered = [k.lower() for k in keywords if k]
    lines = [f"{len(hits)} {noun[0] + ' matches' if len(hits) == 1 else noun[1] + ' match'}:"]
    for hit in hits:
        m = hit.memory
        head = f"- `{m.slug}` — {one_line(m.description)}" if m.description else f"- `{m.slug}`"
        lines.append(f"{head}\n  {hit.excerpt(lowered)}")
    return "\n".join(lines)
