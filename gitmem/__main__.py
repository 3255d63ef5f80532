"""The ``gitmem`` console script, and ``python -m gitmem``.

Every command is a fresh process, and most of what it pays before any work is its
imports (see "The cold process" in docs/performance.md). Imports make no garbage worth
collecting, yet with the cyclic collector on, the objects they make are traversed by
the collections they trigger and again by the first ones after. So the collector is
off while ``gitmem.cli`` loads, what loaded is then frozen (left out of every later
collection: modules live as long as the process), and the collector is back on for the
command itself, which may be a long-lived server (``mcp``, ``console``).

``gitmem observe capture EVENT`` (the observer's capture hook, run at every tool call of
a Claude Code session) never loads the command line at all: it goes straight to the
small capture module, so its process costs little more than Python's own start.
"""

from __future__ import annotations

import gc
import sys

TYPE_CHECKING = False  # typing is not loaded at run time: the capture hook starts here
if TYPE_CHECKING:
    from typing import NoReturn


def main() -> NoReturn:
    """Load the command line with the collector off, freeze what loaded, run it."""
    if sys.argv[1:3] == ["observe", "capture"]:
        from gitmem.observe.capture import hook_main

        sys.exit(hook_main(sys.argv[3:]))
    gc.disable()
    try:
        from gitmem.cli import main as run
    finally:
        gc.freeze()
        gc.enable()
    run()


if __name__ == "__main__":
    main()
