"""The commands that review what holders propose: review, approve, reject."""

from __future__ import annotations

import click

from gitmem.cli.options import author_option, json_option, open_repository, store_option
from gitmem.cli.output import show as print_report
from gitmem.ops import parse_author
from gitmem.ops import review as reviewing

__all__ = ["COMMANDS"]


@click.command()
@store_option
@json_option
def review(store: str | None, as_json: bool) -> None:
    """List the pending proposals, each named STORE/HOLDER, with its diffs.

    A holder whose capability turns on review writes to a proposal of its own; the
    store changes only when an operator approves.

    \b
    Example:
        gitmem review
        gitmem review --store profile/team --json
    """
    print_report(reviewing.review(open_repository(), store), as_json)


_HEAD = click.option(
    "--head",
    metavar="COMMIT",
    help="The proposal's head as `gitmem review` printed it: refused if its holder has "
    "written to it since, so you decide on what you read.",
)


@click.command()
@click.argument("proposal")
@click.argument("slugs", nargs=-1)
@_HEAD
@author_option
@json_option
def approve(
    proposal: str, slugs: tuple[str, ...], head: str | None, author: str | None, as_json: bool
) -> None:
    """Merge PROPOSAL (STORE/HOLDER) into its store, or only the memories SLUGS name.

    One merge commit, held to the store's limits, secrets and guard; what is not
    approved stays pending. Other holders of the store are told of what it takes.

    \b
    Example:
        gitmem approve profile/team/run-1 --head 3f0c9a1e2b7d
        gitmem approve profile/team/run-1 deploy-runbook --json
    """
    repo = open_repository()
    print_report(reviewing.approve(repo, proposal, slugs, parse_author(author), head), as_json)


@click.command()
@click.argument("proposal")
@click.argument("slugs", nargs=-1)
@_HEAD
@author_option
@json_option
def reject(
    proposal: str, slugs: tuple[str, ...], head: str | None, author: str | None, as_json: bool
) -> None:
    """Reject PROPOSAL (STORE/HOLDER), or only the memories SLUGS name.

    One commit on the proposal puts them back as the store has them; the store is
    not touched, so no other holder hears of them.

    \b
    Example:
        gitmem reject profile/team/run-1
        gitmem reject profile/team/run-1 scratch-notes
    """
    repo = open_repository()
    print_report(reviewing.reject(repo, proposal, slugs, parse_author(author), head), as_json)


COMMANDS = (review, approve, reject)
