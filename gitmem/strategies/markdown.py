"""markdown: a pinned index, one line per memory; bodies come in on read."""

from __future__ import annotations

from gitmem.limits import render_index
from gitmem.types import Memory


class Markdown:
    name: str = "markdown"
    calls: tuple[str, ...] = ("create_memory", "read_memory", "edit_memory", "delete_memory")
    read_calls: tuple[str, ...] = ("read_memory",)
    aggregate_limits: frozenset[str] = frozenset({"maxLenIndex"})
    loads_code_on: str = "read"
    description_optional: bool = False
    notice_bodies: bool = False

    def pinned(self, memories: list[Memory]) -> str:
        return render_index(memories)

    def in_context(self) -> str:
        return (
            "An index of your memory files is pinned below, one line per memory: "
            "- `name` — description. Bodies stay out of the window until you read one. "
            "The index is rebuilt only at a compaction, so it can lag: a memory created "
            "since then is stored and readable but not listed yet."
        )
