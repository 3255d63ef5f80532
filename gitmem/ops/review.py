"""What the review commands report: the pending proposals with their diffs, and an
approval's or a rejection's outcome, as text and as JSON (see ``docs/review.md``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from gitmem.ops.diffs import diff_stat, memory_diff

if TYPE_CHECKING:
    from gitmem.repository import Repository
    from gitmem.review import Decision, Proposal
    from gitmem.types import Author

__all__ = ["approve", "decided", "proposal_dict", "reject", "review"]


def proposal_dict(proposal: Proposal) -> dict[str, Any]:
    """A pending proposal as JSON: its name, holder and store, and each memory with its
    diff against the store."""
    data = proposal.to_dict()
    for memory, row in zip(proposal.memories, data["memories"], strict=True):
        text = memory_diff(memory.slug, memory.before, memory.after)
        added, removed = diff_stat(text)
        row |= {"diff": text, "added": added, "removed": removed}
    return data


class _Review:
    """``gitmem review``: every pending proposal, named by holder and store."""

    def __init__(self, proposals: list[Proposal]) -> None:
        self.proposals = proposals

    def pieces(self) -> Iterable[str]:
        if not self.proposals:
            yield "No proposals are pending.\n"
            return
        for proposal in self.proposals:
            count = len(proposal.memories)
            yield (
                f"proposal {proposal.name} at {proposal.head[:12]}: holder {proposal.holder} "
                f"on store {proposal.store}, {count} {'memory' if count == 1 else 'memories'} "
                "pending\n"
            )
            for memory in proposal.memories:
                yield f"  {memory.op} {memory.slug}\n"
                yield from (
                    f"    {line}\n"
                    for line in memory_diff(memory.slug, memory.before, memory.after).splitlines()
                )
            yield "\n"

    def to_dict(self) -> object:
        return {"proposals": [proposal_dict(p) for p in self.proposals]}


class _Decided:
    """``gitmem approve`` or ``gitmem reject``: what the decision did."""

    def __init__(self, decision: Decision) -> None:
        self.decision = decision

    def pieces(self) -> Iterable[str]:
        d = self.decision
        where = (
            f"merged into store {d.store} as {d.commit[:12]}"
            if d.decision == "approved"
            else f"put back on the proposal as {d.commit[:12]}; the store is unchanged"
        )
        yield f"{d.decision.capitalize()} {', '.join(d.slugs)} of proposal {d.proposal}: {where}.\n"
        if d.conflicts:
            yield f"Conflicts kept beside the store's text: {', '.join(d.conflicts)}.\n"
        if d.pending:
            yield f"Still pending: {', '.join(d.pending)}.\n"

    def to_dict(self) -> object:
        return self.decision.to_dict()


def decided(decision: Decision) -> _Decided:
    """The report of an approval or a rejection already made."""
    return _Decided(decision)


def review(repo: Repository, store: str | None = None) -> _Review:
    """``gitmem review``: the pending proposals (to ``store`` only, if given)."""
    return _Review(repo.review(store))


def approve(
    repo: Repository, proposal: str, slugs: Sequence[str], author: Author, head: str | None = None
) -> _Decided:
    """``gitmem approve``: merge the proposal (or the named memories of it)."""
    return _Decided(repo.approve(proposal, slugs, author=author, head=head))


def reject(
    repo: Repository, proposal: str, slugs: Sequence[str], author: Author, head: str | None = None
) -> _Decided:
    """``gitmem reject``: put the proposal (or the named memories of it) back."""
    return _Decided(repo.reject(proposal, slugs, author=author, head=head))
