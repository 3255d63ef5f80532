"""Memory per process: ``gitmem mcp`` and ``gitmem console`` idle on a store of 100,000
memories, beside a bare Python process that imports the same SDK (``mcp`` for the
server; ``starlette`` and ``uvicorn`` for the console), in the same run.

Each gitmem process is started, served one request (a ``read_memory`` over MCP stdio;
the console's Memories panel over HTTP), then left idle for a moment before its resident
set (``VmRSS`` in ``/proc/PID/status``) is read. The peer is read the same way after its
imports. Goal: each ≤ 2× its peer.

The store is the scale benchmark's history of 100,000 commits, each creating or editing
one memory in gitmem's layout and trailers (``scale.history_store``: 99,000 memories),
copied once into the temporary folder and kept between runs (``BENCH_MEMORY_STORE``
names another place). A store's first console folds its whole history and keeps what
it read (in a process of its own); both are judged: a console on a store that has
been served before (its derived files kept, as an operator's store has them), and the
first console on a store never served. "Idle" is after the process has stopped using
the CPU (its work after the request, as the console's history read, is done), not
after a fixed pause.
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

from scale import STORE, history_store

MEMORIES = 100_000
GOAL = 2.0
SETTLED_SECONDS = 1.0
"""A process is idle once it has used no CPU for this long."""
SETTLE_LIMIT = 600.0
READ = "m50001"
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
    """The 100,000-commit store, copied on first use, served once and kept."""
    path = os.environ.get("BENCH_MEMORY_STORE") or os.path.join(
        tempfile.gettempdir(), f"gitmem-bench-memory-history-{MEMORIES}.git"
    )
    if not os.path.exists(os.path.join(path, "HEAD")):
        print(f"   copying a store of {MEMORIES:,} commits to {path} (kept for next time)")
        fresh = never_served(path + ".copying")
        console(fresh)  # keeps what a first console reads, as an operator's store has it
        os.rename(fresh, path)
    return path


def never_served(path: str) -> str:
    """A copy at ``path`` of the store as written: none of gitmem's derived files."""
    shutil.rmtree(path, ignore_errors=True)
    shutil.copytree(history_store(MEMORIES), path, symlinks=True)
    return path


def rss_kib(pid: int) -> int:
    """The resident set of process ``pid``, in KiB."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


def cpu_ticks(pid: int) -> int:
    """The CPU time process ``pid`` has used (user + system), in clock ticks."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def idle_rss(process: subprocess.Popen[bytes]) -> int:
    """The resident set of ``process`` once it has used no CPU for
    :data:`SETTLED_SECONDS`."""
    deadline = time.monotonic() + SETTLE_LIMIT
    used = cpu_ticks(process.pid)
    while True:
        time.sleep(SETTLED_SECONDS)
        now = cpu_ticks(process.pid)
        if now == used:
            return rss_kib(process.pid)
        if time.monotonic() > deadline:
            raise RuntimeError(f"the process was still busy after {SETTLE_LIMIT:.0f} s")
        used = now


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
        call = {"name": "read_memory", "arguments": {"name": READ}}
        _message(process, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
        answer = _answer(process, 2)
        result = answer.get("result")
        assert isinstance(result, dict) and not result.get("isError"), answer
        return idle_rss(process)
    finally:
        process.kill()
        process.wait()


def console(path: str) -> int:
    """``gitmem console`` after the Memories panel's request, asked again each second
    while the store's history is read, as the page asks."""
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
        deadline = time.monotonic() + SETTLE_LIMIT
        while True:
            with urllib.request.urlopen(request, timeout=300) as response:
                answer = json.loads(response.read())
            if isinstance(answer, list):  # the rows, the history read
                return idle_rss(process)
            # the rows so far, with how far the history read has come
            assert isinstance(answer, dict) and answer["history"]["state"] == "reading", answer
            if time.monotonic() > deadline:
                raise RuntimeError(f"the history was still read after {SETTLE_LIMIT:.0f} s")
            time.sleep(1)
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
        f"memory per process, idle after one request, on {MEMORIES:,} commits "
        f"(VmRSS; python {sys.version.split()[0]})"
    )
    path = store_path()
    line("gitmem mcp", mcp_server(path), peer(MCP_IMPORTS), "python importing mcp")
    starlette = peer(CONSOLE_IMPORTS)
    line("gitmem console", console(path), starlette, "python importing starlette+uvicorn")
    fresh = never_served(tempfile.mkdtemp(prefix="gitmem-bench-memory-") + "/repo.git")
    try:
        first = console(fresh)  # reads the whole history and keeps what it read
    finally:
        shutil.rmtree(os.path.dirname(fresh), ignore_errors=True)
    line("console, first", first, starlette, "(a store never served before)")


if __name__ == "__main__":
    main()
