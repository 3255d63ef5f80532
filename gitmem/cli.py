"""The ``gitmem`` command line: a thin skin over the library.

Each command opens the repository, calls one library function and prints. A
``GitmemError`` becomes one line ``Error: <message>`` on stderr and exit status 1; a
usage error exits 2; nothing ever prints a traceback.

``--json`` shapes (stable; more keys may be added, these are kept):

- ``stores``: ``[{"store", "head", "count", "chars", "lines"}]``
- ``ls``: ``[{"slug", "description", "chars", "lines"}]``
- ``show``: ``{"store", "slug", "revision", "op", "description", "body", "code", "on_use"}``
- ``log``: ``[memory_revision]`` newest first, each with ``"diff"`` under ``-p``
- ``revisions``: ``[memory_revision]`` oldest first
- ``create``/``edit``/``delete``: the ``memory_revision`` it made
- ``path``: ``{"store", "slug", "path"}``; ``fork``: ``{"source", "target", "commit"}``
- ``check``: ``{"healthy", "problems": [str]}``

A ``memory_revision`` is ``{"type", "store", "slug", "revision", "op", "description",
"body", "code", "on_use", "author", "commit", "time"}`` (``Revision.event()``).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

import click

from gitmem import ops
from gitmem.errors import GitmemError, InvalidText
from gitmem.repository import Repository
from gitmem.types import Revision

__all__ = ["cli", "main"]

F = TypeVar("F", bound=Callable[..., Any])


class _Group(click.Group):
    """Turns library errors into one-line click errors, and anything else likewise."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except GitmemError as exc:
            raise click.ClickException(_one_line(str(exc))) from exc
        except Exception as exc:
            raise click.ClickException(_unexpected(exc)) from exc


def _one_line(text: str) -> str:
    return " ".join(text.split()) or "failed"


def _unexpected(exc: BaseException) -> str:
    return _one_line(f"unexpected {type(exc).__name__}: {exc}; please report this as a bug")


@dataclass
class _Settings:
    repo: str | None


def _settings() -> _Settings:
    obj = click.get_current_context().find_object(_Settings)
    return obj if obj is not None else _Settings(None)


def _open() -> Repository:
    settings = _settings()
    path = settings.repo if settings.repo is not None else ops.find_repository(os.getcwd())
    repo = Repository.open(path)
    return click.get_current_context().with_resource(repo)


def _store(repo: Repository, store: str | None, *, may_create: bool = False) -> str:
    return ops.pick_store(repo, store, may_create=may_create)


def _emit(data: object) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


def _when(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _read_text(path: str) -> str:
    if path == "-":
        data = sys.stdin.buffer.read()
    else:
        with open(path, "rb") as handle:
            data = handle.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        where = "stdin" if path == "-" else path
        raise InvalidText(
            f"{where} is not UTF-8 text (byte {exc.start}); convert it first"
        ) from None


def _body(body: str | None, body_file: str | None) -> str | None:
    if body is not None and body_file is not None:
        raise click.UsageError("give the body with --body or --body-file, not both")
    if body_file is not None:
        return _read_text(body_file)
    return body


def _done(rev: Revision, as_json: bool) -> None:
    if as_json:
        _emit(rev.event())
        return
    past = {"create": "created", "edit": "edited", "delete": "deleted"}.get(rev.op, rev.op)
    click.echo(
        f"{past} {rev.slug} (revision {rev.revision}, commit {rev.commit[:12]}) in {rev.store}"
    )


def _progress(count: int) -> None:
    if count % 500 == 0:
        click.echo(f"\rchecked {count:,} objects", err=True, nl=False)


def _store_option(f: F) -> F:
    return click.option(
        "--store",
        "-s",
        metavar="ID",
        help="The store to use (default: the repository's only store).",
    )(f)


def _json_option(f: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON.")(f)


def _author_option(f: F) -> F:
    return click.option(
        "--author",
        metavar='"NAME <EMAIL>"',
        help="Who the edit is by (default: your git identity, else your login name).",
    )(f)


def _body_options(f: F) -> F:
    f = click.option(
        "--body-file",
        type=click.Path(dir_okay=False, allow_dash=True),
        help="Read the body from a file ('-' for stdin).",
    )(f)
    return click.option("--body", help="The body text.")(f)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--repo",
    envvar="GITMEM_REPO",
    metavar="PATH",
    help="The gitmem repository (default: .gitmem here or in the nearest parent folder).",
)
@click.pass_context
def cli(ctx: click.Context, repo: str | None) -> None:
    """Durable, bounded, versioned memory for AI agents, kept in a git repository.

    \b
    Example:
        gitmem init && gitmem create --store notes todo --description "open tasks" --body "- ship"
    """
    ctx.obj = _Settings(repo)


@cli.command()
def init() -> None:
    """Create a gitmem repository (default: ./.gitmem).

    \b
    Example:
        gitmem init
        gitmem --repo /srv/agents/.gitmem init
    """
    path = _settings().repo or os.path.join(os.getcwd(), ops.REPOSITORY_DIR)
    with Repository.init(path) as repo:
        click.echo(f"gitmem repository in {repo.directory}")


@cli.command()
@_json_option
def stores(as_json: bool) -> None:
    """List the stores (branches) with their memory counts.

    \b
    Example:
        gitmem stores --json
    """
    rows = ops.store_rows(_open())
    if as_json:
        _emit(rows)
        return
    for row in rows:
        click.echo(
            f"{row['store']}\t{row['count']} memories, {row['chars']} chars, {row['lines']} lines"
        )


@cli.command()
@_store_option
@_json_option
def ls(store: str | None, as_json: bool) -> None:
    """List the memories in a store: slug, size and description.

    \b
    Example:
        gitmem ls --store profile/researcher
    """
    repo = _open()
    rows = ops.memory_rows(repo, _store(repo, store))
    if as_json:
        _emit(rows)
        return
    width = max((len(str(r["slug"])) for r in rows), default=0)
    for r in rows:
        click.echo(f"{r['slug']:<{width}}  {r['chars']:>6} chars  {r['description']}")


@cli.command()
@click.argument("slug")
@click.option("--rev", type=click.IntRange(min=1), metavar="N", help="Show revision N.")
@_store_option
@_json_option
def show(slug: str, rev: int | None, store: str | None, as_json: bool) -> None:
    """Show a memory (or one of its past revisions).

    \b
    Example:
        gitmem show deploy-runbook --rev 2
    """
    repo = _open()
    name = _store(repo, store)
    found = ops.show(repo, name, slug, rev)
    if as_json:
        _emit(ops.show_json(name, found))
        return
    note = " (deleted here; the text it removed)" if found.removed else ""
    text = ops.render(found)
    click.echo(f"# {slug}  revision {found.revision}{note}")
    click.echo(text, nl=not text.endswith("\n"))


@cli.command()
@click.argument("slug", required=False)
@click.option("-p", "--patch", is_flag=True, help="Show each revision's text change as a diff.")
@_store_option
@_json_option
def log(slug: str | None, patch: bool, store: str | None, as_json: bool) -> None:
    """Show the revisions of a store (or one memory), newest first.

    \b
    Example:
        gitmem log deploy-runbook -p
    """
    repo = _open()
    rows = ops.log(repo, _store(repo, store), slug, patch=patch)
    if as_json:
        _emit(ops.log_json(rows, patch=patch))
        return
    for r, d in rows:
        click.echo(
            f"{r.commit[:12]}  {r.op:<6} {r.slug} r{r.revision}  {r.author}  {_when(r.time)}"
        )
        if patch:
            click.echo(d, nl=False)


@cli.command()
@_store_option
@click.argument("slug", required=False)
@_json_option
def revisions(slug: str | None, store: str | None, as_json: bool) -> None:
    """Print every revision with its text, oldest first.

    \b
    Example:
        gitmem revisions deploy-runbook --json
    """
    repo = _open()
    history = repo.revisions(_store(repo, store), slug)
    if as_json:
        _emit([r.event() for r in history])
        return
    for r in history:
        click.echo(
            f"== {r.slug} r{r.revision} {r.op} by {r.author} at {_when(r.time)} ({r.commit[:12]})"
        )
        text = ops.render(r)
        click.echo(text, nl=not text.endswith("\n"))


@cli.command()
@click.argument("slug")
@_store_option
@_json_option
def path(slug: str, store: str | None, as_json: bool) -> None:
    """Print where a memory's file lives in its store's tree.

    \b
    Example:
        git --git-dir=.gitmem show notes:$(gitmem path todo --store notes)
    """
    repo = _open()
    name = _store(repo, store)
    where = repo.path(name, slug)
    if as_json:
        _emit({"store": name, "slug": slug, "path": where})
    else:
        click.echo(where)


@cli.command()
@click.argument("slug")
@click.option("--description", "-d", required=True, help="What the memory is for (one line).")
@_body_options
@_store_option
@_author_option
@_json_option
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
    repo = _open()
    text = _body(body, body_file)
    if text is None:
        if sys.stdin.isatty():
            raise click.UsageError("give the body with --body, --body-file or on stdin")
        text = _read_text("-")
    name = _store(repo, store, may_create=True)
    _done(ops.create(repo, name, ops.parse_author(author), slug, description, text), as_json)


@cli.command()
@click.argument("slug")
@click.option("--old", "old_text", help="Text to replace; must occur exactly once in the body.")
@click.option("--new", "new_text", help="The text to put in its place.")
@click.option("--description", "-d", help="A new description.")
@_body_options
@_store_option
@_author_option
@_json_option
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
    repo = _open()
    text = _body(body, body_file)
    name = _store(repo, store)
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
    _done(rev, as_json)


@cli.command()
@click.argument("slug")
@_store_option
@_author_option
@_json_option
def delete(slug: str, store: str | None, author: str | None, as_json: bool) -> None:
    """Delete a memory, as the operator (its history stays in `gitmem log`).

    \b
    Example:
        gitmem delete stale-notes --store profile/researcher
    """
    repo = _open()
    _done(ops.delete(repo, _store(repo, store), ops.parse_author(author), slug), as_json)


@cli.command()
@click.argument("source")
@click.argument("target")
@_json_option
def fork(source: str, target: str, as_json: bool) -> None:
    """Start store TARGET as a copy of store SOURCE; they diverge from there.

    \b
    Example:
        gitmem fork profile/researcher profile/researcher-trial
    """
    repo = _open()
    commit = repo.fork(source, target)
    if as_json:
        _emit({"source": source, "target": target, "commit": commit})
    else:
        click.echo(f"forked {source} to {target} at {commit[:12]}")


@cli.command()
@_json_option
def check(as_json: bool) -> None:
    """Check the repository's health; exits 1 listing the problems.

    Every object reachable from every ref must read and hash to its name, and every
    memory file must parse.

    \b
    Example:
        gitmem check --json
    """
    repo = _open()
    progress = None if as_json or not sys.stderr.isatty() else _progress
    problems = ops.check(repo, progress)
    if progress is not None:
        click.echo("", err=True)
    if as_json:
        _emit({"healthy": not problems, "problems": problems})
    elif not problems:
        click.echo("healthy")
    else:
        for problem in problems:
            click.echo(problem)
    if problems:
        click.echo(f"Error: {len(problems)} problem(s) found", err=True)
        click.get_current_context().exit(1)


@cli.command()
@click.argument("keywords", nargs=-1, required=True)
@click.option(
    "--limit",
    type=click.IntRange(min=0),
    default=0,
    help="At most this many hits (default: the store's maxResults).",
)
@_store_option
@_json_option
def search(keywords: tuple[str, ...], limit: int, store: str | None, as_json: bool) -> None:
    """Search memories by keywords, ranked as search_memories ranks them.

    \b
    Example:
        gitmem search deploy staging --limit 5
    """
    repo = _open()
    words = list(keywords)
    hits = ops.search(repo, _store(repo, store), words, limit)
    if as_json:
        _emit([ops.hit_json(h, words) for h in hits])
        return
    if not hits:
        click.echo("no memory mentions " + ", ".join(keywords))
    lowered = [k.lower() for k in keywords]
    for h in hits:
        click.echo(f"{h.memory.slug}  {h.memory.description}")
        click.echo(f"    {h.excerpt(lowered)}")


@cli.command()
@_store_option
@_json_option
def state(store: str | None, as_json: bool) -> None:
    """Show a store's memory_state: memories, totals, limits and peaks.

    \b
    Example:
        gitmem state --store profile/ops --json
    """
    repo = _open()
    event = ops.state(repo, _store(repo, store))
    if as_json:
        _emit(event)
        return
    totals, peaks = event["totals"], event["peaks"]
    click.echo(f"store {event['store']}")
    for m in event["memories"]:
        click.echo(
            f"  {m['slug']:<32} {m['chars']:>7} chars {m['lines']:>5} lines  {m['description']}"
        )
    click.echo(
        f"totals: {totals['count']} memories, {totals['chars']} chars, {totals['lines']} lines"
    )
    click.echo(f"peaks:  {peaks['count']} memories, {peaks['chars']} chars, {peaks['lines']} lines")
    shown = ", ".join(f"{k}={v}" for k, v in event["limits"].items() if v) or "none"
    click.echo(f"limits: {shown}")


@cli.command()
@click.argument("program", type=click.Path(dir_okay=False, allow_dash=True))
@click.option(
    "--strategy",
    metavar="NAME",
    help="The strategy whose calls the program gets (default: the one the store records).",
)
@_store_option
@_author_option
@_json_option
def run(
    program: str, strategy: str | None, store: str | None, author: str | None, as_json: bool
) -> None:
    """Run an agent program (TypeScript) in the sandbox against a store.

    The program may import { memories, views } from "gitmem"; its memories calls are
    the calls of the store's strategy, made as the operator under the limits the store
    records. Exits 1 if the program fails.

    \b
    Example:
        gitmem run report.ts --store profile/ops
    """
    repo = _open()
    source = _read_text(program)
    done = ops.run(repo, _store(repo, store), ops.parse_author(author), source, strategy)
    if as_json:
        _emit(done.as_json())
    else:
        click.echo(done.result.output, nl=False)
        for view in done.views:
            click.echo(f"[view] {view.title}\n{view.text}")
    if not done.result.ok:
        if not as_json:
            click.echo(f"Error: {_one_line(done.result.error or 'the program failed')}", err=True)
        click.get_current_context().exit(1)


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to listen on.")
@click.option(
    "--port", type=click.IntRange(0, 65535), default=0, help="The port (default: a free one)."
)
@click.option("--open", "open_browser", is_flag=True, help="Open the page in a browser.")
@_author_option
def console(host: str, port: int, open_browser: bool, author: str | None) -> None:
    """Serve the console: a local web page to see and correct what agents remember.

    Prints the page's address, with a per-launch token, and serves until interrupted
    (Ctrl-C). Edits made there are authored as the operator, like `gitmem edit`.
    Needs the console extra: pip install 'gitmem[console]'.

    \b
    Example:
        gitmem console --port 8765 --open
    """
    try:
        from gitmem.adapters.console import Console
    except ImportError as exc:
        raise click.ClickException(
            f"the console needs {exc.name or 'its packages'}; install gitmem[console]"
        ) from None
    repo = _open()
    page = Console(
        repo, token=Console.new_token(), host=host, port=port, author=ops.parse_author(author)
    )
    page.serve(click.echo, open_browser=open_browser)


@cli.command()
def demo() -> None:
    """Run the scripted two-agent demo on a temporary repository (or --repo).

    \b
    Example:
        gitmem demo
        gitmem --repo /tmp/demo.git demo
    """
    from gitmem.demo import run_demo

    run_demo(_settings().repo, click.echo)


def main() -> None:
    """The console-script entry: run the CLI, never showing a traceback."""
    try:
        cli.main(prog_name="gitmem")
    except SystemExit:
        raise
    except BrokenPipeError:
        sys.stderr.close()
        sys.exit(1)
    except BaseException as exc:
        click.echo(f"Error: {_unexpected(exc)}", err=True)
        sys.exit(1)
