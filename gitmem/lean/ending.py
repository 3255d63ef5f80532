"""How a process of gitmem's ends: with its status, without the interpreter's teardown."""

from __future__ import annotations

import atexit
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn

__all__ = ["end"]


def end(code: str | int | None) -> NoReturn:
    """Exit with ``code`` as ``sys.exit`` does, without the interpreter's teardown.

    When a command (or a hook) returns, every write it acknowledged is on disk (fsynced
    before its ref moved), its repository is closed and its derived files are whole or
    absent. What the interpreter would do next is free every module and object one by
    one, which costs a command about 13 ms of CPU (a tenth of `gitmem show`; a push
    hook's, which holds what it read of every pushed commit, as much). So the exit
    hooks run (the sandbox pool's stops its processes), stdout and stderr are flushed,
    and the process leaves. A process that left another thread running exits the
    ordinary way, which waits for it.
    """
    # no thread was started through a module that was never loaded (a push hook's case)
    threading = sys.modules.get("threading")
    if threading is not None and threading.active_count() > 1:
        sys.exit(code)
    if code is None or isinstance(code, int):
        status = code or 0
    else:
        print(code, file=sys.stderr)  # as sys.exit prints a message
        status = 1
    atexit._run_exitfuncs()  # pyright: ignore[reportPrivateUsage]
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            # a reader that went away (`gitmem log | head`), or a closed stream
            status = status or 1
    os._exit(status & 0xFF)
