"""Every error gitmem raises, under one root.

    GitmemError
    ├── RepositoryError            the repository itself cannot be used
    │   ├── NotARepository         no gitmem repository at the path
    │   └── PathOccupied           init refused: the path holds something else
    ├── InvalidArgument            the caller's input is wrong      (invalid-argument)
    │   ├── InvalidSlug
    │   ├── InvalidPath            a file store's path breaks the path rules
    │   ├── InvalidText
    │   ├── InvalidAuthor
    │   ├── CodeError              a code half does not compile
    │   ├── SecretFound            a write holds a credential
    │   └── LaunchRefused          a capability configuration is refused
    ├── NotFound                   no such memory, store or revision (not-found)
    ├── AlreadyExists              a create over an existing memory  (already-exists)
    ├── StaleRevision              a save whose base revision moved  (stale)
    ├── LimitExceeded              a mutation would breach a limit   (limit-exceeded)
    ├── GuardRefused               the store's guard refused a write (limit-exceeded)
    ├── GuardFailed                the store's guard crashed or timed out (io-error)
    ├── Unavailable                the call is not offered here      (unavailable)
    ├── ReadOnly                   the holder may not write          (read-only)
    ├── StorageError               the disk failed us                (io-error)
    │   └── DiskFull
    ├── RemoteError                a remote cannot be reached or refuses (io-error)
    ├── InternalError              gitmem's own defect               (io-error)
    └── Unchanged                  a write identical to what is held (ok: not a refusal)

Each class states the tool-result ``kind`` the holder reports for it: a class that
does not say is refused when it is defined, so no new class inherits a kind by
accident. Messages are sentences an agent or operator can act on.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not loaded at run time: the capture hook loads this module
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import ClassVar

__all__ = [
    "AlreadyExists",
    "CodeError",
    "DiskFull",
    "GitmemError",
    "GuardFailed",
    "GuardRefused",
    "InternalError",
    "InvalidArgument",
    "InvalidAuthor",
    "InvalidPath",
    "InvalidSlug",
    "InvalidText",
    "LaunchRefused",
    "LimitExceeded",
    "NotARepository",
    "NotFound",
    "PathOccupied",
    "ReadOnly",
    "RemoteError",
    "RepositoryError",
    "SecretFound",
    "StaleRevision",
    "StorageError",
    "Unavailable",
    "Unchanged",
]


class GitmemError(Exception):
    """The root of every error gitmem raises."""

    kind: ClassVar[str] = "io-error"

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "kind" not in cls.__dict__:
            raise TypeError(f"{cls.__name__} must state its tool-result kind")

    @property
    def message(self) -> str:
        return str(self)


class RepositoryError(GitmemError):
    """The repository cannot be used."""

    kind = "io-error"


class NotARepository(RepositoryError):
    """No gitmem repository at the given path."""

    kind = "io-error"


class PathOccupied(RepositoryError):
    """``init`` refused a path that holds something other than a gitmem repository."""

    kind = "io-error"


class InvalidArgument(GitmemError):
    """The input is malformed."""

    kind = "invalid-argument"


class InvalidSlug(InvalidArgument):
    """A slug breaks the slug rules."""

    kind = "invalid-argument"


class InvalidPath(InvalidArgument):
    """A file store's path breaks the path rules."""

    kind = "invalid-argument"


class InvalidText(InvalidArgument):
    """A description, body or code half is not storable text."""

    kind = "invalid-argument"


class InvalidAuthor(InvalidArgument):
    """An author name or email git would reject."""

    kind = "invalid-argument"


class NotFound(GitmemError):
    """No such memory, store or revision."""

    kind = "not-found"


class AlreadyExists(GitmemError):
    """A create named a memory that exists."""

    kind = "already-exists"


class StaleRevision(GitmemError):
    """An operator's save named the revision it was based on, and the memory has moved
    on since; nothing was written. ``current`` is the memory's latest revision number."""

    kind = "stale"

    def __init__(self, message: str, *, expected: int, current: int) -> None:
        super().__init__(message)
        self.expected = expected
        self.current = current


class LimitExceeded(GitmemError):
    """A mutation would breach a limit; nothing was written."""

    kind = "limit-exceeded"

    def __init__(self, message: str, *, limit: str, attempted: int, maximum: int) -> None:
        super().__init__(message)
        self.limit = limit
        self.attempted = attempted
        self.maximum = maximum


class GuardRefused(GitmemError):
    """The store's guard (``check(change)`` in the store's ``@guard.ts``) refused a
    write with its own message; nothing was written."""

    kind = "limit-exceeded"


class GuardFailed(GitmemError):
    """The store's guard threw, timed out or answered nonsense: a defect of the guard,
    for the operator to fix; the write was refused, never accepted."""

    kind = "io-error"


class Unavailable(GitmemError):
    """The call is not offered to this holder."""

    kind = "unavailable"


class ReadOnly(GitmemError):
    """The holder may read this store but not write it."""

    kind = "read-only"


class LaunchRefused(InvalidArgument):
    """A capability configuration is refused; ``problems`` lists every problem at once."""

    kind = "invalid-argument"

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        joined = "; ".join(self.problems)
        super().__init__(f"launch refused: {joined}")


class StorageError(GitmemError):
    """Reading or writing the repository failed; nothing half-written was published."""

    kind = "io-error"


class DiskFull(StorageError):
    """The disk is full; the write was not published and the store is unchanged."""

    kind = "io-error"


class RemoteError(GitmemError):
    """A remote cannot be reached, or refused a fetch or push; the local stores are as
    the last completed step left them."""

    kind = "io-error"


class InternalError(GitmemError):
    """gitmem's own defect (a transpiler or sandbox crash); the run must stop."""

    kind = "io-error"


class CodeError(InvalidArgument):
    """A code half does not compile; ``diagnostic`` is ``line:column: message``."""

    kind = "invalid-argument"

    def __init__(self, message: str, *, diagnostic: str) -> None:
        super().__init__(message)
        self.diagnostic = diagnostic


class SecretFound(InvalidArgument):
    """A write holds a credential; ``kind_of_secret``, ``line`` and ``column`` say which
    and where, ``fingerprint`` is what an allowlist names. The secret is never kept."""

    kind = "invalid-argument"

    def __init__(
        self, message: str, *, kind: str, line: int, column: int, fingerprint: str
    ) -> None:
        super().__init__(message)
        self.kind_of_secret = kind
        self.line = line
        self.column = column
        self.fingerprint = fingerprint


class Unchanged(GitmemError):
    """A write whose content is byte-identical to what is held: nothing was written and
    no version was made. Not a refusal; the caller answers it as done."""

    kind = "ok"
