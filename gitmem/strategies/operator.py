"""How an operator writes to a store: under the strategy and limits its head records,
with the refusals worded for the command line.

A strategy's own operator verbs (a notebook's save, curated rows) and the plain
create/edit/delete of :mod:`gitmem.ops` all take their rules from here.
"""

from __future__ import annotations

from typing import NamedTuple

from gitmem.edits import Rules
from gitmem.errors import InvalidArgument
from gitmem.limits import Limits
from gitmem.store import Storage
from gitmem.strategies.base import Strategy
from gitmem.strategies.registry import get
from gitmem.trailers import capability_trailer, read_capability_trailer

__all__ = [
    "OperatorVoice",
    "Recorded",
    "kept_as",
    "operator_rules",
    "recorded",
]


class Recorded(NamedTuple):
    """The strategy and limits the binding that last wrote a store recorded."""

    strategy: Strategy
    limits: Limits


def recorded(repo: Storage, store: str) -> Recorded | None:
    """What the store's head records, or ``None`` for a store only operators have
    written (or one written under a strategy this process has not registered)."""
    found = read_capability_trailer(repo.snapshot(store).trailers)
    if found is None:
        return None
    strategy = get(found[0])
    return Recorded(strategy, found[1]) if strategy is not None else None


def kept_as(repo: Storage, store: str, strategy: str, refusal: str) -> Recorded | None:
    """What ``store`` records, refused with ``refusal`` when it keeps memories of
    another strategy than ``strategy`` (a store no binding wrote passes)."""
    found = recorded(repo, store)
    if found is not None and found.strategy.name != strategy:
        raise InvalidArgument(refusal.format(store=store, kept=found.strategy.name))
    return found


class OperatorVoice:
    """The write rules' refusals as an operator at the command line is told them."""

    def missing(self, slug: str) -> str:
        return f"there is no memory named {slug!r}; `gitmem ls` lists them"

    def exists(self, slug: str) -> str:
        return f"a memory named {slug!r} already exists"

    def text_missing(self, slug: str) -> str:
        return (
            f"the text to replace does not occur in {slug!r}; "
            f"copy it exactly from `gitmem show {slug}`"
        )

    def text_repeated(self, slug: str, times: int) -> str:
        return (
            f"the text to replace occurs {times} times in {slug!r}; "
            "include more surrounding text so it occurs exactly once"
        )

    def would_empty(self, slug: str) -> str:
        return f"the edit would leave {slug!r} empty; delete it instead with `gitmem delete {slug}`"


def operator_rules(found: Recorded | None, limits: Limits | None = None) -> Rules:
    """The rules an operator's write obeys: the recorded binding's (or ``limits`` in
    place of its limits), recorded again so the next edit finds them; none for a store
    no binding wrote."""
    if found is None:
        return Rules(OperatorVoice())
    return Rules(
        OperatorVoice(),
        found.limits if limits is None else limits,
        found.strategy.aggregate_limits,
        found.strategy.index_line,
        capability_trailer(found.strategy.name, found.limits),
    )
