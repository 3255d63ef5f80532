"""notebook (seed 001): one private Markdown file the agent rewrites whole.

The file is the memory ``memory`` of the store (the memory layout: ``<fanout>/memory.md``
in the store's tree), with an empty description. ``memory_write(content)`` replaces it
whole; every earlier version is a commit, so the operator reads them all with
``gitmem log`` and the timeline, and the agent sees only the live text, in the
``<memory>`` section of its system prompt.
"""

from __future__ import annotations

from typing import Literal

from gitmem import edits
from gitmem.errors import LimitExceeded, Unchanged
from gitmem.store import Storage
from gitmem.strategies.base import Desk, PromptContext, Tool
from gitmem.types import Memory, check_text

__all__ = ["CAP", "DISPLAY_PATH", "SLUG", "Notebook", "cap", "notebook_memory"]

SLUG = "memory"
"""The one memory a notebook store holds."""
DISPLAY_PATH = "memory.md"
CAP = 12_000
"""Characters ``memory_write`` takes when ``maxLenPerMemory`` is 0 (seed 001's cap)."""

INTRO = """### Your Memory

Memory is your own private Markdown file, carried from one run to the next. It is \
shown below as it stood when this run began. memory_write rewrites it: send the whole \
text you want to keep (at most {cap} characters); whatever you leave out is dropped. \
The Task stays as the operator wrote it: Memory never changes it. There is no required \
format.

No run has to write. Write only when the next run would make a mistake, repeat work, \
or waste steps without something this run learned.

What passes that test:
- how to do the job better: an approach that worked or failed, a quirk of a tool or \
source, a preference the operator stated
- where to resume: unfinished work, a commitment, a position the next run cannot \
recover from records or history
- where things live: a pointer to the note, record or collection that holds the detail

What does not: a log of the run; anything the Task, notes, records or history already \
hold; anything one tool call finds again; and secrets (credentials, tokens, keys).

Since a write replaces the whole file, each write is also the moment to drop what is \
done or stale."""

SHORT = """### Your Memory

Memory is a private place for whatever future runs should remember. It is shown below \
as it stood when this run began. The Task stays as the operator wrote it. There is no \
required format."""


def cap(max_len_per_memory: int) -> int:
    """The notebook's cap: ``maxLenPerMemory``, or seed 001's 12,000 when that is 0."""
    return max_len_per_memory or CAP


def notebook_memory(content: str) -> Memory:
    """The memory that holds ``content`` as the notebook."""
    return Memory(SLUG, "", check_text(content, "content"))


def _write(desk: Desk, args: dict[str, object]) -> str:
    content = check_text(args["content"], "content")
    limit = cap(desk.rules.limits.max_len_per_memory)
    if len(content) > limit:
        raise LimitExceeded(
            f"ERROR: memory exceeds {limit} characters",
            limit="maxLenPerMemory",
            attempted=len(content),
            maximum=limit,
        )
    try:
        desk.publish(edits.overwrite(desk.rules, notebook_memory(content), op="write"))
    except Unchanged:
        return f"{DISPLAY_PATH} (unchanged: it already holds exactly this text; no version made)"
    return DISPLAY_PATH


class Notebook:
    """One file per store, rewritten whole; its text is part of the prompt section."""

    name = "notebook"
    aggregate_limits: frozenset[str] = frozenset()
    loads_code_on: Literal["write", "read"] = "read"
    notice_bodies = True
    notice_tail = (
        "Its live text is shown above; your <memory> section shows it from the next compaction."
    )
    find_hint = f"your Memory is the one file {DISPLAY_PATH}, shown in your <memory> section"
    revise_call = "memory_write"
    pinned_in_prompt = True

    def __init__(self) -> None:
        self.tools: tuple[Tool, ...] = (
            Tool(
                "memory_write",
                "Replace your whole Memory file with content (the full text you want to "
                "keep). Returns the Memory's path.",
                {
                    "content": {
                        "type": "string",
                        "description": "The whole new text of your Memory (Markdown).",
                    }
                },
                ("content",),
                _write,
            ),
        )

    def pinned(self, memories: list[Memory]) -> str:
        return next((m.body for m in memories if m.slug == SLUG), "")

    def in_context(self) -> str:
        return "Your Memory file is shown in full in the <memory> section."

    def index_line(self, memory: Memory) -> str:
        return ""

    def pinned_from(self, repo: Storage, store: str, cache: dict[str, object]) -> str | None:
        return None

    def prompt_section(self, context: PromptContext) -> str | None:
        offered = any(t.name == "memory_write" for t in context.offered)
        head = INTRO.format(cap=cap(context.limits.max_len_per_memory)) if offered else SHORT
        if context.note:
            head += "\n\n" + context.note
        text = context.pinned
        if text and not text.endswith("\n"):
            text += "\n"
        return f"<memory>\n{head}\n\n{text}</memory>\n"

    def operator_refusal(self, op: str, slug: str) -> str | None:
        if op == "delete":
            return (
                f"cannot delete this file: a notebook's {DISPLAY_PATH} is never deleted; "
                "save it empty with `gitmem notebook save` instead"
            )
        return (
            f"a notebook store holds one file, {DISPLAY_PATH}, saved whole: use "
            "`gitmem notebook save` (it keeps the replaced version in the history)"
        )
