"""How a revision reads as text, and the text change each revision made."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from gitmem.lean.layout import CODE, ON_USE
from gitmem.lean.lines import memory_text
from gitmem.types import FileRevision, Memory, Revision

__all__ = [
    "Files",
    "Picked",
    "diff",
    "diff_stat",
    "line_changes",
    "memory_diff",
    "memory_files",
    "render",
    "revision_diff",
]

Picked = TypeVar("Picked", Revision, FileRevision)
"""A memory's or a file's revision: what show and log pick and diff alike."""
Files = tuple[tuple[str, str], ...]
"""What a diff compares of a revision: each file's name ending and text."""


def render(rev: Revision | Memory) -> str:
    """A revision's (or memory's) text as a person reads it: description, body, then any
    code."""
    return memory_text(rev.description, rev.body, rev.code, rev.on_use)


def memory_files(rev: Revision | Memory) -> Files:
    """A memory's files as a diff compares them, each under its own name: its ``.md``
    (description and body, named by the slug alone) and its code and onUse halves. Each file diffed alone, text
    moved from a body into a half (a script that would then run) shows as the move it
    is: a memory's text read as one (``render``) could be the same before and after."""
    md = f"description: {rev.description}\n\n{rev.body}"
    return (("", md), (CODE, rev.code), (ON_USE, rev.on_use))


def diff(before: Revision | None, after: Revision) -> str:
    """The text change ``after`` made (a removal carries the text it removed)."""
    return revision_diff(after.slug, before, after, memory_files)


def memory_diff(slug: str, before: Memory | None, after: Memory | None) -> str:
    """The text change from ``before`` to ``after`` (``None``: absent) of memory ``slug``,
    file by file."""
    old = memory_files(before) if before is not None else None
    new = memory_files(after) if after is not None else None
    return _files_diff(
        old,
        new,
        lambda end: f"{slug}{end} (store)" if old is not None else "/dev/null",
        lambda end: f"{slug}{end} (proposed)" if new is not None else "/dev/null",
    )


def revision_diff(
    name: str, before: Picked | None, after: Picked, files: Callable[[Picked], Files]
) -> str:
    """The change ``after`` made to the files ``files`` gives of it (a removal carries
    the text it removed), each file that changed under its own header."""
    old = files(after) if after.removed else files(before) if before is not None else None
    new = None if after.removed else files(after)
    return _files_diff(
        old,
        new,
        lambda end: f"{name}{end} r{before.revision}" if before is not None else "/dev/null",
        lambda end: "/dev/null" if after.removed else f"{name}{end} r{after.revision}",
    )


def _files_diff(
    old: Files | None,
    new: Files | None,
    fromfile: Callable[[str], str],
    tofile: Callable[[str], str],
) -> str:
    """A unified diff of each file that differs between ``old`` and ``new`` (``None``:
    none at all), in the order the files come."""
    before = dict(old or ())
    after = dict(new or ())
    ends = list(dict.fromkeys([end for end, _ in (old or ())] + [end for end, _ in (new or ())]))
    return "".join(
        _unified(
            before.get(end, ""),
            after.get(end, ""),
            fromfile(end) if before.get(end) else "/dev/null",
            tofile(end) if after.get(end) else "/dev/null",
        )
        for end in ends
        if before.get(end, "") != after.get(end, "")
    )


def _unified(old: str, new: str, fromfile: str, tofile: str) -> str:
    """A unified diff that marks a last line without newline as ``diff`` does."""
    import difflib

    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), fromfile, tofile
    )
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )


def diff_stat(diff_text: str) -> tuple[int, int]:
    """Lines a unified diff of one or more files adds and removes: each hunk's lines
    counted as its header says how many it holds, so no file header is counted and a
    body line may itself start with "--" or "++"."""
    added = removed = 0
    old = new = 0  # the lines of the hunk under way still to come, on each side
    for line in diff_text.splitlines():
        if old or new:
            if line.startswith("+"):
                added, new = added + 1, new - 1
            elif line.startswith("-"):
                removed, old = removed + 1, old - 1
            elif not line.startswith("\\"):
                old, new = old - 1, new - 1
        elif line.startswith("@@ -"):
            ranges = line.split(" ")
            old, new = _length(ranges[1]), _length(ranges[2])
    return added, removed


def _length(span: str) -> int:
    """The lines a hunk header's ``-start,length`` (or ``+start``) spans."""
    return int(span.partition(",")[2] or "1")


def line_changes(before: Revision | None, after: Revision) -> tuple[int, int]:
    """How many lines ``after`` added and removed against ``before`` (as ``diff`` counts)."""
    return diff_stat(diff(before, after))
