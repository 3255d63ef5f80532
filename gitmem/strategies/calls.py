"""The calls the memory-file strategies (markdown, keyword search, scratchpad) share, as tools
a strategy picks and words.

Each handler checks its arguments' content, builds its change with :mod:`gitmem.edits`
and publishes it at the desk; the holder has already checked that the call is offered
and that the arguments fit the schema.
"""

from __future__ import annotations

from typing import Any

from gitmem import edits
from gitmem.errors import InvalidArgument, NotFound
from gitmem.strategies.base import Desk, Tool
from gitmem.types import Memory, check_slug, check_text

__all__ = [
    "create_memory",
    "delete_memory",
    "edit_memory",
    "read_memory",
    "update_memory",
    "write_memory",
]

NAME = {
    "type": "string",
    "description": "The memory's name (slug): 1-64 of letters, digits, '-', '_' and '.'.",
}
DESCRIPTION = {"type": "string", "description": "One line saying what the memory is for."}
BODY = {"type": "string", "description": "The memory's text."}


def _text(args: dict[str, object], key: str, what: str) -> str:
    return check_text(args.get(key) or "", what)


def _new(desk: Desk, args: dict[str, object], op: str) -> Memory:
    memory = Memory(
        check_slug(args["name"]),
        _text(args, "description", "description"),
        check_text(args["body"], "body"),
        _text(args, "code", "code"),
        _text(args, "on_use", "onUse script"),
    )
    desk.check_code(memory)
    desk.publish(edits.create(desk.rules, memory, op))
    desk.written(memory)
    return memory


def write_memory() -> Tool:
    """scratchpad's create: the memory is pinned, body and all."""

    def run(desk: Desk, args: dict[str, object]) -> str:
        memory = _new(desk, args, "write")
        return f"Wrote `{memory.slug}`; it is pinned in your context from the next compaction."

    return Tool(
        "write_memory",
        "Write a new memory. It is pinned in your context, body and all, from now on.",
        {"name": NAME, "description": DESCRIPTION, "body": BODY},
        ("name", "description", "body"),
        run,
        takes_code=True,
    )


def create_memory(*, confirm: str = "Created `{slug}`.", description_optional: bool) -> Tool:
    """A new memory file; ``confirm`` is what the agent is told, with ``{slug}``."""

    def run(desk: Desk, args: dict[str, object]) -> str:
        return confirm.format(slug=_new(desk, args, "create").slug)

    required = ("name", "body") if description_optional else ("name", "description", "body")
    return Tool(
        "create_memory",
        "Create a new memory file.",
        {"name": NAME, "description": DESCRIPTION, "body": BODY},
        required,
        run,
        takes_code=True,
    )


def update_memory() -> Tool:
    """Replace a memory's description, body or both (code mode: both code halves too)."""

    def run(desk: Desk, args: dict[str, object]) -> str:
        slug = check_slug(args["name"])
        description, body = args.get("description"), args.get("body")
        if description is None and body is None:
            raise InvalidArgument("update_memory needs a description, a body or both")
        # a code-mode update replaces both halves (omitted clears them); a native one
        # has no way to mention them and leaves them alone
        halves = None
        if desk.code_mode:
            halves = (_text(args, "code", "code"), _text(args, "on_use", "onUse script"))
        build = edits.revise(
            desk.rules,
            slug,
            op="update",
            description=None if description is None else check_text(description, "description"),
            body=None if body is None else check_text(body, "body"),
            halves=halves,
        )
        if halves is not None:
            desk.check_code(Memory(slug, "", "", *halves))
        revision = desk.publish(build)[0]
        if halves is not None:
            desk.written(revision.memory())
        return f"Updated `{slug}`."

    return Tool(
        "update_memory",
        "Replace a memory's description, body or both.",
        {"name": NAME, "description": DESCRIPTION, "body": BODY},
        ("name",),
        run,
        revises=True,
        takes_code=True,
    )


def edit_memory() -> Tool:
    """Search/replace in a memory's body."""

    def run(desk: Desk, args: dict[str, object]) -> str:
        slug = check_slug(args["name"])
        description = args.get("description")
        build = edits.replace_once(
            desk.rules,
            slug,
            check_text(args["old_text"], "old_text"),
            check_text(args["new_text"], "new_text"),
            description=None if description is None else check_text(description, "description"),
        )
        desk.publish(build)
        return f"Edited `{slug}`."

    properties: dict[str, Any] = {
        "name": NAME,
        "old_text": {"type": "string", "description": "Text to replace, quoted exactly."},
        "new_text": {"type": "string", "description": "What replaces it."},
        "description": {"type": "string", "description": "A new description (optional)."},
    }
    return Tool(
        "edit_memory",
        "Revise a memory by search/replace: old_text must appear exactly once in the body. "
        "To append, quote the last line and replace it with itself plus the new text.",
        properties,
        ("name", "old_text", "new_text"),
        run,
        revises=True,
        hint=(
            "edit_memory is search/replace: quote the text you change, which must appear "
            "exactly once. To append, quote the last line and replace it with itself plus "
            "what you are adding."
        ),
    )


def delete_memory() -> Tool:
    """Remove a memory; its history stays."""

    def run(desk: Desk, args: dict[str, object]) -> str:
        slug = check_slug(args["name"])
        desk.publish(edits.delete(desk.rules, slug))
        return f"Deleted `{slug}`."

    return Tool("delete_memory", "Delete a memory.", {"name": NAME}, ("name",), run, revises=True)


def read_memory() -> Tool:
    """A memory's description and body; reading loads its code where the strategy says."""

    def run(desk: Desk, args: dict[str, object]) -> str:
        slug = check_slug(args["name"])
        try:
            memory = edits.existing(desk.snapshot(), slug, desk.rules.voice)
        except NotFound:
            desk.gone(slug)
            raise
        text = f"`{memory.slug}` — {memory.description}\n\n{memory.body}"
        diagnostic = desk.opened(memory)
        if diagnostic:
            text += f"\n\n[the code of `{slug}` does not compile: {diagnostic}]"
        return text

    return Tool(
        "read_memory",
        "Read a memory's description and body.",
        {"name": NAME},
        ("name",),
        run,
        writes=False,
    )
