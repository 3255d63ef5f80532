"""The public ``Repository``: the git store, plus binding agents to its stores."""

from __future__ import annotations

import functools

from gitmem.binding import Agent, check_launch, resolve
from gitmem.capability import Capability
from gitmem.holder import Holder, Hub
from gitmem.store import repository as store

__all__ = ["Repository"]


class Repository(store.Repository):
    """A gitmem repository: stores of memories as branches of a bare git repository."""

    @functools.cached_property
    def hub(self) -> Hub:
        """The telemetry hub of the holders bound through this repository object."""
        return Hub()

    def bind(
        self, capability: Capability, agent: Agent, compaction: str = "summary"
    ) -> Holder | None:
        """Bind ``agent`` to the store its scope names (``None`` if memories are off).

        Binding writes nothing: state appears when a write needs it.
        """
        check_launch(capability, agent, compaction, spawner=agent.spawner)
        if not capability.enabled:
            return None
        return Holder(self, capability, agent, resolve(capability.scope, agent), hub=self.hub)
