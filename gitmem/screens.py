"""The chain of screens every write to a repository's stores passes, in order.

Publishing, file-store writes, merges (``gitmem sync``) and the push hooks all run this
one list (see :mod:`gitmem.store.screen`), so they cannot drift apart. A new check is a
module with a function of the :class:`~gitmem.store.screen.Write`, plus its line here.
"""

from __future__ import annotations

import functools

from gitmem.store.memoryfiles import GUARD
from gitmem.store.screen import SECRETS, Screen, Write

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    # imported where used: opening a repository starts no sandbox
    from gitmem.guard import Guards

__all__ = ["chain"]


def chain(guards: Callable[[], Guards] | None) -> list[Screen]:
    """The screens, in order: the secret detectors, then the store's guard code (run in
    the sandbox ``guards()`` gives, started at the first guarded write; ``None``: no
    guard code is run)."""
    screens = [SECRETS]
    if guards is not None:
        screens.append(Screen("guard", functools.partial(_guard_code, guards)))
    return screens


def _guard_code(guards: Callable[[], Guards], write: Write) -> None:
    """The store's ``@guard.ts`` judges each memory a write changes."""
    if write.files is not None:
        return  # guards are for memories
    source = write.meta(GUARD)
    if source:
        from gitmem.guard import change_of

        for edit in write.edits:
            guards().check(source, change_of(write.store, edit, write.author))
