"""A holder's code memories: the modules it loaded, its two sandboxes, agent programs,
onUse at the end of a turn, and the views they open.

Both sandboxes draw processes from one pool (the shared one, or the harness's sandbox's),
so a holder holds a Deno process only during a call, and an idle holder holds none.

Where code loads on write, the load happens before the write is published, in a fresh
worker: a write commits only when its load succeeds, so what the agent is told is true.
A memory that is deleted, renamed away or found gone is unloaded at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from gitmem.errors import CodeError, InternalError, LimitExceeded
from gitmem.limits import CODE_MAX
from gitmem.sandbox import ExportDoc, ProgramResult, Sandbox, View, module_key
from gitmem.types import Memory, check_text

__all__ = ["RUN_WRITES_MAX", "TURN_VIEWS_MAX", "TURN_VIEW_CHARS", "Code"]

RUN_WRITES_MAX = 100
"""Changes one program or onUse script may publish; each further write is refused."""
TURN_VIEWS_MAX = 64
"""Views waiting for the next turn (load documentation, programs', onUse scripts');
past it, or past :data:`TURN_VIEW_CHARS`, the rest are dropped and one view says so."""
TURN_VIEW_CHARS = 65_536
"""Characters of title and text the views waiting for the next turn hold at most."""

Bridge = Callable[[str, dict[str, object]], tuple[bool, str]]


@dataclass(frozen=True)
class _Module:
    """A code memory as this holder loaded it: from the commit it read, not the head."""

    slug: str
    key: str
    code: str
    on_use: str


class Code:
    """The code side of one holder; ``loads_on`` is its strategy's ``loads_code_on``."""

    def __init__(self, loads_on: str) -> None:
        self._loads_on = loads_on
        self._sandbox: Sandbox | None = None
        self._loader: Sandbox | None = None
        self._modules: dict[str, _Module] = {}
        # Loaded ahead of a write, kept until the write is published (or replaced).
        self._pending: tuple[_Module, list[ExportDoc]] | None = None
        self._used: dict[str, None] = {}
        self._views: list[View] = []
        # Characters the waiting views hold, and how many were dropped past the caps.
        self._view_chars = 0
        self._dropped = 0
        self.defect: InternalError | None = None
        """The last sandbox crash met (gitmem's own defect), for the harness."""
        # Changes published by the program or onUse script running now; None between runs.
        self._run_writes: int | None = None
        self.calls: tuple[str, ...] = ()
        """The holder's calls as a program names them, which ``memories`` lists."""

    @property
    def sandbox(self) -> Sandbox:
        """Where programs and onUse scripts run (started on first use)."""
        if self._sandbox is None:
            self._sandbox = Sandbox()
        return self._sandbox

    def use_sandbox(self, sandbox: Sandbox) -> None:
        if self._sandbox is not None and self._sandbox is not sandbox:
            self._sandbox.close()
        self._sandbox = sandbox
        # Code loads under the limits the harness chose for its programs.
        if self._loader is not None:
            self._loader.close()
        self._loader = Sandbox(
            time_limit=sandbox.time_limit,
            memory_mb=sandbox.memory_mb,
            output_cap=sandbox.output_cap,
            pool=sandbox.pool,
        )

    @property
    def loader(self) -> Sandbox:
        """Where code halves compile and load.

        A second sandbox, because a program's ``memories`` call can load code while the
        program's own call is waiting on that very call; it is lent another process only
        then, and otherwise the same idle process the program's sandbox would be.
        """
        if self._loader is None:
            self._loader = Sandbox()
        return self._loader

    # -- the desk's hooks ------------------------------------------------------------

    def check(self, memory: Memory) -> None:
        """Where code loads on write, load it now, before anything is published.

        Refuses halves that do not compile or whose top-level code fails (throws, or
        outlives the time or memory limit); a sandbox crash raises ``InternalError``.
        Either way nothing has been written yet.
        """
        self._pending = None
        if self._loads_on != "write" or not (memory.code or memory.on_use):
            return
        if len(memory.code) > CODE_MAX or len(memory.on_use) > CODE_MAX:
            return  # refused by the limits, before anything parses it
        try:
            self._pending = self._prepare(memory)
        except CodeError as error:
            raise CodeError(f"{error}; nothing was written", diagnostic=error.diagnostic) from None

    def written(self, memory: Memory) -> None:
        """A write was published: its module, loaded by :meth:`check`, is now in use."""
        pending, self._pending = self._pending, None
        if self._loads_on != "write":
            return
        if not memory.code and not memory.on_use:
            self.unload(memory.slug)
            return
        if pending is None:
            return
        module, docs = pending
        if (module.slug, module.code, module.on_use) != (memory.slug, memory.code, memory.on_use):
            return
        self._modules[module.slug] = module
        self._add_views(doc.view() for doc in docs)

    def opened(self, memory: Memory) -> str | None:
        """Where code loads on read, load it; the located diagnostic if it fails."""
        if self._loads_on != "read":
            return None
        if memory.on_use:
            self._used[memory.slug] = None
        if not memory.code and not memory.on_use:
            self.unload(memory.slug)
            return None
        loaded = self._modules.get(memory.slug)
        if loaded and (loaded.code, loaded.on_use) == (memory.code, memory.on_use):
            return None
        try:
            module, docs = self._prepare(memory)
        except CodeError as error:
            # What is loaded must be what was read: a failed load leaves nothing.
            self.unload(memory.slug)
            return error.diagnostic
        self._modules[memory.slug] = module
        self._add_views(doc.view() for doc in docs)
        return None

    def unload(self, slug: str) -> None:
        """Forget ``slug``'s module: it was deleted, renamed away or found gone."""
        self._modules.pop(slug, None)
        self._used.pop(slug, None)

    def _prepare(self, memory: Memory) -> tuple[_Module, list[ExportDoc]]:
        """Load ``memory``'s halves in fresh workers; its module and documentation."""
        loaded = self._modules.get(memory.slug)
        if loaded:
            key = loaded.key
        else:
            key = module_key(
                memory.slug, {m.key for m in self._modules.values() if m.slug != memory.slug}
            )
        try:
            docs = self.loader.load(key, memory.code) if memory.code else []
        except CodeError as error:
            raise CodeError(
                f"the code of `{memory.slug}` does not compile: {error.diagnostic}",
                diagnostic=error.diagnostic,
            ) from None
        if memory.on_use:
            diagnostic = self.loader.compile(memory.on_use)
            if diagnostic:
                raise CodeError(
                    f"the onUse script of `{memory.slug}` does not compile: {diagnostic}",
                    diagnostic=diagnostic,
                )
        return _Module(memory.slug, key, memory.code, memory.on_use), docs

    # -- programs and turns ------------------------------------------------------------

    def modules(self) -> dict[str, str]:
        """The loaded code memories: module key → slug."""
        return {m.key: m.slug for m in self._modules.values() if m.code}

    def run_program(self, source: str, bridge: Bridge) -> ProgramResult:
        check_text(source, "program")
        result = self._run(source, "program", bridge)
        # The runtime says which modules the program imported: no scan of its text.
        by_key = {m.key: m for m in self._modules.values() if m.code}
        for key in result.imported:
            module = by_key.get(key)
            if module is not None and module.on_use:
                self._used[module.slug] = None
        self._add_views(result.views)
        return result

    def end_turn(self, bridge: Bridge) -> None:
        """Run the onUse script of each code memory the turn used, once each, until they
        have taken twice the time limit plus a second between them (as long as a run's
        ``memories`` calls may take the host): the rest do not run this turn, so
        memories whose scripts loop cannot hold the turn for one time limit apiece."""
        used, self._used = self._used, {}
        started: float | None = None
        for slug in used:
            module = self._modules.get(slug)
            if module is None or not module.on_use:
                continue
            if started is None:
                started = time.monotonic()
            elif time.monotonic() - started > 2 * self.sandbox.time_limit + 1.0:
                break
            result = self._run(module.on_use, "onuse", bridge)
            self._add_views(result.views)

    def take_views(self) -> list[View]:
        views, self._views = self._views, []
        if self._dropped:
            views.append(
                View(
                    "gitmem: views dropped",
                    f"{self._dropped:,} more views were opened for this turn and dropped: "
                    f"a turn shows at most {TURN_VIEWS_MAX} views and {TURN_VIEW_CHARS:,} "
                    "characters of them.",
                )
            )
        self._view_chars = self._dropped = 0
        return views

    def _add_views(self, views: Iterable[View]) -> None:
        """Keep ``views`` for the next turn, within the turn's caps."""
        for view in views:
            size = len(view.title) + len(view.text)
            if len(self._views) >= TURN_VIEWS_MAX or self._view_chars + size > TURN_VIEW_CHARS:
                self._dropped += 1
                continue
            self._views.append(view)
            self._view_chars += size

    def _run(self, source: str, kind: str, bridge: Bridge) -> ProgramResult:
        modules = {m.key: m.code for m in self._modules.values() if m.code}
        outer, self._run_writes = self._run_writes, 0
        try:
            return self.sandbox.run(
                source, modules=modules, bridge=bridge, kind=kind, calls=self.calls
            )
        except InternalError as defect:
            self.defect = defect
            raise
        finally:
            self._run_writes = outer

    def publishing(self) -> None:
        """A change is about to be published: refused past the running program's share.

        A program's time limit stops its own code, not the host's work on its calls;
        this bounds the commits one run can make, in any holder's name.
        """
        if self._run_writes is None:
            return
        if self._run_writes >= RUN_WRITES_MAX:
            attempted = self._run_writes + 1
            raise LimitExceeded(
                f"refused: the changes published by one program would be {attempted:,}, "
                f"over the per-run write limit ({RUN_WRITES_MAX:,}). Nothing was written; "
                "write more in each call, or split the work across programs.",
                limit="per-run writes",
                attempted=attempted,
                maximum=RUN_WRITES_MAX,
            )
        self._run_writes += 1

    def close(self) -> None:
        for sandbox in (self._sandbox, self._loader):
            if sandbox is not None:
                sandbox.close()
