"""curated: append-only rows with an owner, a role, a status and a claim kind, retired by
a lifecycle (supersedes, closed, graduated), never deleted.

The row and its header are drawn in :mod:`~gitmem.strategies.curated.rows`; this module
holds the strategy and its tools, and the names the rest of gitmem uses.
"""

from __future__ import annotations

from typing import Literal

from gitmem.store import Storage
from gitmem.strategies.base import StrategyBase, Tool, readable_memories
from gitmem.strategies.curated import handlers
from gitmem.strategies.curated.build import add, append, link, reclassify, unlink
from gitmem.strategies.curated.checks import check_kind, check_owner, check_project
from gitmem.strategies.curated.conflicts import conflicts, conflicts_text
from gitmem.strategies.curated.index import RowIndex, cached_index
from gitmem.strategies.curated.parse import parse_row, rows_of
from gitmem.strategies.curated.render import birth_block, relevant_text, row_text
from gitmem.strategies.curated.rows import (
    KINDS,
    LINK_KINDS,
    OWNERS,
    ROLES,
    STATUSES,
    NotARow,
    Row,
    claim_kind,
)
from gitmem.types import Memory

__all__ = [
    "KINDS",
    "LINK_KINDS",
    "OWNERS",
    "ROLES",
    "STATUSES",
    "Curated",
    "NotARow",
    "Row",
    "RowIndex",
    "add",
    "append",
    "birth_block",
    "check_kind",
    "check_owner",
    "check_project",
    "claim_kind",
    "conflicts",
    "conflicts_text",
    "link",
    "parse_row",
    "reclassify",
    "relevant_text",
    "row_text",
    "rows_of",
    "unlink",
]

_NAME = {"type": "string", "description": "The row's name: 1-64 letters, digits, '-', '_', '.'."}
_PROJECT = {
    "type": "string",
    "description": "A project's key. On a row verb it is optional: when given, the row "
    "must belong to that project (it is never swapped for another).",
}


class Curated(StrategyBase):
    """Append-only rows with owners, roles, claim kinds and a lifecycle."""

    name = "curated"
    aggregate_limits = frozenset({"maxCount"})
    loads_code_on: Literal["write", "read"] = "read"
    notice_bodies = False
    notice_tail = "Read one with `read_row` if it bears on what you are doing."
    find_hint = (
        "search_rows finds rows by their words, and get_relevant lists a project's live threads"
    )
    revise_call = "add_row"
    pinned_in_prompt = False

    def __init__(self) -> None:
        string = {"type": "string"}
        self.tools: tuple[Tool, ...] = (
            Tool(
                "add_row",
                "Write one new row: a claim whose description begins with its kind "
                f"({', '.join(KINDS)}), an owner (user, project with its key, or host) and "
                "a role (knowledge, thread, log). Rows are append-only: an existing name "
                "is refused; replace=true is only for correcting an error in a row.",
                {
                    "name": _NAME,
                    "description": {
                        "type": "string",
                        "description": "One sentence whose first word is the claim kind.",
                    },
                    "owner": {"type": "string", "enum": list(OWNERS)},
                    "project": {
                        "type": "string",
                        "description": "The project's key (owner=project only).",
                    },
                    "role": {
                        "type": "string",
                        "enum": list(ROLES),
                        "description": "Default knowledge.",
                    },
                    "body": {
                        "type": "string",
                        "description": "The content: what holds, why, where it came from and when.",
                    },
                    "replace": {
                        "type": "boolean",
                        "description": "Correct an error in an existing row (marked in its history).",
                    },
                },
                ("name", "description", "owner", "body"),
                handlers.add_row,
                hint="Rows are append-only: knowledge changes by a new row that supersedes "
                "the old one (link_rows from the new row to the old).",
            ),
            Tool(
                "append_row",
                "Add text to the end of a log or a live thread (durable knowledge never grows).",
                {"name": _NAME, "text": string, "project": _PROJECT},
                ("name", "text"),
                handlers.append_row,
            ),
            Tool(
                "link_rows",
                "Link two rows: kind supersedes (from the new row to the old, which leaves "
                "every injection) or graduated_to (from a thread to the row it became).",
                {
                    "source": _NAME,
                    "kind": {"type": "string", "enum": list(LINK_KINDS)},
                    "target": _NAME,
                },
                ("source", "kind", "target"),
                handlers.link_rows,
            ),
            Tool(
                "reclassify_row",
                "Set a row's status (live, closed, graduated) and/or role; nothing is deleted.",
                {
                    "name": _NAME,
                    "status": {"type": "string", "enum": list(STATUSES)},
                    "role": {"type": "string", "enum": list(ROLES)},
                    "project": _PROJECT,
                },
                ("name",),
                handlers.reclassify_row,
                hint="Whoever sees a thread resolved closes it (reclassify_row status=closed); "
                "a live thread costs every later session.",
            ),
            Tool(
                "read_row",
                "Read one row whole: claim, owner, lifecycle, links and content.",
                {"name": _NAME, "project": _PROJECT},
                ("name",),
                handlers.read_row,
                writes=False,
            ),
            Tool(
                "search_rows",
                "Search rows by keywords, scoped to user and host rows plus the project "
                "named; an empty result is about this phrasing and scope, not absence.",
                {
                    "keywords": {"type": "array", "items": string, "minItems": 1},
                    "project": _PROJECT,
                },
                ("keywords",),
                handlers.search_rows,
                writes=False,
            ),
            Tool(
                "get_relevant",
                "A project's whole live-pending set, with bodies (knowledge=true adds its "
                "standing knowledge rows). Read it before writing into a project.",
                {
                    "project": {"type": "string", "description": "The project's key."},
                    "knowledge": {"type": "boolean"},
                },
                ("project",),
                handlers.get_relevant,
                writes=False,
            ),
        )

    def pinned(self, memories: list[Memory]) -> str:
        return RowIndex.of(memories).birth_block()

    def in_context(self) -> str:
        return (
            "Your memory is curated rows, each with an owner (the user, a project, or the "
            "host), a role (durable knowledge, a live thread, a log) and a description "
            "whose first word is its kind of claim. Pinned below is what a session is born "
            "with: each project with its count of live pending threads, the host's, then "
            "the user's rows and preferences whole. A project's rows come in when you read "
            "them with get_relevant."
        )

    def index_line(self, memory: Memory) -> str:
        return ""

    def pinned_from(self, repo: Storage, store: str, cache: dict[str, object]) -> str | None:
        # the index a holder's row reads keep: a compaction follows the new commits only
        return cached_index(repo, store, cache).birth_block()

    def operator_refusal(self, op: str, slug: str) -> str | None:
        if op in ("create", "edit"):
            return (
                "a curated store's rows are append-only: use `gitmem rows add`, "
                "`rows append`, `rows link` or `rows reclassify`"
            )
        return None

    def operator_problems(self, repo: Storage, store: str) -> list[str]:
        """Every memory of the store whose header does not read as a row's."""
        problems: list[str] = []
        for memory in readable_memories(repo, store):
            try:
                parse_row(memory)
            except NotARow as exc:
                problems.append(f"{store}: {exc}")
        return problems
