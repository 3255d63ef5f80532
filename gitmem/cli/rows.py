"""Curated rows' commands: add, append, link, unlink, reclassify, and read them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from gitmem import ops
from gitmem.cli.options import author_option, body_options, json_option, picked, store_option
from gitmem.cli.options import body as given_body
from gitmem.cli.output import emit
from gitmem.cli.output import show as print_report
from gitmem.ops import reports

_F = TypeVar("_F", bound=Callable[..., Any])

__all__ = ["COMMANDS"]


@click.group()
def rows() -> None:
    """Curated rows: add, append, link, reclassify, and read them.

    \b
    Example:
        gitmem rows add tz --owner user -d "Fact: the user works in UTC+2" --body "said 11-01"
        gitmem rows birth --store profile/orchestrator
    """


@rows.command("add")
@click.argument("name")
@click.option("--description", "-d", required=True, help="The claim; its first word is its kind.")
@click.option("--owner", required=True, type=click.Choice(["user", "project", "host"]))
@click.option("--project", "-P", metavar="KEY", help="The project's key (owner project only).")
@click.option("--role", default="knowledge", type=click.Choice(["knowledge", "thread", "log"]))
@click.option("--replace", is_flag=True, help="Correct an error in an existing row (marked).")
@body_options
@store_option
@author_option
@json_option
def rows_add(
    name: str,
    description: str,
    owner: str,
    project: str | None,
    role: str,
    replace: bool,
    body: str | None,
    body_file: str | None,
    store: str | None,
    author: str | None,
    as_json: bool,
) -> None:
    """Add a row, as the operator; an existing name is refused unless --replace.

    \b
    Example:
        gitmem rows add deploy-hang --owner project -P alpha --role thread \\
            -d "Pending: deploys hang at step 3" --body "seen twice"
    """
    text = given_body(body, body_file)
    if text is None:
        raise click.UsageError("give the content with --body or --body-file")
    rev = ops.rows_add(
        *picked(store, may_create=True),
        ops.parse_author(author),
        name,
        description,
        owner,
        text,
        role=role,
        project=project,
        replace=replace,
    )
    print_report(reports.Written.one(rev), as_json)


@rows.command("append")
@click.argument("name")
@click.argument("text")
@store_option
@author_option
@json_option
def rows_append(name: str, text: str, store: str | None, author: str | None, as_json: bool) -> None:
    """Append TEXT to a log or a live thread.

    \b
    Example:
        gitmem rows append deploy-hang "third time, 2026-11-02"
    """
    rev = ops.rows_append(*picked(store), ops.parse_author(author), name, text)
    print_report(reports.Written.one(rev), as_json)


def _link_arguments(f: _F) -> _F:
    """What ``rows link`` and ``rows unlink`` both take: SOURCE KIND TARGET and the options."""
    for option in reversed(
        (
            click.argument("source"),
            click.argument("kind", type=click.Choice(["supersedes", "graduated_to"])),
            click.argument("target"),
            store_option,
            author_option,
            json_option,
        )
    ):
        f = option(f)
    return f


@rows.command("link")
@_link_arguments
def rows_link(
    source: str, kind: str, target: str, store: str | None, author: str | None, as_json: bool
) -> None:
    """Link SOURCE to TARGET (supersedes: from the new row to the old), in one commit.

    \b
    Example:
        gitmem rows link tz-2 supersedes tz
    """
    revs = ops.rows_link(*picked(store), ops.parse_author(author), source, kind, target)
    print_report(reports.Written(revs, many=True), as_json)


@rows.command("unlink")
@_link_arguments
def rows_unlink(
    source: str, kind: str, target: str, store: str | None, author: str | None, as_json: bool
) -> None:
    """Remove a link, in one commit; the edge stays in the history.

    \b
    Example:
        gitmem rows unlink tz-2 supersedes tz
    """
    revs = ops.rows_unlink(*picked(store), ops.parse_author(author), source, kind, target)
    print_report(reports.Written(revs, many=True), as_json)


@rows.command("reclassify")
@click.argument("name")
@click.option("--status", type=click.Choice(["live", "closed", "graduated"]))
@click.option("--role", type=click.Choice(["knowledge", "thread", "log"]))
@store_option
@author_option
@json_option
def rows_reclassify(
    name: str,
    status: str | None,
    role: str | None,
    store: str | None,
    author: str | None,
    as_json: bool,
) -> None:
    """Set a row's status and/or role; nothing is deleted.

    \b
    Example:
        gitmem rows reclassify deploy-hang --status closed
    """
    rev = ops.rows_reclassify(
        *picked(store), ops.parse_author(author), name, status=status, role=role
    )
    print_report(reports.Written.one(rev), as_json)


@rows.command("show")
@click.argument("name")
@store_option
@json_option
def rows_show(name: str, store: str | None, as_json: bool) -> None:
    """Show one row whole, whatever its lifecycle.

    \b
    Example:
        gitmem rows show tz
    """
    from gitmem.strategies.curated import row_text

    row = ops.rows_show(*picked(store), name)
    if as_json:
        emit(row.to_dict())
    else:
        click.echo(row_text(row))


@rows.command("ls")
@click.option("--owner", metavar="OWNER", help="user, host, or 'project KEY'.")
@click.option("--live", is_flag=True, help="Only live rows that nothing supersedes.")
@store_option
@json_option
def rows_ls(owner: str | None, live: bool, store: str | None, as_json: bool) -> None:
    """List rows: name, owner, role, status, description.

    \b
    Example:
        gitmem rows ls --owner "project alpha" --live
    """
    from gitmem.strategies.curated_ops import row_line

    found = ops.rows_list(*picked(store), owner=owner, live=live)
    if as_json:
        emit([r.to_dict() for r in found])
    else:
        click.echo("".join(row_line(r) + "\n" for r in found), nl=False)


@rows.command("relevant")
@click.argument("project")
@click.option("--knowledge", is_flag=True, help="Add the project's standing knowledge rows.")
@store_option
def rows_relevant(project: str, knowledge: bool, store: str | None) -> None:
    """Print a project's whole live-pending set, with bodies.

    \b
    Example:
        gitmem rows relevant alpha --knowledge
    """
    click.echo(ops.rows_relevant(*picked(store), project, knowledge=knowledge))


@rows.command("birth")
@store_option
def rows_birth(store: str | None) -> None:
    """Preview the birth block a session opens with (records nothing).

    \b
    Example:
        gitmem rows birth --store profile/orchestrator
    """
    click.echo(ops.rows_birth(*picked(store)) or "(nothing: the store holds no rows)")


@rows.command("conflicts")
@click.option("--owner", metavar="OWNER", help="user, host, or 'project KEY'.")
@store_option
@json_option
def rows_conflicts(owner: str | None, store: str | None, as_json: bool) -> None:
    """List live pairs of one owner that share wording: candidates, never a verdict.

    \b
    Example:
        gitmem rows conflicts --owner user
    """
    from gitmem.strategies.curated import conflicts_text
    from gitmem.strategies.curated_ops import conflicts_json

    found = ops.rows_conflicts(*picked(store), owner)
    if as_json:
        emit(conflicts_json(found))
    else:
        click.echo(conflicts_text(found))


COMMANDS = (rows,)
