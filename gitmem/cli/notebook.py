"""The notebook's commands: show its text, save it as the operator, list its versions."""

from __future__ import annotations

import click

from gitmem import ops
from gitmem.cli.options import author_option, json_option, picked, read_text, store_option
from gitmem.cli.output import show as print_report
from gitmem.ops import reports

__all__ = ["COMMANDS"]


@click.group()
def notebook() -> None:
    """A notebook store's one file, memory.md: show it, save it as the operator, list
    its versions.

    \b
    Example:
        gitmem notebook timeline --store instance/nb-1
    """


@notebook.command("show")
@store_option
@json_option
def notebook_show(store: str | None, as_json: bool) -> None:
    """Print the live text of a notebook (an unwritten one reads as empty).

    \b
    Example:
        gitmem notebook show --store instance/nb-1 > memory.md
    """
    repo, name = picked(store)
    print_report(reports.notebook_show(name, *ops.notebook_text(repo, name)), as_json)


@notebook.command("save")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@click.option(
    "--expect",
    type=click.IntRange(min=0),
    metavar="VERSION",
    help="The version your text is based on; refused if a newer one is held.",
)
@store_option
@author_option
@json_option
def notebook_save(
    file: str, expect: int | None, store: str | None, author: str | None, as_json: bool
) -> None:
    """Save FILE as the notebook's text, as the operator (at most 256 KB).

    The version it replaces stays in the history; the same text writes nothing.

    \b
    Example:
        gitmem notebook save memory.md --expect 3 --store instance/nb-1
    """
    repo, name = picked(store)
    rev = ops.notebook_save(repo, name, ops.parse_author(author), read_text(file), expect)
    print_report(reports.saved(rev), as_json)


@notebook.command("timeline")
@store_option
@json_option
def notebook_timeline(store: str | None, as_json: bool) -> None:
    """List every version of a notebook, newest first, with author, time and lines
    added and removed.

    \b
    Example:
        gitmem notebook timeline --store instance/nb-1
    """
    print_report(reports.notebook_timeline(ops.notebook_timeline(*picked(store))), as_json)


COMMANDS = (notebook,)
