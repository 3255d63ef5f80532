"""The limits, checked in seed 000's order: the description first, then the body, then
the aggregates. A breach is refused, never truncated, and the refusal names the limit,
the figure the write would reach and the fix."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from gitmem.capability import Limits
from gitmem.errors import LimitExceeded
from gitmem.types import Memory

__all__ = ["check_write", "index_line", "render_index"]

CODE_MAX = 32_768


def index_line(memory: Memory) -> str:
    """A memory's line in the markdown index."""
    return f"- `{memory.slug}` — {memory.description}"


def render_index(memories: Iterable[Memory]) -> str:
    return "\n".join(index_line(m) for m in memories)


def _refuse(limit: str, attempted: int, maximum: int, what: str, fix: str) -> LimitExceeded:
    return LimitExceeded(
        f"refused: {what} would be {attempted:,}, over {limit} ({maximum:,}). {fix}",
        limit=limit,
        attempted=attempted,
        maximum=maximum,
    )


def check_write(
    limits: Limits,
    applies: frozenset[str],
    old: Memory | None,
    new: Memory,
    everyone: Callable[[], list[Memory]],
    *,
    count: int,
    total_chars: int,
) -> None:
    """Refuse ``new`` (replacing ``old``) if it breaches a limit in ``applies``.

    ``count`` and ``total_chars`` describe the store before the write; ``everyone``
    lists every memory before the write (called only when the index must be measured).
    """
    slug = new.slug
    if limits.max_len_description and len(new.description) > limits.max_len_description:
        raise _refuse(
            "maxLenDescription",
            len(new.description),
            limits.max_len_description,
            f"the description of `{slug}` in characters",
            "Shorten the description; it is paid for on every turn.",
        )
    if limits.max_len_per_memory and new.chars > limits.max_len_per_memory:
        raise _refuse(
            "maxLenPerMemory",
            new.chars,
            limits.max_len_per_memory,
            f"the body of `{slug}` in characters",
            "Shorten it, or split it into smaller memories.",
        )
    for half, text in (("code", new.code), ("onUse", new.on_use)):
        if len(text) > CODE_MAX:
            raise _refuse(
                "the code limit",
                len(text),
                CODE_MAX,
                f"the {half} of `{slug}` in characters",
                f"Shorten the {half}.",
            )
    if "maxCount" in applies and limits.max_count and old is None and count + 1 > limits.max_count:
        raise _refuse(
            "maxCount",
            count + 1,
            limits.max_count,
            "the number of memories",
            "Delete or merge a memory you no longer need, then try again.",
        )
    if "maxTotalLen" in applies and limits.max_total_len:
        total = total_chars - (old.chars if old else 0) + new.chars
        if total > limits.max_total_len:
            raise _refuse(
                "maxTotalLen",
                total,
                limits.max_total_len,
                "the characters of all pinned memories together",
                "Shorten this or another memory, or delete one you no longer need.",
            )
    if "maxLenIndex" in applies and limits.max_len_index:
        lines = [index_line(m) for m in everyone() if m.slug != slug]
        lines.append(index_line(new))
        size = sum(len(line) for line in lines) + len(lines) - 1
        if size > limits.max_len_index:
            raise _refuse(
                "maxLenIndex",
                size,
                limits.max_len_index,
                "the index in characters",
                "Shorten descriptions, or delete a memory you no longer need.",
            )
