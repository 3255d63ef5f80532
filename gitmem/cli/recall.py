"""``gitmem recall``: the memory summary recalled at a session's start, and the retain
runs that build it from past sessions (see :mod:`gitmem.observe.retain`)."""

from __future__ import annotations

import click

from gitmem import ops
from gitmem.cli.options import author_option, open_repository

__all__ = ["COMMANDS"]

_TRANSCRIPTS = click.option(
    "--transcripts",
    metavar="DIR",
    type=click.Path(file_okay=False),
    help="The folder of Claude Code transcripts (default: this project's).",
)


@click.group()
def recall() -> None:
    """The memory recalled into each new session, built from past sessions.

    A retain run extracts what each past session taught and consolidates it into
    MEMORY.md, memory_summary.md and skills/ in the recall store; the summary is
    recalled at a session's start under a token budget.

    \b
    Example:
        gitmem recall view
    """


@recall.command("view")
def recall_view() -> None:
    """Show what a new session is handed: the summary under its guidance.

    \b
    Example:
        gitmem recall view
    """
    from gitmem.observe.retain import view

    click.echo(view(open_repository()) or "(nothing is recalled: there is no summary yet)")


@recall.command("clear")
@author_option
def recall_clear(author: str | None) -> None:
    """Delete the summary, MEMORY.md, skills and every extraction, as one commit.

    The next run extracts the sessions afresh; `git revert` undoes a clear.

    \b
    Example:
        gitmem recall clear
    """
    from gitmem.observe.retain import clear

    commit = clear(open_repository(), ops.parse_author(author))
    click.echo(f"cleared: {commit}" if commit else "nothing to clear")


@recall.command("rebuild")
@_TRANSCRIPTS
def recall_rebuild(transcripts: str | None) -> None:
    """Run retain now and consolidate even if no session is new.

    \b
    Example:
        gitmem recall rebuild
    """
    from gitmem.observe.retain import run

    for line in run(open_repository(), transcripts, force=True).lines():
        click.echo(line)


@recall.command("run")
@_TRANSCRIPTS
def recall_run(transcripts: str | None) -> None:
    """Run retain once: extract the sessions changed since last time, then consolidate.

    The Claude Code plugin starts this in the background when a session ends.

    \b
    Example:
        gitmem recall run --transcripts ~/.claude/projects/-home-ada-app
    """
    from gitmem.observe.retain import run

    for line in run(open_repository(), transcripts).lines():
        click.echo(line)


COMMANDS = (recall,)
