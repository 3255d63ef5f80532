"""A search result: the memory, the distinct keywords it mentions, how often."""

from __future__ import annotations

from typing import NamedTuple

from gitmem.lean.lines import excerpt
from gitmem.types import Memory

__all__ = ["Hit"]


class Hit(NamedTuple):
    """One search result: the memory, the distinct keywords it mentions, how often."""

    memory: Memory
    distinct: int
    frequency: int

    def excerpt(self, keywords: list[str], width: int = 160) -> str:
        """A short piece of the body around the first keyword found in it."""
        return excerpt(self.memory.body, keywords, width)
