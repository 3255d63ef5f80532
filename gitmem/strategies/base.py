"""The one Protocol every memory strategy implements, and the tool schemas they share."""

from __future__ import annotations

from typing import Any, Protocol

from gitmem.types import Memory

__all__ = ["REVISE_CALLS", "Strategy", "schema"]

REVISE_CALLS = frozenset({"update_memory", "edit_memory", "delete_memory"})


class Strategy(Protocol):
    """What differs between strategies: what is pinned, which calls and limits apply."""

    name: str
    calls: tuple[str, ...]
    """Every call the strategy offers, in the order tools are listed."""
    read_calls: tuple[str, ...]
    """The calls a read-only holder keeps."""
    aggregate_limits: frozenset[str]
    """Which of maxCount, maxTotalLen, maxLenIndex bound the set."""
    loads_code_on: str
    """``"write"`` or ``"read"``: when a memory's code is compiled and loaded."""
    description_optional: bool
    notice_bodies: bool
    """Whether a notice carries each memory's body inline."""

    def pinned(self, memories: list[Memory]) -> str:
        """The block pinned in the window ("" for an empty store)."""
        ...

    def in_context(self) -> str:
        """One paragraph for the system prompt: what of the memories is in the window."""
        ...


_NAME = {
    "type": "string",
    "description": "The memory's name (slug): 1-64 of letters, digits, '-', '_' and '.'.",
}
_DESCRIPTION = {"type": "string", "description": "One line saying what the memory is for."}
_BODY = {"type": "string", "description": "The memory's text."}


def schema(call: str, description_optional: bool) -> dict[str, Any]:
    """The tool definition (name, description, input_schema) of one native call."""
    description, properties, required = _CALLS[call]
    if description_optional and "description" in required:
        required = [r for r in required if r != "description"]
    return {
        "name": call,
        "description": description,
        "input_schema": {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
        },
    }


_CALLS: dict[str, tuple[str, dict[str, Any], list[str]]] = {
    "write_memory": (
        "Write a new memory. It is pinned in your context, body and all, from now on.",
        {"name": _NAME, "description": _DESCRIPTION, "body": _BODY},
        ["name", "description", "body"],
    ),
    "update_memory": (
        "Replace a memory's description, body or both.",
        {"name": _NAME, "description": _DESCRIPTION, "body": _BODY},
        ["name"],
    ),
    "create_memory": (
        "Create a new memory file.",
        {"name": _NAME, "description": _DESCRIPTION, "body": _BODY},
        ["name", "description", "body"],
    ),
    "read_memory": (
        "Read a memory's description and body.",
        {"name": _NAME},
        ["name"],
    ),
    "edit_memory": (
        "Revise a memory by search/replace: old_text must appear exactly once in the body. "
        "To append, quote the last line and replace it with itself plus the new text.",
        {
            "name": _NAME,
            "old_text": {"type": "string", "description": "Text to replace, quoted exactly."},
            "new_text": {"type": "string", "description": "What replaces it."},
            "description": {"type": "string", "description": "A new description (optional)."},
        },
        ["name", "old_text", "new_text"],
    ),
    "delete_memory": (
        "Delete a memory.",
        {"name": _NAME},
        ["name"],
    ),
    "search_memories": (
        "Search memories by keywords (case-insensitive substrings of name, description and "
        "body); the best matches come first, each with an excerpt.",
        {
            "keywords": {
                "type": "array",
                "items": {"type": "string"},
                "minItems": 1,
                "description": "Keywords to look for.",
            }
        },
        ["keywords"],
    ),
}
