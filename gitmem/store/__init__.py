"""The git store: every contact with dulwich, behind ``Repository`` and ``Snapshot``."""

from __future__ import annotations

from gitmem.store.repository import Repository, Snapshot, check_store, git_identity

__all__ = ["Repository", "Snapshot", "check_store", "git_identity"]
