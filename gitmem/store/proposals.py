"""Proposals: a holder's writes kept on a branch of their own until an operator reviews
them.

The proposal of holder ``H`` to store ``S`` is the ref ``refs/gitmem/proposals/S/H``,
beside the markers under ``refs/gitmem/``; anything else that waits for an operator's
word (a consolidation pass, say) keeps its branch in the same namespace, under a holder
name of its own. Its commits are ordinary memory commits carrying the
``Gitmem-Proposal`` trailer, and nothing but an approval moves the store's branch.

What a proposal proposes, its *pending* memories, is what its head changed since it
last met the store's line (their best common ancestor), less any memory the store
already holds alike. A proposal only moves forward: a write made after the store moved
on carries the pending memories onto the store's head, with the proposal's head as a
second parent; an approval merges the head into the store; a rejection is a commit on
the proposal that puts the rejected memories back as the store had them. A proposal
with nothing pending is settled, and its branch stays as the record of it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import NamedTuple

from dulwich.refs import Ref

from gitmem.errors import InvalidArgument, StorageError
from gitmem.lean.text import shown
from gitmem.store import commit as build
from gitmem.store.commit import Built
from gitmem.store.history import History
from gitmem.store.layout import PROPOSAL_PREFIX, check_store
from gitmem.store.locking import WriteLock, storage_error
from gitmem.store.objects import MemoryFiles, NewObjects, ObjectReader
from gitmem.store.refs import Refs
from gitmem.store.screen import Screen
from gitmem.store.snapshot import Snapshot
from gitmem.store.summaries import Summaries, Summary
from gitmem.types import Author, Change, Edit, Memory, Revision, Totals

__all__ = [
    "APPROVED",
    "PROPOSAL",
    "Built",
    "Overlay",
    "Pending",
    "Proposals",
    "carry",
    "proposal_name",
    "split_name",
]

PROPOSAL = "Gitmem-Proposal"
"""The trailer every commit of a proposal carries: the proposal's name."""
APPROVED = "Gitmem-Approved"
"""The trailer of an approval's merge commit: the proposal it approved."""

_ATTEMPTS = 200


def proposal_name(store: str, holder: str) -> str:
    """The name of ``holder``'s proposal to ``store`` (``<store>/<holder>``)."""
    check_store(store)
    if not holder or "/" in holder:
        raise InvalidArgument(
            f"holder {shown(holder, quoted=True)} is not usable; a holder's name has no '/'"
        )
    check_store(holder)
    return f"{store}/{holder}"


def split_name(name: str) -> tuple[str, str]:
    """The store and holder a proposal's name joins; ``InvalidArgument`` for another."""
    store, _, holder = name.rpartition("/")
    if not store:
        raise InvalidArgument(
            f"{shown(name, quoted=True)} names no proposal; a proposal is STORE/HOLDER, as "
            "`gitmem review` lists them"
        )
    proposal_name(store, holder)
    return store, holder


class Pending(NamedTuple):
    """What one proposal has pending: the store's commit it last met (``base``), its
    head, and each pending memory as the proposal has it (``None``: deleted)."""

    store: str
    holder: str
    base: str | None
    head: str
    memories: Mapping[str, Memory | None]

    @property
    def name(self) -> str:
        return f"{self.store}/{self.holder}"


class Overlay(Snapshot):
    """The store as of its head (``commit``) with a proposal's pending memories laid
    over it: what a holder whose writes await review reads."""

    overlaid = True

    def __init__(
        self,
        reader: ObjectReader,
        history: History,
        store: str,
        commit: str | None,
        laid: Mapping[str, MemoryFiles | None],
    ) -> None:
        super().__init__(reader, history, store, commit)
        self.laid = dict(laid)
        """The pending memories' files (``None``: deleted in the proposal)."""

    def _files(self, slug: str) -> MemoryFiles | None:
        if slug in self.laid:
            return self.laid[slug]
        return super()._files(slug)

    def _listing(self) -> dict[str, MemoryFiles]:
        if self._all is None:
            listing = dict(super()._listing())
            for slug, found in self.laid.items():
                if found is None:
                    listing.pop(slug, None)
                else:
                    listing[slug] = found
            self._all = listing
        return self._all

    @property
    def totals(self) -> Totals:
        return self._count()

    @property
    def peaks(self) -> Totals:
        return super().peaks.peak(self.totals)

    def summaries(
        self, kept: Summaries, *, remember: bool = True, write: bool = True
    ) -> list[tuple[str, Summary]]:
        # an overlaid view is never kept as the store's listing
        return [(m.slug, (m.description, m.chars, m.lines)) for m in self.memories()]


def carry(change: Change, laid: Mapping[str, Memory | None], on: Snapshot) -> Change | None:
    """``change``, made on the store with ``laid`` over it, remade on ``on`` (the store's
    head) with the laid memories riding along; ``None`` if the two together leave the
    store as ``on`` has it."""
    final: dict[str, Memory | None] = dict(laid)
    ops: dict[str, str] = {}
    for edit in change.edits:
        final[edit.slug] = edit.memory
        ops[edit.slug] = edit.op
    edits: list[Edit] = []
    for slug, memory in final.items():
        old = on.get(slug)
        if memory == old:
            continue
        if memory is None:
            op = "delete"
        elif old is None:
            op = "create"
        else:
            op = ops.get(slug, "update")
            op = op if op in ("update", "edit", "write") else "update"
        edits.append(Edit(op, slug, memory))
    if not edits:
        return None
    edits.sort(key=lambda e: e.slug != change.slug)
    first = edits[0]
    return Change(first.op, first.slug, first.memory, change.trailers, tuple(edits[1:]))


class Proposals:
    """The part of a repository that keeps proposals (a base of ``Storage``)."""

    screens: list[Screen]
    _reader: ObjectReader
    _refs: Refs
    _lock: WriteLock

    def head(self, store: str) -> str | None:
        raise NotImplementedError

    def snapshot(self, store: str, commit: str | None = None) -> Snapshot:
        raise NotImplementedError

    def merge_base(self, store: str, ours: str, theirs: str) -> str | None:
        raise NotImplementedError

    def _history(self, store: str) -> History:
        raise NotImplementedError

    def _ref(self, store: str) -> Ref:
        raise NotImplementedError

    def _maybe_pack(self) -> None:
        raise NotImplementedError

    def _expect(self, store: str, head: str | None, *, files: bool, doing: str) -> None:
        raise NotImplementedError

    # -- reading -------------------------------------------------------------------

    def proposals(self) -> list[tuple[str, str]]:
        """Every proposal this replica holds, settled ones too: (store, holder), sorted."""
        found: list[tuple[str, str]] = []
        for name in self._refs.names(PROPOSAL_PREFIX):
            try:
                found.append(split_name(name))
            except InvalidArgument:
                continue  # a ref no gitmem made
        return sorted(found)

    def proposal_head(self, store: str, holder: str) -> str | None:
        """The head of ``holder``'s proposal to ``store``, or ``None``."""
        return self._refs.read(_ref(store, holder))

    def pending(self, store: str, holder: str) -> Pending | None:
        """What ``holder``'s proposal to ``store`` has pending (``None``: no proposal);
        empty ``memories`` once it is settled."""
        head = self.proposal_head(store, holder)
        if head is None:
            return None
        base, laid = self._laid(store, self.head(store), head)
        at = self.snapshot(store, head)
        memories = {slug: at.get(slug) if found else None for slug, found in laid.items()}
        return Pending(store, holder, base, head, memories)

    def proposal_view(self, store: str, holder: str) -> Snapshot:
        """The store as ``holder`` reads it: its head with the holder's pending memories
        laid over it."""
        head = self.head(store)
        proposal = self.proposal_head(store, holder)
        laid = self._laid(store, head, proposal)[1] if proposal else {}
        if not laid:
            return self.snapshot(store, head)
        return Overlay(self._reader, self._history(store), store, head, laid)

    def _laid(
        self, store: str, head: str | None, proposal: str
    ) -> tuple[str | None, dict[str, MemoryFiles | None]]:
        """The store's commit ``proposal`` last met, and the pending memories' files."""
        base = self.merge_base(store, head, proposal) if head else None
        at = self.snapshot(store, proposal)
        before = self.snapshot(store, base) if base else None
        now = self.snapshot(store, head) if head else None
        laid: dict[str, MemoryFiles | None] = {}
        for slug in sorted(at.changed_since(before)):
            found = at.memory_files(slug)
            held = now.memory_files(slug) if now is not None else None
            if found != held:
                laid[slug] = found
        return base, laid

    # -- writing -------------------------------------------------------------------

    def propose(
        self, store: str, holder: str, author: Author, fn: Callable[[Snapshot], Change]
    ) -> list[Revision]:
        """Publish the change ``fn`` makes to the store as ``holder`` reads it (the
        store with its proposal over it) on the holder's proposal, as one commit; the
        store's branch is left as it is. ``fn`` is judged as ``publish`` judges it."""
        name = proposal_name(store, holder)
        ref = _ref(store, holder)
        for _ in range(_ATTEMPTS):
            proposal = self._refs.read(ref)
            head = self.head(store)
            self._expect(store, head, files=False, doing="proposals are for memory stores")
            base, laid = self._laid(store, head, proposal) if proposal else (None, {})
            view = (
                Overlay(self._reader, self._history(store), store, head, laid)
                if laid
                else self.snapshot(store, head)
            )
            change = fn(view)
            change = replace(change, trailers={**change.trailers, PROPOSAL: name})
            built = self._build(store, head, proposal, base, view, change, author)
            new = built.new
            if new is None:
                return built.result
            if self._move(ref, proposal, new, f"proposing to {store}"):
                self._reader.remember(new, built.facts)
                self._maybe_pack()
                return built.result
        raise StorageError(f"the proposal {name!r} kept changing while publishing; try again")

    def _build(
        self,
        store: str,
        head: str | None,
        proposal: str | None,
        base: str | None,
        view: Snapshot,
        change: Change,
        author: Author,
    ) -> build.Attempt[list[Revision]]:
        """The proposal's next commit: on its own head while the store has not moved
        past where it last met it; else on the store's head, carrying what is pending."""
        reader = self._reader
        if isinstance(view, Overlay):
            on = self.snapshot(store, head)
            carried = carry(change, {s: view.get(s) for s in view.laid}, on)
            if base == head or carried is None:
                assert proposal is not None
                at = self.snapshot(store, proposal)
                return build.memory_write(reader, at, change, author, self.screens)
            return build.memory_write(reader, on, carried, author, self.screens, also_on=proposal)
        on = self.snapshot(store, head)
        held = proposal is None or (
            head is not None and self.merge_base(store, head, proposal) == proposal
        )
        also = None if held else proposal
        return build.memory_write(reader, on, change, author, self.screens, also_on=also)

    def amend_proposal(
        self,
        store: str,
        holder: str,
        old: str,
        edits: Sequence[Edit],
        author: Author,
        on: str | None = None,
    ) -> str | None:
        """Move ``holder``'s proposal from ``old`` to one commit of ``edits`` on ``on``
        (default ``old``; any other must descend from it): a reviewer's decision, so
        no screen judges it. Returns the commit, or ``None`` if the proposal moved."""
        built = self.amendment(store, holder, on or old, edits, author)
        name = proposal_name(store, holder)
        if not self._move(_ref(store, holder), old, built.new, f"amending {name}"):
            return None
        self._reader.remember(built.new, built.facts)
        return built.commit

    def amendment(
        self, store: str, holder: str, on: str, edits: Sequence[Edit], author: Author
    ) -> Built:
        """One commit of ``edits`` on ``on`` for ``holder``'s proposal, built and not
        yet published (a reviewer's decision: no screen judges it); what it builds on
        may itself be built and not yet published."""
        name = proposal_name(store, holder)
        at = self.snapshot(store, on)
        first = edits[0]
        change = Change(first.op, first.slug, first.memory, {PROPOSAL: name}, tuple(edits[1:]))
        checked = build.check_change(change)
        olds = [at.get(e.slug) for e in checked]
        built = build.build_memories(self._reader, at, change, checked, olds, author)
        assert built.new is not None
        self._reader.remember(built.new, built.facts)  # to be read before it is published
        return Built(built.new, built.facts)

    def settle(
        self,
        store: str,
        holder: str,
        head: str | None,
        proposal: str,
        *,
        merged: Built | None = None,
        amended: Built | None = None,
    ) -> bool:
        """Record a reviewer's decision on ``holder``'s proposal as one compare-and-swap
        of both refs: the store's branch from ``head`` to ``merged`` (held where it is,
        if none) and the proposal from ``proposal`` to ``amended`` (likewise). ``False``,
        nothing moved, if either moved since the decision read it: a holder's write that
        lands meanwhile is neither lost nor taken unseen."""
        built = [b for b in (merged, amended) if b is not None]
        moves = [
            (self._ref(store), head, merged.commit if merged else head),
            (_ref(store, holder), proposal, amended.commit if amended else proposal),
        ]
        records = [r for b in built for r in b.new.records]
        try:
            with self._lock.held():
                if not self._refs.swap_all(moves, records):
                    return False
        except OSError as exc:
            raise storage_error(exc, f"deciding on {proposal_name(store, holder)}") from exc
        for b in built:
            self._reader.remember(b.new, b.facts)
        self._maybe_pack()
        return True

    def _move(self, ref: Ref, old: str | None, new: NewObjects, doing: str) -> bool:
        try:
            with self._lock.held():
                return self._refs.swap(ref, old, new.commit, new.records)
        except OSError as exc:
            raise storage_error(exc, doing) from exc


def _ref(store: str, holder: str) -> Ref:
    return Ref((PROPOSAL_PREFIX + proposal_name(store, holder)).encode())
