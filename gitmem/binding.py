"""Which store an agent binds, and whether it may write: the binding table.

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

Everything here is a pure function of the configuration and the agents: it names a
store and says whether the agent may write it; the holder acts on the answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar, Literal, Protocol

from gitmem.capability import Capability, Scope
from gitmem.errors import InvalidArgument, LaunchRefused
from gitmem.lean.refs import usable_store

__all__ = [
    "COMPACTIONS",
    "STARTS",
    "Agent",
    "Binding",
    "Spawner",
    "check_launch",
    "fork_binding",
    "resolve",
    "successor_binding",
]

COMPACTIONS = ("summary", "memory")

StartedAs = Literal["root", "implementer", "subagent", "reviewer", "merge"]
STARTS: tuple[StartedAs, ...] = ("root", "implementer", "subagent", "reviewer", "merge")
_NAME_RE = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}")


class Spawner(Protocol):
    """What binding reads of a spawner's holder: its store and its strategy."""

    @property
    def store_id(self) -> str: ...

    @property
    def strategy(self) -> str: ...


@dataclass(frozen=True)
class Agent:
    """An agent as the harness started it.

    ``spawner`` is the spawner's memory holder, or ``None`` when nothing spawned the
    agent or the spawner keeps no memories.
    """

    STARTS: ClassVar[tuple[StartedAs, ...]] = STARTS
    """How an agent may be started."""
    COMPACTIONS: ClassVar[tuple[str, ...]] = COMPACTIONS
    """How an agent's profile may answer a compaction: a summary, or memory calls."""

    profile: str
    instance: str
    started_as: StartedAs = "root"
    spawner: Spawner | None = None

    def __post_init__(self) -> None:
        for what, value in (("profile", self.profile), ("instance", self.instance)):
            if not _NAME_RE.fullmatch(value) or not usable_store(value):
                raise InvalidArgument(
                    f"agent {what} {value!r} is not usable as an id; use 1-100 letters, "
                    "digits, '-', '_' and '.', not ending in '.' or '.lock'"
                )
        # its stores, and its notice watermarks on them, are named after it
        for named in (self.own_store, self.profile_store):
            if not usable_store(f"notices/{self.instance}/{named}"):
                raise InvalidArgument(
                    f"agent profile {self.profile!r} and instance {self.instance!r} are too "
                    "long together to name its stores' notice marks; shorten one"
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
    copy_from: str | None = None
    """A store whose head the agent's store starts at (an isolated fork's copy)."""
    note: str | None = None
    """Why the agent starts where it does, for its system prompt (a successor's)."""


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


def check_launch(
    capability: Capability, agent: Agent, compaction: str, spawner: Spawner | None
) -> None:
    """Refuse a launch whose configuration cannot work, naming every problem at once."""
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


def fork_binding(scope: Scope, store_id: str, fork: Agent) -> Binding:
    """Where a fork's memories live: memories follow the scope, not the copy."""
    if scope == "isolated":
        return Binding(fork.own_store, True, copy_from=store_id)
    return Binding(store_id, scope != "read-only")


def successor_binding(
    store_id: str, strategy: str, successor: Agent, capability: Capability
) -> Binding:
    """Where a successor's memories live, taking over from a holder of ``store_id``
    under ``strategy``."""
    if capability.scope == "shared":
        # shared means bound to the profile: it overrides the transfer, or one
        # profile would curate two notebooks at once
        return Binding(successor.profile_store, True)
    if capability.implementation != strategy:
        note = (
            f"Your predecessor kept its memories under the {strategy} strategy and "
            f"you organize yours under {capability.implementation}, so you start with a "
            "fresh store of your own rather than one you could not read."
        )
        return Binding(successor.own_store, True, note=note)
    return Binding(store_id, capability.scope != "read-only")
