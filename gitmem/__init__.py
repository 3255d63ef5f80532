"""gitmem: durable, bounded, versioned memory for AI agents, kept in a git repository.

The public API is exactly ``__all__``; every write it offers is held to the limits.
Operators' work (edits, show, log, run) is in :mod:`gitmem.ops`.

Names are imported when first used (module ``__getattr__``), so ``import gitmem`` or
a submodule such as :mod:`gitmem.cli` does not load the holder, the sandbox or the
adapters until something asks for them.
"""

from __future__ import annotations

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
from gitmem.lazy import on_first_use

TYPE_CHECKING = False
if TYPE_CHECKING:
    from gitmem.binding import Agent
    from gitmem.capability import Capability
    from gitmem.holder import Holder, ToolResult, Turn
    from gitmem.limits import FileLimits, Limits
    from gitmem.repository import Repository
    from gitmem.sandbox import ProgramResult, Sandbox, View
    from gitmem.store import FileSnapshot
    from gitmem.trailers import Provenance
    from gitmem.types import Author, BlameLine, FileRevision, Memory, Revision, Totals

# name → the module that defines it, imported on first use
_LAZY = {
    "Agent": "gitmem.binding",
    "Capability": "gitmem.capability",
    "Holder": "gitmem.holder",
    "ToolResult": "gitmem.holder",
    "Turn": "gitmem.holder",
    "FileLimits": "gitmem.limits",
    "Limits": "gitmem.limits",
    "Repository": "gitmem.repository",
    "ProgramResult": "gitmem.sandbox",
    "Sandbox": "gitmem.sandbox",
    "View": "gitmem.sandbox",
    "FileSnapshot": "gitmem.store",
    "Provenance": "gitmem.trailers",
    "Author": "gitmem.types",
    "BlameLine": "gitmem.types",
    "FileRevision": "gitmem.types",
    "Memory": "gitmem.types",
    "Revision": "gitmem.types",
    "Totals": "gitmem.types",
}


__getattr__, __dir__ = on_first_use(globals(), _LAZY)


__all__ = [
    "Agent",
    "AlreadyExists",
    "Author",
    "BlameLine",
    "Capability",
    "CodeError",
    "DiskFull",
    "FileLimits",
    "FileRevision",
    "FileSnapshot",
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
    "Provenance",
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
    "Turn",
    "Unavailable",
    "Unchanged",
    "View",
]
