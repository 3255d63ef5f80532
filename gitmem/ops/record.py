"""What a store records: the strategy and limits of the binding that last wrote it."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    # imported where used: a command that reads memories loads no strategy, binding or
    # limits (tests/test_cold.py holds this)
    from gitmem.capability import Capability
    from gitmem.limits import Limits
    from gitmem.repository import Repository
    from gitmem.strategies import Strategy

__all__ = ["Record", "record"]


class Record(NamedTuple):
    """The strategy and limits the binding that last wrote a store recorded."""

    strategy: Strategy
    limits: Limits

    def capability(self) -> Capability:
        """A capability under the recorded strategy and limits (an operator's binding
        names its store itself, so the scope plays no part)."""
        from gitmem.capability import Capability

        return Capability(self.strategy.name, "shared", self.limits)


def record(repo: Repository, store: str) -> Record | None:
    """What the store's head records, or ``None`` for a store only operators have
    written (or one written under a strategy this process has not registered)."""
    from gitmem.strategies.operator import recorded

    found = recorded(repo, store)
    return Record(found.strategy, found.limits) if found is not None else None
