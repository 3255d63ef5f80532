"""Running an agent program as the operator, against one store, in the sandbox."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from gitmem.errors import InvalidArgument
from gitmem.ops.record import Record, record
from gitmem.ops.reports import Run
from gitmem.types import Author

if TYPE_CHECKING:
    from gitmem.repository import Repository

__all__ = ["Run", "run"]


def run(
    repo: Repository, store: str, author: Author, source: str, strategy: str | None = None
) -> Run:
    """Run an agent program against ``store`` as the operator, under the store's
    recorded strategy and limits (or ``strategy``, unbounded, for a store that records
    none), then its turn's onUse scripts; the holder's sandboxes are closed after."""
    from gitmem import strategies
    from gitmem.binding import Agent
    from gitmem.limits import Limits

    found = record(repo, store)
    if strategy is not None:
        named = strategies.get(strategy)
        if named is None:
            raise InvalidArgument(
                f"{strategy!r} is not a strategy; name one of {', '.join(strategies.names())}"
            )
        if found is None or found.strategy is not named:
            found = Record(named, found.limits if found else Limits())
    if found is None:
        raise InvalidArgument(
            f"store {store!r} records no strategy (no binding has written it); "
            f"name one with --strategy ({', '.join(strategies.names())})"
        )
    instance = re.sub(r"[^A-Za-z0-9._-]", "-", author.name).strip(".-") or "operator"
    agent = Agent("operator", instance[:100])
    from gitmem.holder import PROGRAM_CALL, Holder

    holder = Holder.bind_store(repo, store, found.capability(), agent, author=author)
    try:
        turn = holder.turn(PROGRAM_CALL, {"source": source}, notices=False)
    finally:
        holder.close()
    if turn.error is not None:
        raise turn.error
    if turn.defect is not None:
        raise turn.defect
    assert turn.program is not None
    return Run(turn.program, list(turn.views))
