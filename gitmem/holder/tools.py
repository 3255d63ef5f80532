"""A holder's tools: which calls it is offered, and one call's dispatch.

Only here do gitmem's errors become tool-result text: a refusal carries its kind and
its message; a sandbox crash is gitmem's own defect and says so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, cast

from gitmem.capability import Capability
from gitmem.edits import Build, Rules
from gitmem.errors import GitmemError, InternalError, InvalidArgument, ReadOnly, Unavailable
from gitmem.holder.code import Code
from gitmem.holder.context import having
from gitmem.lean.text import shown
from gitmem.store import Snapshot, Storage, past_write
from gitmem.strategies import Tool
from gitmem.types import Author, Memory, Revision

__all__ = ["ToolResult", "Toolbox", "offered_tools"]

DEFECT = (
    "gitmem failed to compile or load code (its own defect, not your argument); "
    "the call did nothing, and you may try again"
)
AWAITS_REVIEW = (
    "This change awaits review: it is kept on your proposal to {store}, not yet in the "
    "store. You read your memories with it in place; other agents see it only once an "
    "operator approves it."
)
DEFECT_AFTER_WRITE = (
    "the change was saved, but gitmem then failed on its code (its own defect, not your "
    "argument); read the memory to see it as it stands"
)


@dataclass(frozen=True)
class ToolResult:
    """What one tool call returns: text for the model, a kind for the harness."""

    ok: bool
    kind: str
    text: str

    @classmethod
    def refusal(cls, error: GitmemError) -> ToolResult:
        return cls(False, error.kind, str(error))


def offered_tools(capability: Capability, writable: bool) -> tuple[Tool, ...]:
    """The tools a holder is offered, in order."""
    tools = capability.strategy.tools
    if not writable:
        tools = tuple(t for t in tools if not t.writes)
    if not capability.revise_memories:
        tools = tuple(t for t in tools if not t.revises)
    return tools


@dataclass
class _Desk:
    """The desk a call works at (see :class:`gitmem.strategies.Desk`)."""

    repo: Storage
    store_id: str
    rules: Rules
    code_mode: bool
    cache: dict[str, object]
    author: Author
    code: Code
    published: Callable[[list[Revision]], None]
    proposer: str | None = None
    """The holder whose proposal takes the writes, when they await review."""
    at: str | None = None
    """The store's head as the caller read it just before the call (``None``: read it
    when the call reads the store)."""
    committed: bool = False
    """Whether this call has published a change: what a later failure must admit."""

    def snapshot(self) -> Snapshot:
        if self.proposer is not None:
            return self.repo.proposal_view(self.store_id, self.proposer)
        return self.repo.snapshot(self.store_id, self.at)

    def publish(self, build: Build) -> list[Revision]:
        self.code.publishing()
        if self.proposer is not None:
            revisions = self.repo.propose(self.store_id, self.proposer, self.author, build)
        else:
            revisions = self.repo.publish(self.store_id, self.author, build)
        self.committed = True
        for revision in revisions:
            if revision.removed:
                self.code.unload(revision.slug)
        self.published(revisions)  # a proposal's too: told apart by the holder
        return revisions

    def check_code(self, memory: Memory) -> None:
        self.code.check(memory)

    def written(self, memory: Memory) -> None:
        self.code.written(memory)

    def opened(self, memory: Memory) -> str | None:
        return self.code.opened(memory)

    def gone(self, slug: str) -> None:
        self.code.unload(slug)


@dataclass
class Toolbox:
    """The calls of one holder, dispatched against its store."""

    repo: Storage
    store_id: str
    capability: Capability
    writable: bool
    rules: Rules
    author: Author
    code: Code
    published: Callable[[list[Revision]], None]
    proposer: str | None = None
    """The holder whose proposal takes the writes, when they await review."""
    stamp: Callable[[str, bool], Mapping[str, str]] = field(default=lambda tool, program: {})
    """The provenance trailers of a write by the call ``tool`` (``program``: made by an
    agent program or onUse script); set by the harness, never by the call's arguments."""
    cache: dict[str, object] = field(default_factory=lambda: dict[str, object]())

    def __post_init__(self) -> None:
        self.offered = offered_tools(self.capability, self.writable)
        self._by_name = {t.name: t for t in self.offered}
        self._stamped: dict[tuple[str, bool], tuple[Rules, Mapping[str, str], Rules]] = {}

    def names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.offered)

    def schemas(self) -> list[dict[str, Any]]:
        return [t.schema() for t in self.offered]

    def view(self) -> Snapshot:
        """The store as this holder's calls read it."""
        if self.proposer is not None:
            return self.repo.proposal_view(self.store_id, self.proposer)
        return self.repo.snapshot(self.store_id)

    def call(self, name: str, args: object, *, code: bool, at: str | None = None) -> ToolResult:
        """Dispatch one call; every refusal and defect becomes a result, never a raise.
        ``at`` is the store's head as the caller has just read it (the commit a turn
        records), so the call reads the store there rather than reading the head again;
        a write still publishes onto the head it finds."""
        desk: _Desk | None = None
        try:
            tool = self._tool(name)
            if not isinstance(args, Mapping):
                # a harness may hand over whatever JSON the model wrote
                raise InvalidArgument(
                    f"`{name}` takes its arguments as one object of named values, such as "
                    f'{{"name": "todo"}}, not {type(args).__name__}; call it again with one'
                )
            args = cast(Mapping[str, object], args)
            tool.check_arguments(args, code=code)
            desk = _Desk(
                self.repo,
                self.store_id,
                self._rules(name, code),
                code,
                self.cache,
                self.author,
                self.code,
                self.published,
                self.proposer,
                at,
            )
            text = tool.run(desk, dict(args))
            if desk.committed and self.proposer is not None:
                text += "\n\n" + AWAITS_REVIEW.format(store=self.store_id)
            return ToolResult(True, "ok", text)
        except InternalError as defect:
            self.code.defect = defect
            # Never "did nothing" once something was committed.
            text = DEFECT_AFTER_WRITE if desk is not None and desk.committed else DEFECT
            return ToolResult(False, "io-error", text)
        except GitmemError as error:
            return ToolResult.refusal(error)

    def _rules(self, name: str, code: bool) -> Rules:
        """The rules a call ``name`` writes under: the holder's, with the call's stamp
        among the trailers (kept while the rules and the stamp are the same objects)."""
        stamp = self.stamp(name, code)
        kept = self._stamped.get((name, code))
        if kept is None or kept[0] is not self.rules or kept[1] is not stamp:
            trailers = MappingProxyType({**self.rules.trailers, **stamp})
            kept = (self.rules, stamp, replace(self.rules, trailers=trailers))
            self._stamped[name, code] = kept
        return kept[2]

    def _tool(self, name: str) -> Tool:
        found = self._by_name.get(name)
        if found is not None:
            return found
        strategy = self.capability.strategy
        own = {t.name: t for t in strategy.tools}.get(name)
        have = having(self.names())
        pinned = self.repo.pinned(self.store_id)
        if own is not None and own.writes and pinned is not None:
            raise past_write(self.store_id, pinned)
        if own is not None and own.writes and not self.writable:
            raise ReadOnly(
                f"these memories are another agent's: you may read them but not change "
                f"them, so `{name}` is refused. {have}"
            )
        if own is not None and own.revises:
            raise Unavailable(
                f"memories are append-only in this run, so `{name}` is not available. {have}"
            )
        raise Unavailable(f"`{shown(name)}` is not available under {strategy.name}. {have}")
