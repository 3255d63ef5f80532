"""gitmem: durable, bounded, versioned memory for AI agents, kept in a git repository."""

from __future__ import annotations

from gitmem.capability import Capability, Limits
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
from gitmem.holder import Holder, ToolResult
from gitmem.repository import Repository
from gitmem.scope import Agent
from gitmem.store import Snapshot
from gitmem.types import Author, Change, Edit, Memory, Revision, Totals

__all__ = [
    "Agent",
    "AlreadyExists",
    "Author",
    "Capability",
    "Change",
    "CodeError",
    "DiskFull",
    "Edit",
    "GitmemError",
    "Holder",
    "InternalError",
    "InvalidArgument",
    "InvalidAuthor",
    "InvalidSlug",
    "InvalidText",
    "LaunchRefused",
    "LimitExceeded",
    "Limits",
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
    "ToolResult",
    "Totals",
    "Unavailable",
]
