"""What every view of a store at one commit starts from: the commit's own facts."""

from __future__ import annotations

from collections.abc import Mapping

from gitmem.store.history import History
from gitmem.store.objects import ObjectReader
from gitmem.types import Totals


class StoreView:
    """A store as of one commit (``commit`` is ``None`` before its first write): the
    totals, peaks and trailers its head commit records, and its root tree.

    A commit gitmem did not make (a person's ``git commit`` on the store's branch)
    records none of these. Its totals are counted from its tree when first asked for,
    so that the limits judge the next write against what the store holds; its peaks
    continue those of its nearest gitmem ancestor, and its trailers (the binding the
    store records) are that ancestor's.
    """

    def __init__(
        self, reader: ObjectReader, history: History, store: str, commit: str | None
    ) -> None:
        self.store = store
        self.commit = commit
        self._reader = reader
        self._history = history
        self._facts = reader.facts(commit) if commit else None
        self._standing = reader.standing(commit) if commit else None
        self.trailers: Mapping[str, str] = self._standing.extra if self._standing else {}
        self.root: str | None = reader.root(commit) if commit else None

    @property
    def totals(self) -> Totals:
        """How many memories (or files), characters and lines the store holds."""
        if self._facts is not None or self.commit is None:
            return self._facts.totals if self._facts else Totals()
        return self._reader.tally(self.commit, type(self).__name__, self._count)

    @property
    def peaks(self) -> Totals:
        """The highest totals the store's history recorded, these included."""
        if self._facts is not None or self._standing is None:
            return self._facts.peaks if self._facts else self.totals
        return self._standing.peaks.peak(self.totals)

    def _count(self) -> Totals:
        """The totals counted from the tree (each kind of store counts its own)."""
        raise NotImplementedError
