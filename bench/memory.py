"""Memory per process: ``gitmem mcp`` and ``gitmem console`` idle on a store of 100,000
memories, beside a bare Python process that imports the same SDK (``mcp`` for the
server; ``starlette`` and ``uvicorn`` for the console), in the same run.

Each gitmem process is started, served one request (a ``read_memory`` over MCP stdio;
the console's Memories panel over HTTP), then left idle for a moment before its resident
set (``VmRSS`` in ``/proc/PID/status``) is read. The peer is read the same way after its
imports. Goal: each ≤ 2× its peer.

The store is written once in gitmem's layout (one commit, see ``capability.py``) into
the temporary folder and kept between runs (``BENCH_MEMORY_STORE`` names another place).
"""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
import tempfile
import time
import urllib.request

from capability import STORE, build_store

MEMORIES = 100_000
BODY_CHARS = 500
GOAL = 2.0
IDLE_SECONDS = 1.0
BIN = os.path.dirname(sys.executable)
GITMEM = os.path.join(BIN, "gitmem")
CAPABILITY = {
    "id": "memories",
    "enabled": True,
    "implementation": "markdown",
    "params": {
        "scope": "shared",
        "maxCount": 0,
        "maxLenPerMemory": 0,
        "maxTotalLen": 0,
        "maxLenIndex": 0,
        "maxLenDescription": 0,
        "maxResults": 25,
    },
}
MCP_IMPORTS = "import anyio, mcp_types, mcp.server, mcp.server.stdio, mcp.server.subscriptions"
CONSOLE_IMPORTS = "import starlette.applications, starlette.routing, uvicorn"


def store_path() -> str:
    """The 100,000-memory store, built on first use and kept."""
    path = os.environ.get("BENCH_MEMORY_STORE") or os.path.join(
        tempfile.gettempdir(), f"gitmem-bench-memory-{MEMORIES}.git"
    )
    if not os.path.exists(os.path.join(path, "HEAD")):
        print(f"   building a store of {MEMORIES:,} memories in {path} (kept for next time)")
        build_store(path, MEMORIES, BODY_CHARS).close()
    return path


def rss_kib(pid: int) -> int:
    """The resident set of process ``pid``, in KiB."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


def idle_rss(process: subprocess.Popen[bytes]) -> int:
    time.sleep(IDLE_SECONDS)
    return rss_kib(process.pid)


def peer(imports: str) -> int:
    """A bare interpreter that imports ``imports`` and waits (started elsewhere than in
    this folder, whose ``mcp.py`` would hide the package)."""
    process = subprocess.Popen(
        [sys.executable, "-c", f"{imports}\nimport sys\nprint(flush=True)\nsys.stdin.read()"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=tempfile.gettempdir(),
    )
    try:
        assert process.stdout is not None
        process.stdout.readline()
        return idle_rss(process)
    finally:
        process.kill()
        process.wait()


def _message(process: subprocess.Popen[bytes], message: dict[str, object]) -> None:
    assert process.stdin is not None
    process.stdin.write(json.dumps(message).encode() + b"\n")
    process.stdin.flush()


def _answer(process: subprocess.Popen[bytes], ident: int) -> dict[str, object]:
    assert process.stdout is not None
    while True:
        line = process.stdout.readline()
        if not line:
            raise RuntimeError("the MCP server ended")
        message = json.loads(line)
        if message.get("id") == ident:
            return message


def mcp_server(path: str) -> int:
    """``gitmem mcp`` after ``initialize`` and one ``read_memory``."""
    args = [GITMEM, "--repo", path, "mcp", "--store", STORE, "--capability", json.dumps(CAPABILITY)]
    process = subprocess.Popen(
        [*args, "--profile", "bench", "--instance", "memory"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        _message(
            process,
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "bench", "version": "0"},
                },
            },
        )
        _answer(process, 1)
        _message(process, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        call = {"name": "read_memory", "arguments": {"name": "note-50000"}}
        _message(process, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
        answer = _answer(process, 2)
        result = answer.get("result")
        assert isinstance(result, dict) and not result.get("isError"), answer
        return idle_rss(process)
    finally:
        process.kill()
        process.wait()


def console(path: str) -> int:
    """``gitmem console`` after one request of the Memories panel."""
    process = subprocess.Popen(
        [GITMEM, "--repo", path, "console"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], 120)
        line = process.stdout.readline().decode() if ready else ""
        found = re.search(r"http://([^/]+)/\?token=(\S+)", line)
        if found is None:
            raise RuntimeError(f"the console printed no address: {line!r}")
        request = urllib.request.Request(
            f"http://{found[1]}/api/stores/{STORE}/memories",
            headers={"Authorization": f"Bearer {found[2]}"},
        )
        with urllib.request.urlopen(request, timeout=300) as response:
            assert isinstance(json.loads(response.read()), list)
        return idle_rss(process)
    finally:
        process.kill()
        process.wait()


def line(name: str, ours: int, theirs: int, peer_name: str) -> None:
    ratio = ours / theirs
    verdict = "met" if ratio <= GOAL else "MISSED"
    print(
        f"   {name:<16} {ours / 1024:7.1f} MiB   {peer_name:<28} {theirs / 1024:7.1f} MiB"
        f"   {ratio:5.2f}x   (goal <= {GOAL:g}x: {verdict})"
    )


def main() -> None:
    print(
        f"memory per process, idle after one request, on {MEMORIES:,} memories "
        f"(VmRSS; python {sys.version.split()[0]})"
    )
    path = store_path()
    line("gitmem mcp", mcp_server(path), peer(MCP_IMPORTS), "python importing mcp")
    line(
        "gitmem console",
        console(path),
        peer(CONSOLE_IMPORTS),
        "python importing starlette+uvicorn",
    )


if __name__ == "__main__":
    main()
