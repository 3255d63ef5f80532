"""Which store an agent binds, and whether it may write: seed 000's binding table.

    Started as        isolated       shared         inherited             read-only
    root              its own        profile's      its own               its own, writable
    implementer       its own        profile's      its own               its own, writable
    subagent          its own        profile's      spawner's, r/w        spawner's, read-only
                                                    (own if the spawner keeps no memories)
    reviewer / merge  its own        profile's      its own               its own, writable
    fork              a copy         the same       forker's, r/w         forker's, read-only
    successor         transferred    own profile's  transferred           transferred, read-only

Two rules keep it coherent: read-only restricts an inherited handle and nothing else,
and write access belongs to the holder, not the store (a read-only agent's inherited
subagent writes its store; chains reach whatever the top of the chain created).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from gitmem.capability import Scope
from gitmem.errors import InvalidArgument

if TYPE_CHECKING:
    from gitmem.holder import Holder

__all__ = ["STARTS", "Agent", "Binding", "resolve"]

StartedAs = Literal["root", "implementer", "subagent", "reviewer", "merge"]
STARTS: tuple[StartedAs, ...] = ("root", "implementer", "subagent", "reviewer", "merge")
_NAME_RE = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}")


@dataclass(frozen=True)
class Agent:
    """An agent as the harness started it.

    ``spawner`` is the spawner's memory holder, or ``None`` when nothing spawned the
    agent or the spawner keeps no memories.
    """

    profile: str
    instance: str
    started_as: StartedAs = "root"
    spawner: Holder | None = None

    def __post_init__(self) -> None:
        for what, value in (("profile", self.profile), ("instance", self.instance)):
            if not _NAME_RE.fullmatch(value) or ".." in value:
                raise InvalidArgument(
                    f"agent {what} {value!r} is not usable as an id; use 1-100 letters, "
                    "digits, '-', '_' and '.'"
                )
        if self.started_as not in STARTS:
            raise InvalidArgument(
                f"started_as {self.started_as!r} is unknown; use one of {', '.join(STARTS)}"
            )

    @property
    def own_store(self) -> str:
        return f"instance/{self.instance}"

    @property
    def profile_store(self) -> str:
        return f"profile/{self.profile}"


@dataclass(frozen=True)
class Binding:
    """Where an agent's memories live and whether it may write them."""

    store_id: str
    writable: bool


def resolve(scope: Scope, agent: Agent) -> Binding:
    """Apply the binding table to an agent started as root, implementer, subagent,
    reviewer or merge (forks and successors are the holder's: they start from one)."""
    if scope == "isolated":
        return Binding(agent.own_store, True)
    if scope == "shared":
        return Binding(agent.profile_store, True)
    spawner = agent.spawner
    if agent.started_as != "subagent" or spawner is None:
        # read-only restricts an inherited handle and nothing else
        return Binding(agent.own_store, True)
    return Binding(spawner.store_id, scope == "inherited")
