"""The commands that hold writes to a store's rules beyond its limits: ``hooks`` (git
hooks for a plain `git push`) and ``guard`` (a store's guard code and allowlist)."""

from __future__ import annotations

import click

from gitmem import ops
from gitmem.cli.options import (
    author_option,
    json_option,
    open_repository,
    picked,
    read_text,
    store_option,
)
from gitmem.cli.output import emit

__all__ = ["COMMANDS"]


@click.group()
def hooks() -> None:
    """Git hooks that hold `git push` to gitmem's rules; agent hooks are `gitmem hook`.

    `gitmem hooks install` puts pre-push into this project, or pre-receive into a
    shared bare repository.

    \b
    Example:
        gitmem hooks install --server /srv/project.git
    """


@hooks.command("install")
@click.option(
    "--server",
    metavar="PATH",
    type=click.Path(file_okay=False),
    help="A shared bare repository: install pre-receive there (else pre-push here).",
)
@click.option(
    "--standalone",
    is_flag=True,
    help="The server holds standalone stores (refs/heads/<store-id>): guard every branch.",
)
@json_option
def hooks_install(server: str | None, standalone: bool, as_json: bool) -> None:
    """Install pre-receive into a shared bare repository, or pre-push into this project.

    A refused push prints one line per refused ref (commit and rule) and changes
    nothing. Pushes to refs that are not store branches pass untouched.

    \b
    Examples:
        gitmem hooks install --server /srv/project.git
        gitmem hooks install --server /srv/memory.git --standalone
        gitmem hooks install
    """
    from gitmem import githooks as git_hooks

    if server is not None:
        written = git_hooks.install_server(server, standalone)
    else:
        written = git_hooks.install(open_repository().directory, ["pre-push"])
    if as_json:
        emit({"installed": written})
        return
    for path in written:
        click.echo(f"installed {path}")


@click.group()
def guard() -> None:
    """A store's guard code (check(change) in TypeScript) and its secret allowlist.

    \b
    Example:
        gitmem guard set --store notes no-todo.ts
        gitmem guard allow 3f5a0c9e1b2d4e6f --note "the SDK docs' sample key"
    """


@guard.command("set")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@store_option
@author_option
def guard_set(file: str, store: str | None, author: str | None) -> None:
    """Keep FILE.ts as the store's guard: its exported check(change) judges every write.

    Returning a string refuses the write with that message; returning nothing
    accepts it. The guard is versioned in the store (see `gitmem log`).

    \b
    Example:
        gitmem guard set --store notes no-todo.ts
    """
    repo, name = picked(store, may_create=True)
    commit = repo.set_guard(name, read_text(file), ops.parse_author(author))
    click.echo(f"guard of {name} set" if commit else f"guard of {name} unchanged")


@guard.command("clear")
@store_option
@author_option
def guard_clear(store: str | None, author: str | None) -> None:
    """Remove the store's guard (one commit; revert it like any other).

    \b
    Example:
        gitmem guard clear --store notes
    """
    repo, name = picked(store)
    commit = repo.set_guard(name, None, ops.parse_author(author))
    click.echo(f"guard of {name} removed" if commit else f"{name} has no guard")


@guard.command("show")
@store_option
def guard_show(store: str | None) -> None:
    """Print the store's guard source.

    \b
    Example:
        gitmem guard show --store notes
    """
    repo, name = picked(store)
    source = repo.guard(name)
    if source is None:
        raise click.ClickException(f"{name} has no guard; set one with `gitmem guard set FILE.ts`")
    click.echo(source, nl=not source.endswith("\n"))


@guard.command("allow")
@click.argument("fingerprint")
@click.option("--note", default="", help="Why this is not a credential (kept beside it).")
@store_option
@author_option
def guard_allow(fingerprint: str, note: str, store: str | None, author: str | None) -> None:
    """Admit a reviewed false positive: FINGERPRINT is what the refusal named.

    The store's allowlist (`@allowlist` in its tree) gains one line, in one commit.

    \b
    Example:
        gitmem guard allow 3f5a0c9e1b2d4e6f --store notes --note "docs' sample key"
    """
    repo, name = picked(store)
    commit = repo.allow(name, fingerprint, note, ops.parse_author(author))
    click.echo(f"{fingerprint} allowed in {name}" if commit else f"{fingerprint} already allowed")


@guard.command("allowlist")
@store_option
@json_option
def guard_allowlist(store: str | None, as_json: bool) -> None:
    """List the fingerprints the store's allowlist admits.

    \b
    Example:
        gitmem guard allowlist --store notes
    """
    repo, name = picked(store)
    found = sorted(repo.allowed(name).fingerprints)
    if as_json:
        emit(found)
        return
    for item in found:
        click.echo(item)


COMMANDS = (hooks, guard)
