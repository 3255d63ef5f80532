"""The git store: every contact with dulwich, behind ``Repository``, ``Snapshot`` (a
memory store) and ``FileSnapshot`` (a file store)."""

from __future__ import annotations

from gitmem.store.layout import PROJECT_PREFIX, in_use, project_dir
from gitmem.store.remote import Remote
from gitmem.store.repository import FileSnapshot, Repository, Snapshot, check_store, git_identity

__all__ = [
    "PROJECT_PREFIX",
    "FileSnapshot",
    "Remote",
    "Repository",
    "Snapshot",
    "check_store",
    "git_identity",
    "in_use",
    "project_dir",
]
