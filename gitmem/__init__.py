"""gitmem: durable, bounded, versioned memory for AI agents, kept in a git repository.

The public API is exactly ``__all__``; every write it offers is held to the limits.
Operators' work (edits, show, log, run) is in :mod:`gitmem.ops`.
"""

from __future__ import annotations

from gitmem.binding import Agent
from gitmem.capability import Capability
from gitmem.errors import (
    AlreadyExists,
    CodeError,
    DiskFull,
    GitmemError,
    GuardFailed,
    GuardRefused,
    InternalError,
    InvalidArgument,
    InvalidAuthor,
    InvalidPath,
    InvalidSlug,
    InvalidText,
    LaunchRefused,
    LimitExceeded,
    NotARepository,
    NotFound,
    PathOccupied,
    ReadOnly,
    RemoteError,
    RepositoryError,
    SecretFound,
    StaleRevision,
    StorageError,
    Unavailable,
    Unchanged,
)
from gitmem.holder import Holder, ToolResult
from gitmem.limits import Limits
from gitmem.repository import Repository
from gitmem.sandbox import ProgramResult, Sandbox, View
from gitmem.types import Author, FileRevision, Memory, Revision, Totals

__all__ = [
    "Agent",
    "AlreadyExists",
    "Author",
    "Capability",
    "CodeError",
    "DiskFull",
    "FileRevision",
    "GitmemError",
    "GuardFailed",
    "GuardRefused",
    "Holder",
    "InternalError",
    "InvalidArgument",
    "InvalidAuthor",
    "InvalidPath",
    "InvalidSlug",
    "InvalidText",
    "LaunchRefused",
    "LimitExceeded",
    "Limits",
    "Memory",
    "NotARepository",
    "NotFound",
    "PathOccupied",
    "ProgramResult",
    "ReadOnly",
    "RemoteError",
    "Repository",
    "RepositoryError",
    "Revision",
    "Sandbox",
    "SecretFound",
    "StaleRevision",
    "StorageError",
    "ToolResult",
    "Totals",
    "Unavailable",
    "Unchanged",
    "View",
]
