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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gitmem import Agent, Capability, Holder, Limits, Repository, ops
from gitmem.errors import InvalidArgument, LaunchRefused

__all__ = ["DEFAULT_PROFILE", "Launch", "open_holder", "read_capability"]

DEFAULT_PROFILE = "agent"
_CAPABILITY_MAX = 1 << 20


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
        return Agent(self.profile, self.instance or self.profile, started)

    def to_dict(self) -> dict[str, Any]:
        """The options as JSON-ready data (kept by hooks between processes)."""
        return {
            "capability": self.capability,
            "profile": self.profile,
            "instance": self.instance,
            "started_as": self.started_as,
            "store": self.store,
            "compaction": self.compaction,
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
        )


def _optional(value: object) -> str | None:
    return value if isinstance(value, str) else None


def read_capability(value: str) -> Capability:
    """A capability from a file path or from JSON text."""
    text = value
    if not value.lstrip().startswith("{"):
        try:
            with open(value, "rb") as handle:
                data = handle.read(_CAPABILITY_MAX + 1)
        except OSError as exc:
            raise InvalidArgument(
                f"cannot read the capability file {value}: {exc.strerror or exc}"
            ) from None
        if len(data) > _CAPABILITY_MAX:
            raise InvalidArgument(f"the capability file {value} is larger than 1 MB")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidArgument(f"the capability file {value} is not UTF-8 text") from None
    return Capability.from_json(text)


def open_holder(repo: Repository, launch: Launch) -> Holder:
    """Bind the one holder ``launch`` describes."""
    agent = launch.agent()
    if launch.capability is None:
        store = ops.pick_store(repo, launch.store, may_create=launch.store is not None)
        found = ops.record(repo, store) if store in repo.stores() else None
        capability = found.capability() if found else Capability("markdown", "shared", Limits())
        return Holder.bind_store(repo, store, capability, agent, hub=repo.hub)
    capability = read_capability(launch.capability)
    if not capability.enabled:
        raise LaunchRefused(["the capability is disabled: this agent keeps no memories"])
    if launch.store is not None:
        store = ops.pick_store(repo, launch.store, may_create=True)
        writable = capability.scope != "read-only"
        return Holder.bind_store(
            repo,
            store,
            capability,
            agent,
            writable=writable,
            compaction=launch.compaction,
            hub=repo.hub,
        )
    holder = repo.bind(capability, agent, launch.compaction)
    assert holder is not None  # enabled, checked above
    return holder
