"""What the receiving side holds a store to, and what a pushed commit may change of it.

A store's kind (memories or files) and the capability its binding recorded (strategy
and limits) are read from the receiving side's own history, as of the commit a push or
a sync builds on, never from what an arriving commit claims. :func:`hold_record` takes
one arriving commit at a time: one that would change the store's kind, or loosen its
recorded limits, is refused (an operator's deliberate widening is adopted by sync).
:class:`Admitted` gives what the store admits (its allowlist and guard code), as of
that same commit.
"""

from __future__ import annotations

from functools import partial

from gitmem.store.memoryfiles import ALLOWLIST, GUARD
from gitmem.store.message import FILES, MEMORIES, kind_of
from gitmem.store.pushcheck import PushCommit, PushReader, Refused
from gitmem.store.screen import Screen, Write

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import NamedTuple

    from gitmem.limits import Limits
    from gitmem.store.lineage import Lineage
else:
    from gitmem.lean.tuples import NamedTuple  # a push hook's process never loads typing

__all__ = ["Admitted", "Record", "carry_lineage", "hold_record", "lineage_of", "record_at"]


class Record(NamedTuple):
    """What the receiving side holds a store to: its kind and the capability recorded
    as of the commit a push builds on (``None``: nothing recorded yet)."""

    kind: str | None
    capability: tuple[str, Limits] | None


def record_at(reader: PushReader, old: str | None) -> Record:
    """The record as of commit ``old``, the head a push or a sync builds on (``None``:
    a new store, which takes both from the first commit that records them)."""
    if old is None:
        return Record(None, None)
    return Record(kind_of(reader.standing(old)), _recorded_at(reader, old))


def carry_lineage(reader: PushReader, store: str, head: str) -> None:
    """Take what the last push kept of ``head``'s line (see :mod:`gitmem.store.lineage`),
    if it kept it of that head: its revisions and its capability, found then without
    walking the line back to its first commit."""
    from gitmem.store import lineage

    kept = lineage.kept(reader.git_dir, store, head)
    if kept is None:
        return
    capability = None
    if kept.capability is not None:
        from gitmem.trailers import CAPABILITY_TRAILER, read_capability_trailer

        capability = read_capability_trailer({CAPABILITY_TRAILER: kept.capability})
        if capability is None:
            return  # as no commit records it: the line is walked
    reader.carry_revisions(head, kept.revisions, kept.exact)
    reader.memo[head] = capability


def lineage_of(reader: PushReader, head: str) -> Lineage:
    """What ``head``'s line records, for the next push onto it (see
    :mod:`gitmem.store.lineage`): asked once every commit of a push has been checked,
    ``head`` the last, when its revisions and its capability are known."""
    from gitmem.store.lineage import Lineage

    revisions, exact = reader.revisions(head)
    found = _recorded_at(reader, head)
    text = None
    if found is not None:
        from gitmem.trailers import CAPABILITY_TRAILER, capability_trailer

        text = capability_trailer(*found)[CAPABILITY_TRAILER]
    return Lineage(dict(revisions), exact, text)


def hold_record(
    reader: PushReader,
    record: Record,
    commit: PushCommit,
    widened: list[str] | None,
    problems: list[Refused],
) -> tuple[Record, tuple[str, Limits] | None]:
    """Add to ``problems`` a commit that would change the store's kind or loosen its
    recorded limits (unless ``widened`` takes an operator's deliberate widening); the
    record as it stands after the commit, and the capability the commit's writes are
    held to (the store's own, where the commit's would loosen it). A commit gitmem did
    not make claims neither."""
    facts = commit.facts
    kind = kind_of(facts) if facts is not None else record.kind
    if record.kind is not None and kind != record.kind:
        problems.append(
            Refused(
                "kind",
                commit.sha,
                f"it writes the store as a {_KIND_NAMES[kind or MEMORIES]}, but the store is "
                f"a {_KIND_NAMES[record.kind]}; a store's kind never changes",
            )
        )
    own = _capability(facts.extra) if facts is not None else None
    found = own if own is not None else _recorded_at(reader, commit.parent)
    # what _recorded_at finds for the commit itself: the next commit's parent, found at once
    reader.memo[commit.sha] = found
    held = record.capability
    if held is not None and facts is not None and own is None and _shown_at(reader, commit):
        # a commit gitmem makes carries the record forward; one that leaves it out would
        # leave every tool reading the store's head to find no limits at all
        from gitmem.limits import Limits
        from gitmem.trailers import CAPABILITY_TRAILER

        dropped = held[1].widened(Limits())
        # one whose record does not read records none it may be held to
        said = (
            "its Gitmem-Capability trailer does not read"
            if CAPABILITY_TRAILER in facts.extra
            else "it records no limits"
        )
        if dropped:
            problems.append(
                Refused(
                    "widen",
                    commit.sha,
                    f"{said}, where the store records {', '.join(dropped)}; "
                    "write it with gitmem, which carries the store's limits forward",
                )
            )
            return Record(record.kind or kind, held), held
    if held is not None and found is not None:
        if found[0] != held[0]:
            problems.append(
                Refused(
                    "widen",
                    commit.sha,
                    f"it records strategy {found[0]} where the store records {held[0]}; "
                    "a store keeps the strategy it was first written under",
                )
            )
            return Record(record.kind or kind, held), held
        loosened = held[1].widened(found[1])
        from gitmem.trailers import WIDEN_TRAILER  # loaded: a capability was found

        on_purpose = facts is not None and WIDEN_TRAILER in facts.extra
        if loosened and widened is not None and on_purpose:
            widened.append(
                f"commit {commit.sha[:12]} by {commit.author} widens {', '.join(loosened)} "
                "on purpose"
            )
            return Record(record.kind or kind, found), found
        if loosened:
            problems.append(
                Refused(
                    "widen",
                    commit.sha,
                    f"it loosens the store's recorded {', '.join(loosened)}; "
                    "an operator widens limits with `gitmem set-limits --widen` where the "
                    "store is kept",
                )
            )
            return Record(record.kind or kind, held), held
    kept, capability = record.kind or kind, held or found
    if kept == record.kind and capability is held:
        return record, found or held  # the record stands (most commits): not made again
    return Record(kept, capability), found or held


class Admitted:
    """What a store admits is decided by the receiving side: its ``@allowlist`` and
    ``@guard.ts`` as of ``base``, the commit a push (or a sync, or an approval) builds
    on, judge every commit that arrives; what the arriving commits write there takes
    effect once it is published, for what arrives later. They may only narrow it: a
    finding passes only if the commit's parent's allowlist admits it as well, and a
    guard its parent holds beside the base's judges it too (nothing refused before
    passes now). A new store (``base`` ``None``) has only its own commits to go by:
    each is judged by what its parent holds."""

    def __init__(self, reader: PushReader, base: str | None) -> None:
        self.reader = reader
        self.base = base
        self._held: dict[str, str | None] = {}

    def at_base(self, name: str) -> str | None:
        if name not in self._held:
            self._held[name] = self.reader.meta(self.base, name)
        return self._held[name]

    def meta(self, parent: str | None, name: str) -> str | None:
        """The store file ``name`` a commit on ``parent`` is judged by."""
        if self.base is None or name == GUARD:
            return self.reader.meta(parent if self.base is None else self.base, name)
        held = self.at_base(name)
        if parent == self.base:
            return held
        theirs = self.reader.meta(parent, name)
        if theirs == held or name != ALLOWLIST:
            return held
        from gitmem.secrets import read_allowlist

        both = read_allowlist(held).fingerprints & read_allowlist(theirs).fingerprints
        return "".join(f"{fingerprint}\n" for fingerprint in sorted(both))

    def narrowing(
        self, parent: str | None, screens: list[Screen], meta: Callable[[str], str | None]
    ) -> list[Screen]:
        """The guard screens once more, judging by the guard the commit's parent holds,
        when it holds one that is not the base's (none otherwise)."""
        if self.base is None or parent == self.base:
            return []
        theirs = self.reader.meta(parent, GUARD)
        if not theirs or theirs == self.at_base(GUARD):
            return []

        def own(name: str) -> str | None:
            return theirs if name == GUARD else meta(name)

        return [
            Screen(s.rule, partial(_judged_by, s.check, own)) for s in screens if s.rule == "guard"
        ]


def _judged_by(
    check: Callable[[Write], None], meta: Callable[[str], str | None], write: Write
) -> None:
    check(write._replace(meta=meta))


_KIND_NAMES = {FILES: "file store", MEMORIES: "memory store"}


def _shown_at(reader: PushReader, commit: PushCommit) -> bool:
    """Whether the store, as every tool reads it at the commit's parent (the trailers
    of the nearest commit gitmem made), records a capability."""
    if commit.parent is None:
        return False
    standing = reader.standing(commit.parent)
    return standing is not None and _capability(standing.extra) is not None


def _recorded_at(reader: PushReader, sha: str | None) -> tuple[str, Limits] | None:
    """The nearest capability recorded on ``sha``'s first-parent line, remembered per
    commit so a long push walks its history once."""
    cache = reader.memo
    line: list[str] = []
    found: tuple[str, Limits] | None = None
    at = sha
    while at is not None:
        if at in cache:
            found = cache[at]  # pyright: ignore[reportAssignmentType]
            break
        line.append(at)
        facts = reader.facts(at)
        found = _capability(facts.extra) if facts is not None else None
        if found is not None:
            break
        parents = reader.parents(at)
        at = parents[0] if parents else None
    for step in line:
        cache[step] = found
    return found


def _capability(extra: Mapping[str, str]) -> tuple[str, Limits] | None:
    """The capability a commit's extra trailers record: the trailers' reader and the
    limits are loaded only for a commit that has some (a plain store's push never does)."""
    if not extra:
        return None
    from gitmem.trailers import read_capability_trailer

    return read_capability_trailer(extra)
