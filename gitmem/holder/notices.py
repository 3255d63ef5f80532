"""Notices: what other holders of a store changed since this holder's last turn.

Each holder keeps its own watermark, persisted as a marker ref so a restarted harness
keeps it, and re-read at each take so holders of one instance in several processes
deliver each notice once between them. Binding writes nothing: a holder remembers the
head it joined at, and the watermark is written the first time notices are taken (or
swept by a compaction).
"""

from __future__ import annotations

from gitmem.holder.written import Written
from gitmem.lean.text import one_line
from gitmem.store import APPROVED, PROPOSAL, Snapshot, Storage
from gitmem.strategies import Strategy
from gitmem.types import SYNC_AUTHOR, Revision

__all__ = ["Notices"]

HEAD = "Another agent sharing your memories has made changes since your last turn:"
SYNCED = (
    "Another agent sharing your memories has made changes since your last turn, some of "
    "them on another replica of this repository, brought here by `gitmem sync`:"
)


class Notices:
    """The notices of holder ``instance``: its own writes are the commits it recorded as
    it published them (:meth:`wrote`), never those that merely carry its name."""

    def __init__(self, repo: Storage, store: str, instance: str, strategy: Strategy) -> None:
        self._repo = repo
        self._store = store
        self._written = Written(repo.directory, instance, store)
        self._strategy = strategy
        self._marker = f"notices/{instance}/{store}"
        found = repo.marker(self._marker)
        # a holder that joins late starts at the head, not with a backlog; "" stands for
        # "before the store's first commit"
        self._seen: str | None = found if found is not None else (repo.head(store) or "")
        self._persisted = found is not None
        self.span: tuple[str | None, str] | None = None
        """The commits the last notice taken covers: those after ``from`` (``None``:
        from the store's first commit) up to ``to``; ``None`` if it gave no notice."""

    def wrote(self, commits: list[str]) -> None:
        """Record ``commits``, which this holder has just published, as its own."""
        self._written.add(commits)

    def take(self, head: str | None) -> str | None:
        """The notice text (or ``None``), delivered once: the watermark moves to
        ``head``, the store's head as the caller has just read it; :attr:`span` says
        which commits it covers. A reading of the past has none."""
        self.span = None
        if self._repo.pinned(self._store) is not None:
            return None
        # the watermark is the instance's, not this object's: another process holding
        # the same instance (an MCP server beside its client's hooks) may have moved it
        found = self._repo.marker(self._marker)
        if found is not None:
            self._seen, self._persisted = found, True
        base = self._seen or None
        self._mark(head)
        if head is None or base == head:
            return None
        revisions = self._repo.revisions_since(self._store, base, head)
        proposed, approvals = self._reviewed(base, head, revisions)
        mine = self._written.commits()
        # a proposal's own commits are news to no one: its approval's merge carries
        # exactly what was approved
        theirs = [r for r in revisions if r.commit not in mine and r.commit not in proposed]
        now = self._repo.snapshot(self._store, head)
        theirs = self._not_echoes(revisions, theirs, now, approvals, mine)
        if not theirs:
            return None
        before = self._repo.snapshot(self._store, base) if base else None
        order = list(dict.fromkeys(r.slug for r in reversed(theirs)))[::-1]
        # a memory the store held neither before nor now changed nothing this holder
        # could read (one a proposal made and the approval left out, say)
        order = [s for s in order if s in now or (before is not None and s in before)]
        if not order:
            return None
        # a sync's merge commit is the sign that changes came from another replica
        synced = any(r.author == SYNC_AUTHOR.name for r in revisions)
        lines = [SYNCED if synced else HEAD, ""]
        for slug in order:
            memory = now.get(slug)
            if memory is None:
                lines.append(f"- deleted `{slug}`")
                continue
            verb = "updated" if before is not None and slug in before else "added"
            about = f" — {one_line(memory.description)}" if memory.description else ""
            lines.append(f"- {verb} `{slug}`{about}")
            if self._strategy.notice_bodies:
                lines.extend(f"  {line}" for line in memory.body.splitlines())
        lines += ["", self._strategy.notice_tail]
        self.span = (base, head)
        return "\n".join(lines)

    def _reviewed(
        self, base: str | None, head: str, revisions: list[Revision]
    ) -> tuple[set[str], set[str]]:
        """The commits among ``revisions`` that a proposal made, and the approvals'.

        An approval is a merge carrying the ``Gitmem-Approved`` trailer, and a
        proposal's commit is one such a merge brought in through its later parents:
        the merge names every memory it changed against its first parent, so it tells
        of them itself. A commit on the store's own first-parent line is never a
        proposal's, whatever its trailers say: it reached the store on its own, and is
        told of as any write is."""
        proposed: set[str] = set()
        approvals: set[str] = set()
        if not self._repo.proposals():
            return proposed, approvals  # no proposal here: no commit to look at
        line: set[str] = set()
        at: str | None = head
        while at is not None and at != base and at not in line:
            if base is not None and self._repo.descends(self._store, base, at):
                break  # the line met what the watermark already covered
            line.add(at)
            at = next(iter(self._repo.parents(at)), None)
        for commit in line | {r.commit for r in revisions}:
            if len(self._repo.parents(commit)) > 1 and APPROVED in self._repo.made_by(commit)[2]:
                approvals.add(commit)
        for merge in approvals:
            first = self._repo.parents(merge)[0]
            brought = {r.commit for r in self._repo.revisions_since(self._store, first, merge)}
            for commit in brought - line:
                if PROPOSAL in self._repo.made_by(commit)[2]:
                    proposed.add(commit)
        return proposed, approvals

    def _not_echoes(
        self,
        revisions: list[Revision],
        theirs: list[Revision],
        now: Snapshot,
        approvals: set[str],
        mine: set[str],
    ) -> list[Revision]:
        """``theirs`` without a merge's echo of this holder's own write: a sync merge
        made on another replica names the slugs it took from this one, an approval
        names the slugs it took from this holder's proposal, and a slug that only such
        a merge touched and that still reads as this holder wrote it is news to no one."""
        own: dict[str, Revision] = {r.slug: r for r in revisions if r.commit in mine}
        others = {
            r.slug for r in theirs if r.author != SYNC_AUTHOR.name and r.commit not in approvals
        }
        echoes: set[str] = set()
        for slug, wrote in own.items():
            if slug in others:
                continue
            memory = now.get(slug)
            if (memory is None) if wrote.removed else memory == wrote.memory():
                echoes.add(slug)
        return [r for r in theirs if r.slug not in echoes]

    def sweep(self) -> None:
        """A compaction boundary: pending notices are dropped, not re-issued. Before
        the store's first commit the watermark is kept as "before the first commit", so
        a holder in a later process (a client's next hook) is told of the first writes."""
        if self._repo.pinned(self._store) is None:
            self._mark(self._repo.head(self._store))

    def _mark(self, head: str | None) -> None:
        if self._persisted and (head or "") == self._seen:
            return
        self._repo.set_marker(self._marker, head)
        self._seen, self._persisted = head or "", True
