"""One ``read_memory`` over MCP stdio, beside the same call in process and beside the MCP
reference memory server's way (re-read and parse one JSON file per call); and the
server's start.

Run with gitmem importable: ``python bench/mcp.py``. Goals, each beside its peer in the
same run:

1. MCP overhead (the stdio round trip minus the in-process call) ≤ 1 ms at the median.
2. ``read_memory`` over stdio ≤ 1.2× an MCP ping over the same connection (the SDK's
   transport alone), at the median; with the CPU time both processes spend per call
   and per ping beside it (steadier than the wall time on a shared machine).
3. ``gitmem mcp`` from process start to a completed ``initialize`` ≤ 1.5× a minimal
   server written with the same SDK (one tool), both driven by the same client.

Figures are medians over ``CALLS`` calls on a store of ``MEMORIES`` memories, and over
``STARTS`` starts of each server, alternating.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

# run as a script, this file's folder comes first on sys.path and its name would hide
# the mcp package
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != str(Path(__file__).parent)]

import anyio  # noqa: E402
from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

from gitmem import Agent, Capability, Repository  # noqa: E402

CALLS = 500
MEMORIES = 100
STARTS = 7
CALL_GOAL = 1.2
START_GOAL = 1.5
MINIMAL_SERVER = """
import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server


async def list_tools(ctx, params):
    tool = types.Tool(name="echo", description="Echo.", input_schema={"type": "object"})
    return types.ListToolsResult(tools=[tool])


async def call_tool(ctx, params):
    return types.CallToolResult(content=[types.TextContent(type="text", text="echo")])


server = Server("minimal", on_list_tools=list_tools, on_call_tool=call_tool)


async def main():
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


anyio.run(main)
"""
GITMEM = str(Path(sys.executable).parent / "gitmem")
CAPABILITY: dict[str, Any] = {
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
        "maxResults": 0,
    },
}


def median_ms(action: Callable[[], object]) -> float:
    times: list[float] = []
    for _ in range(CALLS):
        started = time.perf_counter()
        action()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def body(n: int) -> str:
    return f"Memory {n}: " + "the staging cluster rolls one node at a time. " * 20


def in_process(repo: Repository) -> float:
    holder = repo.bind(Capability.from_dict(CAPABILITY), Agent("bench", "reader"))
    assert holder is not None
    return median_ms(lambda: holder.call("read_memory", {"name": "memory-50"}))


def server_call(repo: Repository) -> float:
    """The MCP server's own work for one call, in process: pending notices, the holder
    call, the result's text blocks (what the SDK's transport carries is not in it)."""
    from gitmem.adapters.mcp import MemoryServer

    holder = repo.bind(Capability.from_dict(CAPABILITY), Agent("bench", "server"))
    assert holder is not None
    server = MemoryServer(holder)
    return median_ms(lambda: server.call("read_memory", {"name": "memory-50"}))


def json_file(folder: str) -> float:
    """The reference server's shape: a JSON file of entities, read whole per call."""
    path = os.path.join(folder, "memory.json")
    entities = [
        {"name": f"memory-{n}", "entityType": "note", "observations": [body(n)]}
        for n in range(MEMORIES)
    ]
    with open(path, "w") as handle:
        json.dump({"entities": entities, "relations": []}, handle)

    def read() -> str:
        with open(path) as handle:
            graph = json.load(handle)
        found = next(e for e in graph["entities"] if e["name"] == "memory-50")
        return json.dumps(found)

    return median_ms(read)


def cpu_ms(pid: int) -> float:
    """The CPU time (user + system) process ``pid`` has spent so far."""
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def child() -> int:
    """The pid of this process's newest child (the server the client started)."""
    found: list[int] = []
    for task in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{task}/children") as handle:
            found += [int(pid) for pid in handle.read().split()]
    return max(found)


def gitmem_args(repo: Repository) -> list[str]:
    return [
        "--repo",
        repo.directory,
        "mcp",
        "--capability",
        json.dumps(CAPABILITY),
        "--profile",
        "bench",
        "--instance",
        "mcp-reader",
    ]


Stdio = tuple[float, float, float, float]
"""Median ``read_memory`` and ping round trips (wall ms), and the CPU ms client and
server spend per call and per ping."""


def over_stdio(repo: Repository) -> Stdio:
    """The median ``read_memory`` round trip over stdio, and an MCP ping's (the SDK's
    transport alone, the floor any stdio server pays); and what each costs in CPU,
    client and server together, over ``CALLS`` of each in a row."""

    async def main() -> Stdio:
        params = StdioServerParameters(command=GITMEM, args=gitmem_args(repo))
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            for _ in range(20):  # warm up
                await session.call_tool("read_memory", {"name": "memory-50"})
            calls: list[float] = []
            pings: list[float] = []
            for _ in range(CALLS):
                started = time.perf_counter()
                await session.call_tool("read_memory", {"name": "memory-50"})
                calls.append((time.perf_counter() - started) * 1000)
                started = time.perf_counter()
                await session.send_ping()
                pings.append((time.perf_counter() - started) * 1000)
            server = child()

            async def cpu(action: Callable[[], Awaitable[object]]) -> float:
                mine, theirs = time.process_time(), cpu_ms(server)
                for _ in range(CALLS):
                    await action()
                spent = (time.process_time() - mine) * 1000 + cpu_ms(server) - theirs
                return spent / CALLS

            call_cpu = await cpu(lambda: session.call_tool("read_memory", {"name": "memory-50"}))
            ping_cpu = await cpu(session.send_ping)
        return statistics.median(calls), statistics.median(pings), call_cpu, ping_cpu

    return anyio.run(main)


def start(command: str, args: list[str]) -> tuple[float, float]:
    """Wall ms from starting a server to its answer to ``initialize``, and the CPU ms
    the server spent by then."""

    async def main() -> tuple[float, float]:
        started = time.perf_counter()
        async with (
            stdio_client(StdioServerParameters(command=command, args=args)) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            wall = (time.perf_counter() - started) * 1000
            return wall, cpu_ms(child())

    return anyio.run(main)


def starts(repo: Repository, folder: str) -> tuple[Figure, Figure]:
    """``gitmem mcp``'s start and a minimal server's, alternating: median wall and CPU."""
    minimal = os.path.join(folder, "minimal_server.py")
    Path(minimal).write_text(MINIMAL_SERVER)
    ours: list[Figure] = []
    theirs: list[Figure] = []
    for _ in range(STARTS):
        ours.append(start(GITMEM, gitmem_args(repo)))
        theirs.append(start(sys.executable, [minimal]))
    return medians(ours), medians(theirs)


Figure = tuple[float, float]
"""Wall-clock and CPU milliseconds."""


def medians(figures: list[Figure]) -> Figure:
    return statistics.median(f[0] for f in figures), statistics.median(f[1] for f in figures)


def verdict(ratio: float, goal: float) -> str:
    return f"goal <= {goal:g}x: {'met' if ratio <= goal else 'MISSED'}"


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        repo = Repository.init(os.path.join(folder, "bench.git"))
        writer = repo.bind(Capability.from_dict(CAPABILITY), Agent("bench", "writer"))
        assert writer is not None
        for n in range(MEMORIES):
            writer.call(
                "create_memory",
                {"name": f"memory-{n}", "description": f"note {n}", "body": body(n)},
            )
        local = in_process(repo)
        ours = server_call(repo)
        stdio, ping, call_cpu, ping_cpu = over_stdio(repo)
        reference = json_file(folder)
        (ours_wall, ours_cpu), (min_wall, min_cpu) = starts(repo, folder)
        repo.close()
    print(f"read_memory, {MEMORIES} memories, median of {CALLS} calls")
    print(f"  in process                  {local * 1000:8.0f} µs")
    print(
        f"  over MCP stdio              {stdio * 1000:8.0f} µs   ({stdio / local:.1f}× in process)"
    )
    print(f"  an MCP ping over stdio      {ping * 1000:8.0f} µs   (the SDK's transport alone)")
    print(f"  MCP overhead                {(stdio - local) * 1000:8.0f} µs   (goal ≤ 1000 µs)")
    print(
        f"    of which gitmem's server  {(ours - local) * 1000:8.0f} µs   "
        "(MemoryServer.call in process, minus the holder call)"
    )
    print(
        f"    and the SDK beyond a ping {(stdio - ping - ours) * 1000:8.0f} µs   "
        "(a tools/call's validation and JSON, client and server)"
    )
    print(
        f"  re-read a JSON file         {reference * 1000:8.0f} µs   "
        f"(in process {local / reference:.2f}× of it)"
    )
    print(
        f"  read_memory / ping          {stdio / ping:8.2f}×      "
        f"({verdict(stdio / ping, CALL_GOAL)}; wall time)"
    )
    print(
        f"    CPU per call, both sides  {call_cpu * 1000:8.0f} µs   ping {ping_cpu * 1000:.0f} µs"
        f"   {call_cpu / ping_cpu:.2f}×"
    )
    print(f"start to a completed initialize, median of {STARTS} starts each, alternating")
    print(f"  gitmem mcp                  {ours_wall:8.0f} ms   CPU {ours_cpu:.0f} ms")
    print(f"  a minimal server, same SDK  {min_wall:8.0f} ms   CPU {min_cpu:.0f} ms")
    print(
        f"  gitmem / minimal            {ours_wall / min_wall:8.2f}×      "
        f"({verdict(ours_wall / min_wall, START_GOAL)}; CPU {ours_cpu / min_cpu:.2f}×)"
    )


if __name__ == "__main__":
    main()
