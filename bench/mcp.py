"""One ``read_memory`` over MCP stdio, beside the same call in process and beside the MCP
reference memory server's way (re-read and parse one JSON file per call).

Run with gitmem importable: ``python bench/mcp.py``. Goal: MCP overhead (the stdio round
trip minus the in-process call) ≤ 1 ms at the median. Figures are medians over
``CALLS`` calls on a store of ``MEMORIES`` memories.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
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


def over_stdio(repo: Repository) -> tuple[float, float]:
    """The median ``read_memory`` round trip over stdio, and an MCP ping's (the SDK's
    transport alone, the floor any stdio server pays)."""

    async def main() -> tuple[float, float]:
        params = StdioServerParameters(
            command=GITMEM,
            args=[
                "--repo",
                repo.directory,
                "mcp",
                "--capability",
                json.dumps(CAPABILITY),
                "--profile",
                "bench",
                "--instance",
                "mcp-reader",
            ],
        )
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
        return statistics.median(calls), statistics.median(pings)

    return anyio.run(main)


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
        stdio, ping = over_stdio(repo)
        reference = json_file(folder)
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


if __name__ == "__main__":
    main()
