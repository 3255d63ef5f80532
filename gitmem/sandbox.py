"""The sandbox: TypeScript code memories and agent programs, run by Deno with no permissions.

One Deno process per :class:`Sandbox` (one per holder), started lazily on the first use.
The process runs ``sandbox/runtime.ts`` (shipped as ``gitmem._runtime``), which connects
back over a private Unix socket and evaluates every module and program in a fresh
``node:worker_threads`` worker with a capped heap. The process may touch nothing but
that socket: no files, network, environment, subprocesses or FFI, and an import map
turns every ``file:`` and ``node:`` import into a denied remote one. The protocol never
runs over stdin or stdout, which user code can reach; they are drained into small logs
that nothing parses.

A watchdog here kills the whole process when a run outlives twice its time budget or its
resident memory passes the cap (V8's limits miss off-heap memory); the next call starts a
fresh process. A crash gitmem did not cause that way is gitmem's defect and raises
:class:`~gitmem.errors.InternalError`.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import importlib.resources
import json
import os
import re
import select
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, ClassVar, TypeVar, cast

from gitmem.errors import CodeError, InternalError

__all__ = [
    "Bridge",
    "ExportDoc",
    "ProgramResult",
    "Sandbox",
    "View",
    "module_key",
]

Bridge = Callable[[str, dict[str, object]], tuple[bool, str]]
"""Answers one ``memories.<name>(args)`` call: ``(True, text)`` or ``(False, refusal)``."""

_T = TypeVar("_T")
_FRAME = struct.Struct(">I")
_MAX_FRAME = 64 * 1024 * 1024
_LOG_CAP = 64 * 1024
_POLL = 0.02
_START_TIMEOUT = 10.0
_LOADER_RECYCLE = 200
# The runtime exits with this status when a leftover thread keeps a core busy while
# idle; it exits only between requests, so the request it never read can be retried.
_IDLE_EXIT = 3
# Every Node built-in Deno offers; the import map sends each to a denied remote URL.
_NODE_BUILTINS = [
    "_http_agent",
    "_http_common",
    "_http_outgoing",
    "_http_server",
    "_stream_duplex",
    "_stream_passthrough",
    "_stream_readable",
    "_stream_transform",
    "_stream_writable",
    "_tls_common",
    "_tls_wrap",
    "assert",
    "assert/strict",
    "async_hooks",
    "buffer",
    "child_process",
    "cluster",
    "console",
    "constants",
    "crypto",
    "dgram",
    "diagnostics_channel",
    "dns",
    "dns/promises",
    "domain",
    "events",
    "fs",
    "fs/promises",
    "http",
    "http2",
    "https",
    "inspector",
    "inspector/promises",
    "module",
    "net",
    "os",
    "path",
    "path/posix",
    "path/win32",
    "perf_hooks",
    "process",
    "punycode",
    "querystring",
    "readline",
    "readline/promises",
    "repl",
    "sqlite",
    "stream",
    "stream/consumers",
    "stream/promises",
    "stream/web",
    "string_decoder",
    "sys",
    "test",
    "test/reporters",
    "timers",
    "timers/promises",
    "tls",
    "trace_events",
    "tty",
    "url",
    "util",
    "util/types",
    "v8",
    "vm",
    "wasi",
    "worker_threads",
    "zlib",
]
_BLOCKED = "https://import.denied.invalid/"
# Names a program could not import as `import { key } from "gitmem"`, and the two
# the generated module already exports.
_RESERVED = frozenset(
    [
        "memories",
        "views",
        "arguments",
        "await",
        "break",
        "case",
        "catch",
        "class",
        "const",
        "continue",
        "debugger",
        "default",
        "delete",
        "do",
        "else",
        "enum",
        "eval",
        "export",
        "extends",
        "false",
        "finally",
        "for",
        "function",
        "if",
        "implements",
        "import",
        "in",
        "instanceof",
        "interface",
        "let",
        "new",
        "null",
        "package",
        "private",
        "protected",
        "public",
        "return",
        "static",
        "super",
        "switch",
        "this",
        "throw",
        "true",
        "try",
        "typeof",
        "var",
        "void",
        "while",
        "with",
        "yield",
    ]
)


def module_key(slug: str, taken: Collection[str]) -> str:
    """The import key for a memory's code: the slug in camel case, unique among ``taken``.

    ``.``, ``_`` and ``-`` separate words (``csv-tools`` → ``csvTools``); a key already
    taken, reserved in JavaScript or exported by ``"gitmem"`` itself (``memories``,
    ``views``) gets the first free numeric suffix (``csvTools2``).
    """
    words = [w for w in re.split(r"[._\-]+", slug) if w]
    if not words:
        words = ["module"]
    key = words[0][:1].lower() + words[0][1:]
    key += "".join(w[:1].upper() + w[1:] for w in words[1:])
    key = re.sub(r"[^A-Za-z0-9_$]", "_", key)
    if key[:1].isdigit():
        key = "_" + key
    if key not in taken and key not in _RESERVED:
        return key
    n = 2
    while f"{key}{n}" in taken:
        n += 1
    return f"{key}{n}"


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


def _runtime_file() -> Path:
    try:
        root = importlib.resources.files("gitmem._runtime")
        candidate = Path(str(root)) / "runtime.ts"
        if candidate.is_file():
            return candidate
    except (ModuleNotFoundError, TypeError):
        pass
    return Path(__file__).resolve().parent.parent / "sandbox" / "runtime.ts"


def _deno_binary() -> str:
    # The binary ships in the `deno` wheel from PyPI, which carries no type stubs.
    from deno import find_deno_bin  # pyright: ignore[reportMissingTypeStubs]

    return str(find_deno_bin())


def _import_map(runtime: Path) -> dict[str, object]:
    own = runtime.as_uri()
    imports: dict[str, str] = {"file:///": _BLOCKED + "file/", own: own}
    for name in _NODE_BUILTINS:
        imports[f"node:{name}"] = f"{_BLOCKED}node/{name}"
        imports[name] = f"{_BLOCKED}node/{name}"
    return {
        "imports": imports,
        "scopes": {own: {n: n for n in ("node:worker_threads", "node:process")}},
    }


class _Log:
    """Drains a pipe into a small ring buffer; its content is never parsed."""

    def __init__(self, stream: IO[bytes] | None) -> None:
        assert stream is not None
        self.stream = stream
        self.chunks: deque[bytes] = deque()
        self.size = 0
        self.thread = threading.Thread(target=self._drain, args=(stream.fileno(),), daemon=True)
        self.thread.start()

    def _drain(self, fd: int) -> None:
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            self.chunks.append(chunk)
            self.size += len(chunk)
            while self.size > _LOG_CAP and len(self.chunks) > 1:
                self.size -= len(self.chunks.popleft())

    def text(self) -> str:
        return b"".join(self.chunks)[-_LOG_CAP:].decode("utf-8", "replace")


class _Killed(Exception):
    """The watchdog stopped the process; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Retired(Exception):
    """The runtime retired itself while idle, before it read the request; try again."""


class _Process:
    """One Deno process and the socket to it."""

    live: ClassVar[weakref.WeakSet[_Process]] = weakref.WeakSet()

    def __init__(self, *, memory_mb: int, output_cap: int, rss_cap_mb: int) -> None:
        _Process.live.add(self)
        self.rss_cap_kb = rss_cap_mb * 1024
        self.root = Path(tempfile.mkdtemp(prefix="gitmem-sbx-"))
        self.proc: subprocess.Popen[bytes] | None = None
        self.conn: socket.socket | None = None
        self.stdout: _Log | None = None
        self.stderr: _Log | None = None
        try:
            self._start(memory_mb, output_cap)
        except BaseException:
            self.kill()
            raise

    def _start(self, memory_mb: int, output_cap: int) -> None:
        runtime = _runtime_file()
        deno_dir = self.root / "deno"
        workdir = self.root / "work"
        deno_dir.mkdir()
        workdir.mkdir()
        map_file = self.root / "import-map.json"
        map_file.write_text(json.dumps(_import_map(runtime)))
        path = str(self.root / "s")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(path)
            listener.listen(1)
            listener.settimeout(_POLL)
            settings = {
                "memoryMb": memory_mb,
                "outputCap": output_cap,
                "loaderRecycle": _LOADER_RECYCLE,
            }
            command = [
                _deno_binary(),
                "run",
                "--quiet",
                "--no-prompt",
                "--no-config",
                "--no-lock",
                "--no-remote",
                "--no-npm",
                "--cached-only",
                "--deny-import",
                "--deny-env",
                "--deny-sys",
                "--deny-run",
                "--deny-ffi",
                f"--allow-net=unix:{path}",
                f"--allow-read={path}",
                f"--allow-write={path}",
                f"--import-map={map_file}",
                str(runtime),
                path,
                json.dumps(settings),
            ]
            self.proc = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=workdir,
                env={"DENO_DIR": str(deno_dir), "NO_COLOR": "1"},
                start_new_session=True,
            )
            self.stdout = _Log(self.proc.stdout)
            self.stderr = _Log(self.proc.stderr)
            give_up = time.monotonic() + _START_TIMEOUT
            while self.conn is None:
                try:
                    self.conn, _ = listener.accept()
                except TimeoutError:
                    if self.proc.poll() is not None or time.monotonic() > give_up:
                        time.sleep(_POLL)
                        raise InternalError(
                            f"the sandbox did not start: {self.stderr.text()}"
                        ) from None
        finally:
            listener.close()
            # The runtime holds its connection; with the path gone, code that reaches
            # Deno.connect has nothing to reconnect to.
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        self.conn.setblocking(True)
        self.buffer = bytearray()
        ready = self.receive(time.monotonic() + _START_TIMEOUT)
        if ready.get("op") != "ready":
            raise InternalError("the sandbox runtime sent no greeting")

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def rss_kb(self) -> int:
        try:
            status = Path(f"/proc/{self.pid}/status").read_text()
        except OSError:
            return 0
        found = re.search(r"^VmRSS:\s+(\d+)", status, re.MULTILINE)
        return int(found.group(1)) if found else 0

    def send(self, message: Mapping[str, object]) -> None:
        assert self.conn is not None
        body = json.dumps(message).encode()
        try:
            self.conn.sendall(_FRAME.pack(len(body)) + body)
        except OSError as exc:
            raise self._crashed(f"the sandbox connection failed: {exc}") from exc

    def receive(self, deadline: float) -> dict[str, object]:
        """The next frame; a watchdog checks time and memory while it waits."""
        assert self.conn is not None
        while True:
            if len(self.buffer) >= 4:
                (length,) = _FRAME.unpack_from(self.buffer)
                if length > _MAX_FRAME:
                    raise self._crashed("the sandbox sent an oversized frame")
                if len(self.buffer) >= 4 + length:
                    body = bytes(self.buffer[4 : 4 + length])
                    del self.buffer[: 4 + length]
                    return cast(dict[str, object], json.loads(body))
            readable, _, _ = select.select([self.conn], [], [], _POLL)
            if readable:
                try:
                    chunk = self.conn.recv(1 << 16)
                except OSError as exc:
                    raise self._crashed(f"the sandbox connection failed: {exc}") from exc
                if not chunk:
                    raise self._crashed("the sandbox process ended")
                self.buffer += chunk
                continue
            if time.monotonic() > deadline:
                self.kill()
                raise _Killed("time")
            if self.rss_kb() > self.rss_cap_kb:
                self.kill()
                raise _Killed("memory")
            if not self.alive():
                raise self._crashed("the sandbox process ended")

    def _crashed(self, what: str) -> InternalError:
        if self.proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=0.5)
            if self.proc.returncode == _IDLE_EXIT:
                self.kill()
                raise _Retired
        self.kill()
        detail = self.stderr.text().strip()[-2000:] if self.stderr is not None else ""
        return InternalError(
            f"{what}; it restarts for the next call" + (f": {detail}" if detail else "")
        )

    def kill(self) -> None:
        if self.conn is not None:
            with contextlib.suppress(OSError):
                self.conn.close()
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, 9)
            self.proc.wait()
        for log in (self.stdout, self.stderr):
            if log is not None:
                # The process is gone, so the drain meets end of file at once.
                log.thread.join(timeout=1.0)
                with contextlib.suppress(OSError):
                    log.stream.close()
        shutil.rmtree(self.root, ignore_errors=True)


@atexit.register
def _kill_all() -> None:
    # Runtimes exit on their own when the socket closes; this also removes their
    # private directories, which __del__ cannot do at interpreter shutdown.
    for process in list(_Process.live):
        process.kill()


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
        self._process: _Process | None = None

    @property
    def pid(self) -> int | None:
        """The Deno process id, or ``None`` before the first use."""
        with self._lock:
            return self._process.pid if self._process is not None else None

    def start(self) -> None:
        """Start the process now rather than on the first call."""
        with self._lock:
            self._ensure()

    def _ensure(self) -> _Process:
        # A process that died between calls, or still holds a past run's memory
        # (a terminated worker frees it lazily), is replaced before it can fail
        # an innocent call.
        if self._process is not None and (
            not self._process.alive() or self._process.rss_kb() > self._process.rss_cap_kb
        ):
            self._discard()
        if self._process is None:
            self._process = _Process(
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
            except _Retired:
                self._discard()
            try:
                return attempt()
            except _Retired:
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
            except _Killed as killed:
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
        signatures = _signatures(source, tuple(exports))
        return [ExportDoc(key, name, signatures[name]) for name in exports]

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
        """
        if kind not in ("program", "onuse"):
            raise ValueError(f"unknown run kind {kind!r}")
        for key in modules:
            if not re.fullmatch(r"[A-Za-z_$][A-Za-z0-9_$]*", key) or key in (
                "memories",
                "views",
            ):
                raise ValueError(f"{key!r} cannot be a module key")
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
            except _Killed as killed:
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


# Signatures come from the source text: the runtime knows which exports are
# functions, the source still has the types the transpiler erased.
_PAIRS = {"(": ")", "[": "]", "{": "}", "<": ">"}


def _balanced(text: str, start: int) -> int:
    """The index just past the bracket group opening at ``start``."""
    stack: list[str] = []
    i = start
    while i < len(text):
        c = text[i]
        if c in "\"'`":
            end = text.find(c, i + 1)
            while end != -1 and text[end - 1] == "\\":
                end = text.find(c, end + 1)
            i = len(text) if end == -1 else end + 1
            continue
        if c == "=" and text.startswith("=>", i):
            i += 2
            continue
        if c in _PAIRS:
            stack.append(_PAIRS[c])
        elif stack and c == stack[-1]:
            stack.pop()
            if not stack:
                return i + 1
        i += 1
    return len(text)


def _return_type(text: str, at: int, arrow: bool) -> str:
    """A ``: Type`` annotation starting at ``at``, or ``""``."""
    rest = text[at:]
    stripped = rest.lstrip()
    if not stripped.startswith(":"):
        return ""
    i = at + (len(rest) - len(stripped)) + 1
    begin = i
    depth = 0
    while i < len(text):
        c = text[i]
        if c in "([<":
            depth += 1
        elif c in ")]>" and depth and not (c == ">" and text[i - 1] == "="):
            depth -= 1
        elif c == "{":
            before = text[begin:i].rstrip()
            if depth == 0 and before and not before.endswith((":", "|", "&", "=>", ",", "<")):
                break
            i = _balanced(text, i)
            continue
        elif (depth == 0 and arrow and text.startswith("=>", i)) or (
            depth == 0 and c in ";\n" and arrow
        ):
            break
        i += 1
    return " ".join(text[begin:i].split())


_DECLARATION = re.compile(
    r"\b(?:(?P<fn>function)\s*\*?\s*(?P<f>[A-Za-z_$][\w$]*)"
    r"|(?:const|let|var)\s+(?P<v>[A-Za-z_$][\w$]*)\s*(?::[^=;]+)?=\s*(?:async\s+)?"
    r"(?P<vfn>function\b\s*\*?\s*[\w$]*)?)\s*(?=[<(])"
)
_FLAT_PARAMS = re.compile(r"\([^()\[\]{}<>\"'`=]*\)")
_SIMPLE_RETURN = re.compile(r"\s*(?::\s*([\w$.\[\]|&?<>][\w$.\[\]|&, ?<>]*?))?\s*(?:\{|=>)")
_DEFAULT = re.compile(r"\bexport\s+default\s+(?:async\s+)?function\s*\*?\s*[\w$]*\s*(?=[<(])")


@functools.lru_cache(maxsize=64)
def _signatures(source: str, names: tuple[str, ...]) -> dict[str, str]:
    """``name(params): Return`` as written in ``source``, for each name; ``name(...)`` if unseen."""
    found: dict[str, tuple[int, bool]] = {}
    for match in _DECLARATION.finditer(source):
        name = match.group("f") or match.group("v")
        arrow = match.group("v") is not None and match.group("vfn") is None
        found.setdefault(name, (match.end(), arrow))
    default = _DEFAULT.search(source)
    if default is not None:
        found["default"] = (default.end(), False)
    return {name: _signature_at(source, name, *found.get(name, (-1, False))) for name in names}


def _signature_at(source: str, name: str, at: int, arrow: bool) -> str:
    if at < 0:
        return f"{name}(...)"
    generics = ""
    if source[at] == "<":
        end = _balanced(source, at)
        generics = source[at:end]
        at = end
    if at >= len(source) or source[at] != "(":
        return f"{name}(...)"
    # Most signatures are flat; the regular expressions answer those quickly and
    # the bracket scanner takes the rest.
    flat = _FLAT_PARAMS.match(source, at)
    end = flat.end() if flat is not None else _balanced(source, at)
    params = " ".join(source[at + 1 : end - 1].split())
    simple = _SIMPLE_RETURN.match(source, end)
    if simple is not None:
        returns = " ".join((simple.group(1) or "").split())
    else:
        returns = _return_type(source, end, arrow)
    return f"{name}{generics}({params})" + (f": {returns}" if returns else "")
