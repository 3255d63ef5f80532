"""What every view of a store at one commit starts from: the commit's own facts."""

from __future__ import annotations

from collections.abc import Mapping

from gitmem.store.history import History
from gitmem.store.objects import ObjectReader
from gitmem.types import Totals


class StoreView:
    """A store as of one commit (``commit`` is ``None`` before its first write): the
    totals, peaks and trailers its head commit records, and its root tree."""

    def __init__(
        self, reader: ObjectReader, history: History, store: str, commit: str | None
    ) -> None:
        self.store = store
        self.commit = commit
        self._reader = reader
        self._history = history
        facts = reader.facts(commit) if commit else None
        self.totals = facts.totals if facts else Totals()
        self.peaks = facts.peaks if facts else Totals()
        self.trailers: Mapping[str, str] = facts.extra if facts else {}
        self.root: str | None = reader.root(commit) if commit else None
