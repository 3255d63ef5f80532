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

from typing import TYPE_CHECKING

from gitmem.lazy import on_first_use
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
    from gitmem.ops.ledger import Ledger
    from gitmem.ops.ledgers import Ledgers
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
    "Ledgers",
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

# name → the module that defines it, imported on first use: a command that reads
# memories loads no write rule, strategy, console view, sandbox or sync
# (tests/test_cold.py holds this)
_LAZY = {
    "Ledger": "gitmem.ops.ledger",
    "Ledgers": "gitmem.ops.ledgers",
    "agents": "gitmem.ops.console",
    "allowed_actions": "gitmem.ops.console",
    "holders": "gitmem.ops.console",
    "memory_history": "gitmem.ops.console",
    "modules": "gitmem.ops.console",
    "store_overview": "gitmem.ops.console",
    "store_state": "gitmem.ops.console",
    "timeline": "gitmem.ops.console",
    "check": "gitmem.ops.health",
    "code_problems": "gitmem.ops.health",
    "strategy_problems": "gitmem.ops.health",
    "run": "gitmem.ops.program",
    "sync": "gitmem.ops.sharing",
    "create": "gitmem.ops.writing",
    "delete": "gitmem.ops.writing",
    "edit": "gitmem.ops.writing",
    "save": "gitmem.ops.writing",
    "set_limits": "gitmem.ops.writing",
    "notebook_save": "gitmem.strategies.notebook_ops",
    "notebook_text": "gitmem.strategies.notebook_ops",
    "notebook_timeline": "gitmem.strategies.notebook_ops",
    "rows_add": "gitmem.strategies.curated_ops",
    "rows_append": "gitmem.strategies.curated_ops",
    "rows_birth": "gitmem.strategies.curated_ops",
    "rows_conflicts": "gitmem.strategies.curated_ops",
    "rows_link": "gitmem.strategies.curated_ops",
    "rows_list": "gitmem.strategies.curated_ops",
    "rows_reclassify": "gitmem.strategies.curated_ops",
    "rows_relevant": "gitmem.strategies.curated_ops",
    "rows_show": "gitmem.strategies.curated_ops",
    "rows_unlink": "gitmem.strategies.curated_ops",
}

__getattr__, __dir__ = on_first_use(globals(), _LAZY)
