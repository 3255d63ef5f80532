"""How Deno is launched: the runtime file, the binary, the import map and the permissions.

The process may reach one loopback port, its host's, and nothing else: no file at all,
no other network, environment, subprocesses or FFI. Imports are allowed by allowlist:
the runtime's own blob modules resolve, and the import map sends every ``file:`` URL,
every bare name and every ``node:`` module the installed Deno binary carries (read from
the binary itself, beside the list below) to a denied remote URL.

Reading the binary (about 96 MB) costs 0.5-2.4 s, so its list is kept on disk in the
user's cache directory (``$XDG_CACHE_HOME/gitmem``, else ``~/.cache/gitmem``), keyed by
the binary's path, size and mtime and written atomically. A file that does not parse,
names another binary or fails its digest is read again from the binary, never trusted.
It holds only module names: nothing of any holder's state.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.resources
import json
import os
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import cast

__all__ = ["deno_command", "import_map", "import_map_text", "node_builtins", "runtime_file"]

# Node built-ins Deno is known to offer; the binary's own list is added to these.
_NODE_BUILTINS = [
    "_http_agent",
    "_http_client",
    "_http_common",
    "_http_incoming",
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
# A `node:` specifier as the binary spells it. A name may run on into the string stored
# after it ("fsimport", "zlibop_node_..."); it is also cut where such a tail begins.
_SPECIFIER = re.compile(rb"node:([a-z_][a-z0-9_]{0,39}(?:/[a-z0-9_]{1,39}){0,3})")
_TAILS = ("import", "node", "op_", "renderer", "0")
_BINARY_SCAN_CAP = 512 * 1024 * 1024
_CACHE_VERSION = 1
_NAME = re.compile(r"[a-z_][a-z0-9_]{0,39}(?:/[a-z0-9_]{1,39}){0,3}")
# How many times this process read a Deno binary (tests/test_cold.py counts them).
scans = 0


def runtime_file() -> Path:
    """``runtime.js``: installed as ``gitmem._runtime``, else the checkout's ``sandbox/``.

    The JavaScript built from ``runtime.ts`` by ``make runtime``, so that no process
    spends its start transpiling the runtime.
    """
    try:
        root = importlib.resources.files("gitmem._runtime")
        candidate = Path(str(root)) / "runtime.js"
        if candidate.is_file():
            return candidate
    except (ModuleNotFoundError, TypeError):
        pass
    return Path(__file__).resolve().parents[2] / "sandbox" / "runtime.js"


@functools.cache
def _deno_binary() -> str:
    # The binary ships in the `deno` wheel from PyPI, which carries no type stubs.
    from deno import find_deno_bin  # pyright: ignore[reportMissingTypeStubs]

    return str(find_deno_bin())


@functools.lru_cache(maxsize=4)
def _binary_builtins(binary: str, stamp: tuple[int, int]) -> frozenset[str]:
    """Every ``node:`` name the Deno binary at ``binary`` spells out (``stamp``: size, mtime).

    Read from the disk cache when it holds this binary's list, else from the binary.
    """
    cache = _cache_file()
    cached = _read_cache(cache, binary, stamp) if cache is not None else None
    if cached is not None:
        return cached
    found = _scan(binary)
    if cache is not None and found and _stamp(binary) == stamp:
        _write_cache(cache, binary, stamp, found)
    return found


def _scan(binary: str) -> frozenset[str]:
    global scans
    scans += 1
    found: set[str] = set()
    try:
        with open(binary, "rb") as f:
            data = f.read(_BINARY_SCAN_CAP)
    except OSError:
        return frozenset()
    for match in _SPECIFIER.finditer(data):
        name = match.group(1).decode("ascii")
        found.add(name)
        for tail in _TAILS:
            cut = name.find(tail, 1)
            if cut > 0:
                found.add(name[:cut].rstrip("/"))
    return frozenset(found)


def _cache_file() -> Path | None:
    """Where the scan's result is kept, or None when the user has no cache directory."""
    base = os.environ.get("XDG_CACHE_HOME") or ""
    if not os.path.isabs(base):
        home = os.path.expanduser("~")
        if not os.path.isabs(home):
            return None
        base = os.path.join(home, ".cache")
    return Path(base, "gitmem", "deno-node-builtins.json")


def _digest(binary: str, stamp: tuple[int, int], names: list[str]) -> str:
    text = json.dumps([_CACHE_VERSION, binary, list(stamp), names])
    return hashlib.sha256(text.encode()).hexdigest()


def _read_cache(path: Path, binary: str, stamp: tuple[int, int]) -> frozenset[str] | None:
    """The cached list for this binary and stamp; None when missing, stale or damaged."""
    try:
        record = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict):
        return None
    fields = cast("dict[str, object]", record)
    names = fields.get("names")
    if (
        fields.get("version") != _CACHE_VERSION
        or fields.get("binary") != binary
        or fields.get("stamp") != list(stamp)
        or not isinstance(names, list)
    ):
        return None
    checked = [n for n in cast("list[object]", names) if isinstance(n, str) and _NAME.fullmatch(n)]
    if len(checked) != len(cast("list[object]", names)) or not checked:
        return None
    if fields.get("digest") != _digest(binary, stamp, checked):
        return None
    return frozenset(checked)


def _write_cache(path: Path, binary: str, stamp: tuple[int, int], found: frozenset[str]) -> None:
    """Write the list atomically (a temporary file renamed over); a failure is ignored."""
    names = sorted(found)
    record = {
        "version": _CACHE_VERSION,
        "binary": binary,
        "stamp": list(stamp),
        "names": names,
        "digest": _digest(binary, stamp, names),
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=".deno-node-builtins.", dir=path.parent)
    except OSError:
        return
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(record, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temp)


def _stamp(binary: str) -> tuple[int, int]:
    try:
        info = os.stat(binary)
    except OSError:
        return (0, 0)
    return (info.st_size, info.st_mtime_ns)


def node_builtins() -> frozenset[str]:
    """The ``node:`` names to deny: the known list and all the binary carries."""
    binary = _deno_binary()
    return frozenset(_NODE_BUILTINS) | _binary_builtins(binary, _stamp(binary))


def import_map(runtime: Path) -> dict[str, object]:
    """The import map: only the runtime itself may reach the one built-in it may need
    (``node:process``, on a Deno without ``Deno.cpuUsage``)."""
    own = runtime.as_uri()
    imports: dict[str, str] = {"file:///": _BLOCKED + "file/", own: own}
    for name in sorted(node_builtins()):
        imports[f"node:{name}"] = f"{_BLOCKED}node/{name}"
        imports[name] = f"{_BLOCKED}node/{name}"
    return {
        "imports": imports,
        "scopes": {own: {"node:process": "node:process"}},
    }


def import_map_text(runtime: Path) -> str:
    """:func:`import_map` as JSON, built once per runtime file and Deno binary."""
    binary = _deno_binary()
    return _map_text(runtime, binary, _stamp(binary))


@functools.lru_cache(maxsize=4)
def _map_text(runtime: Path, binary: str, stamp: tuple[int, int]) -> str:
    # Every process start writes this; building it costs more than the write.
    return json.dumps(import_map(runtime))


def deno_command(
    runtime: Path, port: int, token: str, map_file: Path, settings: Mapping[str, object]
) -> list[str]:
    """The command line that runs ``runtime`` with no permission beyond loopback ``port``."""
    return [
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
        "--deny-read",
        "--deny-write",
        # Blob modules would each leave a compiled copy in the private DENO_DIR.
        "--no-code-cache",
        # Every isolate of the process, each worker's and the runtime's, gets this heap
        # cap; a worker that fills it aborts the process, which fails that request alone.
        # No V8 platform threads: each isolate does its own collection and compiling on
        # its own thread (Deno then makes a single-threaded platform). Every program's
        # fresh worker hands fewer tasks across threads, some 6% fewer instructions per
        # program, and nothing runs on a thread no worker owns.
        f"--v8-flags=--max-old-space-size={int(cast(int, settings['memoryMb']))},--single-threaded",
        f"--allow-net=127.0.0.1:{port}",
        f"--import-map={map_file}",
        str(runtime),
        str(port),
        token,
        json.dumps(settings),
    ]
