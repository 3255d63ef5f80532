"""How Deno is launched: the runtime file, the binary, the import map and the permissions.

The process may reach one loopback port, its host's, and nothing else: no file at all,
no other network, environment, subprocesses or FFI. Imports are allowed by allowlist:
the runtime's own blob modules resolve, and the import map sends every ``file:`` URL,
every bare name and every ``node:`` module the installed Deno binary carries (read from
the binary itself, beside the list below) to a denied remote URL.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path

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
    """Every ``node:`` name the Deno binary at ``binary`` spells out (``stamp``: size, mtime)."""
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
    """The import map: only the runtime itself may reach the two built-ins it needs."""
    own = runtime.as_uri()
    imports: dict[str, str] = {"file:///": _BLOCKED + "file/", own: own}
    for name in sorted(node_builtins()):
        imports[f"node:{name}"] = f"{_BLOCKED}node/{name}"
        imports[name] = f"{_BLOCKED}node/{name}"
    return {
        "imports": imports,
        "scopes": {own: {n: n for n in ("node:worker_threads", "node:process")}},
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
        f"--allow-net=127.0.0.1:{port}",
        f"--import-map={map_file}",
        str(runtime),
        str(port),
        token,
        json.dumps(settings),
    ]
