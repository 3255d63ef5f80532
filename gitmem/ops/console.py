"""What the console shows: every memory a store ever held (the ledger its treemap
draws), each store's overview, one memory's history and a store's timeline."""

from __future__ import annotations

import bisect
import json
from typing import TYPE_CHECKING, Any

from gitmem.errors import NotFound
from gitmem.ops.diffs import diff_stat, line_changes
from gitmem.ops.reading import log
from gitmem.ops.record import record
from gitmem.types import Revision

if TYPE_CHECKING:
    from gitmem.repository import Repository

__all__ = ["Ledger", "holders", "memory_history", "store_overview", "timeline"]


class _Held:
    """One memory a store has ever held, as the ledger folds its revisions (its
    attributes, in this order, are the console's JSON row)."""

    def __init__(self, slug: str) -> None:
        self.slug = slug
        self.description = ""
        self.live = False
        self.chars = 0
        self.peak_chars = 0
        self.revisions = 0
        self.revision = 0
        self.author = ""
        self.time = 0


class Ledger:
    """Every memory a store ever held (deleted ones too), with its size and peak: what
    the console's treemap draws. It follows the store's head one change at a time, and
    keeps each memory's row as JSON, so a long-lived reader pays for each revision once
    and for each changed memory once per move."""

    def __init__(self, store: str) -> None:
        self.store = store
        self.head: str | None = None
        self._held: dict[str, _Held] = {}
        self._slugs: list[str] = []
        self._json: dict[str, str] = {}
        self._authors: dict[str, int] = {}

    def follow(self, repo: Repository) -> None:
        """Bring the ledger up to the store's head."""
        head = repo.head(self.store)
        if head == self.head:
            return
        news = repo.revisions_since(self.store, self.head, head) if self.head else []
        if not news or head is None:
            # a first look, or a branch rewritten under us: fold it all again
            self._held, self._slugs, self._json, self._authors = {}, [], {}, {}
            news = repo.revisions(self.store) if head is not None else []
        touched: set[str] = set()
        for r in news:
            held = self._held.get(r.slug)
            if held is None:
                held = self._held[r.slug] = _Held(r.slug)
                bisect.insort(self._slugs, r.slug)
            held.description = r.description
            held.live = not r.removed
            held.chars = len(r.body)
            held.peak_chars = max(held.peak_chars, held.chars)
            held.revisions += 1
            held.revision = max(held.revision, r.revision)
            held.author, held.time = r.author, r.time
            self._authors[r.author] = self._authors.get(r.author, 0) + 1
            touched.add(r.slug)
        for slug in touched:
            self._json[slug] = json.dumps(vars(self._held[slug]), ensure_ascii=False)
        self.head = head

    def rows(self) -> list[dict[str, Any]]:
        """``[{"slug", "description", "live", "chars", "peak_chars", "revisions",
        "revision", "author", "time"}]`` sorted by slug; a deleted memory's ``chars`` is
        the size of the text its deletion removed."""
        return [dict(vars(self._held[slug])) for slug in self._slugs]

    def rows_json(self) -> str:
        """``rows()`` as JSON text, joined from the rows kept since they last changed."""
        return "[" + ",".join(self._json[slug] for slug in self._slugs) + "]"

    def authors(self) -> dict[str, int]:
        """Each commit author's name with how many revisions they made."""
        return dict(sorted(self._authors.items()))


def holders(repo: Repository) -> dict[str, list[str]]:
    """Each store with the instances whose notice watermark names it (``notices/<instance>/
    <store>`` markers), sorted."""
    stores = sorted(repo.stores(), key=len, reverse=True)
    found: dict[str, list[str]] = {store: [] for store in repo.stores()}
    for name in repo.markers("notices"):
        rest = name.removeprefix("notices/")
        for store in stores:
            if rest.endswith("/" + store):
                found[store].append(rest[: -len(store) - 1])
                break
    return found


def store_overview(repo: Repository, ledger: Ledger, held_by: list[str]) -> dict[str, Any]:
    """A store as the console's Stores page shows it: ``{"store", "head", "strategy",
    "limits", "totals", "peaks", "holders", "authors", "instances", "shared",
    "memories_ever"}``; ``instances`` is every watermark holder and commit author, and
    ``shared`` says whether more than one of them holds the store."""
    from gitmem.limits import Limits

    ledger.follow(repo)
    snap = repo.snapshot(ledger.store)
    found = record(repo, ledger.store)
    authors = ledger.authors()
    instances = sorted(set(held_by) | set(authors))
    return {
        "store": ledger.store,
        "head": snap.commit,
        "strategy": found.strategy.name if found else None,
        "limits": (found.limits if found else Limits()).as_params(),
        "totals": snap.totals.to_dict(),
        "peaks": snap.peaks.to_dict(),
        "holders": held_by,
        "authors": authors,
        "instances": instances,
        "shared": len(instances) > 1,
        "memories_ever": len(ledger.rows()),
    }


def memory_history(repo: Repository, store: str, slug: str) -> dict[str, Any]:
    """One memory with its revisions newest first, each with its text, its diff against
    the one before and the lines it added and removed: ``{"store", "slug", "live",
    "revision", "memory": {"description", "body", "code", "on_use"} | None,
    "revisions": [memory_revision + {"removed", "diff", "lines_added", "lines_removed"}]}``."""
    rows = log(repo, store, slug, patch=True)
    if not rows:
        raise NotFound(f"there is no memory named {slug!r} in {store}; `gitmem ls` lists them")
    latest = rows[0][0]
    revisions: list[dict[str, Any]] = []
    for r, d in rows:
        event = r.to_dict()
        added, gone = diff_stat(d)
        event.update(removed=r.removed, diff=d, lines_added=added, lines_removed=gone)
        revisions.append(event)
    memory = None
    if not latest.removed:
        memory = {
            "description": latest.description,
            "body": latest.body,
            "code": latest.code,
            "on_use": latest.on_use,
        }
    return {
        "store": store,
        "slug": slug,
        "live": not latest.removed,
        "revision": latest.revision,
        "memory": memory,
        "revisions": revisions,
    }


def timeline(
    repo: Repository, store: str, author: str | None = None, limit: int = 500
) -> list[dict[str, Any]]:
    """Every version the store went through, newest first, optionally only ``author``'s,
    at most ``limit`` (0: all): ``[{"commit", "slug", "revision", "op", "removed",
    "author", "time", "description", "lines_added", "lines_removed"}]``.

    Only the newest commits are read, going further back while ``author``'s rows are
    fewer than ``limit``, so a long history costs what is shown."""
    head = repo.head(store)
    commits = list(repo.iter_commits(store))
    window = limit or len(commits)
    while True:
        base = commits[window] if window < len(commits) else None
        history = repo.revisions_since(store, base, head)
        rows = _timeline_rows(repo, store, history, author, limit)
        if base is None or (limit and len(rows) >= limit):
            return rows
        window *= 4


def _timeline_rows(
    repo: Repository, store: str, history: list[Revision], author: str | None, limit: int
) -> list[dict[str, Any]]:
    before: list[Revision | None] = []
    last: dict[str, Revision] = {}
    for r in history:
        before.append(last.get(r.slug))
        last[r.slug] = r
    rows: list[dict[str, Any]] = []
    for r, prior in zip(reversed(history), reversed(before), strict=True):
        if author is not None and r.author != author:
            continue
        if prior is None and r.revision > 1:
            # the revision before lies beyond the commits read: the slug's own history
            older = [o for o in repo.revisions(store, r.slug) if o.revision < r.revision]
            prior = older[-1] if older else None
        added, gone = line_changes(prior, r)
        rows.append(
            {
                "commit": r.commit,
                "slug": r.slug,
                "revision": r.revision,
                "op": r.op,
                "removed": r.removed,
                "author": r.author,
                "time": r.time,
                "description": r.description,
                "lines_added": added,
                "lines_removed": gone,
            }
        )
        if limit and len(rows) >= limit:
            break
    return rows
