"""How a revision reads as text, and the text change each revision made."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from gitmem.lean.lines import memory_text
from gitmem.types import FileRevision, Memory, Revision

__all__ = [
    "Picked",
    "diff",
    "diff_stat",
    "line_changes",
    "memory_diff",
    "render",
    "revision_diff",
]

Picked = TypeVar("Picked", Revision, FileRevision)
"""A memory's or a file's revision: what show and log pick and diff alike."""


def render(rev: Revision | Memory) -> str:
    """A revision's (or memory's) text as a person reads it: description, body, then any
    code."""
    return memory_text(rev.description, rev.body, rev.code, rev.on_use)


def diff(before: Revision | None, after: Revision) -> str:
    """The text change ``after`` made (a removal carries the text it removed)."""
    return revision_diff(after.slug, before, after, render)


def memory_diff(slug: str, before: Memory | None, after: Memory | None) -> str:
    """The text change from ``before`` to ``after`` (``None``: absent) of memory ``slug``."""
    return _unified(
        render(before) if before is not None else "",
        render(after) if after is not None else "",
        f"{slug} (store)" if before is not None else "/dev/null",
        f"{slug} (proposed)" if after is not None else "/dev/null",
    )


def revision_diff(
    name: str, before: Picked | None, after: Picked, text: Callable[[Picked], str]
) -> str:
    old = text(after) if after.removed else text(before) if before is not None else ""
    new = "" if after.removed else text(after)
    return _unified(
        old,
        new,
        f"{name} r{before.revision}" if before is not None else "/dev/null",
        "/dev/null" if after.removed else f"{name} r{after.revision}",
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
    """Lines a unified diff adds and removes (its file header is not counted; a body
    line may itself start with "--" or "++")."""
    added = removed = 0
    in_hunk = False
    for line in diff_text.splitlines():
        if line.startswith("@@"):
            in_hunk = True
        elif not in_hunk:
            continue
        elif line.startswith("+"):
            added += 1
        elif line.startswith("-"):
            removed += 1
    return added, removed


def line_changes(before: Revision | None, after: Revision) -> tuple[int, int]:
    """How many lines ``after`` added and removed against ``before`` (as ``diff`` counts)."""
    return diff_stat(diff(before, after))
