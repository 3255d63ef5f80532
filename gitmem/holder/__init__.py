"""A bound agent: a small facade over its tools, what it has in context, its notices,
its telemetry and its code.

    holder = repo.bind(capability, Agent("researcher", "run-1"))
    holder.tools()                      # for the model's tool-calling API
    holder.call("create_memory", {...}) # a ToolResult: .ok, .kind, .text
    holder.pinned_block(); holder.notices(); holder.compact()
    turn = holder.turn("read_memory", {"name": "csv-tools"})  # notices, call, end, views

Each part is its own module: ``tools`` (offer and dispatch), ``context`` (prompt and
pinned block), ``notices``, ``telemetry``, ``code`` and ``turn``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from gitmem.binding import Agent, Binding, check_launch, fork_binding, successor_binding
from gitmem.capability import Capability, Scope
from gitmem.edits import Rules
from gitmem.errors import GitmemError, InternalError
from gitmem.holder import context
from gitmem.holder.code import Code
from gitmem.holder.framing import frame_notice, frame_view, framed
from gitmem.holder.notices import Notices
from gitmem.holder.telemetry import Event, Hub, Telemetry, state_event
from gitmem.holder.tools import Toolbox, ToolResult, offered_tools
from gitmem.holder.turn import (
    PROGRAM_ARGUMENTS,
    PROGRAM_CALL,
    PROGRAM_TOOL,
    Turn,
    program_answer,
    program_failure,
    view_text,
)
from gitmem.sandbox import ProgramResult, Sandbox, View
from gitmem.store import Storage
from gitmem.strategies import AgentVoice
from gitmem.trailers import Provenance, agent_trailer, capability_trailer
from gitmem.types import Author, Revision

__all__ = [
    "NOTICE_SPAN_CALL",
    "PROGRAM_CALL",
    "PROGRAM_TOOL",
    "Event",
    "Holder",
    "Hub",
    "ToolResult",
    "Turn",
    "frame_notice",
    "frame_view",
    "framed",
    "view_text",
]

_CAMEL = {"oldText": "old_text", "newText": "new_text", "onUse": "on_use"}
NOTICE_SPAN_CALL = "noticeSpan"
"""The call a program or onUse script makes (``memories.noticeSpan()``) for the commits
the holder's last notice covered: JSON ``{"from", "to"}``, or ``null`` if none."""


def _camel(name: str) -> str:
    """A call's name as a program calls it: ``read_memory`` is ``readMemory``."""
    first, *rest = name.split("_")
    return first + "".join(part[:1].upper() + part[1:] for part in rest)


class Holder:
    """An agent bound to one memory store through the memories capability."""

    def __init__(
        self,
        repo: Storage,
        capability: Capability,
        agent: Agent,
        binding: Binding,
        *,
        author: Author | None = None,
        hub: Hub | None = None,
        named: bool = False,
        provenance: Provenance | None = None,
    ) -> None:
        self.repo = repo
        self.capability = capability
        self.agent = agent
        self.store_id = binding.store_id
        self.scope: Scope = capability.scope
        self.writable = binding.writable
        self.strategy = capability.implementation
        self.transfer_note = binding.note
        """Why a successor starts on a fresh store, when it does."""
        self.provenance = (provenance or Provenance()).with_run()
        """Where this holder's writes come from, as its harness says: every commit it
        makes records it (see :class:`gitmem.trailers.Provenance`). An adapter that
        learns more after binding (an MCP client's name) may replace it."""
        self._stamps: tuple[Provenance, dict[tuple[str, bool], dict[str, str]]] = (
            self.provenance,
            {},
        )
        self._hub = hub or Hub()
        self._author = author or Author.agent(agent.instance)
        strategy = capability.strategy
        self._code = Code(strategy.loads_code_on)
        self._telemetry = Telemetry(self.store_id, self.state)
        self._hub.join(self._telemetry)
        offered = tuple(t.name for t in offered_tools(capability, self.writable))
        rules = Rules(
            voice=AgentVoice(strategy, offered),
            limits=capability.limits,
            applies=strategy.aggregate_limits,
            index_line=strategy.index_line,
            trailers=self._trailers(author is None, named),
        )
        self._tools = Toolbox(
            repo,
            self.store_id,
            capability,
            self.writable,
            rules,
            self._author,
            self._code,
            self._published,
            agent.instance if capability.review and self.writable else None,
            self._stamp,
        )
        self._block = context.PinnedBlock(
            repo, self.store_id, strategy, self._tools.cache, self._tools.view
        )
        # What `memories` lists in a program: the offered calls, as programs spell them.
        self._code.calls = tuple(_camel(name) for name in self._tools.names())
        self._notices = Notices(repo, self.store_id, agent.instance, strategy)
        self._prompt: str | None = None

    @classmethod
    def bind_store(
        cls,
        repo: Storage,
        store_id: str,
        capability: Capability,
        agent: Agent,
        *,
        writable: bool = True,
        compaction: str = "summary",
        author: Author | None = None,
        hub: Hub | None = None,
        provenance: Provenance | None = None,
    ) -> Holder:
        """Bind ``agent`` to a store the operator names, rather than the one the binding
        table picks (``gitmem mcp --store``, an operator's program run), after the
        checks every launch passes. Binding writes nothing."""
        check_launch(capability, agent, compaction, spawner=None)
        binding = Binding(store_id, writable)
        return cls(
            repo,
            capability,
            agent,
            binding,
            author=author,
            hub=hub,
            named=True,
            provenance=provenance,
        )

    def _trailers(self, as_agent: bool, named: bool) -> dict[str, str]:
        """What each write records: the capability, and (when the holder writes as its
        agent, not for an operator) which agent wrote and the scope it asked for."""
        recorded = capability_trailer(self.strategy, self.capability.limits)
        if as_agent:
            scope = "named" if named else self.scope
            agent = self.agent
            recorded |= agent_trailer(agent.profile, agent.instance, scope, agent.started_as)
        return recorded

    def _stamp(self, tool: str, program: bool) -> dict[str, str]:
        """The provenance trailers of a write made by the call ``tool`` (every call is
        stamped, reads too: kept per call name while the provenance is the same)."""
        if self._stamps[0] is not self.provenance:
            self._stamps = (self.provenance, {})
        known = self._stamps[1]
        found = known.get((tool, program))
        if found is None:
            found = known[tool, program] = self.provenance.trailers(tool, program)
        return found

    # -- tools -------------------------------------------------------------------------

    def offered(self) -> tuple[str, ...]:
        """The calls this holder is offered, in order."""
        return self._tools.names()

    def tools(self) -> list[dict[str, Any]]:
        """The offered tools, each with ``name``, ``description`` and ``input_schema``."""
        return self._tools.schemas()

    def call(self, name: str, arguments: Mapping[str, object] | None = None) -> ToolResult:
        """Dispatch one native tool call."""
        return self._tools.call(name, {} if arguments is None else arguments, code=False)

    def turn(
        self,
        name: str | None = None,
        arguments: Mapping[str, object] | None = None,
        *,
        notices: bool = True,
        code: bool = True,
    ) -> Turn:
        """One turn: pending notices (delivered once), then the call ``name`` (none if
        ``None``), then the end of the turn (each used code memory's onUse), then the
        views the turn opened.

        With ``code``, the call ``run_program`` runs ``arguments["source"]`` as an agent
        program; without it, no program runs and the turn ends at the call (no onUse
        scripts, no views taken). Nothing is raised: refusals and sandbox failures are
        in the turn.
        """
        # the head is read once: the notices run up to it, the turn records it, and a
        # plain call reads the store there
        commit = self.repo.head(self.store_id)
        taken = self._notices.take(commit) if notices else None
        span = self._notices.span if notices else None
        args: Mapping[str, object] = {} if arguments is None else arguments
        if name == PROGRAM_CALL and code:
            result, program, error = self._program_call(args)
        elif name is None:
            result, program, error = None, None, None
        else:
            result = self._tools.call(name, args, code=False, at=commit)
            program, error = None, None
        if not code:
            return Turn(taken, result, commit=commit, span=span)
        defect: InternalError | None = None
        try:
            self.end_turn()
        except InternalError as exc:
            defect = exc
        views = tuple(self.take_views())
        return Turn(taken, result, views, program, error, defect, commit=commit, span=span)

    def _program_call(
        self, args: Mapping[str, object]
    ) -> tuple[ToolResult, ProgramResult | None, GitmemError | None]:
        source = args.get("source")
        if not isinstance(source, str) or set(args) - {"source"}:
            return ToolResult(False, "invalid-argument", PROGRAM_ARGUMENTS), None, None
        try:
            program = self.run_program(source)
        except GitmemError as exc:  # refused outright, or the sandbox failed
            return program_failure(exc), None, exc
        return program_answer(program), program, None

    def _published(self, revisions: list[Revision]) -> None:
        """What this holder's call has just published: its own commits, which its
        notices leave out (a proposal's too, which its approval may bring in), and,
        unless they await review, the store's new revisions, for the telemetry."""
        self._notices.wrote([r.commit for r in revisions])
        if not self.reviewed:  # a proposal changes no store: its approval brings them
            self._hub.published(self._telemetry, revisions)

    # -- in context --------------------------------------------------------------------

    def pinned_block(self) -> str:
        """What the strategy pins, built on the first turn and at each compaction only."""
        return self._block.shown()

    def system_prompt(self) -> str:
        """The memory section of the system prompt; the same for the holder's life,
        unless the strategy puts its pinned text in it (then the same until the next
        compaction)."""
        if self._prompt is None:
            self._prompt = context.system_prompt(
                self.capability,
                self.writable,
                self._tools.offered,
                self.transfer_note,
                self._block.text() if self.capability.strategy.pinned_in_prompt else "",
            )
        return self._prompt

    def memory_compaction_prompt(self) -> str:
        """The request that replaces a summary under memory-compaction."""
        return context.memory_compaction_prompt(self._tools.offered)

    def compact(self) -> None:
        """A compaction boundary: rebuild the pinned block, then sweep pending notices."""
        self._block.rebuild()
        if self.capability.strategy.pinned_in_prompt:
            self._prompt = None
        self._notices.sweep()

    def notices(self) -> str | None:
        """What other holders changed since this holder's last turn, delivered once."""
        return self._notices.take(self.repo.head(self.store_id))

    @property
    def notice_span(self) -> tuple[str | None, str] | None:
        """The commits the last notice taken covers, ``(from, to)``: those after
        ``from`` (``None``: from the store's first commit) up to ``to``, for
        ``gitmem log`` or a read ``--at`` either end; ``None`` if it gave no notice."""
        return self._notices.span

    # -- telemetry ---------------------------------------------------------------------

    def state(self) -> Event:
        """The ``memory_state`` event: the set as it stands, limits and peaks."""
        strategy = self.capability.strategy
        event = state_event(
            self._tools.view(),
            self.scope,
            self.writable,
            self.capability.limits,
            strategy.aggregate_limits,
            strategy.index_line,
        )
        if self.reviewed:
            pending = self.repo.pending(self.store_id, self.agent.instance)
            event["review"] = {
                "proposal": f"{self.store_id}/{self.agent.instance}",
                "pending": sorted(pending.memories) if pending else [],
            }
        return event

    @property
    def reviewed(self) -> bool:
        """Whether this holder's writes await an operator's review."""
        return self._tools.proposer is not None

    def revisions(self) -> list[Event]:
        """Every ``memory_revision`` of the store, in order."""
        return [r.to_dict() for r in self.repo.revisions(self.store_id)]

    def subscribe(self, callback: Callable[[Event], None]) -> Callable[[], None]:
        """Stream events to ``callback``; returns a function that stops the stream."""
        return self._telemetry.subscribe(callback)

    # -- code memories -----------------------------------------------------------------

    @property
    def defect(self) -> InternalError | None:
        """The last sandbox crash met by a call (gitmem's own defect), for the harness."""
        return self._code.defect

    @property
    def sandbox(self) -> Sandbox:
        """Where this holder's programs and onUse scripts run (started on first use)."""
        return self._code.sandbox

    def use_sandbox(self, sandbox: Sandbox) -> None:
        """Run this holder's programs and onUse scripts in ``sandbox`` (a harness's own
        time and memory limits); the one it had, if any, is closed."""
        self._code.use_sandbox(sandbox)

    @property
    def loader(self) -> Sandbox:
        """Where this holder's code halves compile and load."""
        return self._code.loader

    def modules(self) -> dict[str, str]:
        """The loaded code memories: module key → slug."""
        return self._code.modules()

    def run_program(self, source: str) -> ProgramResult:
        """Run an agent program in the sandbox, against this holder's grants.

        The result records the store commit the program read (the head as it started).
        Raises ``InternalError`` if the sandbox itself fails (gitmem's defect).
        """
        commit = self.repo.head(self.store_id)
        return replace(self._code.run_program(source, self._bridge), commit=commit)

    def end_turn(self) -> None:
        """After the turn's program: run each used code memory's onUse, once each.

        Views they open arrive with the next turn (``take_views``); their output and
        errors never reach the model.
        """
        self._code.end_turn(self._bridge)

    def take_views(self) -> list[View]:
        """Views opened since the last call: load documentation, program and onUse views."""
        return self._code.take_views()

    def _bridge(self, name: str, arguments: dict[str, object]) -> tuple[bool, str]:
        if name == NOTICE_SPAN_CALL:
            span = self.notice_span
            return True, json.dumps(None if span is None else {"from": span[0], "to": span[1]})
        call = re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()
        args = {_CAMEL.get(k, k): v for k, v in arguments.items()}
        result = self._tools.call(call, args, code=True)
        return result.ok, result.text

    def close(self) -> None:
        """Stop this holder's sandbox processes, if it started any."""
        self._code.close()

    # -- forks and successors ----------------------------------------------------------

    def fork(self, instance: str) -> Holder:
        """A fork of this agent: memories follow the scope, not the copy."""
        agent = Agent(self.agent.profile, instance, self.agent.started_as, self.agent.spawner)
        binding = fork_binding(self.scope, self.store_id, agent)
        if binding.copy_from is not None and self.repo.head(binding.copy_from) is not None:
            self.repo.fork(binding.copy_from, binding.store_id)
        return Holder(
            self.repo, self.capability, agent, binding, hub=self._hub, provenance=self.provenance
        )

    def succeed(
        self, agent: Agent, capability: Capability, compaction: str = "summary"
    ) -> Holder | None:
        """The holder a successor takes over (``None`` if it keeps no memories)."""
        check_launch(capability, agent, compaction, spawner=None)
        if not capability.enabled:
            return None
        binding = successor_binding(self.store_id, self.strategy, agent, capability)
        return Holder(
            self.repo, capability, agent, binding, hub=self._hub, provenance=self.provenance
        )
