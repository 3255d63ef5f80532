"""What a pushed commit's trailers must agree with: what its tree changes.

A gitmem commit's trailers name each memory it changes with its op and revision, and
carry the store's totals and peaks after it; :func:`hold_trailers` refuses a commit
whose trailers say otherwise than its tree (read by :mod:`gitmem.store.pushcheck`).
"""

from __future__ import annotations

from gitmem.lean.text import count_lines
from gitmem.lean.totals import Totals
from gitmem.store.incoming import Refused

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Protocol

    from gitmem.store.message import Facts

    class PushedMemory(Protocol):
        """A memory as a pushed commit holds it (see :mod:`gitmem.store.pushcheck`)."""

        @property
        def body(self) -> str: ...


__all__ = ["hold_trailers", "one_problem"]


def hold_trailers(
    sha: str,
    merge: bool,
    facts: Facts,
    changed: Mapping[str, tuple[PushedMemory | None, PushedMemory | None]],
    parent_facts: Facts | None,
    revisions: tuple[dict[str, int], bool] | None,
) -> None:
    """Refuse a commit whose trailers disagree with what its tree changes: the slugs and
    ops named, each revision's number after its parent line's (``revisions``; ``None``
    for a root commit), and the totals and peaks."""
    parent = revisions is not None
    edits = facts.edits
    # the usual commit names the one memory it changes: nothing unnamed, no set made
    if len(changed) > 1 or (changed and (len(edits) != 1 or edits[0].slug not in changed)):
        unnamed = sorted(set(changed) - {e.slug for e in edits})
        if unnamed:
            raise Refused(
                "trailers", sha, f"the tree changes `{unnamed[0]}` but the trailers do not name it"
            )
    last, exact = revisions if revisions is not None else ({}, True)
    for edit in edits:
        found = changed.get(edit.slug)
        if found is None:
            if parent:
                # named but unchanged: what the parent holds is what it holds now
                continue
            found = (None, None)
        before, after = found
        # a sync merge names what it took from either side "merge", removals too
        taken = merge and edit.op == "merge"
        if not taken and (edit.op == "delete") != (after is None):
            state = "removes" if after is None else "keeps"
            raise Refused(
                "trailers",
                sha,
                f"the trailers say {edit.op} `{edit.slug}` but the tree {state} it",
            )
        previous = last.get(edit.slug, 0)
        wrong = edit.revision != previous + 1 if exact and not merge else edit.revision <= previous
        if wrong:
            raise Refused(
                "trailers",
                sha,
                f"`{edit.slug}` is numbered revision {edit.revision} after revision {previous}",
            )
    if parent and parent_facts is None:
        return  # a parent gitmem did not write: no totals to continue from
    base = parent_facts.totals if parent_facts else Totals()
    count, chars, lines = base.count, base.chars, base.lines
    for before, after in changed.values():
        # a memory's chars and lines, as its properties count them
        if after is not None:
            count, chars, lines = (
                count + 1,
                chars + len(after.body),
                lines + count_lines(after.body),
            )
        if before is not None:
            count, chars = count - 1, chars - len(before.body)
            lines -= count_lines(before.body)
    # compared field by field: a push makes no value of its own per commit for them
    said = facts.totals
    if (said.count, said.chars, said.lines) != (count, chars, lines):
        raise Refused(
            "trailers",
            sha,
            f"the trailers count {said.count} memories, {said.chars} "
            f"characters, {said.lines} lines; the tree holds {count}, {chars}, {lines}",
        )
    last = parent_facts.peaks if parent_facts else Totals()
    floor = (max(last.count, count), max(last.chars, chars), max(last.lines, lines))
    peaks = (facts.peaks.count, facts.peaks.chars, facts.peaks.lines)
    low = peaks[0] < floor[0] or peaks[1] < floor[1] or peaks[2] < floor[2]
    if low or (not merge and peaks != floor):
        raise Refused("trailers", sha, "the trailers' peaks disagree with the totals")


def one_problem(
    sha: str,
    facts: Facts,
    before: PushedMemory | None,
    after: PushedMemory | None,
    parent_facts: Facts,
    revisions: tuple[dict[str, int], bool],
) -> Refused | None:
    """What :func:`hold_trailers` refuses of a commit that is not a merge, whose
    parent gitmem made (``parent_facts``), whose trailers name one memory and whose
    tree changes that memory alone (``before`` → ``after``): the same refusal, found
    by the same rules without their loops over several memories; ``None``: none."""
    edit = facts.edits[0]
    if (edit.op == "delete") != (after is None):
        state = "removes" if after is None else "keeps"
        return Refused(
            "trailers", sha, f"the trailers say {edit.op} `{edit.slug}` but the tree {state} it"
        )
    last, exact = revisions
    previous = last.get(edit.slug, 0)
    if edit.revision != previous + 1 if exact else edit.revision <= previous:
        return Refused(
            "trailers",
            sha,
            f"`{edit.slug}` is numbered revision {edit.revision} after revision {previous}",
        )
    base = parent_facts.totals
    count, chars, lines = base.count, base.chars, base.lines
    if after is not None:
        count, chars, lines = count + 1, chars + len(after.body), lines + count_lines(after.body)
    if before is not None:
        count, chars = count - 1, chars - len(before.body)
        lines -= count_lines(before.body)
    said = facts.totals
    if said.count != count or said.chars != chars or said.lines != lines:
        return Refused(
            "trailers",
            sha,
            f"the trailers count {said.count} memories, {said.chars} "
            f"characters, {said.lines} lines; the tree holds {count}, {chars}, {lines}",
        )
    last_peaks, peaks = parent_facts.peaks, facts.peaks
    # not a merge: the peaks are the floor exactly (one below it is not it either)
    if (
        peaks.count != max(last_peaks.count, count)
        or peaks.chars != max(last_peaks.chars, chars)
        or peaks.lines != max(last_peaks.lines, lines)
    ):
        return Refused("trailers", sha, "the trailers' peaks disagree with the totals")
    return None
