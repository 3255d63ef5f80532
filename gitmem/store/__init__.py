"""The git store: every contact with dulwich, behind ``Repository``, ``Snapshot`` (a
memory store) and ``FileSnapshot`` (a file store)."""

from __future__ import annotations

from gitmem.store.repository import FileSnapshot, Repository, Snapshot, check_store, git_identity

__all__ = ["FileSnapshot", "Repository", "Snapshot", "check_store", "git_identity"]
