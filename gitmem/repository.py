"""The public ``Repository``: the git store, plus binding agents to its stores."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from gitmem.binding import Agent, check_launch, resolve
from gitmem.capability import Capability
from gitmem.store import repository as store

if TYPE_CHECKING:
    # imported where used: opening a repository loads neither the holder nor sync
    from gitmem.holder import Holder, Hub
    from gitmem.sync import StoreSync

__all__ = ["Repository"]


class Repository(store.Repository):
    """A gitmem repository: stores of memories as branches of a bare git repository, or
    of a project's own repository (``refs/heads/gitmem/<store>``)."""

    def sync(self, remote: str = "origin", store: str | None = None) -> list[StoreSync]:
        """Fetch the remote's stores, reconcile each that diverged, push the result (never
        forced); one report per store. See :mod:`gitmem.sync`."""
        from gitmem.sync import sync

        return sync(self, remote, store)

    @functools.cached_property
    def hub(self) -> Hub:
        """The telemetry hub of the holders bound through this repository object."""
        from gitmem.holder import Hub

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
        from gitmem.holder import Holder

        return Holder(self, capability, agent, resolve(capability.scope, agent), hub=self.hub)
