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


_NAME = click.argument("proposal", metavar="PROPOSAL")


@recall.command("proposals")
def recall_proposals() -> None:
    """List the consolidations refused for dropping too much, with their diffs.

    Each waits for an operator: `gitmem recall land` or `gitmem recall drop`.

    \b
    Example:
        gitmem recall proposals
    """
    from gitmem.observe.proposals import proposals

    found = proposals(open_repository())
    for line in [line for p in found for line in p.lines()] or ["No proposals are pending."]:
        click.echo(line)


@recall.command("land")
@_NAME
@author_option
def recall_land(proposal: str, author: str | None) -> None:
    """Land PROPOSAL (as listed, or only its time) on the recall store, as one commit.

    \b
    Example:
        gitmem recall land 20261201T190000Z
    """
    from gitmem.observe.proposals import land

    commit = land(open_repository(), proposal, ops.parse_author(author))
    click.echo(f"landed: {commit}" if commit else "landed: the store held it already")


@recall.command("drop")
@_NAME
def recall_drop(proposal: str) -> None:
    """Drop PROPOSAL: it will not land; the store is not touched.

    The proposal's branch stays as the record of what was proposed.

    \b
    Example:
        gitmem recall drop 20261201T190000Z
    """
    from gitmem.observe.proposals import drop

    click.echo(f"dropped: {drop(open_repository(), proposal)}")


COMMANDS = (recall,)
