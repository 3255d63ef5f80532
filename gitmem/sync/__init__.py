"""Sync: fetch a remote's stores, reconcile each that diverged, push the result.

    reports = sync(repo, "origin")          # one StoreSync per store
    [r.to_dict() for r in reports]

Never forced: a push names the head it replaces, and a remote that moved meanwhile is
fetched and reconciled again (at most ``ATTEMPTS`` rounds). A merge is one commit with
this replica's head as first parent and the remote's as second, authored
``gitmem sync``; its trailers name every slug it changed relative to the first parent,
numbered after the larger side, with the merged totals and peaks. How memories are
reconciled is :mod:`gitmem.sync.reconcile`'s.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from gitmem import strategies
from gitmem.errors import GitmemError, InternalError, NotFound, RemoteError
from gitmem.githooks import check_adopted
from gitmem.limits import Excess, Limits, exceeded
from gitmem.store import Remote, Snapshot, Storage
from gitmem.store.collector import uncollected
from gitmem.store.memoryfiles import ALLOWLIST, GUARD
from gitmem.store.refs import BranchBeside
from gitmem.sync.reconcile import CONFLICT, Reconciled, reconcile
from gitmem.trailers import read_capability_trailer
from gitmem.types import SYNC_AUTHOR, Author

__all__ = ["ATTEMPTS", "CONFLICT", "StoreSync", "keep_derived", "sync", "sync_exceeded"]

ATTEMPTS = 8
SYNC_TRAILER = "Gitmem-Sync"
CONFLICTS_TRAILER = "Gitmem-Conflicts"


@dataclass
class StoreSync:
    """What a sync did to one store."""

    store: str
    before: str | None = None
    """This replica's head before the sync."""
    remote: str | None = None
    """The remote's head as first fetched."""
    head: str | None = None
    """The head both replicas hold after the sync."""
    fetched: bool = False
    """This replica took commits from the remote (a fast-forward or a merge)."""
    merged: bool = False
    pushed: bool = False
    """The remote's branch was moved to ``head``."""
    conflicts: list[str] = field(default_factory=lambda: list[str]())
    changed: list[str] = field(default_factory=lambda: list[str]())
    """The slugs the merge (or fast-forward) changed here."""
    exceeded: list[Excess] = field(default_factory=lambda: list[Excess]())
    refused: list[str] = field(default_factory=lambda: list[str]())
    """Why the remote's commits were kept out (one line per problem): the store kept
    this replica's head and nothing was pushed."""
    widened: list[str] = field(default_factory=lambda: list[str]())
    """The limits an operator loosened on purpose in what was adopted (one line each)."""
    rules: list[str] = field(default_factory=lambda: list[str]())
    """The store's allowlist or guard code as the adopted commits changed them, one line
    each: they judge what arrives from the next sync on, not what this one brought."""

    @property
    def up_to_date(self) -> bool:
        return not (self.fetched or self.merged or self.pushed or self.refused)

    def to_dict(self) -> dict[str, Any]:
        """``{"store", "before", "remote", "head", "fetched", "merged", "pushed",
        "up_to_date", "conflicts", "changed", "exceeded", "refused", "widened", "rules"}``."""
        return {
            "store": self.store,
            "before": self.before,
            "remote": self.remote,
            "head": self.head,
            "fetched": self.fetched,
            "merged": self.merged,
            "pushed": self.pushed,
            "up_to_date": self.up_to_date,
            "conflicts": list(self.conflicts),
            "changed": list(self.changed),
            "exceeded": [e.to_dict() for e in self.exceeded],
            "refused": list(self.refused),
            "widened": list(self.widened),
            "rules": list(self.rules),
        }


def sync(
    repo: Storage, remote: str = "origin", store: str | None = None, author: Author = SYNC_AUTHOR
) -> list[StoreSync]:
    """Sync every store (or only ``store``) with ``remote``; one report per store."""
    # a sync's objects live as long as it does, in bounded caches (the trees it reads
    # above all): collecting cycles among them would only walk those caches again and
    # again, the more often the larger the store
    with repo.trees_shared(), uncollected():
        return _sync(repo, remote, store, author)


def _sync(repo: Storage, remote: str, store: str | None, author: Author) -> list[StoreSync]:
    target = repo.remote(remote)
    heads = repo.fetch(target)
    names = sorted(set(repo.stores()) | set(heads))
    if store is not None:
        if store not in names:
            raise NotFound(
                f"there is no store named {store!r} here or at {target.url}; "
                f"the stores are: {', '.join(names) or 'none'}"
            )
        names = [store]
    reports = [_sync_store(repo, target, name, heads.get(name), author) for name in names]
    # proposals travel too, so that a reviewer on another replica sees them, and a
    # decision made there reaches this one
    repo.share_proposals(target)
    for report in reports:  # the remote's part done, what a first read needs is kept
        if report.before is None and report.head is not None:
            keep_derived(repo, report.store)
    return reports


def keep_derived(repo: Storage, store: str) -> None:
    """Keep the listing, the search index and the history index of ``store``, which this
    replica has just received whole (a fresh clone's first sync), and what ``ls`` and
    ``state`` print of it: one sweep through its memories here, so that the first ``ls``
    or ``search`` after it reads one file rather than every memory, and one walk of its
    commits, in a forked child on the other core where there is one, so that no first
    ``log`` walks them. Derived data: the store is synced whatever happens here, and
    what cannot be read or written is left to that first command, which says what is
    wrong."""
    from gitmem.lean.halves import halves
    from gitmem.lean.repository import PROJECT_BRANCHES, STANDALONE_BRANCHES
    from gitmem.quick import keep_printed
    from gitmem.search.index import stored_index

    here = os.getpid()

    def history() -> None:
        if os.getpid() == here:
            repo.keep_history(store)
            return
        # the child reads through files of its own: a descriptor it shared with this
        # process would have each move the other's place in the file
        with type(repo).open(repo.directory) as own:
            own.keep_history(store)

    def made(part: list[Callable[[], object]]) -> None:
        for make in part:
            try:
                make()
            except InternalError:
                raise
            except (GitmemError, OSError):
                pass

    halves(made, [lambda: stored_index(repo, store), history], 2)
    keep_printed(repo.directory, PROJECT_BRANCHES if repo.project else STANDALONE_BRANCHES, store)


def _sync_store(
    repo: Storage, target: Remote, store: str, theirs: str | None, author: Author
) -> StoreSync:
    report = StoreSync(store, before=repo.head(store), remote=theirs)
    changed: set[str] = set()
    for attempt in range(ATTEMPTS):
        ours = repo.head(store)
        if ours == theirs:
            report.head = ours
            break
        widened: list[str] = []
        refused = _refused(repo, target, store, ours, theirs, widened) if theirs is not None else []
        report.widened = widened
        if refused:
            report.refused, report.head = refused, ours
            break
        if theirs is None:
            new = ours
        elif ours is None:
            try:
                if not repo.advance(store, None, theirs):
                    continue
            except BranchBeside as exc:  # a store of ours beside this one's name
                report.refused = [str(exc)]
                break
            changed |= repo.snapshot(store, theirs).changed_since(None)
            report.fetched, report.head = True, theirs
            break
        else:
            base = repo.merge_base(store, ours, theirs)
            if base == theirs:
                new = ours
            elif base == ours:
                if not repo.advance(store, ours, theirs):
                    continue
                changed |= repo.snapshot(store, theirs).changed_since(repo.snapshot(store, ours))
                report.fetched, report.head = True, theirs
                break
            else:
                merged = _merge(repo, store, base, ours, theirs, _where(target), author)
                if merged is None:
                    continue  # a local write moved the head: reconcile again
                new, done = merged
                report.fetched = report.merged = True
                changed |= {e.slug for e in done.edits}
                report.conflicts += [c for c in done.conflicts if c not in report.conflicts]
        assert new is not None
        pushed = repo.push(target, store, theirs, new)
        if pushed.ok:
            report.pushed, report.head = True, new
            break
        if pushed.alone:  # nothing another attempt could mend; the other stores go on
            report.refused, report.head = [pushed.reason], new
            break
        again = repo.fetch(target).get(store)
        if again == theirs and not pushed.moving:
            raise RemoteError(f"{target.url} refused the push of store {store!r}: {pushed.reason}")
        if again == theirs:
            time.sleep(random.uniform(0.05, 0.2) * (attempt + 1))  # another push is mid-way
        theirs = again
    else:
        raise RemoteError(
            f"store {store!r} kept changing at {target.url} while syncing "
            f"({ATTEMPTS} rounds); run `gitmem sync` again"
        )
    report.changed = sorted(changed)
    if report.fetched and report.before is not None and report.head is not None:
        report.rules = _rules_changed(repo, store, report.before, report.head)
    if report.head is not None:
        report.exceeded = sync_exceeded(repo.snapshot(store, report.head), changed)
    return report


def _refused(
    repo: Storage, target: Remote, store: str, ours: str | None, theirs: str, widened: list[str]
) -> list[str]:
    """What is wrong with the commits ``theirs`` would bring into the store, checked as
    the push hook checks a push onto ``ours`` (with this replica's screens): empty when
    they may be adopted, by fast-forward or merge. A head the fetch left out (its
    history holds an object past the hook's bound) is refused as the hook refuses it."""
    if theirs in target.kept_out:
        return [target.kept_out[theirs]]
    if ours is not None and repo.merge_base(store, ours, theirs) == theirs:
        return []  # nothing to adopt: ours already holds theirs
    reader = repo.incoming()
    try:
        return check_adopted(reader, store, ours, theirs, repo.screens, widened)
    finally:
        reader.close()


_RULES = ((ALLOWLIST, "allowlist"), (GUARD, "guard code"))


def _rules_changed(repo: Storage, store: str, before: str, after: str) -> list[str]:
    """One line for each store file that judges writes (the allowlist, the guard code)
    that differs between this replica's head ``before`` the sync and ``after`` it."""
    old, new = repo.snapshot(store, before), repo.snapshot(store, after)
    lines: list[str] = []
    for name, what in _RULES:
        was, now = old.meta(name), new.meta(name)
        if was != now:
            done = "set" if was is None else "removed" if now is None else "changed"
            lines.append(
                f"the remote {done} the store's {what} ({name}); it judges what arrives "
                "from the next sync or push on"
            )
    return lines


def _where(target: Remote) -> str:
    """The remote as a merge commit names it: its name, else its URL without any
    user or password (a commit is pushed and read by everyone)."""
    if target.name is not None:
        return target.name
    parts = urlsplit(target.url)
    if parts.scheme and "@" in parts.netloc:
        parts = parts._replace(netloc=parts.netloc.rsplit("@", 1)[1])
    return urlunsplit(parts) if parts.scheme else target.url


def _merge(
    repo: Storage, store: str, base: str | None, ours: str, theirs: str, url: str, author: Author
) -> tuple[str, Reconciled] | None:
    mine = repo.snapshot(store, ours)
    other = repo.snapshot(store, theirs)
    done = reconcile(repo.snapshot(store, base) if base else None, mine, other)
    # its own part alone: what binds the store is carried on by every merge (see
    # gitmem.store.commit.CARRIED), never who wrote either side
    trailers = {SYNC_TRAILER: url}
    if done.conflicts:
        trailers[CONFLICTS_TRAILER] = " ".join(done.conflicts)
    commit = repo.merge(store, author, ours, theirs, done.edits, trailers)
    return None if commit is None else (commit, done)


def sync_exceeded(snapshot: Snapshot, changed: set[str]) -> list[Excess]:
    """The limits the store records that its head exceeds: the aggregates from its
    totals (and the index, when it is bounded), per-memory limits for ``changed``."""
    found = read_capability_trailer(snapshot.trailers)
    if found is None:
        return []
    strategy = strategies.get(found[0])
    limits: Limits = found[1]
    applies = strategy.aggregate_limits if strategy else frozenset[str]()
    memories = [m for m in (snapshot.get(slug) for slug in sorted(changed)) if m is not None]

    def index() -> list[str]:
        assert strategy is not None
        return [strategy.index_line(m) for m in snapshot.memories()]

    return exceeded(limits, applies, snapshot.totals, memories, index if strategy else None)
