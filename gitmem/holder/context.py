"""What a holder puts in the window: the system-prompt section and the pinned block.

The prompt is the same for the holder's life; the block is built on the first turn and
rebuilt only at a compaction boundary, so between boundaries it stays byte-identical
and the prompt cache is undisturbed.
"""

from __future__ import annotations

from collections.abc import Callable

from gitmem.capability import Capability
from gitmem.store import Snapshot, Storage
from gitmem.strategies import PromptContext, Strategy, Tool
from gitmem.types import Memory

__all__ = ["PinnedBlock", "having", "memory_compaction_prompt", "system_prompt"]


def having(offered: tuple[str, ...]) -> str:
    """The sentence naming the calls a holder has."""
    if not offered:
        return "You have no memory calls; your memories are pinned in your context."
    return "Your memory calls: " + ", ".join(offered) + "."


def system_prompt(
    capability: Capability,
    writable: bool,
    offered: tuple[Tool, ...],
    note: str | None,
    pinned: str = "",
) -> str:
    """The memory section of the system prompt: the strategy's own, if it words one,
    else the standard section. ``pinned`` is the pinned text as of the last boundary."""
    strategy = capability.strategy
    own = strategy.prompt_section(
        PromptContext(
            offered, writable, capability.revise_memories, capability.limits, note, pinned
        )
    )
    if own is not None:
        return own
    names = tuple(t.name for t in offered)
    lines = [
        "## Memories",
        "",
        "You keep durable memories: notes that survive compaction, each a name, a "
        "one-line description and a body. " + strategy.in_context(),
    ]
    if note:
        lines += ["", note]
    if not writable:
        lines += ["", "These memories are another agent's: you may read them but not change them."]
    if not capability.revise_memories and writable:
        lines += ["", "Memories are append-only in this run: you cannot revise or delete one."]
    lines += ["", having(names)]
    if writable:
        lines.extend(t.hint for t in offered if t.hint)
    bounds = capability.limits.describe(strategy.aggregate_limits)
    if bounds and writable:
        lines += [
            "",
            "Limits: " + "; ".join(bounds) + ". A write that would breach a limit is "
            "refused, never truncated: revise, evict or delete to make room.",
        ]
    return "\n".join(lines) + "\n"


def memory_compaction_prompt(offered: tuple[Tool, ...]) -> str:
    """The request that replaces a summary under memory-compaction."""
    calls = [t.name for t in offered if t.writes]
    named = ", ".join(calls) if calls else "(none: your memories are read-only)"
    return (
        "Your context is about to be compacted. Instead of writing a summary, record "
        "your working state in your memories now, with " + named + ": what you are "
        "doing, what you have found, what is left to do, and anything you would need "
        "to pick the work up cold. Revise existing memories rather than duplicating "
        "them, and stay within your limits."
    )


class PinnedBlock:
    """The block a strategy pins, as of the last boundary."""

    def __init__(
        self,
        repo: Storage,
        store: str,
        strategy: Strategy,
        cache: dict[str, object],
        view: Callable[[], Snapshot] | None = None,
    ) -> None:
        self._repo = repo
        self._view = view or (lambda: repo.snapshot(store))
        self._store = store
        self._strategy = strategy
        self._cache = cache
        """The holder's strategy cache, shared with its tool calls."""
        self._text: str | None = None

    def text(self) -> str:
        """The pinned text as of the last boundary."""
        if self._text is None:
            self.rebuild()
        assert self._text is not None
        return self._text

    def shown(self) -> str:
        """What the window pins apart from the prompt ("" when the strategy puts its
        pinned text inside the prompt section)."""
        return "" if self._strategy.pinned_in_prompt else self.text()

    def rebuild(self) -> None:
        text = self._strategy.pinned_from(self._repo, self._store, self._cache)
        if text is None:
            text = self._strategy.pinned(self._memories())
        self._text = text

    def _memories(self) -> list[Memory]:
        """What ``pinned`` is given: every memory, or, for a strategy that pins only
        descriptions, each one's slug and description from the kept listing (read,
        never written: rendering writes nothing), so that a large store's bodies are
        not held."""
        view = self._view()
        if not getattr(self._strategy, "pins_descriptions", False) or view.overlaid:
            return view.memories()
        rows = self._repo.summaries(self._store, view.commit, keep=False)
        return [Memory(slug, summary[0], "") for slug, summary in rows]
