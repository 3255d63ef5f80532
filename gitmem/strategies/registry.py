"""The registry of strategies by name: the built-in ones, and any registered since."""

from __future__ import annotations

from gitmem.errors import InvalidArgument
from gitmem.strategies.base import Strategy
from gitmem.strategies.curated import Curated
from gitmem.strategies.keyword_search import KeywordSearch
from gitmem.strategies.markdown import Markdown
from gitmem.strategies.notebook import Notebook
from gitmem.strategies.scratchpad import Scratchpad

__all__ = ["get", "names", "register"]

_BUILT_IN: tuple[Strategy, ...] = (
    Scratchpad(),
    Markdown(),
    KeywordSearch(),
    Notebook(),
    Curated(),
)
_REGISTRY: dict[str, Strategy] = {s.name: s for s in _BUILT_IN}


def register(strategy: Strategy) -> None:
    """Make ``strategy`` bindable under its name (a name may be registered once)."""
    if strategy.name in _REGISTRY and _REGISTRY[strategy.name] is not strategy:
        raise InvalidArgument(
            f"a strategy named {strategy.name!r} is already registered; choose another name"
        )
    _REGISTRY[strategy.name] = strategy


def get(name: str) -> Strategy | None:
    """The strategy registered as ``name``, or ``None``."""
    return _REGISTRY.get(name)


def names() -> tuple[str, ...]:
    """Every registered strategy's name, built-in ones first."""
    return tuple(_REGISTRY)
