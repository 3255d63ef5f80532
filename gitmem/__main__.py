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
small capture module, so its process costs little more than Python's own start. So do
the plain forms of the read commands (``gitmem ls``, ``gitmem state``, ...) that the
lean read path (:mod:`gitmem.quick`) answers, and a Claude Code prompt with nothing to
give or a Stop that runs nothing (:func:`gitmem.adapters.sessions.quiet_hook`); anything
else they leave to the command line, as if they were not there.
"""

from __future__ import annotations

import gc
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn, TextIO


def _lean() -> None:
    """Print the lean read path's answer and end the process, if it has one."""
    from gitmem.quick import printed

    text = printed(sys.argv[1:], os.environ)
    if text is None:
        return
    out = sys.stdout
    terminal = out.isatty()
    if isinstance(text, bytes) and (terminal or not _utf8(out)):
        try:
            text = text.decode()
        except UnicodeDecodeError:  # a kept text no gitmem wrote: the command line reads it
            return
    if terminal and isinstance(text, str):
        from gitmem.lean.lines import CARETS

        text = text.translate(CARETS)
    status = 0
    try:
        if isinstance(text, bytes):
            out.flush()
            out.buffer.write(text)  # the very bytes the text encodes to
            out.buffer.flush()
        else:
            out.write(text)
            out.flush()
    except (OSError, ValueError):
        status = 1  # a reader that went away (`gitmem ls | head`)
    os._exit(status)  # as the command line ends: nothing to tear down


class _GaveUp(BaseException):
    """The hook's time ran out while it was answered without the command line."""


def _quiet_hook() -> None:
    """End the process if the command is a Claude Code prompt that gets no context or a
    Stop that runs nothing, once its session's file is brought up to date (see
    :mod:`gitmem.adapters.sessions`), within the hook's ``--timeout`` as the command line
    keeps it. Otherwise the command line runs, reading the event as if this had not."""
    import time

    from gitmem.adapters import sessions

    started = time.monotonic()
    argv = sys.argv[1:]
    options = sessions.hook_options(argv) if os.name == "posix" else None
    if options is None:
        return
    seconds = options[2]
    # the bytes of at least as many characters as the hook reads (UTF-8 spends at most
    # four on one), given the time the hook is given
    limit = sessions.INPUT_MAX + 1
    try:
        data = sessions.read_event(sys.stdin.fileno(), 4 * limit, seconds)
    except (OSError, ValueError, AttributeError):  # AttributeError: no stdin at all
        return  # not a stream this reads: the command line reads it
    if data is None:
        _give_up(seconds)
    import io
    import signal

    stdin = sys.stdin

    def again() -> TextIO:  # the event as the command line reads it from stdin
        return io.TextIOWrapper(io.BytesIO(data), stdin.encoding, stdin.errors, newline="\n")

    def alarm(*_: object) -> None:
        raise _GaveUp

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, max(seconds - (time.monotonic() - started), 1e-3))
    try:
        answered = sessions.quiet_hook(argv, os.environ, again().read(limit))
        signal.setitimer(signal.ITIMER_REAL, 0)
    except _GaveUp:
        _give_up(seconds)
    except Exception:  # anything unforeseen: the command line reads the event again
        signal.setitimer(signal.ITIMER_REAL, 0)
        answered = False
    signal.signal(signal.SIGALRM, previous)
    if answered:
        os._exit(0)  # as the command line ends: nothing to tear down
    sys.stdin = again()


def _give_up(seconds: float) -> NoReturn:
    """End the process as the command line ends a hook whose time ran out."""
    from gitmem.adapters.sessions import gave_up

    sys.stderr.write(gave_up(seconds) + "\n")
    sys.stderr.flush()
    os._exit(0)


def _utf8(stream: TextIO) -> bool:
    """Whether text written to ``stream`` reaches its bytes as UTF-8, each newline as
    itself."""
    import codecs  # loaded at every start already

    try:
        return codecs.lookup(stream.encoding).name == "utf-8" and os.linesep == "\n"
    except LookupError:
        return False


def main() -> NoReturn:
    """Load the command line with the collector off, freeze what loaded, run it."""
    if sys.argv[1:3] == ["observe", "capture"]:
        from gitmem.observe.capture import hook_main

        sys.exit(hook_main(sys.argv[3:]))
    gc.disable()  # the lean path makes no cycles either: a listing's rows are many tuples
    if "hook" in sys.argv[1:4]:
        _quiet_hook()
    _lean()
    try:
        from gitmem.cli import main as run
    finally:
        gc.freeze()
        gc.enable()
    run()


if __name__ == "__main__":
    main()
