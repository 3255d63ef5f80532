"""The commands about the repository and its stores: init, stores, fork and check."""

from __future__ import annotations

import os
import sys

import click

from gitmem import ops
from gitmem.cli.options import (
    author_option,
    json_option,
    open_repository,
    picked,
    settings,
    store_option,
)
from gitmem.cli.output import fail
from gitmem.cli.output import show as print_report
from gitmem.ops import reports
from gitmem.repository import Repository

__all__ = ["COMMANDS"]


@click.command()
@click.argument("path", required=False, type=click.Path(file_okay=False))
@click.option(
    "--bare",
    is_flag=True,
    help="Make a standalone bare repository at PATH, even inside a project.",
)
def init(path: str | None, bare: bool) -> None:
    """Create a gitmem repository.

    Inside a git project the stores go in the project's own repository (branches
    refs/heads/gitmem/<store>, shared with `gitmem sync`); elsewhere, or with --bare,
    a standalone bare repository (default: ./.gitmem).

    \b
    Example:
        cd my-project && gitmem init
        gitmem init --bare /srv/agents/memories.git
    """
    if bare and path is None:
        raise click.UsageError("--bare needs the PATH of the repository to make")
    target = path or settings().repo or ops.init_target(os.getcwd())
    with Repository.init(target, bare=bare) as repo:
        if repo.project:
            click.echo(
                f"gitmem stores in the project's repository {repo.directory}, as branches "
                "refs/heads/gitmem/<store>; share them with `gitmem sync`"
            )
        else:
            click.echo(f"gitmem repository in {repo.directory}")


@click.command()
@json_option
def stores(as_json: bool) -> None:
    """List the stores (branches) with their memory counts.

    \b
    Example:
        gitmem stores --json
    """
    print_report(reports.stores(open_repository()), as_json)


@click.command()
@click.argument("source")
@click.argument("target")
@json_option
def fork(source: str, target: str, as_json: bool) -> None:
    """Start store TARGET as a copy of store SOURCE; they diverge from there.

    \b
    Example:
        gitmem fork profile/researcher profile/researcher-trial
    """
    print_report(reports.fork(open_repository(), source, target), as_json)


@click.command("set-limits")
@click.argument("assignments", metavar="LIMIT=N...", nargs=-1, required=True)
@click.option("--widen", is_flag=True, help="Loosen limits on purpose (off, or higher).")
@store_option
@author_option
def set_limits(
    assignments: tuple[str, ...], widen: bool, store: str | None, author: str | None
) -> None:
    """Record the limits a store is held to, as one commit (the others kept).

    Tightening needs nothing more; loosening a limit (0 turns it off) needs --widen,
    and the commit says so. A push hook refuses a widening, so widen where the shared
    store is kept (--repo the server's repository); sync adopts it elsewhere and says so.

    \b
    Example:
        gitmem set-limits --store notes maxLenPerMemory=1000
        gitmem --repo /srv/project.git set-limits --store notes --widen maxLenPerMemory=0
    """
    repo, name = picked(store)
    commit = ops.set_limits(repo, name, ops.parse_author(author), assignments, widen)
    click.echo(f"{name}: recorded limits {' '.join(assignments)} at {commit[:12]}")


def _progress(count: int) -> None:
    if count % 500 == 0:
        click.echo(f"\rchecked {count:,} objects", err=True, nl=False)


@click.command()
@json_option
def check(as_json: bool) -> None:
    """Check the repository's health; exits 1 listing the problems.

    Every object reachable from every ref must read and hash to its name, and every
    memory file must parse.

    \b
    Example:
        gitmem check --json
    """
    progress = None if as_json or not sys.stderr.isatty() else _progress
    health = reports.check(open_repository(), progress)
    if progress is not None:
        click.echo("", err=True)
    print_report(health, as_json)
    fail(health.refusal())


COMMANDS = (init, stores, fork, check, set_limits)
