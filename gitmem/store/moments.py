"""A moment of a store's history: the commit a reader names with ``--at`` or ``at=``
(which commit a moment names is :mod:`gitmem.lean.asof`'s rule, shared with the lean
read path).

:class:`Past` is the part of a repository that reads its stores' past (a base of
``Storage``): it names a moment's commit, and makes a *reading of the past*, the
repository with a store pinned at a commit: every read of the store answers as of it,
and every write refuses, changing nothing.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import TYPE_CHECKING, Self

from gitmem.errors import ReadOnly
from gitmem.lean.asof import named
from gitmem.store import blame
from gitmem.store.layout import check_store
from gitmem.types import check_slug

if TYPE_CHECKING:
    from dulwich.refs import Ref

    from gitmem.store.blame import Origin
    from gitmem.store.history import History
    from gitmem.store.objects import ObjectReader
    from gitmem.store.refs import Refs

__all__ = ["Past", "past_write"]


def past_write(store: str, commit: str) -> ReadOnly:
    """The refusal of a write through a reading of ``store`` as of ``commit``."""
    return ReadOnly(
        f"this reads store {store!r} as it stood at commit {commit[:12]}, a moment in its "
        "past, which cannot change: nothing was written; bind at the store's head to write"
    )


class Past:
    """The part of a repository that reads its stores' past (a base of ``Storage``)."""

    _refs: Refs
    _reader: ObjectReader
    # a reading of the past: store → the commit it reads as its head; and whether this
    # object owns the repository's files (a reading of the past closes nothing)
    _pins: dict[str, str]
    _owner: bool

    def _ref(self, store: str) -> Ref:
        """A store's branch (``Storage`` gives it)."""
        raise NotImplementedError

    def _history(self, store: str) -> History:
        """A store's history index (``Storage`` gives it)."""
        raise NotImplementedError

    def head(self, store: str) -> str | None:
        """A store's head, or the commit a reading of the past pins (``Storage`` gives
        it)."""
        raise NotImplementedError

    def _expect(self, store: str, head: str | None, *, files: bool, doing: str) -> None:
        """Refuse a store of the other kind (``Storage`` gives it)."""
        raise NotImplementedError

    def keep_history(self, store: str) -> None:
        """Bring ``store``'s history index up to its head and keep it on disk, as the
        first read of its history would (a fresh clone's first sync does it beside the
        search index, so that no first ``log``, ``blame`` or ``--at`` walks every
        commit)."""
        head = self.head(check_store(store))
        if head is not None:
            self._history(store).since(head, head, lookup=False)  # covers head; reads nothing

    def commit_at(self, store: str, at: str) -> str:
        """The commit of the store's history that ``at`` names: a commit id (full, or at
        least four leading hex digits) on the history, or an ISO 8601 date or date and
        time (the newest commit at or before it). See :mod:`gitmem.lean.asof`."""
        head = self._refs.read(self._ref(check_store(store)))
        return named(store, head, at, self._history(store), self._commit_time)

    def _commit_time(self, sha: str) -> int:
        """A commit's (committer's) time, read from its raw header without making a
        commit object; anything unusual takes the ordinary path, with its errors."""
        from gitmem.lean.heads import committed
        from gitmem.store.objects import COMMIT

        found = committed(self._reader.raw(sha, COMMIT))
        return found if found is not None else self._reader.commit(sha).commit_time

    def as_of(self, store: str, at: str) -> Self:
        """This repository reading ``store`` as it stood at the moment ``at`` names (see
        :meth:`commit_at`): every read of the store answers as of that commit, and
        every write refuses, changing nothing. The repository it was made from stays
        open and unchanged."""
        commit = self.commit_at(store, at)
        view = copy.copy(self)
        view._pins = {**self._pins, store: commit}
        view._owner = False
        return view

    def pinned(self, store: str) -> str | None:
        """The commit this is a reading of ``store`` at (see :meth:`as_of`), or ``None``
        when it reads the store's head."""
        return self._pins.get(store)

    def parents(self, commit: str) -> list[str]:
        """The parents of ``commit``, the first first."""
        return list(self._reader.parents(commit))

    def descends(self, store: str, commit: str, ancestor: str) -> bool:
        """Whether ``ancestor`` is ``commit`` or one of its ancestors (both of the store)."""
        return self._history(check_store(store)).contains(commit, ancestor)

    def origins(self, store: str, slug: str, commit: str | None = None) -> list[Origin]:
        """Where each line of ``slug``'s files came from as of ``commit`` (default: the
        head), as ``git blame`` finds it (see :mod:`gitmem.store.blame`)."""
        check_slug(slug)
        head = commit if commit is not None else self.head(store)
        self._expect(store, head, files=False, doing="blame its files with `git blame`")
        if head is None:
            return []
        return blame.line_origins(self._reader, self._history(store), head, slug)

    def made_by(self, commit: str) -> tuple[str, str, Mapping[str, str]]:
        """Who made ``commit`` (author name and email) and the extra trailers its
        message records (none for a commit gitmem did not make)."""
        found = self._reader.commit(commit)
        name, _, email = found.author.decode("utf-8", "replace").partition(" <")
        facts = self._reader.facts(commit)
        return name, email.removesuffix(">"), facts.extra if facts is not None else {}

    def _refuse_past(self, store: str | None = None) -> None:
        """A reading of the past writes nothing."""
        if self._pins:
            pinned = store if store in self._pins else next(iter(self._pins))
            raise past_write(pinned, self._pins[pinned])
