"""gitmem: durable, bounded, versioned memory for AI agents, kept in a git repository."""

from __future__ import annotations

from gitmem.errors import (
    AlreadyExists,
    CodeError,
    DiskFull,
    GitmemError,
    InternalError,
    InvalidArgument,
    InvalidAuthor,
    InvalidSlug,
    InvalidText,
    LaunchRefused,
    LimitExceeded,
    NotARepository,
    NotFound,
    PathOccupied,
    ReadOnly,
    RepositoryError,
    StorageError,
    Unavailable,
)
from gitmem.store import Repository, Snapshot
from gitmem.types import Author, Change, Memory, Revision, Totals

__all__ = [
    "AlreadyExists",
    "Author",
    "Change",
    "CodeError",
    "DiskFull",
    "GitmemError",
    "InternalError",
    "InvalidArgument",
    "InvalidAuthor",
    "InvalidSlug",
    "InvalidText",
    "LaunchRefused",
    "LimitExceeded",
    "Memory",
    "NotARepository",
    "NotFound",
    "PathOccupied",
    "ReadOnly",
    "Repository",
    "RepositoryError",
    "Revision",
    "Snapshot",
    "StorageError",
    "Totals",
    "Unavailable",
]
