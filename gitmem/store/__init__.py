"""The git store: every contact with dulwich, behind ``Repository`` and ``Snapshot``."""

from __future__ import annotations

from gitmem.store.layout import PROJECT_PREFIX, in_use, project_dir
from gitmem.store.remote import Remote
from gitmem.store.repository import Repository, Snapshot, check_store, git_identity

__all__ = [
    "PROJECT_PREFIX",
    "Remote",
    "Repository",
    "Snapshot",
    "check_store",
    "git_identity",
    "in_use",
    "project_dir",
]
