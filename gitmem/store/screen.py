"""Screens: the checks every write passes before it is published.

A screen is a plain callable that is handed the :class:`Write` on its way in and raises
a :class:`~gitmem.errors.GitmemError` to refuse it; a chain of screens is a list, run
in order. Every path that lets content into a store runs the same list the same way:
a memory or file-store publish, a merge, and the push hooks (which name the screen's
``rule`` in their refusal). The store's own chain is :data:`SECRETS` alone; the public
repository's is longer (see :mod:`gitmem.screens`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

from gitmem.store.snapshot import ALLOWLIST
from gitmem.types import Edit

__all__ = ["SECRETS", "Screen", "Write", "run"]


class Write(NamedTuple):
    """One write, as a screen sees it, against the head it applies to."""

    store: str
    author: str
    """The writing author's name."""
    edits: Sequence[Edit]
    """A memory store's edits (none for a file store's write)."""
    files: Sequence[tuple[str, str]] | None
    """A file store's written files, ``(path, text)``; ``None`` for a memory store."""
    meta: Callable[[str], str | None]
    """The store's root file ``name`` (``@allowlist``, ``@guard.ts``) as of that head."""


class Screen(NamedTuple):
    """One check in a chain: ``check`` refuses a write by raising; ``rule`` is the
    name the push hooks give a refusal (``secret``, ``guard``)."""

    rule: str
    check: Callable[[Write], None]


def run(screens: Iterable[Screen], write: Write) -> None:
    """Pass ``write`` through each screen in turn; the first refusal propagates."""
    for screen in screens:
        screen.check(write)


def _secrets(write: Write) -> None:
    """No secret in any part of a memory written, unless the store's allowlist admits
    it; none in a file-store file at all (a file store keeps no allowlist)."""
    # imported here: a write scans, a read does not
    from gitmem.secrets import check_texts, memory_fields, read_allowlist

    if write.files is not None:
        check_texts(((f"file {path}", text) for path, text in write.files), None)
        return
    if not any(edit.memory is not None for edit in write.edits):
        return
    allow = read_allowlist(write.meta(ALLOWLIST))
    for edit in write.edits:
        if edit.memory is not None:
            check_texts(memory_fields(edit.memory), allow)


SECRETS = Screen("secret", _secrets)
"""The secret detectors' screen."""
