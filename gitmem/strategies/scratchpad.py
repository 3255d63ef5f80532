"""scratchpad: every memory is pinned in the window, body and all."""

from __future__ import annotations

from typing import Literal

from gitmem.strategies import calls
from gitmem.strategies.base import StrategyBase, Tool
from gitmem.types import Memory

__all__ = ["Scratchpad"]


class Scratchpad(StrategyBase):
    name = "scratchpad"
    aggregate_limits = frozenset({"maxCount", "maxTotalLen"})
    loads_code_on: Literal["write", "read"] = "write"
    notice_bodies = True
    notice_tail = "Their text is shown above; the pinned block shows it from the next compaction."
    find_hint = "your memories are pinned in your context"
    revise_call = "update_memory"

    def __init__(self) -> None:
        self.tools: tuple[Tool, ...] = (
            calls.write_memory(),
            calls.update_memory(),
            calls.delete_memory(),
        )

    def pinned(self, memories: list[Memory]) -> str:
        return "\n\n".join(f"## `{m.slug}` — {m.description}\n\n{m.body}" for m in memories)

    def in_context(self) -> str:
        return (
            "Every memory is pinned below in full, body and all; it crosses a compaction "
            "verbatim. There is no read call: you read your memories by having them here."
        )

    def index_line(self, memory: Memory) -> str:
        return ""  # nothing is indexed, so maxLenIndex never applies
