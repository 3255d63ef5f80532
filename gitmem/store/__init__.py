"""The git store: every contact with dulwich, behind ``Storage``, ``Snapshot`` (a
memory store) and ``FileSnapshot`` (a file store)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gitmem.store.commit import Built
from gitmem.store.filestore import FileSnapshot
from gitmem.store.layout import PROJECT_PREFIX, check_store, in_use, project_dir
from gitmem.store.moments import past_write
from gitmem.store.proposals import APPROVED, PROPOSAL, Pending, proposal_name, split_name
from gitmem.store.snapshot import Snapshot
from gitmem.store.storage import Storage, git_identity

if TYPE_CHECKING:
    from gitmem.store.remote import Remote


def __getattr__(name: str) -> Any:
    # ``Remote`` brings dulwich's network client: loaded by sync, not by every read
    if name == "Remote":
        from gitmem.store.remote import Remote

        return Remote
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "APPROVED",
    "PROJECT_PREFIX",
    "PROPOSAL",
    "Built",
    "FileSnapshot",
    "Pending",
    "Remote",
    "Snapshot",
    "Storage",
    "check_store",
    "git_identity",
    "in_use",
    "past_write",
    "project_dir",
    "proposal_name",
    "split_name",
]
