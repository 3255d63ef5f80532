"""The command that shares stores with a remote: sync."""

from __future__ import annotations

import click

from gitmem.cli.options import json_option, open_repository, store_option
from gitmem.cli.output import show as print_report
from gitmem.ops import reports

__all__ = ["COMMANDS"]


@click.command()
@click.argument("remote", default="origin")
@store_option
@json_option
def sync(remote: str, store: str | None, as_json: bool) -> None:
    """Share the stores with a remote: fetch, reconcile what diverged, push.

    REMOTE is a remote of the project (default: origin), a URL or a path. A push never
    forces: a remote that moved is fetched and reconciled again. Memories changed on
    both sides are merged line by line; where the changes overlap, the remote's text
    is kept beside yours as SLUG.conflict-<commit> and listed as a conflict. Exits 0
    when every store is reconciled and pushed, conflicts or not.

    \b
    Example:
        gitmem sync
        gitmem sync upstream --store profile/ops --json
    """
    print_report(reports.sync(open_repository(), remote, store), as_json)


COMMANDS = (sync,)
