"""The public ``Repository``: the git store plus binding agents to stores."""

from __future__ import annotations

from gitmem.capability import Capability
from gitmem.errors import LaunchRefused
from gitmem.holder import Holder
from gitmem.scope import Agent, resolve
from gitmem.store import repository as store

__all__ = ["COMPACTIONS", "Repository", "launch_problems"]

COMPACTIONS = ("summary", "memory")


class Repository(store.Repository):
    """A gitmem repository: stores of memories as branches of a bare git repository."""

    def bind(
        self, capability: Capability, agent: Agent, compaction: str = "summary"
    ) -> Holder | None:
        """Bind ``agent`` to the store its scope names (``None`` if memories are off)."""
        launch_problems(capability, agent, compaction, spawner=agent.spawner)
        if not capability.enabled:
            return None
        return Holder(self, capability, agent, resolve(capability.scope, agent))


def launch_problems(
    capability: Capability, agent: Agent, compaction: str, spawner: Holder | None
) -> None:
    """Refuse a launch the seed refuses, naming every problem at once."""
    if not capability.enabled:
        return
    problems: list[str] = []
    if compaction not in COMPACTIONS:
        problems.append(f"compaction {compaction!r} is unknown; use summary or memory")
    if compaction == "memory" and capability.scope == "read-only":
        problems.append(
            "a profile configured for memory-compaction may not declare its memories "
            "read-only: it would have no call to satisfy a compaction; use another scope "
            "or summary compaction"
        )
    inherits = agent.started_as == "subagent" and capability.scope in ("inherited", "read-only")
    if inherits and spawner is not None and spawner.strategy != capability.implementation:
        problems.append(
            f"this agent inherits its spawner's memories, which are organized under "
            f"{spawner.strategy}, but it names {capability.implementation}; name the same "
            "implementation at both ends"
        )
    if problems:
        raise LaunchRefused(problems)
