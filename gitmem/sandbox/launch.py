"""How Deno is launched: the runtime file, the binary, the import map and the permissions.

The process may touch nothing but its private socket: no files, network, environment,
subprocesses or FFI, and the import map turns every ``file:`` and ``node:`` import into a
denied remote one.
"""

from __future__ import annotations

import importlib.resources
import json
from collections.abc import Mapping
from pathlib import Path

__all__ = ["deno_command", "import_map", "runtime_file"]

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


def runtime_file() -> Path:
    """``runtime.ts``: installed as ``gitmem._runtime``, else the checkout's ``sandbox/``."""
    try:
        root = importlib.resources.files("gitmem._runtime")
        candidate = Path(str(root)) / "runtime.ts"
        if candidate.is_file():
            return candidate
    except (ModuleNotFoundError, TypeError):
        pass
    return Path(__file__).resolve().parents[2] / "sandbox" / "runtime.ts"


def _deno_binary() -> str:
    # The binary ships in the `deno` wheel from PyPI, which carries no type stubs.
    from deno import find_deno_bin  # pyright: ignore[reportMissingTypeStubs]

    return str(find_deno_bin())


def import_map(runtime: Path) -> dict[str, object]:
    """The import map: only the runtime itself may reach the two built-ins it needs."""
    own = runtime.as_uri()
    imports: dict[str, str] = {"file:///": _BLOCKED + "file/", own: own}
    for name in _NODE_BUILTINS:
        imports[f"node:{name}"] = f"{_BLOCKED}node/{name}"
        imports[name] = f"{_BLOCKED}node/{name}"
    return {
        "imports": imports,
        "scopes": {own: {n: n for n in ("node:worker_threads", "node:process")}},
    }


def deno_command(
    runtime: Path, socket_path: str, map_file: Path, settings: Mapping[str, object]
) -> list[str]:
    """The command line that runs ``runtime`` with no permission beyond ``socket_path``."""
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
        f"--allow-net=unix:{socket_path}",
        f"--allow-read={socket_path}",
        f"--allow-write={socket_path}",
        f"--import-map={map_file}",
        str(runtime),
        socket_path,
        json.dumps(settings),
    ]
