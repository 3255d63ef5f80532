"""How the command line prints: a report as text or JSON, errors as one line, agents'
text with its control characters shown, and a process that ends without teardown."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, TextIO, cast

import click

from gitmem.lean.ending import end
from gitmem.lean.lines import CARETS

if TYPE_CHECKING:
    from gitmem.ops.reports import Report

__all__ = ["emit", "end", "fail", "one_line", "show", "shown", "unexpected"]


def one_line(text: str) -> str:
    """``text`` on one line, as an error line prints it."""
    return " ".join(text.split()) or "failed"


def unexpected(exc: BaseException) -> str:
    """The error line for a failure no library error describes."""
    return one_line(f"unexpected {type(exc).__name__}: {exc}; please report this as a bug")


def emit(data: object) -> None:
    """Print ``data`` as indented JSON."""
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


def show(report: Report, as_json: bool) -> None:
    """Print a command's report, as JSON under ``--json``, else as text."""
    if as_json:
        emit(report.to_dict())
    else:
        for piece in report.pieces():
            click.echo(piece, nl=False)


def fail(refusal: str | None, *, quiet: bool = False) -> None:
    """End the command with status 1 when ``refusal`` says why (on stderr unless
    ``quiet``: the JSON already said it)."""
    if refusal is None:
        return
    if not quiet:
        click.echo(f"Error: {one_line(refusal)}", err=True)
    click.get_current_context().exit(1)


class _Shown:
    """A terminal's stream that shows the control characters written to it.

    Memories, revisions, search hits and program output are agents' text. Written raw
    to an operator's terminal, an escape sequence in them could recolour or hide lines,
    move the cursor, retitle the window or rewrite the clipboard, and a carriage return
    could overwrite what came before. Output that is not a terminal is left as click
    writes it (click drops colour sequences there); ``--json`` carries the exact text.
    """

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(text.translate(CARETS))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def shown(stream: TextIO) -> TextIO:
    """``stream``, showing control characters if it is a terminal."""
    try:
        terminal = stream.isatty()
    except (AttributeError, ValueError):
        terminal = False
    return cast(TextIO, _Shown(stream)) if terminal else stream
