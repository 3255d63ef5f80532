"""The sandbox itself: :class:`Sandbox` and the values it returns.

A :class:`Sandbox` owns one Deno :class:`~gitmem.sandbox.process.Process`, started
lazily and replaced after the watchdog kills it or it dies between calls.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar, cast

from gitmem.errors import CodeError, InternalError, InvalidArgument
from gitmem.sandbox.process import Killed, Process, Retired
from gitmem.sandbox.signatures import signatures

__all__ = ["Bridge", "ExportDoc", "ProgramResult", "Sandbox", "View"]

Bridge = Callable[[str, dict[str, object]], tuple[bool, str]]
"""Answers one ``memories.<name>(args)`` call: ``(True, text)`` or ``(False, refusal)``."""

_T = TypeVar("_T")
_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")


@dataclass(frozen=True)
class View:
    """A view a program or onUse script opened with ``views.openText(title, text)``."""

    title: str
    text: str


@dataclass(frozen=True)
class ExportDoc:
    """The documentation view for one function a loaded module exports."""

    key: str
    name: str
    signature: str

    @property
    def import_line(self) -> str:
        """The line a program writes to reach the module."""
        return f'import {{ {self.key} }} from "gitmem";'

    @property
    def title(self) -> str:
        """The view's title: the function as a program calls it."""
        return f"{self.key}.{self.name}"

    def text(self) -> str:
        """The view's text: key, typed signature and import line."""
        return (
            f"Module {self.key} exports {self.signature}\n"
            f"{self.import_line}\n"
            f"Call it as {self.key}.{self.name}(...)."
        )

    def view(self) -> View:
        """This documentation as a :class:`View`."""
        return View(self.title, self.text())


@dataclass(frozen=True)
class ProgramResult:
    """What a program run produced: captured output, the uncaught error, opened views."""

    ok: bool
    output: str
    error: str | None
    views: tuple[View, ...] = ()


class Sandbox:
    """One Deno process per holder, started lazily on first use.

    ``time_limit`` bounds each load and run in seconds (time spent in bridge calls does
    not count); ``memory_mb`` caps each worker's heap; ``output_cap`` caps a run's
    captured output in characters. Thread-safe: calls are serialised by a lock.
    """

    def __init__(
        self, *, time_limit: float = 5.0, memory_mb: int = 256, output_cap: int = 64_000
    ) -> None:
        self.time_limit = time_limit
        self.memory_mb = memory_mb
        self.output_cap = output_cap
        self.rss_cap_mb = 256 + 3 * memory_mb
        self._lock = threading.RLock()
        self._process: Process | None = None

    @property
    def pid(self) -> int | None:
        """The Deno process id, or ``None`` before the first use."""
        with self._lock:
            return self._process.pid if self._process is not None else None

    def start(self) -> None:
        """Start the process now rather than on the first call."""
        with self._lock:
            self._ensure()

    def _ensure(self) -> Process:
        # A process that died between calls, or still holds a past run's memory
        # (a terminated worker frees it lazily), is replaced before it can fail
        # an innocent call.
        if self._process is not None and (
            not self._process.alive() or self._process.rss_kb() > self._process.rss_cap_kb
        ):
            self._discard()
        if self._process is None:
            self._process = Process(
                memory_mb=self.memory_mb, output_cap=self.output_cap, rss_cap_mb=self.rss_cap_mb
            )
        return self._process

    def _discard(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process = None

    def _deadline(self) -> float:
        return time.monotonic() + 2 * self.time_limit + 1.0

    def _retrying(self, attempt: Callable[[], _T]) -> _T:
        with self._lock:
            try:
                return attempt()
            except Retired:
                self._discard()
            try:
                return attempt()
            except Retired:
                self._discard()
                raise InternalError("the sandbox runtime kept retiring itself") from None

    def _load(self, op: str, source: str, key: str) -> tuple[str | None, list[str]]:
        return self._retrying(lambda: self._load_once(op, source, key))

    def _load_once(self, op: str, source: str, key: str) -> tuple[str | None, list[str]]:
        with self._lock:
            process = self._ensure()
            try:
                process.send({"op": op, "source": source, "key": key, "timeLimit": self.time_limit})
                reply = process.receive(self._deadline())
            except Killed as killed:
                self._discard()
                what = "time limit" if killed.reason == "time" else "memory limit"
                return f"1:1: the module's top-level code exceeded the sandbox {what}", []
            except InternalError:
                self._discard()
                raise
            if reply.get("restart"):
                self._discard()
            diagnostic = reply.get("diagnostic")
            exports = cast(list[str], reply.get("exports") or [])
            return (str(diagnostic) if diagnostic is not None else None), exports

    def compile(self, source: str) -> str | None:
        """Transpile and syntax-check ``source`` without running it.

        Returns a located diagnostic, ``line:column: message``, or ``None`` if it compiles.
        """
        diagnostic, _ = self._load("compile", source, "module")
        return diagnostic

    def load(self, key: str, source: str) -> list[ExportDoc]:
        """Compile and evaluate a code memory; one :class:`ExportDoc` per exported function.

        Raises :class:`CodeError` with a located diagnostic if it does not compile or
        load.
        """
        diagnostic, exports = self._load("load", source, key)
        if diagnostic is not None:
            raise CodeError(
                f"the code of {key} does not compile: {diagnostic}", diagnostic=diagnostic
            )
        typed = signatures(source, tuple(exports))
        return [ExportDoc(key, name, typed[name]) for name in exports]

    def run(
        self,
        source: str,
        *,
        modules: Mapping[str, str],
        bridge: Bridge,
        kind: str = "program",
    ) -> ProgramResult:
        """Run a TypeScript program (``kind="program"``) or an onUse script (``"onuse"``).

        The program may ``import { memories, views, <module keys> } from "gitmem"``;
        an onUse script also sees ``memories`` and ``views`` as globals. Each
        ``memories.<name>(args)`` call is answered by ``bridge(name, args)``.

        Raises :class:`InvalidArgument` for an unknown ``kind`` or a key in ``modules``
        that is not a usable module key.
        """
        if kind not in ("program", "onuse"):
            raise InvalidArgument(f'the run kind {kind!r} is unknown; use "program" or "onuse"')
        for key in modules:
            if not _IDENTIFIER.fullmatch(key) or key in ("memories", "views"):
                raise InvalidArgument(
                    f"{key!r} cannot be a module key: a key must be a JavaScript identifier "
                    "other than memories and views; derive one with module_key"
                )
        return self._retrying(lambda: self._run_once(source, modules, bridge, kind))

    def _run_once(
        self, source: str, modules: Mapping[str, str], bridge: Bridge, kind: str
    ) -> ProgramResult:
        with self._lock:
            process = self._ensure()
            bridge_time = 0.0
            try:
                process.send(
                    {
                        "op": "run",
                        "source": source,
                        "modules": dict(modules),
                        "kind": kind,
                        "timeLimit": self.time_limit,
                    }
                )
                while True:
                    message = process.receive(self._deadline() + bridge_time)
                    if message.get("op") != "call":
                        break
                    asked = time.monotonic()
                    try:
                        args = json.loads(str(message.get("args")))
                        ok, text = bridge(
                            str(message.get("name")),
                            cast(dict[str, object], args) if isinstance(args, dict) else {},
                        )
                    except BaseException:
                        # The worker is blocked on this answer; a holder that cannot
                        # give one leaves nothing worth keeping.
                        self._discard()
                        raise
                    bridge_time += time.monotonic() - asked
                    process.send({"op": "reply", "ok": bool(ok), "text": str(text)})
            except Killed as killed:
                self._discard()
                if killed.reason == "time":
                    error = (
                        f"the program did not finish within its time limit of {self.time_limit:g} s"
                    )
                else:
                    error = "the program exceeded the sandbox memory limit"
                return ProgramResult(False, "", error)
            except InternalError:
                self._discard()
                raise
            if message.get("op") != "result":
                self._discard()
                raise InternalError(f"the sandbox runtime answered {message.get('op')!r}")
            if message.get("restart"):
                self._discard()
            error = message.get("error")
            raw_views = cast(list[list[str]], message.get("views") or [])
            return ProgramResult(
                ok=bool(message.get("ok")),
                output=str(message.get("output", "")),
                error=str(error) if error is not None else None,
                views=tuple(View(str(t), str(x)) for t, x in raw_views),
            )

    def close(self) -> None:
        """Stop the Deno process; the next call would start a new one."""
        with self._lock:
            self._discard()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def __del__(self) -> None:
        if not sys.is_finalizing():
            with contextlib.suppress(Exception):
                self.close()
