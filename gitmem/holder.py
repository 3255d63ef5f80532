"""A bound agent: its tools, their dispatch, the pinned block, notices and telemetry.

Only the holder turns gitmem's errors into tool-result text.
"""

from __future__ import annotations

import re
import threading
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, cast

from gitmem import limits as limit_checks
from gitmem.capability import Capability, Limits
from gitmem.errors import (
    AlreadyExists,
    CodeError,
    GitmemError,
    InternalError,
    InvalidArgument,
    NotFound,
    ReadOnly,
    Unavailable,
)
from gitmem.sandbox import ProgramResult, Sandbox, View, module_key
from gitmem.scope import Agent, Binding
from gitmem.store import Snapshot
from gitmem.strategies import REVISE_CALLS, STRATEGIES, Strategy, schema
from gitmem.strategies.keyword_search import SearchIndex
from gitmem.types import Author, Change, Memory, Op, Revision, check_slug, check_text

if TYPE_CHECKING:
    from gitmem.repository import Repository

__all__ = ["Event", "Holder", "ToolResult"]

Event = dict[str, Any]
CAPABILITY_TRAILER = "Gitmem-Capability"
# the calls that take code halves in responses-as-code mode
_CODE_CALLS = frozenset({"write_memory", "create_memory", "update_memory"})
_CAMEL = {"oldText": "old_text", "newText": "new_text", "onUse": "on_use"}
_IMPORT_RE = re.compile(r"import\s*(?:type\s*)?\{([^}]*)\}\s*from\s*[\"']gitmem[\"']")


@dataclass(frozen=True)
class _Module:
    """A code memory as this holder loaded it: from the commit it read, not the head."""

    slug: str
    key: str
    code: str
    on_use: str


@dataclass(frozen=True)
class ToolResult:
    """What one tool call returns: text for the model, a kind for the harness."""

    ok: bool
    kind: str
    text: str

    @classmethod
    def refusal(cls, error: GitmemError) -> ToolResult:
        return cls(False, error.kind, str(error))


class _Hub:
    """Holders of one store in this process, so a write can tell the others."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holders: dict[tuple[str, str], weakref.WeakSet[Holder]] = {}

    def join(self, holder: Holder) -> None:
        with self._lock:
            self._holders.setdefault(holder.key, weakref.WeakSet()).add(holder)

    def others(self, holder: Holder) -> list[Holder]:
        with self._lock:
            return [h for h in self._holders.get(holder.key, ()) if h is not holder]


_HUB = _Hub()


class Holder:
    """An agent bound to one memory store through the memories capability."""

    def __init__(
        self,
        repo: Repository,
        capability: Capability,
        agent: Agent,
        binding: Binding,
        *,
        transfer_note: str | None = None,
        author: Author | None = None,
    ) -> None:
        self.repo = repo
        self.capability = capability
        self.agent = agent
        self.store_id = binding.store_id
        self.scope = capability.scope
        self.writable = binding.writable
        self.strategy = capability.implementation
        self.transfer_note = transfer_note
        """Why a successor starts on a fresh store, when it does."""
        self._strategy: Strategy = STRATEGIES[capability.implementation]
        self._author = author or Author.agent(agent.instance)
        self._block: str | None = None
        self._prompt: str | None = None
        self._search: SearchIndex | None = None
        self._subscribers: list[Callable[[Event], None]] = []
        self._sandbox: Sandbox | None = None
        self._loader: Sandbox | None = None
        self._modules: dict[str, _Module] = {}
        self._used: dict[str, None] = {}
        self._views: list[View] = []
        self.defect: InternalError | None = None
        """The last sandbox crash met by a call (gitmem's own defect), for the harness."""
        self._watermark_name = f"notices/{agent.instance}/{self.store_id}"
        if repo.marker(self._watermark_name) is None:
            # a holder that joins late starts at the head, not with a backlog; one that
            # joins an empty store starts before its first commit
            repo.set_marker(self._watermark_name, repo.head(self.store_id))
        _HUB.join(self)

    @property
    def key(self) -> tuple[str, str]:
        return (self.repo.directory, self.store_id)

    # -- tools ---------------------------------------------------------------------

    def offered(self) -> tuple[str, ...]:
        """The calls this holder is offered, in order."""
        calls = self._strategy.calls if self.writable else self._strategy.read_calls
        if not self.capability.revise_memories:
            calls = tuple(c for c in calls if c not in REVISE_CALLS)
        return calls

    def tools(self) -> list[dict[str, Any]]:
        """The offered tools, each with ``name``, ``description`` and ``input_schema``."""
        return [schema(c, self._strategy.description_optional) for c in self.offered()]

    def call(self, name: str, arguments: Mapping[str, object] | None = None) -> ToolResult:
        """Dispatch one native tool call."""
        return self._call(name, dict(arguments or {}), code=False)

    def _call(self, name: str, args: dict[str, object], *, code: bool) -> ToolResult:
        try:
            return ToolResult(True, "ok", self._dispatch(name, args, code=code))
        except InternalError as defect:
            self.defect = defect
            return ToolResult(
                False,
                "io-error",
                "gitmem failed to compile or load code (its own defect, not your argument); "
                "the call did nothing, and you may try again",
            )
        except GitmemError as error:
            return ToolResult.refusal(error)

    def _dispatch(self, name: str, args: dict[str, object], *, code: bool) -> str:
        self._check_offered(name)
        handler = getattr(self, f"_do_{name}", None)
        if handler is None:  # pragma: no cover - every offered call has a handler
            raise Unavailable(f"`{name}` is not available")
        _check_arguments(name, args, self._strategy.description_optional, code=code)
        return cast(Callable[[dict[str, object], bool], str], handler)(args, code)

    def _check_offered(self, name: str) -> None:
        offered = self.offered()
        if name in offered:
            return
        having = _having(offered)
        if name in self._strategy.calls and not self.writable:
            raise ReadOnly(
                f"these memories are another agent's: you may read them but not change "
                f"them, so `{name}` is refused. {having}"
            )
        if name in REVISE_CALLS and name in self._strategy.calls:
            raise Unavailable(
                f"memories are append-only in this run, so `{name}` is not available. {having}"
            )
        raise Unavailable(f"`{name}` is not available under {self.strategy}. {having}")

    # -- the calls -----------------------------------------------------------------

    def _do_write_memory(self, args: dict[str, object], code: bool) -> str:
        self._create(args, "write")
        return f"Wrote `{args['name']}`; it is pinned in your context from the next compaction."

    def _do_create_memory(self, args: dict[str, object], code: bool) -> str:
        self._create(args, "create")
        if self.strategy == "markdown":
            return (
                f"Created `{args['name']}`. It is stored and readable now; the index lists "
                "it from the next compaction."
            )
        return f"Created `{args['name']}`."

    def _create(self, args: dict[str, object], op: Op) -> None:
        slug = check_slug(args["name"])
        new = Memory(
            slug,
            check_text(args.get("description", ""), "description"),
            check_text(args["body"], "body"),
            check_text(args.get("code", ""), "code"),
            check_text(args.get("on_use", ""), "onUse script"),
        )
        self._compile_on_write(new)

        def change(snapshot: Snapshot) -> Change:
            if slug in snapshot:
                raise AlreadyExists(self._exists_message(slug))
            self._check_limits(snapshot, None, new)
            return self._change(op, slug, new)

        self._publish(change)
        self._load_on_write(new)

    def _exists_message(self, slug: str) -> str:
        revise = "update_memory" if self.strategy == "scratchpad" else "edit_memory"
        if revise in self.offered():
            return f"a memory named `{slug}` already exists; revise it with {revise}, or choose another name"
        return f"a memory named `{slug}` already exists and memories are append-only here; choose another name"

    def _do_update_memory(self, args: dict[str, object], code: bool) -> str:
        slug = check_slug(args["name"])
        description = args.get("description")
        body = args.get("body")
        if description is None and body is None:
            raise InvalidArgument("update_memory needs a description, a body or both")
        if description is not None:
            check_text(description, "description")
        if body is not None:
            check_text(body, "body")
            if body == "":
                raise InvalidArgument(
                    f"an empty body would leave `{slug}` empty; delete it with delete_memory instead"
                )

        # a code-mode update replaces both halves (omitted clears them); a native one
        # has no way to mention them and leaves them alone
        code_half = check_text(args.get("code") or "", "code")
        on_use = check_text(args.get("on_use") or "", "onUse script")
        if code:
            self._compile_on_write(Memory(slug, "", "", code_half, on_use))

        def change(snapshot: Snapshot) -> Change:
            old = self._existing(snapshot, slug)
            new = replace(
                old,
                description=old.description if description is None else str(description),
                body=old.body if body is None else str(body),
            )
            if code:
                new = replace(new, code=code_half, on_use=on_use)
            self._check_limits(snapshot, old, new)
            return self._change("update", slug, new)

        revision = self._publish(change)
        if code:
            self._load_on_write(
                Memory(slug, revision.description, revision.body, revision.code, revision.on_use)
            )
        return f"Updated `{slug}`."

    def _do_edit_memory(self, args: dict[str, object], code: bool) -> str:
        slug = check_slug(args["name"])
        old_text = check_text(args["old_text"], "old_text")
        new_text = check_text(args["new_text"], "new_text")
        description = args.get("description")
        if description is not None:
            check_text(description, "description")
        if not old_text:
            raise InvalidArgument("old_text is empty; quote the exact text you are changing")

        def change(snapshot: Snapshot) -> Change:
            old = self._existing(snapshot, slug)
            found = old.body.count(old_text)
            if found == 0:
                raise NotFound(
                    f"old_text does not appear in `{slug}`; read it again and quote the text exactly"
                )
            if found > 1:
                raise InvalidArgument(
                    f"old_text appears {found} times in `{slug}`; quote more of the "
                    "surrounding text so it appears exactly once"
                )
            body = old.body.replace(old_text, new_text, 1)
            if not body:
                raise InvalidArgument(
                    f"this edit would leave `{slug}` empty; delete it with delete_memory instead"
                )
            new = replace(
                old,
                body=body,
                description=old.description if description is None else str(description),
            )
            self._check_limits(snapshot, old, new)
            return self._change("edit", slug, new)

        self._publish(change)
        return f"Edited `{slug}`."

    def _do_delete_memory(self, args: dict[str, object], code: bool) -> str:
        slug = check_slug(args["name"])

        def change(snapshot: Snapshot) -> Change:
            self._existing(snapshot, slug)
            return self._change("delete", slug, None)

        self._publish(change)
        return f"Deleted `{slug}`."

    def _do_read_memory(self, args: dict[str, object], code: bool) -> str:
        slug = check_slug(args["name"])
        memory = self._existing(self.repo.snapshot(self.store_id), slug)
        text = f"`{memory.slug}` — {memory.description}\n\n{memory.body}"
        diagnostic = self._load_on_read(memory)
        if diagnostic:
            text += f"\n\n[the code of `{slug}` does not compile: {diagnostic}]"
        return text

    def _do_search_memories(self, args: dict[str, object], code: bool) -> str:
        keywords = [check_text(k, "keyword") for k in cast(list[object], args["keywords"])]
        if not any(keywords):
            raise InvalidArgument("give at least one non-empty keyword")
        hits = self._search_index().search(keywords, self.capability.limits.max_results)
        if not hits:
            return "No memory mentions " + ", ".join(f"`{k}`" for k in keywords) + "."
        lowered = [k.lower() for k in keywords if k]
        lines = [f"{len(hits)} {'memory matches' if len(hits) == 1 else 'memories match'}:"]
        for hit in hits:
            m = hit.memory
            head = f"- `{m.slug}` — {m.description}" if m.description else f"- `{m.slug}`"
            lines.append(f"{head}\n  {hit.excerpt(lowered)}")
        return "\n".join(lines)

    def _search_index(self) -> SearchIndex:
        """The search index, brought up to the head one change at a time."""
        head = self.repo.head(self.store_id)
        index = self._search
        if index is not None and index.commit == head:
            return index
        changes = self.repo.revisions_since(self.store_id, index.commit, head) if index else []
        if index is None or not changes:
            # first use, or the branch was rewritten: index the head afresh
            index = self._search = SearchIndex()
            index.reset(self.repo.snapshot(self.store_id, head).memories(), head)
            return index
        for rev in changes:
            if rev.op == "delete":
                index.remove(rev.slug)
            else:
                index.put(Memory(rev.slug, rev.description, rev.body, rev.code, rev.on_use))
        index.commit = head
        return index

    # -- code memories -------------------------------------------------------------

    @property
    def sandbox(self) -> Sandbox:
        """Where this holder's programs and onUse scripts run (started on first use)."""
        if self._sandbox is None:
            self._sandbox = Sandbox()
        return self._sandbox

    def use_sandbox(self, sandbox: Sandbox) -> None:
        """Run this holder's programs and onUse scripts in ``sandbox`` (a harness's own
        time and memory limits); the one it had, if any, is closed."""
        if self._sandbox is not None and self._sandbox is not sandbox:
            self._sandbox.close()
        self._sandbox = sandbox

    @property
    def loader(self) -> Sandbox:
        """Where this holder's code halves compile and load.

        A second process, because a program's ``memories`` call can load code while the
        program's own sandbox is waiting on that very call.
        """
        if self._loader is None:
            self._loader = Sandbox()
        return self._loader

    def _compile_on_write(self, memory: Memory) -> None:
        """Under scratchpad a write loads, so code that does not compile is refused."""
        if self._strategy.loads_code_on != "write" or not (memory.code or memory.on_use):
            return
        for half, text in (("code", memory.code), ("onUse script", memory.on_use)):
            if len(text) > limit_checks.CODE_MAX:
                return  # refused by the limits, before anything parses it
            diagnostic = self.loader.compile(text) if text else None
            if diagnostic:
                raise CodeError(
                    f"the {half} of `{memory.slug}` does not compile: {diagnostic}; "
                    "nothing was written",
                    diagnostic=diagnostic,
                )

    def _load_on_write(self, memory: Memory) -> None:
        if self._strategy.loads_code_on == "write":
            self._load(memory)

    def _load_on_read(self, memory: Memory) -> str | None:
        """Load a memory's code as it is read; the located diagnostic if it fails."""
        if self._strategy.loads_code_on != "read":
            return None
        if memory.on_use:
            self._used[memory.slug] = None
        try:
            self._load(memory)
        except CodeError as error:
            return error.diagnostic
        return None

    def _load(self, memory: Memory) -> None:
        loaded = self._modules.get(memory.slug)
        if not memory.code and not memory.on_use:
            self._modules.pop(memory.slug, None)
            return
        if loaded and (loaded.code, loaded.on_use) == (memory.code, memory.on_use):
            return
        if loaded:
            key = loaded.key
        else:
            key = module_key(memory.slug, {m.key for m in self._modules.values()})
        docs = self.loader.load(key, memory.code) if memory.code else []
        if memory.on_use:
            diagnostic = self.loader.compile(memory.on_use)
            if diagnostic:
                raise CodeError(
                    f"the onUse script of `{memory.slug}` does not compile: {diagnostic}",
                    diagnostic=diagnostic,
                )
        self._modules[memory.slug] = _Module(memory.slug, key, memory.code, memory.on_use)
        self._views.extend(doc.view() for doc in docs)

    def modules(self) -> dict[str, str]:
        """The loaded code memories: module key → slug."""
        return {m.key: m.slug for m in self._modules.values() if m.code}

    def run_program(self, source: str) -> ProgramResult:
        """Run an agent program in the sandbox, against this holder's grants.

        Raises ``InternalError`` if the sandbox itself fails (gitmem's defect).
        """
        check_text(source, "program")
        keys = {m.key: m for m in self._modules.values() if m.code}
        for match in _IMPORT_RE.finditer(source):
            for name in match.group(1).split(","):
                imported = keys.get(name.split(" as ")[0].strip())
                if imported is not None and imported.on_use:
                    self._used[imported.slug] = None
        result = self._run(source, "program")
        self._views.extend(result.views)
        return result

    def end_turn(self) -> None:
        """After the turn's program: run each used code memory's onUse, once each.

        Views they open arrive with the next turn (``take_views``); their output and
        errors never reach the model.
        """
        used, self._used = self._used, {}
        for slug in used:
            module = self._modules.get(slug)
            if module is None or not module.on_use:
                continue
            result = self._run(module.on_use, "onuse")
            self._views.extend(result.views)

    def take_views(self) -> list[View]:
        """Views opened since the last call: load documentation, program and onUse views."""
        views, self._views = self._views, []
        return views

    def _run(self, source: str, kind: str) -> ProgramResult:
        modules = {m.key: m.code for m in self._modules.values() if m.code}
        try:
            return self.sandbox.run(source, modules=modules, bridge=self._bridge, kind=kind)
        except InternalError as defect:
            self.defect = defect
            raise

    def _bridge(self, name: str, arguments: dict[str, object]) -> tuple[bool, str]:
        call = re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()
        args = {_CAMEL.get(k, k): v for k, v in arguments.items()}
        result = self._call(call, args, code=True)
        return result.ok, result.text

    def close(self) -> None:
        """Stop this holder's sandbox processes, if it started any."""
        for sandbox in (self._sandbox, self._loader):
            if sandbox is not None:
                sandbox.close()

    # -- writing -------------------------------------------------------------------

    def _existing(self, snapshot: Snapshot, slug: str) -> Memory:
        memory = snapshot.get(slug)
        if memory is None:
            raise NotFound(f"there is no memory named `{slug}`; {self._find_hint()}")
        return memory

    def _find_hint(self) -> str:
        if self.strategy == "keyword-search":
            return "find one with search_memories"
        if self.strategy == "markdown":
            return "the index lists the names (it may lag until the next compaction)"
        return "your memories are pinned in your context"

    def _check_limits(self, snapshot: Snapshot, old: Memory | None, new: Memory) -> None:
        limit_checks.check_write(
            self.capability.limits,
            self._strategy.aggregate_limits,
            old,
            new,
            snapshot.memories,
            count=snapshot.totals.count,
            total_chars=snapshot.totals.chars,
        )

    def _change(self, op: Op, slug: str, memory: Memory | None) -> Change:
        return Change(
            op,
            slug,
            memory,
            {CAPABILITY_TRAILER: capability_trailer(self.capability)},
        )

    def _publish(self, change: Callable[[Snapshot], Change]) -> Revision:
        if not self.writable:  # pragma: no cover - refused earlier by _check_offered
            raise ReadOnly("these memories are another agent's; you may not change them")
        revision = self.repo.mutate(self.store_id, self._author, change)
        self._emit(revision)
        return revision

    # -- in context ----------------------------------------------------------------

    def pinned_block(self) -> str:
        """What the strategy pins, built on the first turn and at each compaction only."""
        if self._block is None:
            self._block = self._render_block()
        return self._block

    def _render_block(self) -> str:
        return self._strategy.pinned(self.repo.snapshot(self.store_id).memories())

    def system_prompt(self) -> str:
        """The memory section of the system prompt; the same for the holder's life."""
        if self._prompt is None:
            self._prompt = self._render_prompt()
        return self._prompt

    def _render_prompt(self) -> str:
        lines = [
            "## Memories",
            "",
            "You keep durable memories: notes that survive compaction, each a name, a "
            "one-line description and a body. " + self._strategy.in_context(),
        ]
        if self.transfer_note:
            lines += ["", self.transfer_note]
        if not self.writable:
            lines += [
                "",
                "These memories are another agent's: you may read them but not change them.",
            ]
        if not self.capability.revise_memories and self.writable:
            lines += ["", "Memories are append-only in this run: you cannot revise or delete one."]
        lines += ["", _having(self.offered())]
        if self.writable and ("edit_memory" in self.offered()):
            lines.append(
                "edit_memory is search/replace: quote the text you change, which must appear "
                "exactly once. To append, quote the last line and replace it with itself plus "
                "what you are adding."
            )
        bounds = self._describe_limits()
        if bounds and self.writable:
            lines += [
                "",
                "Limits: " + "; ".join(bounds) + ". A write that would breach a limit is "
                "refused, never truncated: revise, evict or delete to make room.",
            ]
        return "\n".join(lines) + "\n"

    def _describe_limits(self) -> list[str]:
        limits = self.capability.limits
        applies = self._strategy.aggregate_limits
        bounds: list[str] = []
        if "maxCount" in applies and limits.max_count:
            bounds.append(f"at most {limits.max_count} memories")
        if limits.max_len_per_memory:
            bounds.append(f"a body at most {limits.max_len_per_memory} characters")
        if "maxTotalLen" in applies and limits.max_total_len:
            bounds.append(f"all bodies together at most {limits.max_total_len} characters")
        if "maxLenIndex" in applies and limits.max_len_index:
            bounds.append(f"the index at most {limits.max_len_index} characters")
        if limits.max_len_description:
            bounds.append(f"a description at most {limits.max_len_description} characters")
        return bounds

    def memory_compaction_prompt(self) -> str:
        """The request that replaces a summary under memory-compaction."""
        calls = [c for c in self.offered() if c not in ("read_memory", "search_memories")]
        named = ", ".join(calls) if calls else "(none: your memories are read-only)"
        return (
            "Your context is about to be compacted. Instead of writing a summary, record "
            "your working state in your memories now, with " + named + ": what you are "
            "doing, what you have found, what is left to do, and anything you would need "
            "to pick the work up cold. Revise existing memories rather than duplicating "
            "them, and stay within your limits."
        )

    def compact(self) -> None:
        """A compaction boundary: rebuild the pinned block, then sweep pending notices."""
        self._block = self._render_block()
        head = self.repo.head(self.store_id)
        if head is not None:
            self.repo.set_marker(self._watermark_name, head)

    # -- notices -------------------------------------------------------------------

    def notices(self) -> str | None:
        """What other holders changed since this holder's last turn, delivered once."""
        head = self.repo.head(self.store_id)
        if head is None:
            return None
        base = self.repo.marker(self._watermark_name) or None
        if base == head:
            return None
        revisions = self.repo.revisions_since(self.store_id, base, head)
        self.repo.set_marker(self._watermark_name, head)
        theirs = [r for r in revisions if r.author != self._author.name]
        if not theirs:
            return None
        before = self.repo.snapshot(self.store_id, base) if base else None
        now = self.repo.snapshot(self.store_id, head)
        order = list(dict.fromkeys(r.slug for r in reversed(theirs)))[::-1]
        lines = [
            "Another agent sharing your memories has made changes since your last turn:",
            "",
        ]
        for slug in order:
            memory = now.get(slug)
            if memory is None:
                lines.append(f"- deleted `{slug}`")
                continue
            verb = "updated" if before is not None and slug in before else "added"
            about = f" — {memory.description}" if memory.description else ""
            lines.append(f"- {verb} `{slug}`{about}")
            if self._strategy.notice_bodies:
                lines.extend(f"  {line}" for line in memory.body.splitlines())
        lines.append("")
        if "read_memory" in self._strategy.calls:
            lines.append("Read one with `read_memory` if it bears on what you are doing.")
        else:
            lines.append(
                "Their text is shown above; the pinned block shows it from the next compaction."
            )
        return "\n".join(lines)

    # -- telemetry -----------------------------------------------------------------

    def state(self) -> Event:
        """The ``memory_state`` event: the set as it stands, limits and peaks."""
        return state_event(
            self.repo.snapshot(self.store_id), self.scope, self.writable, self.capability.limits
        )

    def revisions(self) -> list[Event]:
        """Every ``memory_revision`` of the store, in order."""
        return [r.event() for r in self.repo.revisions(self.store_id)]

    def subscribe(self, callback: Callable[[Event], None]) -> Callable[[], None]:
        """Stream events to ``callback``; returns a function that stops the stream."""
        self._subscribers.append(callback)

        def unsubscribe() -> None:
            if callback in self._subscribers:
                self._subscribers.remove(callback)

        return unsubscribe

    def _emit(self, revision: Revision) -> None:
        event = revision.event()
        for callback in list(self._subscribers):
            callback(event)
        for other in _HUB.others(self):
            if other._subscribers:
                state = other.state()
                for callback in list(other._subscribers):
                    callback(state)

    # -- forks and successors ------------------------------------------------------

    def fork(self, instance: str) -> Holder:
        """A fork of this agent: memories follow the scope, not the copy."""
        agent = Agent(self.agent.profile, instance, self.agent.started_as, self.agent.spawner)
        if self.scope == "isolated":
            if self.repo.head(self.store_id) is not None:
                self.repo.fork(self.store_id, agent.own_store)
            binding = Binding(agent.own_store, True)
        elif self.scope == "read-only":
            binding = Binding(self.store_id, False)
        else:
            binding = Binding(self.store_id, True)
        return Holder(self.repo, self.capability, agent, binding)

    def succeed(
        self, agent: Agent, capability: Capability, compaction: str = "summary"
    ) -> Holder | None:
        """The holder a successor takes over (``None`` if it keeps no memories)."""
        from gitmem.repository import launch_problems

        launch_problems(capability, agent, compaction, spawner=None)
        if not capability.enabled:
            return None
        if capability.scope == "shared":
            # shared means bound to the profile: it overrides the transfer, or one
            # profile would curate two notebooks at once
            return Holder(self.repo, capability, agent, Binding(agent.profile_store, True))
        if capability.implementation != self.strategy:
            note = (
                f"Your predecessor kept its memories under the {self.strategy} strategy and "
                f"you organize yours under {capability.implementation}, so you start with a "
                "fresh store of your own rather than one you could not read."
            )
            return Holder(
                self.repo, capability, agent, Binding(agent.own_store, True), transfer_note=note
            )
        binding = Binding(self.store_id, capability.scope != "read-only")
        return Holder(self.repo, capability, agent, binding)


def state_event(snapshot: Snapshot, scope: str, writable: bool, limits: Limits) -> Event:
    """The ``memory_state`` event of a store as of ``snapshot``."""
    return {
        "type": "memory_state",
        "store": snapshot.store,
        "scope": scope,
        "writable": writable,
        "memories": [
            {"slug": m.slug, "description": m.description, "chars": m.chars, "lines": m.lines}
            for m in snapshot.memories()
        ],
        "totals": snapshot.totals.as_dict(),
        "limits": limits.as_params(),
        "peaks": snapshot.peaks.as_dict(),
    }


def capability_trailer(capability: Capability) -> str:
    """The strategy and limits a holder wrote under, recorded on each of its commits."""
    params = " ".join(f"{k}={v}" for k, v in capability.limits.as_params().items())
    return f"{capability.implementation} {params}"


def limits_from_trailer(text: str) -> tuple[Strategy, Limits] | None:
    """The strategy and limits a ``Gitmem-Capability`` trailer records (``None`` if odd)."""
    name, _, rest = text.partition(" ")
    strategy = STRATEGIES.get(name)
    try:
        params = {k: int(v) for k, _, v in (p.partition("=") for p in rest.split())}
    except ValueError:
        return None
    if strategy is None:
        return None
    return strategy, Limits.from_params(params)


def _having(offered: tuple[str, ...]) -> str:
    if not offered:
        return "You have no memory calls; your memories are pinned in your context."
    return "Your memory calls: " + ", ".join(offered) + "."


def _check_arguments(
    name: str, args: dict[str, object], description_optional: bool, *, code: bool
) -> None:
    spec = schema(name, description_optional)["input_schema"]
    properties = dict(cast(dict[str, Any], spec["properties"]))
    if code and name in _CODE_CALLS:
        properties["code"] = properties["on_use"] = {"type": "string"}
    unknown = sorted(set(args) - set(properties))
    if unknown:
        raise InvalidArgument(
            f"{name} does not take {', '.join(unknown)}; its arguments are {', '.join(properties)}"
        )
    missing = [r for r in cast(list[str], spec["required"]) if args.get(r) is None]
    if missing:
        raise InvalidArgument(f"{name} needs {', '.join(missing)}")
    for key, value in args.items():
        if value is None:
            continue
        kind = properties[key]["type"]
        if kind == "string" and not isinstance(value, str):
            raise InvalidArgument(f"{key} must be a string, not {type(value).__name__}")
        if kind == "array" and not (
            isinstance(value, list) and all(isinstance(v, str) for v in cast(list[object], value))
        ):
            raise InvalidArgument(f"{key} must be a list of strings")
