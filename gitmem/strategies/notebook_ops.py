"""A notebook's operator verbs: read its text, save it whole as the operator, and list
every version it went through."""

from __future__ import annotations

import difflib
from dataclasses import replace
from typing import Any

from gitmem import edits
from gitmem.errors import LimitExceeded, Unchanged
from gitmem.store import Storage
from gitmem.strategies import notebook
from gitmem.strategies.operator import kept_as, operator_rules
from gitmem.types import Author, Revision, check_slug

__all__ = ["OPERATOR_SAVE_BYTES", "notebook_save", "notebook_text", "notebook_timeline"]

OPERATOR_SAVE_BYTES = 256 * 1024
"""The most an operator's save of a notebook may hold (256 KB)."""


def _rules(repo: Storage, store: str) -> edits.Rules:
    found = kept_as(
        repo,
        store,
        notebook.Notebook.name,
        "store {store!r} keeps {kept} memories, not a notebook; edit it with `gitmem edit`",
    )
    # the agent's 12,000-character cap is the agent's: an operator's save has its own
    return operator_rules(found, replace(found.limits, max_len_per_memory=0) if found else None)


def notebook_text(repo: Storage, store: str) -> tuple[str, int]:
    """A notebook's live text and its version (0: never written; it reads as empty)."""
    snapshot = repo.snapshot(store)
    memory = snapshot.get(notebook.SLUG)
    return (memory.body if memory else ""), snapshot.revision(notebook.SLUG)


def notebook_save(
    repo: Storage, store: str, author: Author, content: str, expected: int | None = None
) -> Revision | None:
    """Save a notebook's text as the operator (op ``save``): the version it replaces
    stays in the history, authored as it was. ``expected`` is the version the text was
    based on: if a newer one is held (an agent wrote since), nothing is written and
    ``StaleRevision`` says so, so an agent's version is never silently discarded. A text
    byte-identical to the live one writes nothing and returns ``None``."""
    size = len(content.encode("utf-8", "surrogatepass"))
    if size > OPERATOR_SAVE_BYTES:
        raise LimitExceeded(
            f"refused: the saved text would be {size:,} bytes, over the operator's cap "
            f"(256 KB, {OPERATOR_SAVE_BYTES:,} bytes). Shorten it.",
            limit="operator save",
            attempted=size,
            maximum=OPERATOR_SAVE_BYTES,
        )
    write = edits.overwrite(_rules(repo, store), notebook.notebook_memory(content), op="save")
    if expected is not None:
        write = edits.based_on(write, notebook.SLUG, expected)
    try:
        return repo.mutate(store, author, write)
    except Unchanged:
        return None


def _line_changes(before: str, after: str) -> tuple[int, int]:
    """Lines ``after`` adds to and removes from ``before``, as a diff counts them."""
    added = removed = 0
    matcher = difflib.SequenceMatcher(None, before.splitlines(), after.splitlines())
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            added, removed = added + j2 - j1, removed + i2 - i1
    return added, removed


def notebook_timeline(repo: Storage, store: str, slug: str = notebook.SLUG) -> list[dict[str, Any]]:
    """Every version of a notebook (or of one memory), newest first: ``{"version",
    "op", "author", "time", "commit", "chars", "added", "removed", "live"}``; lines
    added and removed are counted against the version before."""
    rows: list[dict[str, Any]] = []
    before = ""
    history = repo.revisions(store, check_slug(slug))
    for r in history:
        after = "" if r.removed else r.body
        added, removed = _line_changes(before, after)
        rows.append(
            {
                "version": r.revision,
                "op": r.op,
                "author": r.author,
                "time": r.time,
                "commit": r.commit,
                "chars": len(after),
                "added": added,
                "removed": removed,
                "live": False,
            }
        )
        before = after
    if rows and not history[-1].removed:
        rows[-1]["live"] = True
    return rows[::-1]
