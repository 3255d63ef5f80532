"""The sandbox itself: :class:`Sandbox` and the values it returns.

A :class:`Sandbox` owns one Deno :class:`~gitmem.sandbox.process.Process`, started
lazily and replaced after the watchdog kills it or it dies between calls.

Everything that crosses the bridge is bounded before it is parsed: a program's size,
the views a run opens (count, title and text), a ``memories`` call's argument (size and
nesting depth), error text and every frame. A bound that is passed is refused in the
limit-exceeded voice, never truncated silently (error text alone is cut, and says so).
Text that comes back (output, views, errors, diagnostics, a guard's verdict) is text any
reader can encode: a lone surrogate a JavaScript string may hold becomes U+FFFD.

A run's ``memories`` calls are bounded too, so that its time limit bounds the host's
work as well as its own: at most :data:`CALLS_MAX` calls, and at most twice its time
limit plus a second of host time spent answering them; past either, each further call
is refused. Calls are served only while the run lasts: the runtime forwards none once
it has ended, and neither does the host.

A process that aborts itself while it serves a request (Deno aborts the whole process
when its parser runs out of stack on deeply nested code) ends that request alone: a program
gets a failed result, a load a located diagnostic, never gitmem's defect; the next call
starts a fresh process.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import threading
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar, cast

from gitmem.errors import CodeError, GitmemError, InternalError, InvalidArgument
from gitmem.sandbox.pool import Pool, shared_pool
from gitmem.sandbox.process import Died, Killed, Process, Retired

__all__ = [
    "ARGS_DEPTH_MAX",
    "ARGS_MAX",
    "CACHED_CHARS",
    "CACHED_MODULES",
    "CALLS_LISTED",
    "CALLS_MAX",
    "ERROR_MAX",
    "PROGRAM_MAX",
    "VIEWS_MAX",
    "VIEW_TEXT_MAX",
    "VIEW_TITLE_MAX",
    "Bridge",
    "ExportDoc",
    "ProgramResult",
    "Sandbox",
    "Verdict",
    "View",
]

PROGRAM_MAX = 262_144
"""Characters a program or onUse script may hold."""
VIEWS_MAX = 32
"""Views one run may open; also the exported functions one load documents."""
VIEW_TEXT_MAX = 16_384
"""Characters of one view's text."""
VIEW_TITLE_MAX = 256
"""Characters of one view's title."""
ARGS_MAX = 1_048_576
"""Characters of one ``memories`` call's argument, as JSON."""
ARGS_DEPTH_MAX = 32
"""How deep one ``memories`` call's argument may nest."""
CACHED_MODULES = 32
"""Distinct module texts a process keeps transpiled (and at most ``CACHED_CHARS``)."""
CACHED_CHARS = 1_048_576
"""Characters of module text a process keeps transpiled."""
CALLS_MAX = 1_000
"""``memories`` calls one run may make."""
CALLS_LISTED = 256
"""Call names ``memories`` lists in a run."""
ERROR_MAX = 2_000
"""Characters of a run's error or a load's diagnostic; longer text is cut, and says so."""
_CUT = " [error text truncated]"

Bridge = Callable[[str, dict[str, object]], tuple[bool, str]]
"""Answers one ``memories.<name>(args)`` call: ``(True, text)`` or ``(False, refusal)``."""

_T = TypeVar("_T")
_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_CALL_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_SURROGATE = re.compile("[\ud800-\udfff]")
_DELTA = {"[": 1, "{": 1, "]": -1, "}": -1}
_SLICE = 32_768


def _refusal(what: str, attempted: int, limit: str, maximum: int, fix: str) -> str:
    return f"refused: {what} would be {attempted:,}, over {limit} ({maximum:,}). {fix}"


def _depth(text: str) -> int:
    """How deep the JSON ``text`` nests.

    Linear in the length, and in slices, so no single step holds the interpreter long.
    """
    # Escapes first, so that what is left of each string holds no quote; then the
    # even parts between quotes are everything outside strings.
    bare = text.replace("\\\\", "").replace('\\"', "")
    outside = _NOT_BRACKET.sub("", "".join(bare.split('"')[::2]))
    opened = outside.count("[") + outside.count("{")
    if opened <= ARGS_DEPTH_MAX:
        return opened
    depth = deepest = 0
    for at in range(0, len(outside), _SLICE):
        steps = list(itertools.accumulate(map(_DELTA.__getitem__, outside[at : at + _SLICE])))
        deepest = max(deepest, depth + max(steps))
        depth += steps[-1]
    return deepest


def _text(value: object) -> str:
    """A reply's value as text any reader can encode: a JavaScript string may hold half
    of a UTF-16 pair (``"\\ud800"``, or an emoji sliced in two), which UTF-8 cannot
    carry, so each lone surrogate becomes U+FFFD."""
    return _SURROGATE.sub("\ufffd", str(value))


def _capped(value: object) -> str:
    """``value`` as text held to :data:`ERROR_MAX` characters (with room for the
    runtime's mark)."""
    text = _text(value)
    return text if len(text) <= ERROR_MAX + 32 else text[:ERROR_MAX] + _CUT


def _strings(raw: object) -> list[str]:
    """A list in a reply, each item as text; nothing if it is not a list."""
    return [_text(item) for item in cast(list[object], raw)] if isinstance(raw, list) else []


def _died(died: Died, what: str) -> str:
    """What a request whose process died is told: its own failure, never a defect."""
    if died.out_of_memory:
        return f"{what} exceeded the sandbox memory limit"
    if died.out_of_stack:
        return (
            f"{what} ran the sandbox out of stack while it was parsed or run: it nests too "
            "deeply (brackets, types or one very long expression); nest less"
        )
    return f"{what} ended the sandbox process"


def _named(source: str, modules: Mapping[str, str]) -> dict[str, str]:
    """The modules whose key ``source`` spells as a word: the only ones it can import by
    name (a key written with escapes, ``\\u0063svTools``, is not found). A run carries
    these alone, so its cost follows its own text, not every module its holder loaded
    (a holder that read a thousand code memories would send them all with each run)."""
    if not modules:
        return {}
    words = set(_IDENTIFIER.findall(source))
    return {key: code for key, code in modules.items() if key in words}


def _check_call(name: str, raw: str) -> dict[str, object] | str:
    """The call's argument as an object, or the refusal to throw in the program."""
    if not _CALL_NAME.fullmatch(name):
        return "a memories call's name must be 1-64 letters, digits and _, starting with a letter"
    if len(raw) > ARGS_MAX:
        return _refusal(
            f"the argument to memories.{name}",
            len(raw),
            "the argument limit",
            ARGS_MAX,
            "Send less in one call.",
        )
    depth = _depth(raw)
    if depth > ARGS_DEPTH_MAX:
        return _refusal(
            f"the nesting of the argument to memories.{name}",
            depth,
            "the nesting limit",
            ARGS_DEPTH_MAX,
            "Pass a flat object.",
        )
    try:
        args = json.loads(raw)
    except (ValueError, RecursionError):
        return f"the argument to memories.{name} is not JSON"
    if not isinstance(args, dict):
        return f"memories.{name} takes one object argument"
    return cast(dict[str, object], args)


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
    imported: tuple[str, ...] = ()
    """The module keys the program imported, whose code therefore ran."""
    commit: str | None = field(default=None, compare=False)
    """The store commit the program read: its holder's head when it started (``None``
    before the store's first commit, or for a run no holder made). ``gitmem run --at``
    with it reads the store as this run found it. Where a run read is not what it
    produced, so two results compare equal whatever commits they read."""


@dataclass(frozen=True)
class Verdict:
    """What one ``check(change)`` of a kept module answered (:meth:`Sandbox.check`)."""

    kind: str
    """``"accept"`` (it returned ``undefined`` or ``null``), ``"error"`` (it threw, did not
    load, or outlived a limit), else the ``typeof`` of what it returned."""
    message: str | None = None
    """What it returned, when that was a string."""
    error: str | None = None
    """Why it failed, when ``kind`` is ``"error"``."""


def _views(raw: object) -> tuple[View, ...]:
    """The views a run sent, held to the caps whatever the runtime let through."""
    views: list[View] = []
    if not isinstance(raw, list):
        return ()
    for item in cast(list[object], raw)[:VIEWS_MAX]:
        if isinstance(item, list) and len(cast(list[object], item)) == 2:
            title, text = cast(list[object], item)
            title, text = _text(title), _text(text)
            if len(title) <= VIEW_TITLE_MAX and len(text) <= VIEW_TEXT_MAX:
                views.append(View(title, text))
    return tuple(views)


class Sandbox:
    """Runs code memories and programs in Deno processes lent by a :class:`Pool`.

    ``time_limit`` bounds each load and run in seconds (time spent in bridge calls does
    not count); ``memory_mb`` caps each worker's heap; ``output_cap`` caps a run's
    captured output in characters. Every load and run gets a fresh worker, in a process
    lent for that call alone; between calls the sandbox holds no process, and an idle
    process is released by the pool (``pool``: the shared one unless given). Thread-safe:
    calls are serialised by a lock.
    """

    def __init__(
        self,
        *,
        time_limit: float = 5.0,
        memory_mb: int = 256,
        output_cap: int = 64_000,
        pool: Pool | None = None,
    ) -> None:
        self.time_limit = time_limit
        self.memory_mb = memory_mb
        self.output_cap = output_cap
        self.rss_cap_mb = 256 + 3 * memory_mb
        self.pool = pool if pool is not None else shared_pool()
        self._lock = threading.RLock()
        # The process this sandbox used last: lent to it during a call, idle in the
        # pool (or lent to another sandbox, or gone) between calls.
        self._process: Process | None = None
        # The one it used before that, when a burst was spread over two.
        self._before: Process | None = None
        self._settings: dict[str, object] = {
            "memoryMb": self.memory_mb,
            "outputCap": self.output_cap,
            "maxViews": VIEWS_MAX,
            "maxViewChars": VIEW_TEXT_MAX,
            "maxTitleChars": VIEW_TITLE_MAX,
            "maxArgsChars": ARGS_MAX,
            "maxArgsDepth": ARGS_DEPTH_MAX,
            "cachedModules": CACHED_MODULES,
            "cachedChars": CACHED_CHARS,
            "maxErrorChars": ERROR_MAX,
        }

    @property
    def pid(self) -> int | None:
        """The id of the Deno process this sandbox used last, or ``None`` if it has none."""
        with self._lock:
            return self._process.pid if self._process is not None else None

    def start(self) -> None:
        """Have a process ready now rather than on the first call."""
        with self._lock, self._lent():
            pass

    @contextlib.contextmanager
    def _lent(self, *, fresh: bool = True) -> Generator[Process]:
        with self.pool.lend(self._settings, self.rss_cap_mb, fresh=fresh) as process:
            if self._process is not process:
                self._before = self._process
            self._process = process
            yield process

    def _discard(self, process: Process) -> None:
        # Killed, it never goes back to the pool.
        process.kill()
        if self._process is process:
            self._process = None
        if self._before is process:
            self._before = None

    def _budget(self) -> float:
        # The runtime keeps the real limit; this backstop only catches a runtime that
        # stopped answering.
        return 2 * self.time_limit + 1.0

    def _retrying(self, attempt: Callable[[Process], _T], *, fresh: bool = True) -> _T:
        with self._lock:
            for _ in range(2):
                try:
                    with self._lent(fresh=fresh) as process:
                        process.longest = max(process.longest, self.time_limit)
                        try:
                            return attempt(process)
                        except Retired:
                            self._discard(process)
                        except GitmemError:
                            raise
                        except Exception:
                            # Killed before it goes back: nobody else may be lent it.
                            self._discard(process)
                            raise
                except GitmemError:
                    raise
                except Exception as exc:
                    # Nothing foreign leaves the sandbox: the caller gets gitmem's own error.
                    raise InternalError(f"the sandbox failed: {type(exc).__name__}: {exc}") from exc
            raise InternalError("the sandbox runtime kept retiring itself")

    def _load(self, op: str, source: str, key: str) -> tuple[str | None, list[str], list[str]]:
        return self._retrying(lambda process: self._load_once(process, op, source, key))

    def _load_once(
        self, process: Process, op: str, source: str, key: str
    ) -> tuple[str | None, list[str], list[str]]:
        """The diagnostic, the exported functions and, for each, its signature."""
        with self._lock:
            try:
                process.send({"op": op, "source": source, "key": key, "timeLimit": self.time_limit})
                reply = process.receive(time.monotonic() + self._budget())
            except Killed as killed:
                self._discard(process)
                what = "time limit" if killed.reason == "time" else "memory limit"
                return f"1:1: the module's top-level code exceeded the sandbox {what}", [], []
            except Died as died:
                self._discard(process)
                return f"1:1: {_died(died, 'the code')}", [], []
            except InternalError:
                self._discard(process)
                raise
            if reply.get("restart"):
                self._discard(process)
            else:
                process.keep = reply.get("keep")
            diagnostic = reply.get("diagnostic")
            return (
                _capped(diagnostic) if diagnostic is not None else None,
                _strings(reply.get("exports")),
                _strings(reply.get("signatures")),
            )

    def compile(self, source: str) -> str | None:
        """Transpile and syntax-check ``source`` without running it.

        Returns a located diagnostic, ``line:column: message``, or ``None`` if it compiles.
        """
        diagnostic, _, _ = self._load("compile", source, "module")
        return diagnostic

    def load(self, key: str, source: str) -> list[ExportDoc]:
        """Compile and evaluate a code memory in a fresh worker; one :class:`ExportDoc`
        per exported function, the first :data:`VIEWS_MAX` of them.

        Raises :class:`CodeError` with a located diagnostic if it does not compile or
        load (its top-level code throws, or outlives the time or memory limit).
        """
        # The runtime reads the signatures from the source while its worker loads it.
        diagnostic, exports, typed = self._load("load", source, key)
        if diagnostic is not None:
            raise CodeError(
                f"the code of {key} does not compile: {diagnostic}", diagnostic=diagnostic
            )
        signature = dict(zip(exports, typed, strict=False))
        exports = [e for e in exports if _IDENTIFIER.fullmatch(e) or e == "default"]
        return [
            ExportDoc(key, name, signature.get(name, f"{name}(...)"))
            for name in exports[:VIEWS_MAX]
        ]

    def check(self, source: str, change: Mapping[str, object], *, scope: str) -> Verdict:
        """Call ``check(change)`` exported by the module ``source``, in a worker kept for
        ``scope`` and ``source`` together.

        The first check of a pair loads the module in a fresh worker; later ones reuse
        that worker, so a pure check costs a call, not a worker. ``scope`` must name
        whose checks may share a worker (one store of one repository): a worker is only
        ever reused for the same ``scope`` and the same ``source``. Each check gets its
        own copy of ``change``, its timers end when it answers, and it runs with the
        global bindings and the prototypes objects inherit from frozen; a check that
        fails in a reused worker is asked again of a fresh one, whose answer stands.
        The module may call nothing of the host. ``source`` is held to
        :data:`PROGRAM_MAX` characters.
        """
        if len(source) > PROGRAM_MAX:
            refusal = _refusal(
                "the module", len(source), "the program limit", PROGRAM_MAX, "Make it shorter."
            )
            return Verdict("error", error=refusal)
        request: dict[str, object] = {
            "op": "check",
            "source": source,
            "scope": scope,
            "key": "module",
            "change": json.dumps(dict(change)),
            "timeLimit": self.time_limit,
        }
        # A check mostly reuses its kept worker: nothing to boot after it, so it is not
        # spread over two processes, and goes where its worker is kept.
        return self._retrying(lambda process: self._check_once(process, request), fresh=False)

    def _check_once(self, process: Process, request: Mapping[str, object]) -> Verdict:
        with self._lock:
            # A kept worker's checks add up: it may use up to half a time limit on
            # earlier checks before its last one.
            process.longest = max(process.longest, 2 * self.time_limit)
            try:
                process.send(request)
                # A failed check in a kept worker is asked again of a fresh one.
                reply = process.receive(time.monotonic() + 2 * self._budget())
            except Killed as killed:
                self._discard(process)
                what = "time limit" if killed.reason == "time" else "memory limit"
                return Verdict("error", error=f"the check exceeded the sandbox {what}")
            except Died as died:
                self._discard(process)
                return Verdict("error", error=_died(died, "the check"))
            except InternalError:
                self._discard(process)
                raise
            if reply.get("op") != "result":
                self._discard(process)
                raise InternalError(f"the sandbox runtime answered {reply.get('op')!r}")
            if reply.get("restart"):
                self._discard(process)
            else:
                process.keep = reply.get("keep")
            if reply.get("again"):
                # The kept worker did not answer: its process is gone, and a fresh
                # one answers.
                raise Retired
            message, error = reply.get("message"), reply.get("error")
            return Verdict(
                kind=str(reply.get("kind")),
                message=_text(message) if isinstance(message, str) else None,
                error=_capped(error) if isinstance(error, str) else None,
            )

    def run(
        self,
        source: str,
        *,
        modules: Mapping[str, str],
        bridge: Bridge,
        kind: str = "program",
        calls: Sequence[str] = (),
    ) -> ProgramResult:
        """Run a TypeScript program (``kind="program"``) or an onUse script (``"onuse"``).

        The program may ``import { memories, views, <module keys> } from "gitmem"``;
        an onUse script also sees ``memories`` and ``views`` as globals. Each
        ``memories.<name>(args)`` call is answered by ``bridge(name, args)``. ``calls``
        are the names ``memories`` lists (``Object.keys``, ``for...in``, ``in``): the
        first :data:`CALLS_LISTED` that are call names; any name may still be called.

        A module's code runs only if the program imports it by name; the keys it did
        are in the result's ``imported``. A run carries only the modules whose key its
        text spells as a word (:func:`_named`). A source over :data:`PROGRAM_MAX`
        characters is refused without starting anything.

        Raises :class:`InvalidArgument` for an unknown ``kind`` or a key in ``modules``
        that is not a usable module key, and :class:`InternalError` if the sandbox
        itself fails.
        """
        if kind not in ("program", "onuse"):
            raise InvalidArgument(f'the run kind {kind!r} is unknown; use "program" or "onuse"')
        for key in modules:
            if not _IDENTIFIER.fullmatch(key) or key in ("memories", "views"):
                raise InvalidArgument(
                    f"{key!r} cannot be a module key: a key must be a JavaScript identifier "
                    "other than memories and views; derive one with module_key"
                )
        if len(source) > PROGRAM_MAX:
            what = "the program" if kind == "program" else "the onUse script"
            fix = "Make it shorter: move reusable parts into code memories."
            refusal = _refusal(what, len(source), "the program limit", PROGRAM_MAX, fix)
            return ProgramResult(False, "", refusal)
        listed = [c for c in calls if _CALL_NAME.fullmatch(c)][:CALLS_LISTED]
        named = _named(source, modules)
        return self._retrying(
            lambda process: self._run_once(process, source, named, bridge, kind, listed)
        )

    def _run_once(
        self,
        process: Process,
        source: str,
        modules: Mapping[str, str],
        bridge: Bridge,
        kind: str,
        listed: list[str],
    ) -> ProgramResult:
        with self._lock:
            started = time.monotonic()
            bridge_time = 0.0
            calls = 0
            try:
                process.send(
                    {
                        "op": "run",
                        "source": source,
                        "modules": dict(modules),
                        "kind": kind,
                        "calls": listed,
                        "timeLimit": self.time_limit,
                    }
                )
                while True:
                    message = process.receive(started + bridge_time + self._budget())
                    if message.get("op") != "call":
                        break
                    asked = time.monotonic()
                    name = str(message.get("name"))
                    calls += 1
                    checked = self._within(calls, bridge_time, name)
                    if checked is None:
                        checked = _check_call(name, str(message.get("args")))
                    if isinstance(checked, str):
                        ok, text = False, checked
                    else:
                        try:
                            ok, text = bridge(name, checked)
                        except BaseException:
                            # The worker is blocked on this answer; a holder that
                            # cannot give one leaves nothing worth keeping.
                            self._discard(process)
                            raise
                    bridge_time += time.monotonic() - asked
                    process.send(
                        {"op": "reply", "id": message.get("id"), "ok": bool(ok), "text": str(text)}
                    )
            except Killed as killed:
                self._discard(process)
                if killed.reason == "time":
                    error = (
                        f"the program did not finish within its time limit of {self.time_limit:g} s"
                    )
                else:
                    error = "the program exceeded the sandbox memory limit"
                return ProgramResult(False, "", error)
            except Died as died:
                self._discard(process)
                what = "the program" if kind == "program" else "the onUse script"
                return ProgramResult(False, "", _died(died, what))
            except InternalError:
                self._discard(process)
                raise
            if message.get("op") != "result":
                self._discard(process)
                raise InternalError(f"the sandbox runtime answered {message.get('op')!r}")
            if message.get("restart"):
                self._discard(process)
            else:
                process.keep = message.get("keep")
            error = message.get("error")
            return ProgramResult(
                ok=bool(message.get("ok")),
                output=_text(message.get("output", ""))[: self.output_cap + 40],
                error=_capped(error) if error is not None else None,
                views=_views(message.get("views")),
                imported=tuple(
                    str(k)
                    for k in cast(list[object], message.get("imported") or [])
                    if k in modules
                ),
            )

    def _within(self, calls: int, bridge_time: float, name: str) -> str | None:
        """The refusal for a run's next call past its share of the host, else ``None``."""
        if calls > CALLS_MAX:
            return _refusal(
                "the memories calls of this run",
                calls,
                "the call limit",
                CALLS_MAX,
                "Do more in each call, or split the work across programs.",
            )
        if bridge_time > self._budget():
            return (
                f"refused: memories.{name} would take the host past the time this run may "
                f"spend in memories calls ({self._budget():g} s). Do less in one program."
            )
        return None

    def close(self) -> None:
        """Stop the processes this sandbox used last (two, after a burst spread over
        them) if nobody is using them; the next call would be lent another."""
        with self._lock:
            for process in (self._process, self._before):
                if process is not None:
                    self.pool.forget(process)
            self._process = self._before = None

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
