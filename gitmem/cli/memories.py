"""The commands that read and edit one store's memories: ls, show, log, blame,
revisions, path, create, edit, delete, restore, revert, search and state."""

from __future__ import annotations

import sys

import click

from gitmem import ops
from gitmem.cli.options import (
    at_option,
    author_option,
    body_options,
    json_option,
    picked,
    read_text,
    store_option,
)
from gitmem.cli.options import body as given_body
from gitmem.cli.output import show as print_report
from gitmem.ops import reports

__all__ = ["COMMANDS"]


@click.command()
@store_option
@at_option
@json_option
def ls(store: str | None, at: str | None, as_json: bool) -> None:
    """List the memories in a store: slug, size and description (a file store: its files).

    \b
    Example:
        gitmem ls --store profile/researcher
        gitmem ls --at 2026-05-01
    """
    print_report(reports.ls(*picked(store, at=at)), as_json)


@click.command()
@click.argument("slug")
@click.option("--rev", type=click.IntRange(min=1), metavar="N", help="Show revision N.")
@store_option
@at_option
@json_option
def show(slug: str, rev: int | None, store: str | None, at: str | None, as_json: bool) -> None:
    """Show a memory (or one of its past revisions); in a file store, SLUG is a path.

    \b
    Example:
        gitmem show deploy-runbook --rev 2
        gitmem show memories/notes.md --store claude
        gitmem show deploy-runbook --at 3f0c9a1e
    """
    print_report(reports.show(*picked(store, at=at), slug, rev), as_json)


@click.command()
@click.argument("slug", required=False)
@click.option("-p", "--patch", is_flag=True, help="Show each revision's text change as a diff.")
@click.option("--stat", is_flag=True, help="Count the lines each revision added and removed.")
@store_option
@at_option
@json_option
def log(
    slug: str | None, patch: bool, stat: bool, store: str | None, at: str | None, as_json: bool
) -> None:
    """Show the revisions of a store (or one memory, or in a file store one path),
    newest first.

    \b
    Example:
        gitmem log deploy-runbook -p
        gitmem log memory --stat --store instance/nb-1
    """
    print_report(reports.log(*picked(store, at=at), slug, patch=patch, stat=stat), as_json)


@click.command()
@click.argument("slug")
@at_option
@store_option
@json_option
def blame(slug: str, at: str | None, store: str | None, as_json: bool) -> None:
    """Show who last changed each line of a memory: for each line of its description,
    body and code, the commit, revision, author, session and date.

    \b
    Example:
        gitmem blame deploy-runbook
        gitmem blame deploy-runbook --at 3f2a9c1 --json
    """
    print_report(reports.blame(*picked(store), slug, at), as_json)


@click.command()
@store_option
@click.argument("slug", required=False)
@json_option
def revisions(slug: str | None, store: str | None, as_json: bool) -> None:
    """Print every revision with its text, oldest first.

    \b
    Example:
        gitmem revisions deploy-runbook --json
    """
    print_report(reports.revisions(*picked(store), slug), as_json)


@click.command()
@click.argument("slug")
@store_option
@json_option
def path(slug: str, store: str | None, as_json: bool) -> None:
    """Print where a memory's file lives in its store's tree.

    \b
    Example:
        git --git-dir=.gitmem show notes:$(gitmem path todo --store notes)
    """
    print_report(reports.path(*picked(store), slug), as_json)


@click.command()
@click.argument("slug")
@click.option("--description", "-d", required=True, help="What the memory is for (one line).")
@body_options
@store_option
@author_option
@json_option
def create(
    slug: str,
    description: str,
    body: str | None,
    body_file: str | None,
    store: str | None,
    author: str | None,
    as_json: bool,
) -> None:
    """Create a memory, as the operator.

    The body comes from --body, --body-file or stdin. A --store that does not exist
    yet is started by the create.

    \b
    Example:
        gitmem create deploy-runbook -d "how staging is rolled" --body-file runbook.md
    """
    text = _body_or_stdin(body, body_file)
    repo, name = picked(store, may_create=True)
    rev = ops.create(repo, name, ops.parse_author(author), slug, description, text)
    print_report(reports.Written.one(rev), as_json)


def _body_or_stdin(text: str | None, body_file: str | None) -> str:
    given = given_body(text, body_file)
    if given is not None:
        return given
    if sys.stdin.isatty():
        raise click.UsageError("give the body with --body, --body-file or on stdin")
    return read_text("-")


@click.command()
@click.argument("slug")
@click.option("--old", "old_text", help="Text to replace; must occur exactly once in the body.")
@click.option("--new", "new_text", help="The text to put in its place.")
@click.option("--description", "-d", help="A new description.")
@body_options
@store_option
@author_option
@json_option
def edit(
    slug: str,
    old_text: str | None,
    new_text: str | None,
    description: str | None,
    body: str | None,
    body_file: str | None,
    store: str | None,
    author: str | None,
    as_json: bool,
) -> None:
    """Edit a memory, as the operator.

    Replace text found exactly once (--old/--new), the whole body, or the description.

    \b
    Example:
        gitmem edit deploy-runbook --old "port 80" --new "port 443"
        gitmem edit deploy-runbook --body-file runbook.md -d "how prod is rolled"
    """
    text = given_body(body, body_file)
    repo, name = picked(store)
    rev = ops.edit(
        repo,
        name,
        ops.parse_author(author),
        slug,
        old_text=old_text,
        new_text=new_text,
        description=description,
        body=text,
    )
    print_report(reports.Written.one(rev), as_json)


@click.command()
@click.argument("slug")
@store_option
@author_option
@json_option
def delete(slug: str, store: str | None, author: str | None, as_json: bool) -> None:
    """Delete a memory, as the operator (its history stays in `gitmem log`).

    \b
    Example:
        gitmem delete stale-notes --store profile/researcher
    """
    rev = ops.delete(*picked(store), ops.parse_author(author), slug)
    print_report(reports.Written.one(rev), as_json)


@click.command()
@click.argument("keywords", nargs=-1, required=True)
@click.option(
    "--limit",
    type=click.IntRange(min=0),
    default=0,
    help="At most this many hits (default: the store's maxResults).",
)
@store_option
@at_option
@json_option
def search(
    keywords: tuple[str, ...], limit: int, store: str | None, at: str | None, as_json: bool
) -> None:
    """Search memories by keywords, ranked as search_memories ranks them.

    \b
    Example:
        gitmem search deploy staging --limit 5
    """
    print_report(reports.search(*picked(store, at=at), list(keywords), limit), as_json)


@click.command()
@store_option
@at_option
@json_option
def state(store: str | None, at: str | None, as_json: bool) -> None:
    """Show a store's memory_state: memories, totals, limits and peaks.

    \b
    Example:
        gitmem state --store profile/ops --json
    """
    print_report(reports.state(*picked(store, at=at)), as_json)


@click.command()
@click.argument("slug")
@click.option("--rev", type=click.IntRange(min=1), metavar="N", required=True, help="The revision.")
@store_option
@author_option
@json_option
def restore(slug: str, rev: int, store: str | None, author: str | None, as_json: bool) -> None:
    """Make a past revision of a memory its live text again, as one new commit.

    History is not rewritten: the restore is a write like any other, held to the
    store's limits, secrets and guard. A deleted memory comes back.

    \b
    Example:
        gitmem restore deploy-runbook --rev 2
    """
    repo, name = picked(store)
    print_report(
        reports.Written.one(repo.restore(name, slug, rev, ops.parse_author(author))), as_json
    )


@click.command()
@click.argument("commits", metavar="COMMIT|FROM..TO")
@store_option
@author_option
@json_option
def revert(commits: str, store: str | None, author: str | None, as_json: bool) -> None:
    """Take back what a commit did to the memories (a merge: against its first parent),
    or a whole run of commits FROM..TO, as one new commit.

    History is not rewritten. Refused, changing nothing, when a later change to one of
    those memories would be lost; the refusal names them.

    \b
    Example:
        gitmem revert 3f0c9a1e
        gitmem revert 3f0c9a1e..8d2b44c0 --json
    """
    repo, name = picked(store)
    done = repo.revert(name, commits, ops.parse_author(author))
    print_report(reports.Written(done, many=True), as_json)


COMMANDS = (
    ls,
    show,
    log,
    blame,
    revisions,
    path,
    create,
    edit,
    delete,
    restore,
    revert,
    search,
    state,
)
