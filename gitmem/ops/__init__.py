"""What an operator does to a repository: find it, pick a store, edit memories, show,
log, search, run a program, check health; each command's report as text and as JSON.

Every edit goes through :mod:`gitmem.edits` under the limits the store records (the
``Gitmem-Capability`` trailer of its head), authored as the operator (by default the
user's git identity)::

    from gitmem import Repository, ops

    repo = Repository.open(".gitmem")
    me = ops.operator_author()
    ops.create(repo, "notes", me, "deploy-runbook", "how staging is rolled", "1. ...")
    ops.edit(repo, "notes", me, "deploy-runbook", old_text="1.", new_text="First,")
    ops.delete(repo, "notes", me, "deploy-runbook")

A strategy's own operator verbs live beside it (a notebook's in
:mod:`gitmem.strategies.notebook_ops`, curated rows' in
:mod:`gitmem.strategies.curated_ops`); they are named here too. What only writes,
runs or serves the console is loaded when first used, so a command that reads loads
no strategy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from gitmem.ops import reports
from gitmem.ops.diffs import diff, diff_stat, line_changes, render
from gitmem.ops.finding import (
    REPOSITORY_DIR,
    find_repository,
    init_target,
    operator_author,
    parse_author,
    pick_store,
)
from gitmem.ops.reading import (
    OUTSIDE,
    file_log,
    file_rows,
    is_file_store,
    log,
    memory_rows,
    search,
    show,
    show_file,
    state,
    store_rows,
)
from gitmem.ops.record import Record, record
from gitmem.ops.reports import Run, sync_line

if TYPE_CHECKING:
    from gitmem.ops.console import (
        Ledger,
        agents,
        allowed_actions,
        holders,
        memory_history,
        modules,
        store_overview,
        store_state,
        timeline,
    )
    from gitmem.ops.health import check, code_problems, strategy_problems
    from gitmem.ops.program import run
    from gitmem.ops.sharing import sync
    from gitmem.ops.writing import create, delete, edit, save, set_limits
    from gitmem.strategies.curated_ops import (
        rows_add,
        rows_append,
        rows_birth,
        rows_conflicts,
        rows_link,
        rows_list,
        rows_reclassify,
        rows_relevant,
        rows_show,
        rows_unlink,
    )
    from gitmem.strategies.notebook_ops import notebook_save, notebook_text, notebook_timeline

__all__ = [
    "OUTSIDE",
    "REPOSITORY_DIR",
    "Ledger",
    "Record",
    "Run",
    "agents",
    "allowed_actions",
    "check",
    "code_problems",
    "create",
    "delete",
    "diff",
    "diff_stat",
    "edit",
    "file_log",
    "file_rows",
    "find_repository",
    "holders",
    "init_target",
    "is_file_store",
    "line_changes",
    "log",
    "memory_history",
    "memory_rows",
    "modules",
    "notebook_save",
    "notebook_text",
    "notebook_timeline",
    "operator_author",
    "parse_author",
    "pick_store",
    "record",
    "render",
    "reports",
    "rows_add",
    "rows_append",
    "rows_birth",
    "rows_conflicts",
    "rows_link",
    "rows_list",
    "rows_reclassify",
    "rows_relevant",
    "rows_show",
    "rows_unlink",
    "run",
    "save",
    "search",
    "set_limits",
    "show",
    "show_file",
    "state",
    "store_overview",
    "store_rows",
    "store_state",
    "strategy_problems",
    "sync",
    "sync_line",
    "timeline",
]

# loaded when first used: a command that reads memories loads no write rule, strategy,
# console view, sandbox or sync (tests/test_cold.py holds this)
_WHEN_USED = {
    "gitmem.ops.console": (
        "Ledger",
        "agents",
        "allowed_actions",
        "holders",
        "memory_history",
        "modules",
        "store_overview",
        "store_state",
        "timeline",
    ),
    "gitmem.ops.health": ("check", "code_problems", "strategy_problems"),
    "gitmem.ops.program": ("run",),
    "gitmem.ops.sharing": ("sync",),
    "gitmem.ops.writing": ("create", "delete", "edit", "save", "set_limits"),
    "gitmem.strategies.notebook_ops": ("notebook_save", "notebook_text", "notebook_timeline"),
    "gitmem.strategies.curated_ops": (
        "rows_add",
        "rows_append",
        "rows_birth",
        "rows_conflicts",
        "rows_link",
        "rows_list",
        "rows_reclassify",
        "rows_relevant",
        "rows_show",
        "rows_unlink",
    ),
}
_MODULE_OF = {name: module for module, names in _WHEN_USED.items() for name in names}


def __getattr__(name: str) -> object:
    """A name loaded when first used (a strategy's verb with its strategy)."""
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
