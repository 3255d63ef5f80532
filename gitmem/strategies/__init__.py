"""The three memory strategies, registered by name."""

from __future__ import annotations

from gitmem.strategies.base import REVISE_CALLS, Strategy, schema
from gitmem.strategies.keyword_search import KeywordSearch
from gitmem.strategies.markdown import Markdown
from gitmem.strategies.scratchpad import Scratchpad

__all__ = ["REVISE_CALLS", "STRATEGIES", "Strategy", "schema"]

STRATEGIES: dict[str, Strategy] = {s.name: s for s in (Scratchpad(), Markdown(), KeywordSearch())}
