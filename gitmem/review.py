"""Review: an operator's word on what a holder proposes.

    repo.review()                                 # every pending proposal, with its memories
    repo.approve("profile/team/run-1")            # merge all of it into the store
    repo.approve("profile/team/run-1", ["todo"])  # only ``todo``; the rest stays pending
    repo.reject("profile/team/run-1", ["draft"])  # put ``draft`` back as the store has it

A holder whose capability turns on ``review`` writes to a proposal of its own (see
:mod:`gitmem.store.proposals`). An approval is one merge commit of the proposal into the
store, made with the memory-aware merge that ``gitmem sync`` uses and held to the store's
limits and to the screens every write passes (secrets, then guard code); what it does
not take stays pending, carried onto the store's new head. A rejection is one commit on
the proposal that puts the rejected memories back as the store had them: the store is
not touched, so no other holder hears of it. A refusal changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gitmem import strategies
from gitmem.errors import InvalidArgument, LimitExceeded, NotFound, StorageError
from gitmem.githooks import check_adopted
from gitmem.lean.text import shown
from gitmem.limits import exceeded
from gitmem.store import APPROVED, Built, Pending, Snapshot, Storage, split_name
from gitmem.sync.reconcile import reconcile
from gitmem.trailers import read_capability_trailer
from gitmem.types import Author, Edit, Memory, Totals

__all__ = ["APPROVED", "Decision", "Proposal", "ProposedMemory", "approve", "reject", "review"]

_ATTEMPTS = 8
_NAMED = 3


@dataclass(frozen=True)
class ProposedMemory:
    """One pending memory: as the store has it now, and as the proposal would make it."""

    slug: str
    before: Memory | None
    after: Memory | None

    @property
    def op(self) -> str:
        if self.after is None:
            return "delete"
        return "create" if self.before is None else "update"


@dataclass(frozen=True)
class Proposal:
    """A pending proposal: whose it is, to which store, and what it would change."""

    store: str
    holder: str
    head: str
    base: str | None
    memories: tuple[ProposedMemory, ...]

    @property
    def name(self) -> str:
        """``STORE/HOLDER``, as ``gitmem approve`` and ``gitmem reject`` take it."""
        return f"{self.store}/{self.holder}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "proposal": self.name,
            "store": self.store,
            "holder": self.holder,
            "head": self.head,
            "base": self.base,
            "memories": [
                {
                    "slug": m.slug,
                    "op": m.op,
                    "before": _memory(m.before),
                    "after": _memory(m.after),
                }
                for m in self.memories
            ],
        }


def _memory(memory: Memory | None) -> dict[str, str] | None:
    if memory is None:
        return None
    return {
        "description": memory.description,
        "body": memory.body,
        "code": memory.code,
        "on_use": memory.on_use,
    }


@dataclass(frozen=True)
class Decision:
    """What an approval or a rejection did."""

    proposal: str
    store: str
    holder: str
    decision: str
    """``approved`` or ``rejected``."""
    slugs: tuple[str, ...]
    commit: str
    """The store's merge commit (an approval) or the proposal's commit (a rejection)."""
    pending: tuple[str, ...]
    """What is still pending after it."""
    conflicts: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "proposal": self.proposal,
            "store": self.store,
            "holder": self.holder,
            "decision": self.decision,
            "slugs": list(self.slugs),
            "commit": self.commit,
            "pending": list(self.pending),
            "conflicts": list(self.conflicts),
        }


def review(repo: Storage, store: str | None = None) -> list[Proposal]:
    """Every pending proposal (to ``store`` only, if given), by store and holder; a
    proposal's ref that names no readable commit of memories (a ref set by hand, or
    pushed) is passed over, so it hides no other."""
    found: list[Proposal] = []
    for at, holder in repo.proposals():
        if store is not None and at != store:
            continue
        try:
            pending = repo.pending(at, holder)
        except StorageError:
            continue
        if pending is not None and pending.memories:
            found.append(_proposal(repo, pending))
    return found


def _proposal(repo: Storage, pending: Pending) -> Proposal:
    now = repo.snapshot(pending.store)
    memories = tuple(
        ProposedMemory(slug, now.get(slug), after) for slug, after in pending.memories.items()
    )
    return Proposal(pending.store, pending.holder, pending.head, pending.base, memories)


def _pending(repo: Storage, name: str, slugs: Sequence[str]) -> tuple[Pending, list[str]]:
    """The proposal ``name`` with something pending, and the slugs chosen of it."""
    store, holder = split_name(name)
    pending = repo.pending(store, holder)
    if pending is None or not pending.memories:
        raise NotFound(f"nothing is pending on proposal {name!r}; `gitmem review` lists them")
    unknown = list(dict.fromkeys(s for s in slugs if s not in pending.memories))
    if unknown:
        # a caller's text is named cut short, and only a few of it: a refusal is one line
        named = ", ".join(shown(s) for s in unknown[:_NAMED])
        more = f" and {len(unknown) - _NAMED} more" if len(unknown) > _NAMED else ""
        raise InvalidArgument(
            f"proposal {name!r} has nothing pending for {named}{more}; it proposes "
            f"{', '.join(pending.memories)}"
        )
    return pending, list(dict.fromkeys(slugs)) or list(pending.memories)


def _chosen(
    repo: Storage,
    name: str,
    slugs: Sequence[str],
    decided: Mapping[str, Memory | None] | None,
    reviewed: str | None,
) -> tuple[Pending, list[str]]:
    """:func:`_pending`, read again for a decision's next attempt: ``decided`` holds the
    chosen memories as its first attempt read them, and a decision takes only what was
    read, so one the holder has rewritten since is refused (a memory it added since
    stays pending). ``reviewed``: the proposal's head as the operator reviewed it (a
    commit id or its first hex digits); a proposal that has moved on since is refused,
    so an approval takes what was read, not what the holder wrote after."""
    if decided is None:
        pending, chosen = _pending(repo, name, slugs)
        if reviewed is not None and not _names(reviewed, pending.head):
            raise InvalidArgument(
                f"proposal {name!r} is at {pending.head[:12]} now, not {reviewed[:40]}: its "
                "holder wrote to it after the review you read; nothing was decided; "
                "`gitmem review` shows it as it is now"
            )
        return pending, chosen
    pending = repo.pending(*split_name(name))
    now: Mapping[str, Memory | None] = pending.memories if pending is not None else {}
    changed = [slug for slug, memory in decided.items() if slug not in now or now[slug] != memory]
    if changed or pending is None:
        raise StorageError(
            f"the holder of proposal {name!r} rewrote {', '.join(changed)} while it was being "
            "decided; nothing was decided; `gitmem review` shows it as it is now"
        )
    return pending, list(decided)


def _names(reviewed: str, head: str) -> bool:
    """Whether ``reviewed`` (4 to 40 hex digits) names the commit ``head``."""
    from gitmem.lean.asof import commit_id  # a commit as --at names one

    reviewed = reviewed.strip().lower()
    if not commit_id(reviewed):
        raise InvalidArgument(
            f"--head {reviewed[:40]!r} is no commit id; give the head `gitmem review` printed "
            "(its first 12 hex digits will do)"
        )
    return head.startswith(reviewed)


def approve(
    repo: Storage, name: str, slugs: Sequence[str], author: Author, head: str | None = None
) -> Decision:
    """Merge proposal ``name`` (only ``slugs`` of it, if any are named) into its store as
    one commit, held to the store's limits and screens; what is not taken stays pending.
    The store's move and the proposal's are one compare-and-swap: a decision made on
    what it read, taken again if the store or the proposal moved meanwhile. ``head``:
    the proposal's head as reviewed; refused if the proposal has moved on since."""
    decided: dict[str, Memory | None] | None = None
    for _ in range(_ATTEMPTS):
        store = split_name(name)[0]
        # read before the proposal: if the store moves after, the swap below refuses
        ours = repo.head(store)
        pending, chosen = _chosen(repo, name, slugs, decided, head)
        decided = {slug: pending.memories[slug] for slug in chosen}
        mine = repo.snapshot(store, ours)
        theirs = repo.snapshot(store, pending.head)
        base = repo.snapshot(store, pending.base) if pending.base else None
        done = reconcile(base, mine, theirs)
        taken = set(chosen)
        proposed = theirs.changed_since(base)
        # the merge makes one conflict copy per conflict, in the same order
        copies = [e.slug for e in done.edits if e.slug not in proposed]
        copied = {copy for copy, of in zip(copies, done.conflicts, strict=False) if of in taken}
        edits = [e for e in done.edits if e.slug in taken or e.slug in copied]
        _check_limits(mine, theirs, edits)
        # the merge records its own part alone: what binds the store is carried on by
        # every merge (see gitmem.store.commit.CARRIED), never who wrote either side
        trailers = {APPROVED: pending.name}
        merged = repo.merge_commit(store, author, ours, pending.head, edits, trailers)
        _hold_history(repo, pending, ours)  # built, not yet published
        rest = [s for s in pending.memories if s not in taken]
        carried = _carry(repo, pending, rest, merged.commit) if rest else None
        if not repo.settle(
            store, pending.holder, ours, pending.head, merged=merged, amended=carried
        ):
            continue  # the store or the proposal moved: decide again on what they hold
        conflicts = tuple(c for c in done.conflicts if c in taken)
        return Decision(
            pending.name, store, pending.holder, "approved", tuple(chosen), merged.commit,
            tuple(rest), conflicts,
        )  # fmt: skip
    raise StorageError(
        f"the store or the proposal {name!r} kept changing while approving; nothing was "
        "approved; try again"
    )


def _hold_history(repo: Storage, pending: Pending, ours: str | None) -> None:
    """Refuse a proposal whose history breaks the store's rules: an approval makes each
    of its commits part of the store's history (what its review shows is only what it
    changes in all), and a proposal's branch may come by any road, `gitmem sync` or a
    plain `git fetch`, unchecked. Its commits are held as sync holds what it adopts,
    but for the limits their holder's binding recorded: the merge is held to the
    store's own, as a whole."""
    reader = repo.incoming()
    try:
        refused = check_adopted(
            reader, pending.store, ours, pending.head, repo.screens, limits=False
        )
    finally:
        reader.close()
    if refused:
        raise InvalidArgument(
            f"proposal {pending.name} holds a commit the store's rules refuse ({refused[0]}), "
            "which approving would put in the store's history; nothing was approved: "
            f"reject it (gitmem reject {pending.name}) and propose again"
        )


def _carry(repo: Storage, pending: Pending, rest: list[str], merged: str) -> Built | None:
    """Keep ``rest`` pending after a partial approval: one proposal commit on the
    merge that re-proposes them (``None`` where the merge leaves nothing to)."""
    at = repo.snapshot(pending.store, merged)
    edits: list[Edit] = []
    for slug in rest:
        memory, old = pending.memories[slug], at.get(slug)
        if memory == old:
            continue
        op = "delete" if memory is None else "create" if old is None else "update"
        edits.append(Edit(op, slug, memory))
    if not edits:
        return None
    name, email, _ = repo.made_by(pending.head)
    return repo.amendment(pending.store, pending.holder, merged, edits, Author(name, email))


def _check_limits(mine: Snapshot, theirs: Snapshot, edits: list[Edit]) -> None:
    """Refuse a merge that would leave the store over a limit it records: a memory it
    writes over a per-memory limit, or a figure over an aggregate limit that was not
    already over it by as much (a merge of replicas can leave a store over)."""
    found = read_capability_trailer(mine.trailers) or read_capability_trailer(theirs.trailers)
    if found is None:
        return
    limits, strategy = found[1], strategies.get(found[0])
    applies = strategy.aggregate_limits if strategy else frozenset[str]()
    count, chars, lines = mine.totals.count, mine.totals.chars, mine.totals.lines
    for edit in edits:
        old, new = mine.get(edit.slug), edit.memory
        count += (new is not None) - (old is not None)
        chars += (new.chars if new else 0) - (old.chars if old else 0)
        lines += (new.lines if new else 0) - (old.lines if old else 0)

    def index(edited: bool) -> Callable[[], list[str]] | None:
        """The index's lines before or after the merge, read only if a limit needs them."""
        if strategy is None:
            return None
        line = strategy.index_line

        def drawn() -> list[str]:
            every = {m.slug: m for m in mine.memories()}
            for edit in edits if edited else ():
                every.pop(edit.slug, None)
                if edit.memory is not None:
                    every[edit.slug] = edit.memory
            return [line(m) for m in every.values()]

        return drawn

    written = [e.memory for e in edits if e.memory is not None]
    after = exceeded(limits, applies, Totals(count, chars, lines), written, index(True))
    if not after:
        return
    was = exceeded(limits, applies, mine.totals, [], index(False))
    before = {e.limit: e.value for e in was if e.slug is None}
    worse = [e for e in after if e.slug is not None or e.value > before.get(e.limit, 0)]
    if worse:
        first = worse[0]
        raise LimitExceeded(
            f"approving would leave the store over its limits: "
            f"{'; '.join(e.describe() for e in worse)}; approve fewer memories, or reject some",
            limit=first.limit,
            attempted=first.value,
            maximum=first.maximum,
        )


def reject(
    repo: Storage, name: str, slugs: Sequence[str], author: Author, head: str | None = None
) -> Decision:
    """Reject proposal ``name`` (only ``slugs`` of it, if any are named): one commit on
    the proposal that puts them back as the store had them; the store is not touched,
    and the proposal moves only if neither it nor the store moved since it was read.
    ``head``: the proposal's head as reviewed; refused if it has moved on since."""
    decided: dict[str, Memory | None] | None = None
    for _ in range(_ATTEMPTS):
        store = split_name(name)[0]
        ours = repo.head(store)
        pending, chosen = _chosen(repo, name, slugs, decided, head)
        decided = {slug: pending.memories[slug] for slug in chosen}
        before = repo.snapshot(pending.store, pending.base) if pending.base else None
        at = repo.snapshot(pending.store, pending.head)
        edits: list[Edit] = []
        for slug in chosen:
            then, now = before.get(slug) if before else None, at.get(slug)
            op = "delete" if then is None else "create" if now is None else "update"
            edits.append(Edit(op, slug, then))
        amended = repo.amendment(store, pending.holder, pending.head, edits, author)
        if not repo.settle(store, pending.holder, ours, pending.head, amended=amended):
            continue  # the holder wrote meanwhile: decide on what it holds now
        rest = tuple(s for s in pending.memories if s not in chosen)
        return Decision(
            pending.name, store, pending.holder, "rejected", tuple(chosen), amended.commit, rest
        )
    raise StorageError(
        f"the proposal {name!r} kept changing while rejecting; nothing was rejected; try again"
    )
