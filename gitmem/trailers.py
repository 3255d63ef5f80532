"""The ``Gitmem-Capability`` trailer: the strategy and limits a binding wrote under; and
the ``Gitmem-Agent`` trailer: which agent wrote, and the scope its configuration asked for.

Every commit a holder makes records it, so an operator's edit, a console, or a
pre-receive hook can hold later writes to the same limits without a capability file
and without starting a sandbox::

    Gitmem-Capability: markdown maxCount=0 maxLenPerMemory=2000 maxTotalLen=0 ...
    Gitmem-Agent: profile=researcher instance=run-1 scope=isolated started-as=root

The agent trailer is what the console reads an agent's profile and asked-for scope
from (``scope=named`` when the launch named the store itself); it is a record for
people to read, never a rule a write is held to.

The provenance trailers say where a write came from, as the harness knows it, never as
the model says it: the session (the client's session id, or a run id the holder made
up), the client (an MCP client's name) and the tool or program that wrote::

    Gitmem-Session: 4f1c2a9e-0d7b-4c55-9f43-2b8e1f0a6d3c
    Gitmem-Client: claude-code
    Gitmem-Tool: create_memory

The store's own trailers (slug, op, revision, totals, peaks) are ``gitmem.store``'s.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from gitmem.errors import InvalidArgument
from gitmem.lean.heads import CAPABILITY_TRAILER, SESSION_TRAILER
from gitmem.lean.text import shown
from gitmem.limits import LIMITS, Limits

__all__ = [
    "AGENT_KEYS",
    "AGENT_TRAILER",
    "CAPABILITY_TRAILER",
    "CLIENT_TRAILER",
    "OWN_TRAILERS",
    "SESSION_TRAILER",
    "TOOL_TRAILER",
    "WIDEN_TRAILER",
    "Provenance",
    "agent_trailer",
    "capability_trailer",
    "provenance_value",
    "read_agent_trailer",
    "read_capability_trailer",
]

AGENT_TRAILER = "Gitmem-Agent"
WIDEN_TRAILER = "Gitmem-Widen"
"""Names the limits an operator loosened on purpose (``gitmem set-limits --widen``)."""
CLIENT_TRAILER = "Gitmem-Client"
"""The client that ran the session (an MCP client's name)."""
TOOL_TRAILER = "Gitmem-Tool"
"""The call that wrote, and ``via program`` when an agent program or onUse script made it."""
OWN_TRAILERS = frozenset({
    "Gitmem-Slug", "Gitmem-Path", "Gitmem-Op", "Gitmem-Revision", "Gitmem-Count",
    "Gitmem-Chars", "Gitmem-Lines", "Gitmem-Peak-Count", "Gitmem-Peak-Chars",
    "Gitmem-Peak-Lines", CAPABILITY_TRAILER, AGENT_TRAILER, SESSION_TRAILER,
    CLIENT_TRAILER, TOOL_TRAILER, WIDEN_TRAILER, "Gitmem-Proposal", "Gitmem-Approved",
    "Gitmem-Sync", "Gitmem-Conflicts", "Gitmem-Allowlist", "Gitmem-Guard",
    "Gitmem-Correction", "Gitmem-Restores", "Gitmem-Reverts",
})  # fmt: skip
"""The trailers gitmem writes itself and reads meaning from (what a commit changed,
the limits, who wrote, a review's or a sync's part): a harness's
:attr:`Provenance.extra` may not set them."""
_VALUE_MAX = 200
AGENT_KEYS = ("profile", "instance", "scope", "started-as")
_NAME = re.compile(r"[A-Za-z0-9._-]{1,100}")


def capability_trailer(implementation: str, limits: Limits) -> dict[str, str]:
    """The trailer recording ``implementation`` and ``limits``, ready for a commit."""
    params = " ".join(f"{k}={v}" for k, v in limits.as_params().items())
    return {CAPABILITY_TRAILER: f"{implementation} {params}"}


def read_capability_trailer(trailers: Mapping[str, str]) -> tuple[str, Limits] | None:
    """The strategy name and limits a commit's trailers record (``None``: none, or odd)."""
    text = trailers.get(CAPABILITY_TRAILER)
    if text is None:
        return None
    name, _, rest = text.partition(" ")
    params: dict[str, int] = {}
    for part in rest.split():
        key, sep, value = part.partition("=")
        if not sep or key not in LIMITS or not value.isdigit() or len(value) > 18:
            return None
        params[key] = int(value)
    if not name:
        return None
    return name, Limits.from_params(params)


def agent_trailer(profile: str, instance: str, scope: str, started_as: str) -> dict[str, str]:
    """The trailer recording which agent writes, and the scope it asked for."""
    values = (profile, instance, scope, started_as)
    return {AGENT_TRAILER: " ".join(f"{k}={v}" for k, v in zip(AGENT_KEYS, values, strict=True))}


def read_agent_trailer(trailers: Mapping[str, str]) -> dict[str, str] | None:
    """``{"profile", "instance", "scope", "started-as"}`` as a commit's trailers record
    them (``None``: none, or odd)."""
    text = trailers.get(AGENT_TRAILER)
    if text is None or len(text) > 512:
        return None
    found: dict[str, str] = {}
    for part in text.split():
        key, sep, value = part.partition("=")
        if not sep or key not in AGENT_KEYS or key in found or not _NAME.fullmatch(value):
            return None
        found[key] = value
    return found if len(found) == len(AGENT_KEYS) else None


def provenance_value(text: str) -> str:
    """A provenance value as a trailer holds it: one line, printable, of at most 200
    characters (a session id, a client's name, a source id a harness handed over)."""
    shown = "".join(c if c.isprintable() else " " for c in text[: _VALUE_MAX * 2])
    return " ".join(shown.split())[:_VALUE_MAX]


@dataclass(frozen=True)
class Provenance:
    """Where a holder's writes come from, as its harness (not its model) tells it.

    ``session``: the client's session id (``""``: the holder makes up a run id);
    ``client``: the client's name; ``extra``: further ``Gitmem-*`` trailers a harness
    records on every write (an observer's source ids, say), none of
    :data:`OWN_TRAILERS`: a harness that names one is refused when it makes these.
    """

    session: str = ""
    client: str = ""
    extra: Mapping[str, str] = field(default_factory=lambda: dict[str, str]())

    def __post_init__(self) -> None:
        # a write that said it was a proposal's, an approval or a sync merge would be
        # read as one: which of them a commit is, gitmem alone records
        for key in self.extra:
            if key in OWN_TRAILERS:
                raise InvalidArgument(
                    f"provenance may not set gitmem's own trailer {shown(key)}; "
                    "name an extra trailer of your own, such as Gitmem-Source"
                )

    def with_run(self) -> Provenance:
        """These facts, with a run id of its own when no session was given."""
        if provenance_value(self.session):
            return self
        import uuid  # a launch names its run; the push hook reads trailers only

        return Provenance(f"run-{uuid.uuid4().hex[:16]}", self.client, self.extra)

    def trailers(self, tool: str = "", program: bool = False) -> dict[str, str]:
        """The trailers a write records (``tool``: the call that wrote)."""
        found = {key: provenance_value(value) for key, value in self.extra.items()}
        for key, value in (
            (SESSION_TRAILER, self.session),
            (CLIENT_TRAILER, self.client),
            (TOOL_TRAILER, f"{tool} via program" if tool and program else tool),
        ):
            if provenance_value(value):
                found[key] = provenance_value(value)
        return {key: value for key, value in found.items() if value}
