"""The repository's health: its objects and memory files, each strategy's own form,
and the code memories hold."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from gitmem.errors import GitmemError
from gitmem.ops.reading import is_file_store
from gitmem.ops.record import record

if TYPE_CHECKING:
    from gitmem.repository import Repository
    from gitmem.store import Storage as Storage

__all__ = ["check", "code_problems", "strategy_problems"]


def check(repo: Repository, progress: Callable[[int], None] | None = None) -> list[str]:
    """Every problem found in the repository (objects, memory files, each strategy's
    own form, code, gitmem's git hook scripts); empty if healthy."""
    from gitmem.githooks import stale_hooks

    found = repo.check(progress) + strategy_problems(repo) + code_problems(repo)
    return found + stale_hooks(repo.directory)


def strategy_problems(repo: Repository) -> list[str]:
    """What each store's strategy finds wrong with the store (its ``operator_problems``
    hook), for every store that records a strategy."""
    problems: list[str] = []
    for store in repo.stores():
        try:
            found = record(repo, store)
        except GitmemError:
            continue
        if found is not None:
            hook = getattr(found.strategy, "operator_problems", None)
            if hook is not None:
                problems += hook(repo, store)
    return problems


def code_problems(repo: Repository) -> list[str]:
    """Every stored code half, in every store's head, that does not compile."""
    from gitmem.sandbox import Sandbox
    from gitmem.strategies.base import readable_memories

    problems: list[str] = []
    with Sandbox() as sandbox:
        for store in repo.stores():
            if is_file_store(repo, store):
                continue
            for memory in readable_memories(repo, store):
                for half, source in (("code", memory.code), ("onUse script", memory.on_use)):
                    diagnostic = sandbox.compile(source) if source else None
                    if diagnostic:
                        problems.append(
                            f"{store}: the {half} of {memory.slug} does not compile: {diagnostic}"
                        )
    return problems
