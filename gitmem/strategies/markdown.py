"""markdown: a pinned index, one line per memory; bodies come in on read."""

from __future__ import annotations

from typing import Literal

from gitmem.lean.text import one_line
from gitmem.strategies import calls
from gitmem.strategies.base import StrategyBase, Tool
from gitmem.types import Memory

__all__ = ["Markdown"]


class Markdown(StrategyBase):
    name = "markdown"
    aggregate_limits = frozenset({"maxLenIndex"})
    loads_code_on: Literal["write", "read"] = "read"
    notice_bodies = False
    notice_tail = "Read one with `read_memory` if it bears on what you are doing."
    find_hint = "the index lists the names (it may lag until the next compaction)"
    revise_call = "edit_memory"
    pins_descriptions = True

    def __init__(self) -> None:
        self.tools: tuple[Tool, ...] = (
            calls.create_memory(
                confirm=(
                    "Created `{slug}`. It is stored and readable now; the index lists it "
                    "from the next compaction."
                ),
                description_optional=False,
            ),
            calls.read_memory(),
            calls.edit_memory(),
            calls.delete_memory(),
        )

    def pinned(self, memories: list[Memory]) -> str:
        return "\n".join(self.index_line(m) for m in memories)

    def in_context(self) -> str:
        return (
            "An index of your memory files is pinned below, one line per memory: "
            "- `name` — description. Bodies stay out of the window until you read one. "
            "The index is rebuilt only at a compaction, so it can lag: a memory created "
            "since then is stored and readable but not listed yet."
        )

    def index_line(self, memory: Memory) -> str:
        return f"- `{memory.slug}` — {one_line(memory.description)}"
