"""How an adapter starts its one holder: the capability and agent options that
``gitmem mcp``, ``gitmem hook claude-code``, ``gitmem tools`` and ``gitmem call`` share.

    launch = Launch(capability="cap.json", profile="researcher", instance="r-1")
    holder = open_holder(repo, launch)

Defaults, so that ``gitmem mcp`` alone works in a repository with one store:

- no ``capability``: the store is ``store`` (or the repository's only store) and the
  holder works under the strategy and limits that store records (markdown, unbounded,
  for a store no binding wrote); the store is chosen by the operator, so it is writable;
- a ``capability`` (a file, or JSON text): the binding table picks the store from
  the scope and the agent, unless ``store`` names one;
- ``profile`` ``agent``; ``instance`` the profile's name; ``started_as`` ``root``;
  ``compaction`` ``summary``.

Two clients that should tell each other their changes need distinct instances: notices
are never about the holder's own writes, and a write's author is its instance.

``per_session``: the instance is the client session's own, ``<profile>-<host>-<pid>``,
where ``pid`` is the client's process: the nearest ancestor that is not a shell or a
launcher. A client's hooks and its MCP server are both its child processes, so they
name the same instance with nothing passed between them; two sessions (two client
processes) and two machines name different ones. Where the process table cannot be
read the instance is ``<profile>-<host>``: one per machine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gitmem import Agent, Capability, Holder, Limits, Provenance, Repository, ops
from gitmem.adapters.sessions import capability_text, client_process, session_instance
from gitmem.errors import InvalidArgument, LaunchRefused

__all__ = [
    "DEFAULT_PROFILE",
    "Launch",
    "client_process",
    "open_holder",
    "read_capability",
    "session_instance",
]

DEFAULT_PROFILE = "agent"


@dataclass(frozen=True)
class Launch:
    """The options an adapter binds its holder with."""

    capability: str | None = None
    """A capability file, or the JSON text itself (``None``: what the store records)."""
    profile: str = DEFAULT_PROFILE
    instance: str | None = None
    """``None``: the profile's name."""
    started_as: str = "root"
    store: str | None = None
    """An operator-chosen store (``None``: the binding table's, or the only store)."""
    compaction: str = "summary"
    """``memory`` when the profile answers a compaction with memory calls."""
    per_session: bool = False
    """Without ``instance``: the client session's own instance (see the module's notes)."""

    def agent(self) -> Agent:
        """The agent these options describe."""
        if self.started_as not in Agent.STARTS:
            raise InvalidArgument(
                f"started-as {self.started_as!r} is unknown; use one of {', '.join(Agent.STARTS)}"
            )
        if self.compaction not in Agent.COMPACTIONS:
            raise InvalidArgument(
                f"compaction {self.compaction!r} is unknown; "
                f"use one of {', '.join(Agent.COMPACTIONS)}"
            )
        started: Any = self.started_as
        instance = self.instance or (
            session_instance(self.profile) if self.per_session else self.profile
        )
        return Agent(self.profile, instance, started)

    def to_dict(self) -> dict[str, Any]:
        """The options as JSON-ready data (kept by hooks between processes)."""
        return {
            "capability": self.capability,
            "profile": self.profile,
            "instance": self.instance,
            "started_as": self.started_as,
            "store": self.store,
            "compaction": self.compaction,
            "per_session": self.per_session,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Launch:
        """Options kept by :meth:`as_dict`."""
        return cls(
            capability=_optional(data.get("capability")),
            profile=str(data.get("profile") or DEFAULT_PROFILE),
            instance=_optional(data.get("instance")),
            started_as=str(data.get("started_as") or "root"),
            store=_optional(data.get("store")),
            compaction=str(data.get("compaction") or "summary"),
            per_session=data.get("per_session") is True,
        )


def _optional(value: object) -> str | None:
    return value if isinstance(value, str) else None


def read_capability(value: str) -> Capability:
    """A capability from a file path or from JSON text."""
    return Capability.from_json(capability_text(value))


def _memories_store(repo: Repository, store: str) -> None:
    """An agent holds a store of memories; a file store is the memory tool's."""
    if store in repo.stores() and ops.is_file_store(repo, store):
        raise InvalidArgument(
            f"store {store!r} is a file store (the memory tool's plain files), not a store "
            "of memories; name a store of memories with --store (a new name starts one)"
        )


def open_holder(repo: Repository, launch: Launch, provenance: Provenance | None = None) -> Holder:
    """Bind the one holder ``launch`` describes; its writes record ``provenance`` (the
    session and client the adapter's client named)."""
    agent = launch.agent()
    if launch.capability is None:
        store = ops.pick_store(repo, launch.store, may_create=launch.store is not None)
        _memories_store(repo, store)
        found = ops.record(repo, store) if store in repo.stores() else None
        capability = found.capability() if found else Capability("markdown", "shared", Limits())
        return Holder.bind_store(
            repo, store, capability, agent, hub=repo.hub, provenance=provenance
        )
    capability = read_capability(launch.capability)
    if not capability.enabled:
        raise LaunchRefused(["the capability is disabled: this agent keeps no memories"])
    if launch.store is not None:
        store = ops.pick_store(repo, launch.store, may_create=True)
        _memories_store(repo, store)
        writable = capability.scope != "read-only"
        return Holder.bind_store(
            repo,
            store,
            capability,
            agent,
            writable=writable,
            compaction=launch.compaction,
            hub=repo.hub,
            provenance=provenance,
        )
    holder = repo.bind(capability, agent, launch.compaction, provenance=provenance)
    assert holder is not None  # enabled, checked above
    return holder
