"""Screens: the checks every write passes before it is published.

A screen is a plain callable that is handed the :class:`Write` on its way in and raises
a :class:`~gitmem.errors.GitmemError` to refuse it; a chain of screens is a list, run
in order. Every path that lets content into a store runs the same list the same way:
a memory or file-store publish, a merge, and the push hooks (which name the screen's
``rule`` in their refusal). The store's own chain is :data:`SECRETS` alone; the public
repository's is longer (see :mod:`gitmem.screens`).
"""

from __future__ import annotations

from gitmem.store.memoryfiles import ALLOWLIST

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from typing import NamedTuple

    from gitmem.types import EditParts
else:
    from gitmem.lean.tuples import NamedTuple

__all__ = ["SECRETS", "Screen", "Write", "run"]


class Write(NamedTuple):
    """One write, as a screen sees it, against the head it applies to."""

    store: str
    author: str
    """The writing author's name."""
    edits: Sequence[EditParts]
    """A memory store's edits (none for a file store's write)."""
    files: Sequence[tuple[str, str]] | None
    """A file store's written files, ``(path, text)``; ``None`` for a memory store."""
    meta: Callable[[str], str | None]
    """The store's root file ``name`` (``@allowlist``, ``@guard.ts``) as of that head."""
    message: str = ""
    """What the writer chose of the commit's message: its extra trailers, or a pushed
    commit's whole message."""
    header: str = ""
    """A pushed commit's header past its tree, parents and author's name: the author's
    address, its committer, and any signature, encoding or other line (a write made here
    has none to screen)."""


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
    """No secret in any part of a write: the names it writes (a slug, a file's path),
    a memory's description, body and code halves, a file's text, the commit message it
    chose, its author's name and (a pushed commit's) the rest of its header. A memory
    store's allowlist may admit a finding; a file store keeps no allowlist, so nothing
    in its writes is admitted."""
    holds_none = _holds_none or _first_scan()
    # most writes hold nothing a detector starts at: passed before a part is named
    texts = [write.message, write.author, write.header]
    for edit in write.edits:
        memory = edit.memory
        if memory is not None:
            texts += (memory.slug, memory.description, memory.body, memory.code, memory.on_use)
    for path, text in write.files or ():
        texts += (path, text)
    if holds_none(texts):
        return
    import gitmem.secrets as scanner  # a write that may hold a secret: named part by part

    allow = None if write.files is not None else scanner.read_allowlist(write.meta(ALLOWLIST))
    fields: list[tuple[str, str]] = []
    for edit in write.edits:
        if edit.memory is not None:
            fields += scanner.memory_fields(edit.memory)
    for path, text in write.files or ():
        # the path first, named without itself: a refusal never repeats a secret
        fields += (("path of a file", path), (f"file {path}", text))
    fields += (
        ("commit message", write.message),
        ("author name", write.author),
        ("commit header", write.header),
    )
    # one pass over every part, in order: the first secret found is the one refused
    scanner.check_texts(fields, allow)


# the scanner's first question, kept once a write has asked it: imported then (a write
# scans, a read does not), not by an import statement run again for each write (a push
# hook screens every commit)
_holds_none: Callable[[Iterable[str]], bool] | None = None


def _first_scan() -> Callable[[Iterable[str]], bool]:
    global _holds_none
    from gitmem.secrets import holds_none

    _holds_none = holds_none
    return holds_none


SECRETS = Screen("secret", _secrets)
"""The secret detectors' screen."""
