"""Refused consolidations, kept for an operator: list them, land one, or drop it.

A consolidation that would drop more than ``max-drop-share`` of the memory's entries is
kept on a proposal branch, the file store ``proposals/<store>/<UTC time>`` forked from
the store's head (see :mod:`gitmem.observe.consolidate`). An operator reads what it
would change (:func:`proposals`, ``gitmem recall proposals``), then either lands it
(:func:`land`: one commit on the store, by the operator, that makes its memory files
as the proposal has them, stale skills removed, with the ``Gitmem-Approved`` trailer
naming the proposal) or drops it (:func:`drop`: the store is not touched).

Either decision is kept as the marker ``decided/<proposal>`` (the ref
``refs/gitmem/decided/proposals/<store>/<time>``), pointing at the landing commit, or
at the proposal's head when dropped; the proposal's branch stays as the record of what
was proposed, and a decided proposal is no longer listed.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import islice

from gitmem.errors import NotFound
from gitmem.observe.consolidate import PREFIX, entries, kept_path, memory_change
from gitmem.observe.recall import RecallSettings
from gitmem.repository import Repository
from gitmem.store import APPROVED, FileSnapshot
from gitmem.store.message import FILES
from gitmem.types import Author

__all__ = ["PREFIX", "Proposal", "drop", "land", "proposals"]

DECIDED = "decided"
"""A decided proposal's marker is ``decided/<proposal>``."""


@dataclass(frozen=True)
class Proposal:
    """A refused consolidation waiting for an operator's word."""

    name: str
    """Its store, ``proposals/<store>/<UTC time>``."""
    store: str
    head: str
    base: str | None
    """The store's commit it was made on."""
    moved: bool
    """The store has moved on since it was made."""
    dropped: tuple[str, ...]
    """The entries it would drop from the store as the store is now."""
    added: tuple[str, ...]
    diff: str
    """Its memory files against the store's now, as a unified diff."""

    def lines(self) -> list[str]:
        """The proposal as lines of text."""
        out = [
            f"proposal {self.name}: would drop {len(self.dropped)} and add {len(self.added)} "
            f"entries of store {self.store}"
            + (" (the store has moved on since it was made)" if self.moved else "")
        ]
        out += [f"  drops: {entry}" for entry in self.dropped]
        out += [f"  adds: {entry}" for entry in self.added]
        out += [f"    {line}" for line in self.diff.splitlines()]
        return out


def _memory(snapshot: FileSnapshot | None) -> dict[str, str]:
    """The memory files of ``snapshot`` (path → text)."""
    if snapshot is None:
        return {}
    return {path: snapshot.read(path) or "" for path in snapshot.files() if kept_path(path)}


def _diff(before: Mapping[str, str], after: Mapping[str, str]) -> str:
    lines: list[str] = []
    for path in sorted(before.keys() | after.keys()):
        lines += difflib.unified_diff(
            before.get(path, "").splitlines(),
            after.get(path, "").splitlines(),
            f"a/{path}" if path in before else "/dev/null",
            f"b/{path}" if path in after else "/dev/null",
            lineterm="",
        )
    return "\n".join(lines)


def _name(store: str, name: str) -> str:
    """The proposal store ``name`` names: its full name, or only its time."""
    return name if name.startswith(f"{PREFIX}/") else f"{PREFIX}/{store}/{name}"


def _read(repo: Repository, store: str, name: str) -> Proposal:
    head = repo.head(name)
    assert head is not None
    base = next(islice(repo.iter_commits(name), 1, None), None)
    now = _memory(repo.files(store) if repo.head(store) is not None else None)
    proposed = _memory(repo.files(name, head))
    before, after = entries(now), entries(proposed)
    return Proposal(
        name,
        store,
        head,
        base,
        base != repo.head(store),
        tuple(sorted(before - after)),
        tuple(sorted(after - before)),
        _diff(now, proposed),
    )


def proposals(repo: Repository, store: str | None = None) -> list[Proposal]:
    """The refused consolidations of ``store`` (default: the recall store) no operator
    has decided, oldest first (a branch of that name holding memories, not files, is
    none: a consolidation never made it)."""
    store = store or RecallSettings.of(repo).store
    prefix = f"{PREFIX}/{store}/"
    return [
        _read(repo, store, name)
        for name in sorted(repo.stores())
        if name.startswith(prefix)
        and repo.marker(f"{DECIDED}/{name}") is None
        and repo.layout(name) == FILES
    ]


def _pending(repo: Repository, store: str, name: str) -> Proposal:
    full = _name(store, name)
    if not full.startswith(f"{PREFIX}/{store}/") or repo.head(full) is None:
        raise NotFound(
            f"there is no proposal {name!r} of store {store!r}; "
            "`gitmem recall proposals` lists them"
        )
    if repo.marker(f"{DECIDED}/{full}") is not None:
        raise NotFound(f"proposal {full!r} was decided already; the store is as it left it")
    return _read(repo, store, full)


def land(repo: Repository, name: str, author: Author, store: str | None = None) -> str | None:
    """Make the store's memory files as proposal ``name`` (its store's name, or only its
    time) has them, as one commit by ``author``; returns it (``None``: the store held
    them already). Refused (changing nothing) for a proposal that is not pending."""
    store = store or RecallSettings.of(repo).store
    proposal = _pending(repo, store, name)
    files = _memory(repo.files(proposal.name, proposal.head))
    trailers = {APPROVED: proposal.name}
    revisions = repo.publish_files(store, author, lambda head: memory_change(head, files, trailers))
    commit = revisions[0].commit if revisions else repo.head(store)
    repo.set_marker(f"{DECIDED}/{proposal.name}", commit)
    return revisions[0].commit if revisions else None


def drop(repo: Repository, name: str, store: str | None = None) -> str:
    """Decide proposal ``name`` is not to land; the store is not touched. Returns the
    proposal's full name."""
    store = store or RecallSettings.of(repo).store
    proposal = _pending(repo, store, name)
    repo.set_marker(f"{DECIDED}/{proposal.name}", proposal.head)
    return proposal.name
