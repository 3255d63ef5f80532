"""Recall: the memory summary, framed as guidance, handed to a session at its start.

The retain step (:mod:`gitmem.observe.retain`) keeps its outputs in a file store of the
project's repository (``recall`` unless configured): ``MEMORY.md``, the long-term
memory; ``memory_summary.md``, what is recalled; ``skills/<name>/``, playbooks; and
``extractions/<session>.md``, what each past session taught. :func:`recall_block` is
the summary under the guidance that says what memory is: heuristic context, to be cited
and checked against the repository, which wins when they disagree.

The block is held to a token budget (default 5,000) by a documented estimate: one
token per four characters, rounded up (:func:`estimate_tokens`). The guidance is
counted too; the summary is cut at a line boundary to fit, and nothing is recalled when
not even the guidance fits.

Settings are the repository's git config ``gitmem.recall.<key>`` (see
:class:`RecallSettings`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from gitmem.errors import GitmemError
from gitmem.observe.config import setting_flag, setting_number
from gitmem.observe.model import observer_run
from gitmem.observe.prompts import prompt
from gitmem.store import Storage

__all__ = [
    "CHARS_PER_TOKEN",
    "MEMORY",
    "SECTION",
    "SKILLS",
    "SUMMARY",
    "RecallSettings",
    "estimate_tokens",
    "recall_block",
    "session_start_block",
    "summary",
]

SECTION = "recall"
"""The git config section of the settings: ``gitmem.recall.<key>``."""
MEMORY = "MEMORY.md"
SUMMARY = "memory_summary.md"
SKILLS = "skills"
EXTRACTIONS = "extractions"
CHARS_PER_TOKEN = 4
"""The token estimate: characters divided by this, rounded up."""


def estimate_tokens(text: str) -> int:
    """About how many tokens ``text`` takes: its characters / 4, rounded up."""
    return -(-len(text) // CHARS_PER_TOKEN)


def _bool(key: str, text: str) -> bool:
    return setting_flag(f"gitmem.recall.{key}", text)


def _number(key: str, text: str, low: float, high: float) -> float:
    return setting_number(f"gitmem.recall.{key}", text, low, high)


@dataclass(frozen=True)
class RecallSettings:
    """Retain and recall, as ``gitmem.recall.<key>`` configures them.

    ============================ ======= ===============================================
    key                          default meaning
    ============================ ======= ===============================================
    enabled                      false   retain runs, and the summary is recalled, at all
    store                        recall  the file store that holds the outputs
    max-age-days                 30      sessions older than this are not processed
    min-idle-hours               12      sessions changed more recently are skipped
    max-sessions-per-run         64      sessions one run extracts, at most
    summary-tokens               5000    the recalled block's budget, in tokens
    max-drop-share               0.5     the share of entries a consolidation may drop
    lease-seconds                900     how long a run's lease lasts between renewals
    ============================ ======= ===============================================
    """

    enabled: bool = False
    store: str = "recall"
    max_age_days: float = 30
    min_idle_hours: float = 12
    max_sessions: int = 64
    summary_tokens: int = 5000
    max_drop_share: float = 0.5
    lease_seconds: float = 900

    @classmethod
    def from_settings(cls, held: Mapping[str, str]) -> RecallSettings:
        """The settings from ``gitmem.recall.*`` values; a bad value is refused."""
        given = {k.lower(): v for k, v in held.items()}
        base = cls()
        return cls(
            enabled=_bool("enabled", given["enabled"]) if "enabled" in given else base.enabled,
            store=given.get("store", base.store).strip() or base.store,
            max_age_days=_number("max-age-days", given.get("max-age-days", "30"), 0, 36500),
            min_idle_hours=_number("min-idle-hours", given.get("min-idle-hours", "12"), 0, 8760),
            max_sessions=int(
                _number("max-sessions-per-run", given.get("max-sessions-per-run", "64"), 1, 10000)
            ),
            summary_tokens=int(
                _number("summary-tokens", given.get("summary-tokens", "5000"), 0, 1_000_000)
            ),
            max_drop_share=_number("max-drop-share", given.get("max-drop-share", "0.5"), 0, 1),
            lease_seconds=_number("lease-seconds", given.get("lease-seconds", "900"), 1, 86400),
        )

    @classmethod
    def of(cls, repo: Storage) -> RecallSettings:
        """The repository's settings."""
        return cls.from_settings(repo.settings(SECTION))


_TAG = re.compile(r"<(/?)\s*memory_summary", re.IGNORECASE)


def summary(repo: Storage, store: str) -> str:
    """The store's ``memory_summary.md`` (``""`` when there is none yet)."""
    if repo.head(store) is None:
        return ""
    return repo.files(store).read(SUMMARY) or ""


def recall_block(repo: Storage, settings: RecallSettings | None = None) -> str:
    """The summary under its guidance, within the token budget; ``""`` when there is
    no summary, or not even the guidance fits."""
    chosen = settings or RecallSettings.of(repo)
    text = summary(repo, chosen.store).strip()
    if not text:
        return ""
    guidance = prompt("recall").text.replace("{store}", chosen.store).rstrip("\n")
    opening, closing = f"{guidance}\n\n<memory_summary>\n", "\n</memory_summary>"
    text = _TAG.sub(r"<\1memory summary", text)  # it cannot close its frame (a model wrote it)
    room = chosen.summary_tokens * CHARS_PER_TOKEN - len(opening) - len(closing)
    if room <= 0:
        return ""
    if len(text) > room:
        cut = text.rfind("\n", 0, room)
        text = text[: cut if cut > 0 else room].rstrip()
        if not text:
            return ""
    return opening + text + closing


def session_start_block(repo: Storage) -> str:
    """What a session's start adds: the recall block when recall is enabled, and
    nothing for a model run the pipeline itself started. A bad setting recalls nothing
    rather than cost the session its start (``gitmem recall view`` names it)."""
    try:
        settings = RecallSettings.of(repo)
        if not settings.enabled or observer_run():
            return ""
        return recall_block(repo, settings)
    except GitmemError:
        return ""
