"""Reconciling two replicas of a store, memory by memory, against their merge base.

For each slug either side changed since the base:

- changed on one side only: that side's memory;
- changed alike on both: that memory;
- deleted on one side, edited on the other: the edit;
- edited on both: the description, body and code halves are merged field by field
  (a field changed on one side takes that side; the body and code halves are merged
  line by line when both changed them, see :mod:`gitmem.sync.text`);
- when a field's changes overlap: **both texts stay** - ``<slug>`` keeps this
  replica's memory, and the other replica's is kept beside it as
  ``<slug>.conflict-<commit>`` (the first 7 digits of the other side's head), listed
  as a conflict. Resolve it by editing ``<slug>`` and deleting the ``.conflict-``
  memory.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gitmem.store import Snapshot
from gitmem.sync.text import merge3
from gitmem.types import SLUG_MAX, Edit, Memory

__all__ = ["CONFLICT", "Reconciled", "conflict_slug", "merge_memory", "reconcile"]

CONFLICT = ".conflict-"
OP = "merge"


@dataclass(frozen=True)
class Reconciled:
    """What a merge changes relative to this replica's head, and the conflicts."""

    edits: tuple[Edit, ...]
    conflicts: tuple[str, ...]
    """The slugs whose changes overlapped (each has a ``.conflict-`` companion)."""


def merge_memory(base: Memory | None, ours: Memory, theirs: Memory) -> Memory | None:
    """Both sides' edits of one memory merged, or ``None`` if any of them overlap."""
    empty = Memory(ours.slug, "", "")
    old = base or empty
    description = _pick(old.description, ours.description, theirs.description)
    if description is None:
        return None
    merged: list[str] = []
    for field in ("body", "code", "on_use"):
        text = merge3(getattr(old, field), getattr(ours, field), getattr(theirs, field))
        if text is None:
            return None
        merged.append(text)
    return Memory(ours.slug, description, merged[0], merged[1], merged[2])


def _pick(base: str, ours: str, theirs: str) -> str | None:
    if ours == theirs or theirs == base:
        return ours
    if ours == base:
        return theirs
    return None


def conflict_slug(slug: str, short: str, taken: set[str]) -> str:
    """A free slug naming ``slug``'s conflict with the replica at commit ``short``."""
    n = 1
    while True:
        suffix = f"{CONFLICT}{short}" + (f"-{n}" if n > 1 else "")
        name = slug[: SLUG_MAX - len(suffix)] + suffix
        if name not in taken:
            return name
        n += 1


def reconcile(base: Snapshot | None, ours: Snapshot, theirs: Snapshot) -> Reconciled:
    """The edits that make ``ours`` the merge of both replicas (see the module text)."""
    mine = ours.changed_since(base)
    other = theirs.changed_since(base)
    short = (theirs.commit or "")[:7]
    edits: list[Edit] = []
    conflicts: list[str] = []
    taken: set[str] = set()
    for slug in sorted(other):
        now = ours.get(slug)
        then = theirs.get(slug)
        if slug not in mine:
            if then != now:
                edits.append(Edit(OP, slug, then))
            continue
        if now == then or then is None:
            continue  # alike, or they deleted what we edited: the edit stays
        if now is None:
            edits.append(Edit(OP, slug, then))  # we deleted what they edited
            continue
        merged = merge_memory(base.get(slug) if base else None, now, then)
        if merged is not None:
            if merged != now:
                edits.append(Edit(OP, slug, merged))
            continue
        if not taken:
            taken = set(ours.slugs()) | set(theirs.slugs())
        name = conflict_slug(slug, short, taken)
        taken.add(name)
        edits.append(Edit(OP, name, replace(then, slug=name)))
        conflicts.append(slug)
    return Reconciled(tuple(edits), tuple(conflicts))
