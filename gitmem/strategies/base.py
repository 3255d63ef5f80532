"""What every strategy is made of: the ``Strategy`` protocol, its tools, and the desk
a tool works at.

A strategy owns its calls (each a :class:`Tool`: schema, handler, hint), what it pins
in the window, which aggregate limits bound its set, and the words its agent is told.
The holder supplies the :class:`Desk`: the store, the rules a write is held to, and
the code hooks. Nothing here knows the holder or the sandbox.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, cast

from gitmem.edits import Build, Rules
from gitmem.errors import GitmemError, InvalidArgument
from gitmem.lean.text import shown
from gitmem.limits import Limits
from gitmem.store import Snapshot, Storage
from gitmem.types import Memory, Revision

_UNKNOWN_SHOWN = 5
"""The unknown arguments a refusal names at most."""

__all__ = [
    "AgentVoice",
    "Desk",
    "Handler",
    "PromptContext",
    "Strategy",
    "StrategyBase",
    "Tool",
    "readable_memories",
]

CODE_FIELDS = {"code": {"type": "string"}, "on_use": {"type": "string"}}
"""The fields a code-mode call adds to a tool that takes code halves."""


class Desk(Protocol):
    """What a tool call may use, supplied by the holder that dispatches it."""

    repo: Storage
    store_id: str
    rules: Rules
    """The limits, trailers and voice this holder writes under."""
    code_mode: bool
    """Whether the call came from an agent program (responses-as-code)."""
    cache: dict[str, object]
    """State a strategy keeps per holder (a search index), keyed by its own names."""

    def snapshot(self) -> Snapshot:
        """The store as of its head."""
        ...

    def publish(self, build: Build) -> list[Revision]:
        """Publish one change as one commit; its revisions, subject first."""
        ...

    def check_code(self, memory: Memory) -> None:
        """Where the strategy loads on write, load the halves now, before publishing;
        refuse halves that do not compile or load."""
        ...

    def written(self, memory: Memory) -> None:
        """A memory was written: its code, loaded by ``check_code``, is now in use."""
        ...

    def opened(self, memory: Memory) -> str | None:
        """A memory was read: load its code where the strategy loads on read, and mark
        its onUse for the end of the turn; the located diagnostic if it fails."""
        ...

    def gone(self, slug: str) -> None:
        """A read found ``slug`` missing: its code, if it was loaded, is unloaded."""
        ...


Handler = Callable[[Desk, dict[str, object]], str]


@dataclass(frozen=True)
class Tool:
    """One native call: its schema, its handler, and when it is offered."""

    name: str
    description: str
    properties: Mapping[str, Mapping[str, Any]]
    required: tuple[str, ...]
    run: Handler = field(compare=False)
    writes: bool = True
    """Withheld from a read-only holder."""
    revises: bool = False
    """Withheld when ``reviseMemories`` is off."""
    takes_code: bool = False
    """Accepts ``code`` and ``on_use`` when a program makes the call."""
    hint: str = ""
    """A sentence for the system prompt when the call is offered."""

    def schema(self) -> dict[str, Any]:
        """The tool definition: ``name``, ``description`` and ``input_schema``."""
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": {
                "type": "object",
                "properties": {k: dict(v) for k, v in self.properties.items()},
                "required": list(self.required),
                "additionalProperties": False,
            },
        }

    def check_arguments(self, args: Mapping[str, object], *, code: bool) -> None:
        """Refuse arguments the schema does not admit, naming what is wrong."""
        properties = dict(self.properties)
        if code and self.takes_code:
            properties.update(CODE_FIELDS)
        unknown = sorted(set(args) - set(properties))
        if unknown:
            named = ", ".join(map(shown, unknown[:_UNKNOWN_SHOWN]))
            if len(unknown) > _UNKNOWN_SHOWN:
                named += f" and {len(unknown) - _UNKNOWN_SHOWN:,} more"
            raise InvalidArgument(
                f"{self.name} does not take {named}; its arguments are {', '.join(properties)}"
            )
        missing = [r for r in self.required if args.get(r) is None]
        if missing:
            raise InvalidArgument(f"{self.name} needs {', '.join(missing)}")
        for key, value in args.items():
            if value is None:
                continue
            kind = properties[key]["type"]
            if kind == "string" and not isinstance(value, str):
                raise InvalidArgument(f"{key} must be a string, not {type(value).__name__}")
            if kind == "array" and not (
                isinstance(value, list)
                and all(isinstance(v, str) for v in cast(list[object], value))
            ):
                raise InvalidArgument(f"{key} must be a list of strings")


@dataclass(frozen=True)
class PromptContext:
    """What a strategy may say in the memory section of a holder's system prompt."""

    offered: tuple[Tool, ...]
    """The calls the holder is offered."""
    writable: bool
    revise_memories: bool
    limits: Limits
    note: str | None
    """Why a successor starts on a fresh store, when it does."""
    pinned: str
    """The pinned text as of the last boundary (see ``Strategy.pinned_in_prompt``)."""


class Strategy(Protocol):
    """One way of keeping memory: what is pinned, which calls and limits apply.

    A strategy may also have the optional hook ``operator_problems(repo, store)``:
    what ``gitmem check`` reports of a store that breaks the strategy's own form; and
    the optional flag ``pins_descriptions``: ``pinned`` reads only each memory's slug
    and description, so the holder gives it memories with empty bodies, from the
    store's kept listing, rather than reading every body.
    :class:`StrategyBase` gives a strategy that hook and the defaults below."""

    name: str
    tools: tuple[Tool, ...]
    """Every call the strategy offers, in the order tools are listed."""
    aggregate_limits: frozenset[str]
    """Which of maxCount, maxTotalLen, maxLenIndex bound the set."""
    loads_code_on: Literal["write", "read"]
    """When a memory's code is compiled and loaded."""
    notice_bodies: bool
    """Whether a notice carries each memory's body inline."""
    notice_tail: str
    """The last line of a notice: where the agent finds the text."""
    find_hint: str
    """How the agent finds a memory's name, for a not-found refusal."""
    revise_call: str
    """The call that revises a memory, named when a create meets an existing one."""

    pinned_in_prompt: bool
    """Whether the pinned text is part of the prompt section itself: the holder's
    pinned block is then empty, and a compaction renders the prompt again."""

    def pinned(self, memories: list[Memory]) -> str:
        """The block pinned in the window ("" for an empty store)."""
        ...

    def pinned_from(self, repo: Storage, store: str, cache: dict[str, object]) -> str | None:
        """The pinned block read through the holder's ``cache`` (an index the strategy
        keeps in step with the head), or ``None`` to have ``pinned`` given every memory."""
        ...

    def prompt_section(self, context: PromptContext) -> str | None:
        """The whole memory section of the system prompt, or ``None`` for the holder's
        standard one (built from ``in_context`` and the tools' hints)."""
        ...

    def operator_refusal(self, op: str, slug: str) -> str | None:
        """Why an operator's plain ``create``/``edit``/``delete`` of ``slug`` is refused
        under this strategy (naming what to use instead), or ``None`` if it is not."""
        ...

    def in_context(self) -> str:
        """One paragraph for the system prompt: what of the memories is in the window."""
        ...

    def index_line(self, memory: Memory) -> str:
        """A memory's line in the pinned index (measured by maxLenIndex)."""
        ...


class StrategyBase:
    """An optional base class giving a strategy the hooks it need not write: no
    pinned block of its own cache, the holder's standard prompt section, no refusal of
    an operator's plain edits, and no health checks beyond the repository's own."""

    pinned_in_prompt = False
    pins_descriptions = False
    """``pinned`` reads more of a memory than its slug and description."""

    def pinned_from(self, repo: Storage, store: str, cache: dict[str, object]) -> str | None:
        """``None``: the holder gives ``pinned`` every memory."""
        return None

    def prompt_section(self, context: PromptContext) -> str | None:
        """``None``: the holder's standard section."""
        return None

    def operator_refusal(self, op: str, slug: str) -> str | None:
        """``None``: an operator's plain ``create``/``edit``/``delete`` is allowed."""
        return None

    def operator_problems(self, repo: Storage, store: str) -> list[str]:
        """What ``gitmem check`` reports of ``store`` beyond objects, files and code:
        memories that break this strategy's own form (none by default)."""
        return []


@dataclass(frozen=True)
class AgentVoice:
    """The write rules' refusals as an agent is told them."""

    strategy: Strategy
    offered: tuple[str, ...]

    def missing(self, slug: str) -> str:
        return f"there is no memory named `{slug}`; {self.strategy.find_hint}"

    def exists(self, slug: str) -> str:
        revise = self.strategy.revise_call
        if revise in self.offered:
            return (
                f"a memory named `{slug}` already exists; revise it with {revise}, "
                "or choose another name"
            )
        return (
            f"a memory named `{slug}` already exists and memories are append-only here; "
            "choose another name"
        )

    def text_missing(self, slug: str) -> str:
        return f"old_text does not appear in `{slug}`; read it again and quote the text exactly"

    def text_repeated(self, slug: str, times: int) -> str:
        return (
            f"old_text appears {times} times in `{slug}`; quote more of the surrounding "
            "text so it appears exactly once"
        )

    def would_empty(self, slug: str) -> str:
        return f"this edit would leave `{slug}` empty; delete it with delete_memory instead"


def readable_memories(repo: Storage, store: str) -> Iterator[Memory]:
    """The memories of a store's head that read; the object check reports the rest."""
    try:
        snapshot = repo.snapshot(store)
        slugs = snapshot.slugs()
    except GitmemError:
        return
    for slug in slugs:
        try:
            memory = snapshot.get(slug)
        except GitmemError:
            continue
        if memory is not None:
            yield memory
