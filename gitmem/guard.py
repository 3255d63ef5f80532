"""Write guards as code: a store's ``@guard.ts`` judges every write, in the sandbox.

A guard is a TypeScript module kept in the store's tree (versioned, reviewed and
reverted like a memory) that exports ``check(change)``. It runs in the same Deno
sandbox as code memories (no files, network, environment or subprocess), with its own
time and memory limits, in a worker kept for that guard text and that store: the first
write loads it, later writes only call ``check`` (:meth:`gitmem.sandbox.Sandbox.check`
says what a kept worker keeps and what it does not). ``change`` is::

    {store, op, slug, description, body, code, onUse, author}

(``description``/``body``/``code``/``onUse`` are ``null`` for a delete). Returning a
string refuses the write with that message (:class:`~gitmem.errors.GuardRefused`,
kind ``limit-exceeded``); returning nothing (``undefined``/``null``) accepts it. A
guard that throws, times out, exhausts its memory or returns anything else refuses
the write as :class:`~gitmem.errors.GuardFailed` (``io-error``): a defect of the
guard, never an acceptance.
"""

from __future__ import annotations

import secrets
import threading

from gitmem.errors import GitmemError, GuardFailed, GuardRefused
from gitmem.sandbox import Sandbox
from gitmem.types import EditParts

__all__ = ["GUARD_TIME_LIMIT", "Guards", "change_of"]

GUARD_TIME_LIMIT = 2.0
"""Seconds one guard check may run."""
_MESSAGE_MAX = 1_000


def change_of(store: str, edit: EditParts, author: str) -> dict[str, object]:
    """The ``change`` a guard's ``check`` is handed for one memory's part of a write."""
    memory = edit.memory
    return {
        "store": store,
        "op": edit.op,
        "slug": edit.slug,
        "description": memory.description if memory else None,
        "body": memory.body if memory else None,
        "code": memory.code if memory else None,
        "onUse": memory.on_use if memory else None,
        "author": author,
    }


class Guards:
    """Runs guards for one repository object: one sandbox process, started at the first
    guarded write and stopped by :meth:`close`."""

    def __init__(self, time_limit: float = GUARD_TIME_LIMIT) -> None:
        self.time_limit = time_limit
        self._lock = threading.Lock()
        self._sandbox: Sandbox | None = None
        self._scope = secrets.token_hex(16)

    def check(self, source: str, change: dict[str, object]) -> None:
        """Run ``source``'s ``check(change)``; raise ``GuardRefused`` with its message,
        or ``GuardFailed`` if the guard is broken. Returns when it accepts."""
        # A store's checks may share a worker, never another store's or repository's.
        scope = f"{self._scope}/{change.get('store')}"
        try:
            verdict = self._ensure().check(source, change, scope=scope)
        except GitmemError as exc:
            raise GuardFailed(
                f"the store's guard could not run ({exc}); the write was refused. "
                "An operator should fix or remove the guard (gitmem guard set/clear)"
            ) from exc
        if verdict.kind == "error":
            error = (verdict.error or "it gave no verdict").splitlines()[0][:300]
            raise GuardFailed(
                f"the store's guard failed: {error}; the write was refused. "
                "An operator should fix the guard (gitmem guard set) or remove it "
                "(gitmem guard clear)"
            )
        if verdict.kind == "accept":
            return
        message = verdict.message
        if verdict.kind != "string" or message is None:
            raise GuardFailed(
                f"the store's guard returned a {verdict.kind}, not a string or "
                "nothing; the write was refused. An operator should fix the guard"
            )
        text = " ".join(message.split())[:_MESSAGE_MAX] or "the guard refused it"
        raise GuardRefused(f"refused by the store's guard: {text}. Nothing was written.")

    def compile(self, source: str) -> str | None:
        """A located diagnostic if the guard ``source`` does not compile, else ``None``."""
        return self._ensure().compile(source)

    def _ensure(self) -> Sandbox:
        with self._lock:
            if self._sandbox is None:
                self._sandbox = Sandbox(time_limit=self.time_limit, memory_mb=64, output_cap=4_000)
            return self._sandbox

    def close(self) -> None:
        """Stop the guard sandbox, if it started."""
        with self._lock:
            if self._sandbox is not None:
                self._sandbox.close()
                self._sandbox = None
