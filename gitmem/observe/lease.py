"""Holding a lease for the length of a job: taken before, renewed between steps, given
back after (see :mod:`gitmem.store.lease` for the ref and its compare-and-swap).

A process that dies holding one blocks the job only until the lease expires.
"""

from __future__ import annotations

import os
import secrets
import socket
from collections.abc import Generator
from contextlib import contextmanager, suppress

from gitmem.errors import GitmemError
from gitmem.repository import Repository

__all__ = ["Held", "holder_name", "leased"]


def holder_name() -> str:
    """A name for this process as a lease holder: host, process id and a random part
    (a process id alone is reused)."""
    host = "".join(c if c.isalnum() or c in ".-" else "-" for c in socket.gethostname())
    return f"{host[:64] or 'host'}:{os.getpid()}:{secrets.token_hex(3)}"


class Held:
    """A lease this process holds: ``renew()`` extends it by its length again."""

    def __init__(self, repo: Repository, name: str, holder: str, seconds: float) -> None:
        self.repo = repo
        self.name = name
        self.holder = holder
        self.seconds = seconds

    def renew(self) -> bool:
        """Extend the lease; ``False`` if it was lost (it expired and another took it)."""
        return self.repo.leases.take(self.name, self.holder, self.seconds)


@contextmanager
def leased(repo: Repository, name: str, seconds: float) -> Generator[Held | None]:
    """Hold lease ``name`` for ``seconds`` while the block runs; yields ``None`` (and
    holds nothing) when another process holds it."""
    holder = holder_name()
    if not repo.leases.take(name, holder, seconds):
        yield None
        return
    try:
        yield Held(repo, name, holder, seconds)
    finally:
        with suppress(GitmemError):  # it expires by itself
            repo.leases.give_back(name, holder)
