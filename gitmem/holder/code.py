"""A holder's code memories: the modules it loaded, its two sandboxes, agent programs,
onUse at the end of a turn, and the views they open."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from gitmem.errors import CodeError, InternalError
from gitmem.limits import CODE_MAX
from gitmem.sandbox import ProgramResult, Sandbox, View, module_key
from gitmem.types import Memory, check_text

__all__ = ["Code"]

Bridge = Callable[[str, dict[str, object]], tuple[bool, str]]
_IMPORT_RE = re.compile(r"import\s*(?:type\s*)?\{([^}]*)\}\s*from\s*[\"']gitmem[\"']")


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
        self._used: dict[str, None] = {}
        self._views: list[View] = []
        self.defect: InternalError | None = None
        """The last sandbox crash met (gitmem's own defect), for the harness."""

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

    @property
    def loader(self) -> Sandbox:
        """Where code halves compile and load.

        A second process, because a program's ``memories`` call can load code while the
        program's own sandbox is waiting on that very call.
        """
        if self._loader is None:
            self._loader = Sandbox()
        return self._loader

    # -- the desk's hooks ------------------------------------------------------------

    def check(self, memory: Memory) -> None:
        """Where code loads on write, refuse halves that do not compile."""
        if self._loads_on != "write" or not (memory.code or memory.on_use):
            return
        for half, text in (("code", memory.code), ("onUse script", memory.on_use)):
            if len(text) > CODE_MAX:
                return  # refused by the limits, before anything parses it
            diagnostic = self.loader.compile(text) if text else None
            if diagnostic:
                raise CodeError(
                    f"the {half} of `{memory.slug}` does not compile: {diagnostic}; "
                    "nothing was written",
                    diagnostic=diagnostic,
                )

    def written(self, memory: Memory) -> None:
        if self._loads_on == "write":
            self._load(memory)

    def opened(self, memory: Memory) -> str | None:
        """Where code loads on read, load it; the located diagnostic if it fails."""
        if self._loads_on != "read":
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

    # -- programs and turns ------------------------------------------------------------

    def modules(self) -> dict[str, str]:
        """The loaded code memories: module key → slug."""
        return {m.key: m.slug for m in self._modules.values() if m.code}

    def run_program(self, source: str, bridge: Bridge) -> ProgramResult:
        check_text(source, "program")
        keys = {m.key: m for m in self._modules.values() if m.code}
        for match in _IMPORT_RE.finditer(source):
            for name in match.group(1).split(","):
                imported = keys.get(name.split(" as ")[0].strip())
                if imported is not None and imported.on_use:
                    self._used[imported.slug] = None
        result = self._run(source, "program", bridge)
        self._views.extend(result.views)
        return result

    def end_turn(self, bridge: Bridge) -> None:
        used, self._used = self._used, {}
        for slug in used:
            module = self._modules.get(slug)
            if module is None or not module.on_use:
                continue
            result = self._run(module.on_use, "onuse", bridge)
            self._views.extend(result.views)

    def take_views(self) -> list[View]:
        views, self._views = self._views, []
        return views

    def _run(self, source: str, kind: str, bridge: Bridge) -> ProgramResult:
        modules = {m.key: m.code for m in self._modules.values() if m.code}
        try:
            return self.sandbox.run(source, modules=modules, bridge=bridge, kind=kind)
        except InternalError as defect:
            self.defect = defect
            raise

    def close(self) -> None:
        for sandbox in (self._sandbox, self._loader):
            if sandbox is not None:
                sandbox.close()
