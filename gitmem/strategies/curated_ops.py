"""Curated rows' operator verbs: add, append, link, unlink and reclassify rows as the
operator, read them, and find the rows whose header does not read as a row's."""

from __future__ import annotations

from typing import Any

from gitmem.edits import Rules
from gitmem.errors import NotFound
from gitmem.store import Storage
from gitmem.strategies import curated
from gitmem.strategies.operator import kept_as, operator_rules
from gitmem.types import Author, Revision, check_slug

__all__ = [
    "conflicts_json",
    "row_line",
    "rows_add",
    "rows_append",
    "rows_birth",
    "rows_conflicts",
    "rows_link",
    "rows_list",
    "rows_reclassify",
    "rows_relevant",
    "rows_show",
    "rows_unlink",
]


def _rules(repo: Storage, store: str) -> Rules:
    found = kept_as(
        repo,
        store,
        curated.Curated.name,
        "store {store!r} keeps {kept} memories, not curated rows",
    )
    return operator_rules(found)


def rows_add(
    repo: Storage,
    store: str,
    author: Author,
    name: str,
    description: str,
    owner: str,
    body: str,
    *,
    role: str = "knowledge",
    project: str | None = None,
    replace: bool = False,
) -> Revision:
    """Add a row (``replace``: correct an existing one, marked so in its commit)."""
    owner, key = curated.check_owner(owner, project)
    row = curated.Row(check_slug(name), description, owner, key, role, "live", body)
    return repo.mutate(store, author, curated.add(_rules(repo, store), row, correct=replace))


def rows_append(
    repo: Storage, store: str, author: Author, name: str, text: str, project: str | None = None
) -> Revision:
    """Grow a log or a live thread."""
    return repo.mutate(store, author, curated.append(_rules(repo, store), name, text, project))


def rows_link(
    repo: Storage, store: str, author: Author, source: str, kind: str, target: str
) -> list[Revision]:
    """Link two rows in one commit (both rows' revisions)."""
    return repo.publish(store, author, curated.link(_rules(repo, store), source, kind, target))


def rows_unlink(
    repo: Storage, store: str, author: Author, source: str, kind: str, target: str
) -> list[Revision]:
    """Remove a link in one commit; the edge stays in the history."""
    return repo.publish(store, author, curated.unlink(_rules(repo, store), source, kind, target))


def rows_reclassify(
    repo: Storage,
    store: str,
    author: Author,
    name: str,
    *,
    status: str | None = None,
    role: str | None = None,
) -> Revision:
    """Set a row's status and/or role."""
    build = curated.reclassify(_rules(repo, store), name, status=status, role=role)
    return repo.mutate(store, author, build)


def _row_index(repo: Storage, store: str) -> curated.RowIndex:
    return curated.RowIndex().follow(repo, store)


def rows_show(repo: Storage, store: str, name: str) -> curated.Row:
    """One row, whatever its lifecycle."""
    memory = repo.snapshot(store).get(check_slug(name))
    if memory is None:
        raise NotFound(f"there is no row named {name!r} in {store}; `gitmem rows ls` lists them")
    return curated.parse_row(memory)


def rows_list(
    repo: Storage, store: str, *, owner: str | None = None, live: bool = False
) -> list[curated.Row]:
    """Every row (``owner``: only ``user``, ``host`` or ``project <key>``; ``live``: only
    live rows nothing supersedes), by name."""
    rows = _row_index(repo, store).rows.values()
    return sorted(
        (r for r in rows if (owner is None or r.whose == owner) and (r.live or not live)),
        key=lambda r: r.name,
    )


def rows_relevant(repo: Storage, store: str, project: str, *, knowledge: bool = False) -> str:
    """What ``get_relevant`` answers for ``project``."""
    index = _row_index(repo, store)
    key = curated.check_project(project)
    return curated.relevant_text(
        key, index.pending(key), index.knowledge(key) if knowledge else None
    )


def rows_birth(repo: Storage, store: str) -> str:
    """The birth block a session of this store opens with, recording nothing."""
    return _row_index(repo, store).birth_block()


def rows_conflicts(
    repo: Storage, store: str, owner: str | None = None
) -> list[tuple[curated.Row, curated.Row, list[str]]]:
    """Live pairs of one owner that share wording: candidates, never a verdict."""
    return curated.conflicts(_row_index(repo, store).rows.values(), owner)


def row_line(row: curated.Row) -> str:
    """A row as one line of ``gitmem rows ls``: name, owner, role, status, description."""
    flags = " superseded" if row.superseded else ""
    return f"{row.name}\t{row.whose}\t{row.role}\t{row.status}{flags}\t{row.description}"


def conflicts_json(found: list[tuple[curated.Row, curated.Row, list[str]]]) -> list[dict[str, Any]]:
    """Conflict candidates' JSON: ``[{"owner", "rows": [a, b], "shared": [word]}]``."""
    return [{"owner": a.whose, "rows": [a.name, b.name], "shared": words} for a, b, words in found]
