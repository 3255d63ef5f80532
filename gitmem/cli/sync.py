"""The command that shares stores with a remote: sync."""

from __future__ import annotations

import click

from gitmem.cli.options import json_option, open_repository, store_option
from gitmem.cli.output import show as print_report
from gitmem.ops import reports

__all__ = ["COMMANDS", "KEPT_OUT"]

KEPT_OUT = 2
"""``gitmem sync``'s exit status when commits of the remote's broke a store's rules and
were kept out of it."""


@click.command()
@click.argument("remote", default="origin")
@store_option
@json_option
def sync(remote: str, store: str | None, as_json: bool) -> None:
    """Share the stores with a remote: fetch, reconcile what diverged, push.

    REMOTE is a remote of the project (default: origin), a URL or a path. A push never
    forces: a remote that moved is fetched and reconciled again. Memories changed on
    both sides are merged line by line; where the changes overlap, the remote's text
    is kept beside yours as SLUG.conflict-<commit> and listed as a conflict. What the
    remote brings is checked as the push hook checks a push; a commit that breaks a
    store's rules is kept out, and that store keeps its head.

    \b
    Exit status:
        0  every store is reconciled and pushed, conflicts or not
        1  the remote cannot be reached or refuses the push (one line says why)
        2  commits of the remote's were kept out of a store (its lines say which and
           why); the other stores are synced as usual

    \b
    Example:
        gitmem sync
        gitmem sync upstream --store profile/ops --json
    """
    report = reports.sync(open_repository(), remote, store)
    print_report(report, as_json)
    if report.kept_out:
        click.get_current_context().exit(KEPT_OUT)


COMMANDS = (sync,)
