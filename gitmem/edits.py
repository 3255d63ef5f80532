"""The write rules, once: each builds the change a mutation publishes.

A builder is a function of the store's head (``Snapshot -> Change``): the store runs it
against the head, and again against a newer head whenever another writer publishes
first, so a change that is no longer valid is refused, not forced. Every builder holds
its change to :class:`Rules` (the limits a binding writes under) before handing it on.

An agent and an operator meet the same rules in different words: the wording is a
:class:`Voice`, supplied by the caller; the rule is here.

    from gitmem import edits
    build = edits.replace_once(rules, "runbook", "port 80", "port 443")
    repo.mutate(store, author, build)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Protocol

from gitmem.errors import AlreadyExists, InvalidArgument, NotFound, StaleRevision, Unchanged
from gitmem.limits import Baseline, Limits, check_write, index_size
from gitmem.store import Snapshot
from gitmem.types import Change, Edit, Memory, check_line, check_slug, check_text

__all__ = [
    "Build",
    "Rules",
    "Voice",
    "based_on",
    "create",
    "delete",
    "existing",
    "overwrite",
    "rename",
    "replace_once",
    "revise",
]

Build = Callable[[Snapshot], Change]
"""A change as a function of the head it applies to."""


class Voice(Protocol):
    """How a refusal of the write rules is worded for whoever made the write."""

    def missing(self, slug: str) -> str:
        """There is no memory ``slug``."""
        ...

    def exists(self, slug: str) -> str:
        """A create named ``slug``, which exists."""
        ...

    def text_missing(self, slug: str) -> str:
        """The text to replace does not occur in ``slug``'s body."""
        ...

    def text_repeated(self, slug: str, times: int) -> str:
        """The text to replace occurs ``times`` times in ``slug``'s body."""
        ...

    def would_empty(self, slug: str) -> str:
        """The write would leave ``slug``'s body empty."""
        ...


def _no_index(memory: Memory) -> str:
    return ""


@dataclass(frozen=True)
class Rules:
    """What a store's writes are held to: the limits, which aggregates count, the
    trailers every commit records, and the voice that words a refusal."""

    voice: Voice
    limits: Limits = field(default_factory=Limits)
    applies: frozenset[str] = frozenset()
    """Which of maxCount, maxTotalLen and maxLenIndex bound the set."""
    index_line: Callable[[Memory], str] = _no_index
    """A memory's line in the pinned index, measured when maxLenIndex applies."""
    trailers: Mapping[str, str] = field(default_factory=lambda: dict[str, str]())

    def check(self, before: Snapshot, change: Change) -> None:
        """Refuse ``change`` if the set it leaves breaches a limit (a set already over
        an aggregate limit, as a merge may leave it, must be brought down by the change)."""
        count, chars = before.totals.count, before.totals.chars

        def index_before() -> int:
            return index_size(self.index_line(m) for m in before.memories())

        baseline = Baseline(count, chars, index_before)
        now: dict[str, Memory | None] = {}
        # removals first: the limits judge the set the change leaves, not a midpoint
        for edit in sorted(change.edits, key=lambda e: e.memory is not None):
            old = now[edit.slug] if edit.slug in now else before.readable(edit.slug)
            if edit.memory is not None:

                def everyone() -> Iterable[Memory]:
                    for m in before.memories():
                        if m.slug not in now:
                            yield m
                    yield from (m for m in now.values() if m is not None)

                check_write(
                    self.limits,
                    self.applies,
                    old,
                    edit.memory,
                    everyone,
                    count=count,
                    total_chars=chars,
                    index_line=self.index_line,
                    baseline=baseline,
                )
            count += (edit.memory is not None) - (old is not None)
            chars += (edit.memory.chars if edit.memory else 0) - (old.chars if old else 0)
            now[edit.slug] = edit.memory

    def change(
        self, before: Snapshot, op: str, slug: str, memory: Memory | None, *also: Edit
    ) -> Change:
        """The change ``op`` makes to ``slug`` (and ``also``), once it passes the limits."""
        change = Change(op, slug, memory, self.trailers, also=also)
        self.check(before, change)
        return change


def existing(snapshot: Snapshot, slug: str, voice: Voice) -> Memory:
    """The memory ``slug`` at ``snapshot``; ``NotFound`` in ``voice`` if there is none."""
    memory = snapshot.get(slug)
    if memory is None:
        raise NotFound(voice.missing(slug))
    return memory


def create(rules: Rules, memory: Memory, op: str = "create") -> Build:
    """A new memory; refused if its slug is taken."""
    slug = check_slug(memory.slug)
    check_line(memory.description, "description")
    for value, what in (
        (memory.body, "body"),
        (memory.code, "code"),
        (memory.on_use, "onUse script"),
    ):
        check_text(value, what)

    def build(snapshot: Snapshot) -> Change:
        if slug in snapshot:
            raise AlreadyExists(rules.voice.exists(slug))
        return rules.change(snapshot, op, slug, memory)

    return build


def overwrite(rules: Rules, memory: Memory, op: str = "write") -> Build:
    """Write ``memory`` whole, creating it or replacing what its slug holds; content
    byte-identical to the held memory (a missing one holds nothing) raises
    ``Unchanged`` and publishes nothing."""
    slug = check_slug(memory.slug)
    for value, what in ((memory.description, "description"), (memory.body, "body")):
        check_text(value, what)

    def build(snapshot: Snapshot) -> Change:
        old = snapshot.readable(slug)  # one that does not read is replaced, not refused
        held = old if old is not None else Memory(slug, memory.description, "")
        if held == memory:
            raise Unchanged(f"`{slug}` already holds exactly this text; nothing was written")
        return rules.change(snapshot, op, slug, memory)

    return build


def revise(
    rules: Rules,
    slug: str,
    *,
    op: str,
    description: str | None = None,
    body: str | None = None,
    halves: tuple[str, str] | None = None,
) -> Build:
    """Replace the parts given (``halves`` is ``(code, on_use)``); the rest stay."""
    check_slug(slug)
    if description is not None:
        check_text(description, "description")
    if body is not None:
        check_text(body, "body")
        if not body:
            raise InvalidArgument(rules.voice.would_empty(slug))
    if halves is not None:
        check_text(halves[0], "code")
        check_text(halves[1], "onUse script")

    def build(snapshot: Snapshot) -> Change:
        old = existing(snapshot, slug, rules.voice)
        new = replace(
            old,
            description=_described(old, description),
            body=old.body if body is None else body,
        )
        if halves is not None:
            new = replace(new, code=halves[0], on_use=halves[1])
        return rules.change(snapshot, op, slug, new)

    return build


def _described(old: Memory, description: str | None) -> str:
    """The description after an edit that gives ``description`` (``None``: keeps it):
    one line, when it is a new one; the one a memory holds from before that rule stays
    (a save sending it back unchanged included)."""
    if description is None or description == old.description:
        return old.description
    return check_line(description, "description")


def replace_once(
    rules: Rules,
    slug: str,
    old_text: str,
    new_text: str,
    *,
    op: str = "edit",
    description: str | None = None,
) -> Build:
    """Search/replace: ``old_text`` must occur exactly once in the body."""
    check_slug(slug)
    check_text(old_text, "old_text")
    check_text(new_text, "new_text")
    if description is not None:
        check_text(description, "description")
    if not old_text:
        raise InvalidArgument("the text to replace is empty; quote the exact text you are changing")

    def build(snapshot: Snapshot) -> Change:
        old = existing(snapshot, slug, rules.voice)
        found = old.body.count(old_text)
        if found == 0:
            raise NotFound(rules.voice.text_missing(slug))
        if found > 1:
            raise InvalidArgument(rules.voice.text_repeated(slug, found))
        body = old.body.replace(old_text, new_text, 1)
        if not body:
            raise InvalidArgument(rules.voice.would_empty(slug))
        new = replace(old, body=body, description=_described(old, description))
        return rules.change(snapshot, op, slug, new)

    return build


def delete(rules: Rules, slug: str, op: str = "delete") -> Build:
    """Remove a memory (its history stays)."""
    check_slug(slug)

    def build(snapshot: Snapshot) -> Change:
        existing(snapshot, slug, rules.voice)
        return rules.change(snapshot, op, slug, None)

    return build


def rename(rules: Rules, old: str, new: str, op: str = "rename") -> Build:
    """Move a memory to a new slug in one commit: both slugs' histories show it."""
    check_slug(old)
    check_slug(new)
    if old == new:
        raise InvalidArgument(f"`{old}` already has that name; give a different new name")

    def build(snapshot: Snapshot) -> Change:
        memory = existing(snapshot, old, rules.voice)
        if new in snapshot:
            raise AlreadyExists(rules.voice.exists(new))
        return rules.change(snapshot, op, new, replace(memory, slug=new), Edit(op, old, None))

    return build


def based_on(build: Build, slug: str, revision: int) -> Build:
    """``build``, refused unless ``slug``'s latest revision is still ``revision`` (0: it
    was never written): a compare-and-swap on one memory, so a save made from an old
    text never overwrites a newer one. Checked against every head the store retries on."""
    check_slug(slug)
    if revision < 0:
        raise InvalidArgument(f"revision {revision} is not a revision number; use 0 or more")

    def build_if_current(snapshot: Snapshot) -> Change:
        current = snapshot.revision(slug)
        if current != revision:
            raise StaleRevision(
                f"{slug!r} is at revision {current}, not {revision}: someone saved it "
                "since you read it; read the newer text, then save again",
                expected=revision,
                current=current,
            )
        return build(snapshot)

    return build_if_current
