"""scratchpad: every memory is pinned in the window, body and all."""

from __future__ import annotations

from gitmem.types import Memory


class Scratchpad:
    name: str = "scratchpad"
    calls: tuple[str, ...] = ("write_memory", "update_memory", "delete_memory")
    read_calls: tuple[str, ...] = ()
    aggregate_limits: frozenset[str] = frozenset({"maxCount", "maxTotalLen"})
    loads_code_on: str = "write"
    description_optional: bool = False
    notice_bodies: bool = True

    def pinned(self, memories: list[Memory]) -> str:
        return "\n\n".join(f"## `{m.slug}` — {m.description}\n\n{m.body}" for m in memories)

    def in_context(self) -> str:
        return (
            "Every memory is pinned below in full, body and all; it crosses a compaction "
            "verbatim. There is no read call: you read your memories by having them here."
        )
