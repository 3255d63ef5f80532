"""The row index: every row of one store by name, following its head one change at a time."""

from __future__ import annotations

from collections.abc import Iterable

from gitmem.store import Storage
from gitmem.strategies.curated.parse import rows_of
from gitmem.strategies.curated.render import birth_block
from gitmem.strategies.curated.rows import Row
from gitmem.strategies.keyword_search import Hit, SearchIndex
from gitmem.types import Memory


class RowIndex:
    """Every row of one store by name, with the sets a birth block and ``get_relevant``
    read, kept in step with the head one change at a time."""

    def __init__(self) -> None:
        self.commit: str | None = None
        self.rows: dict[str, Row] = {}
        self._owned: dict[str, set[str]] = {}
        """Names by owner (``user``, ``host``, ``project <key>``)."""
        self._pending: dict[str, set[str]] = {}
        self._search: SearchIndex | None = None
        """Names, claims and contents (not headers), built on the first search."""

    @classmethod
    def of(cls, memories: Iterable[Memory]) -> RowIndex:
        """The rows among ``memories``, following no head."""
        index = cls()
        index._fill(memories)
        return index

    def follow(self, repo: Storage, store: str) -> RowIndex:
        head = repo.head(store)
        if self.commit == head:
            return self
        changes = repo.revisions_since(store, self.commit, head) if self.commit else []
        if not changes:
            self.rows.clear()
            self._owned.clear()
            self._pending.clear()
            self._search = None
            if head is not None:
                self._fill(repo.snapshot(store, head).memories())
        for rev in changes:
            self._remove(rev.slug)
            if not rev.removed:
                self._fill([Memory(rev.slug, rev.description, rev.body)])
        self.commit = head
        return self

    def _fill(self, memories: Iterable[Memory]) -> None:
        for row in rows_of(memories):
            self._put(row)

    def _put(self, row: Row) -> None:
        self.rows[row.name] = row
        if self._search is not None:
            self._search.put(row.searchable())
        self._owned.setdefault(row.whose, set()).add(row.name)
        if row.pending:
            self._pending.setdefault(row.whose, set()).add(row.name)

    def _remove(self, name: str) -> None:
        row = self.rows.pop(name, None)
        if self._search is not None:
            self._search.remove(name)
        if row is not None:
            self._owned[row.whose].discard(name)
            self._pending.get(row.whose, set()).discard(name)

    def search(self, keywords: list[str]) -> list[Hit]:
        """Every row that mentions a keyword, ranked as ``search_memories`` ranks; a
        hit's memory holds the row's content, not its header."""
        if self._search is None:
            self._search = SearchIndex()
            self._search.reset([r.searchable() for r in self.rows.values()], self.commit)
        return self._search.search(keywords, 0)

    def birth_block(self) -> str:
        projects = {
            whose[len("project ") :]: len(self._pending.get(whose, ()))
            for whose, names in self._owned.items()
            if whose.startswith("project ") and names
        }
        user = [self.rows[n] for n in self._owned.get("user", ())]
        return birth_block(user, projects, len(self._pending.get("host", ())))

    def pending(self, project: str) -> list[Row]:
        return [self.rows[n] for n in self._pending.get(f"project {project}", ())]

    def knowledge(self, project: str) -> list[Row]:
        names = self._owned.get(f"project {project}", ())
        return [r for r in (self.rows[n] for n in names) if r.live and r.role == "knowledge"]


def cached_index(repo: Storage, store: str, cache: dict[str, object]) -> RowIndex:
    """The row index kept in ``cache``, brought up to ``store``'s head."""
    found = cache.get("row-index")
    if not isinstance(found, RowIndex):
        found = cache["row-index"] = RowIndex()
    return found.follow(repo, store)
