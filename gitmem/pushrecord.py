"""What the receiving side holds a store to, and what a pushed commit may change of it.

A store's kind (memories or files) and the capability its binding recorded (strategy
and limits) are read from the receiving side's own history, as of the commit a push or
a sync builds on, never from what an arriving commit claims. :func:`hold_record` takes
one arriving commit at a time: one that would change the store's kind, or loosen its
recorded limits, is refused (an operator's deliberate widening is adopted by sync).
"""

from __future__ import annotations

from gitmem.store.message import FILES, MEMORIES, kind_of
from gitmem.store.pushcheck import PushCommit, PushReader, Refused

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import NamedTuple

    from gitmem.limits import Limits
else:
    from gitmem.lean.tuples import NamedTuple  # a push hook's process never loads typing

__all__ = ["Record", "hold_record", "record_at"]


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
    found = _recorded(reader, commit)
    held = record.capability
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


_KIND_NAMES = {FILES: "file store", MEMORIES: "memory store"}


def _recorded(reader: PushReader, commit: PushCommit) -> tuple[str, Limits] | None:
    """The capability the commit's binding recorded (its own trailer, else the nearest
    first-parent ancestor's)."""
    found = _capability(commit.facts.extra) if commit.facts is not None else None
    if found is None:
        found = _recorded_at(reader, commit.parent)
    # what _recorded_at finds for the commit itself: the next commit's parent, found at once
    reader.memo[commit.sha] = found
    return found


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
