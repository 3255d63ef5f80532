"""``mem_search`` and ``mem_read`` as tools an agent calls (over MCP, or from a Python
harness): their definitions and one function that answers a call."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gitmem.errors import GitmemError
from gitmem.observe.config import read_config
from gitmem.observe.logbook import ObservationLog
from gitmem.observe.search import mem_read, mem_search
from gitmem.store import Storage

__all__ = ["TOOLS", "TOOL_NAMES", "call_tool"]

TOOLS: list[dict[str, Any]] = [
    {
        "name": "mem_search",
        "description": (
            "Search the project's observation log (what earlier runs did, decided and "
            "learned) by keywords. Returns XML results with ids; read one with mem_read."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "The words to look for."},
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 10,
                    "description": "At most this many results (default from the settings).",
                },
            },
            "required": ["query"],
            "additionalProperties": False,
        },
    },
    {
        "name": "mem_read",
        "description": "Read one entry of the observation log by its id (obs-… or sum-…).",
        "input_schema": {
            "type": "object",
            "properties": {"id": {"type": "string", "description": "The entry's id."}},
            "required": ["id"],
            "additionalProperties": False,
        },
    },
]
TOOL_NAMES = frozenset(t["name"] for t in TOOLS)


def call_tool(repo: Storage, name: str, arguments: Mapping[str, Any]) -> tuple[str, bool]:
    """Answer one call: its result text and whether it succeeded (a refusal's text
    is one line saying why)."""
    log = ObservationLog(repo)
    try:
        if name == "mem_search":
            config = read_config(repo)
            return mem_search(
                log, arguments.get("query"), arguments.get("limit"), config=config
            ), True
        if name == "mem_read":
            return mem_read(log, arguments.get("id")), True
    except GitmemError as exc:
        return f"Error: {exc}", False
    return f"Error: there is no tool {name!r}; use {' or '.join(sorted(TOOL_NAMES))}", False
