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
    from gitmem.adapters import sessions

    options = sessions.hook_options(sys.argv[1:]) if os.name == "posix" else None
    if options is None:
        return
    import signal

    def alarm(*_: object) -> None:
        raise _GaveUp

    # one alarm for the event's reading and the answer alike, as the command line has;
    # a command line that answers after all has only what is left of the time
    seconds = options[2]
    sessions.hook_begun()
    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    stdin = sys.stdin
    try:
        data = _event(stdin, 4 * (sessions.INPUT_MAX + 1))
        answered = data is not None and _answered(options, data, stdin)
    except _GaveUp:
        _give_up(seconds)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    if answered:
        os._exit(0)  # as the command line ends: nothing to tear down
    if data is not None:
        sys.stdin = _again(data, stdin)


def _event(stdin: TextIO | None, limit: int) -> bytes | None:
    """The bytes of at least as many characters as the hook reads (UTF-8 spends at most
    four on one) of the event on ``stdin``; ``None`` for no stream this reads, which the
    command line then reads itself."""
    from gitmem.adapters.sessions import read_event

    try:
        return read_event(stdin.fileno(), limit) if stdin is not None else None
    except (OSError, ValueError):  # ValueError: a stream without a descriptor
        return None


def _answered(options: tuple[str, str | None, float], data: bytes, stdin: TextIO) -> bool:
    """Whether the hook ``options`` names, whose event is ``data``, was answered quietly."""
    from gitmem.adapters.sessions import INPUT_MAX, quiet_hook

    try:
        return quiet_hook(options, os.environ, _again(data, stdin).read(INPUT_MAX + 1))
    except Exception:  # anything unforeseen: the command line reads the event again
        return False


def _again(data: bytes, stdin: TextIO) -> TextIO:
    """The event ``data`` as the command line reads it from ``stdin``."""
    import io

    return io.TextIOWrapper(io.BytesIO(data), stdin.encoding, stdin.errors, newline="\n")


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
