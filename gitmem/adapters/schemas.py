"""A holder's tool definitions in the shapes other tool-calling APIs take.

- ``anthropic``: ``{"name", "description", "input_schema"}`` (the holder's own shape);
- ``openai``: ``{"type": "function", "function": {"name", "description", "parameters",
  "strict": true}}``, where strict mode needs every property required: an optional one
  becomes nullable, and a ``null`` argument means "not given" (:func:`drop_nulls`);
- ``mcp``: ``{"name", "description", "inputSchema"}``.

The schemas themselves come from the holder; nothing here knows a tool.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, cast

__all__ = ["FORMATS", "drop_nulls", "tool_definitions"]

FORMATS = ("anthropic", "openai", "mcp")


def tool_definitions(tools: list[dict[str, Any]], shape: str) -> list[dict[str, Any]]:
    """``tools`` (as ``holder.tools()`` lists them) in the ``shape`` API's form."""
    if shape == "anthropic":
        return copy.deepcopy(tools)
    if shape == "mcp":
        return [
            {
                "name": t["name"],
                "description": t["description"],
                "inputSchema": copy.deepcopy(t["input_schema"]),
            }
            for t in tools
        ]
    if shape == "openai":
        return [
            {
                "type": "function",
                "function": {
                    "name": t["name"],
                    "description": t["description"],
                    "parameters": _strict(t["input_schema"]),
                    "strict": True,
                },
            }
            for t in tools
        ]
    raise ValueError(f"unknown format {shape!r}; use one of {', '.join(FORMATS)}")


def _strict(schema: Mapping[str, Any]) -> dict[str, Any]:
    """An object schema OpenAI's strict mode accepts: every property required, the
    optional ones nullable, no additional properties."""
    out = copy.deepcopy(dict(schema))
    properties = cast(dict[str, dict[str, Any]], out.get("properties", {}))
    required = set(cast(list[str], out.get("required", [])))
    for name, prop in properties.items():
        if name not in required:
            kind = prop.get("type")
            if isinstance(kind, str):
                prop["type"] = [kind, "null"]
            elif isinstance(kind, list) and "null" not in kind:
                prop["type"] = [*cast(list[str], kind), "null"]
    out["required"] = list(properties)
    out["additionalProperties"] = False
    return out


def drop_nulls(arguments: Mapping[str, object]) -> dict[str, object]:
    """Arguments with each ``null`` left out, as a strict-mode caller means it."""
    return {k: v for k, v in arguments.items() if v is not None}
