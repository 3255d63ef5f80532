"""Undo without rewriting: put back a memory's past revision, or take back what a commit
(or a run of commits) did, each as one new commit on top of the store's head.

History is never rewritten: the commits undone stay where they are, and the new commit
says what it undid in a trailer. The new commit is a write like any other: held to
the limits the store records, to the secrets screen and to the store's guard, and
refused whole (writing nothing) when any of them refuses.

A revert takes each memory the commits changed back to the text it had before them.
A memory that a later commit changed again is a conflict: the revert is refused,
naming every such memory, rather than overwrite the later change.

    repo.restore("notes", "deploy-runbook", 3, author)       # revision 3's text, live again
    repo.revert("notes", "3f0c9a1e", author)                 # one commit (or a merge)
    repo.revert("notes", "3f0c9a1e..8d2b44c0", author)       # a whole pass of commits
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from gitmem.errors import InvalidArgument, NotFound, Unchanged
from gitmem.lean.asof import MIN_PREFIX
from gitmem.types import Author, Edit, Memory, Revision, check_slug

if TYPE_CHECKING:
    from gitmem.edits import Build, Rules
    from gitmem.store import Snapshot, Storage
    from gitmem.store.objects import MemoryFiles

__all__ = ["RESTORE", "RESTORES", "REVERT", "REVERTS", "restore", "revert"]

RESTORE = "restore"
"""The op of a restored memory's revision."""
REVERT = "revert"
"""The op of each memory a revert changes."""
RESTORES = "Gitmem-Restores"
"""The trailer naming the revision a restore put back: ``<slug> <revision>``."""
REVERTS = "Gitmem-Reverts"
"""The trailer naming what a revert took back: a commit, or ``<from>..<to>``."""


def _operator_rules(repo: Storage, store: str) -> Rules:
    from gitmem.strategies.operator import operator_rules, recorded

    return operator_rules(recorded(repo, store))


def restore(
    repo: Storage, store: str, slug: str, revision: int, author: Author, rules: Rules | None = None
) -> Revision:
    """Make revision ``revision`` of ``slug`` its live text again (re-creating a deleted
    memory), as one commit under ``rules`` (default: the operator's, with the limits
    the store records)."""
    from gitmem.edits import overwrite

    check_slug(slug)
    _memories_only(repo, store, "restore")
    history = repo.revisions(store, slug)
    if not history:
        raise NotFound(f"there is no memory named {slug!r} in {store}; `gitmem ls` lists them")
    found = next((r for r in history if r.revision == revision), None)
    if found is None:
        raise NotFound(f"{slug!r} has revisions 1 to {history[-1].revision}, not {revision}")
    if found.removed:
        raise InvalidArgument(
            f"revision {revision} of {slug!r} removed it; restore a revision that holds "
            "its text (`gitmem log " + slug + "` lists them)"
        )
    chosen = rules if rules is not None else _operator_rules(repo, store)
    marked = replace(chosen, trailers={**chosen.trailers, RESTORES: f"{slug} {revision}"})
    return repo.mutate(store, author, overwrite(marked, found.memory(), op=RESTORE))


def revert(
    repo: Storage, store: str, commits: str, author: Author, rules: Rules | None = None
) -> list[Revision]:
    """Take back what ``commits`` did to the store's memories, as one commit under
    ``rules`` (default: the operator's): ``commits`` is one commit of the store's
    history (a merge is taken back against its first parent) or ``FROM..TO``, every
    commit after ``FROM`` up to ``TO`` (``FROM`` an ancestor of ``TO``). Returns one
    revision per memory it changed."""
    _memories_only(repo, store, "revert")
    before, after, named = _span(repo, store, commits)
    shown = "..".join(c[:12] for c in named.split(".."))
    then = repo.snapshot(store, before) if before is not None else None
    done = repo.snapshot(store, after)
    slugs = sorted(done.changed_since(then))
    if not slugs:
        raise Unchanged(f"{shown} changed no memory of {store}; nothing was written")
    # compared by their files' blobs (equal blobs, equal memory), not read: what the
    # commits left may not read as text, and the revert is what repairs it
    targets = {slug: _at(then, slug) for slug in slugs}
    results = {slug: done.memory_files(slug) for slug in slugs}
    chosen = rules if rules is not None else _operator_rules(repo, store)
    marked = replace(chosen, trailers={**chosen.trailers, REVERTS: named})
    return repo.publish(store, author, _reverting(marked, shown, targets, results))


def _at(snapshot: Snapshot | None, slug: str) -> tuple[Memory, MemoryFiles] | None:
    """Memory ``slug`` at ``snapshot`` and its files' blobs (``None``: not there)."""
    files = snapshot.memory_files(slug) if snapshot is not None else None
    if snapshot is None or files is None:
        return None
    memory = snapshot.get(slug)
    assert memory is not None
    return memory, files


def _reverting(
    rules: Rules,
    named: str,
    targets: dict[str, tuple[Memory, MemoryFiles] | None],
    results: dict[str, MemoryFiles | None],
) -> Build:
    """The change that puts each slug back to ``targets``, refused if any slug no longer
    holds what ``results`` says the commits left (a later change would be lost)."""
    from gitmem.types import Change

    def build(snapshot: Snapshot) -> Change:
        held = snapshot.memory_files
        later = [slug for slug, result in results.items() if held(slug) != result]
        if later:
            shown = ", ".join(f"`{s}`" for s in later[:20])
            more = f" and {len(later) - 20} more" if len(later) > 20 else ""
            raise InvalidArgument(
                f"cannot revert {named}: later changes to {shown}{more} would be lost; "
                "restore those memories one by one (`gitmem restore SLUG --rev N`) instead"
            )
        edits = [
            Edit(REVERT, slug, target[0] if target is not None else None)
            for slug, target in targets.items()
            if held(slug) != (target[1] if target is not None else None)
        ]
        if not edits:
            raise Unchanged(f"the store already holds what it held before {named}")
        first, *also = edits
        return rules.change(snapshot, REVERT, first.slug, first.memory, *also)

    return build


def _memories_only(repo: Storage, store: str, doing: str) -> None:
    """Refuse a file store (the observer's log, the recall store) in one line."""
    if repo.layout(store) == "files":
        raise InvalidArgument(
            f"store {store!r} is a file store and {doing} takes back what commits did to "
            "memories; take back a file store's commits with `git revert` on its branch"
        )


def _span(repo: Storage, store: str, commits: str) -> tuple[str | None, str, str]:
    """The commit a revert goes back to (``None``: before the first), the commit it
    takes back up to, and how the trailer names them."""
    given = commits.strip()
    start, dots, end = given.partition("..")
    for part in (start, end) if dots else (start,):
        if len(part) < MIN_PREFIX or not all(c in "0123456789abcdefABCDEF" for c in part):
            raise InvalidArgument(
                f"{given[:80]!r} is not a commit (at least {MIN_PREFIX} hex digits) or a "
                "range FROM..TO of two; `gitmem log` lists the store's commits"
            )
    if not dots:
        after = repo.commit_at(store, start)
        parents = repo.parents(after)
        return (parents[0] if parents else None), after, after
    before, after = repo.commit_at(store, start), repo.commit_at(store, end)
    if before == after or not repo.descends(store, after, before):
        raise InvalidArgument(
            f"{start} is not an ancestor of {end}: a range FROM..TO takes back the commits "
            "after FROM up to TO"
        )
    return before, after, f"{before}..{after}"
