"""The ``gitmem`` command line: a thin skin over the library.

Each command opens the repository, calls one library function and prints. A
``GitmemError`` becomes one line ``Error: <message>`` on stderr and exit status 1; a
usage error exits 2; nothing ever prints a traceback. What agents wrote reaches a
terminal with its control characters shown, not obeyed (see ``_Shown``).

``--json`` shapes (stable; more keys may be added, these are kept):

- ``stores``: ``[{"store", "head", "count", "chars", "lines"}]``, plus ``"layout": "files"``
  for a file store
- ``ls``: ``[{"slug", "description", "chars", "lines"}]``
- ``show``: ``{"store", "slug", "revision", "op", "description", "body", "code", "on_use"}``;
  ``"op": "outside"`` when a commit gitmem did not make changed the live text after
  revision ``"revision"`` (0: gitmem never wrote it)
- ``log``: ``[memory_revision]`` newest first, each with ``"diff"`` under ``-p``
- ``revisions``: ``[memory_revision]`` oldest first

On a file store (the memory tool's; see ``gitmem.anthropic``) ``ls``, ``show``, ``log``
and ``revisions`` take and print paths: ``ls``: ``[{"path", "chars", "lines"}]``;
``show``: ``{"store", "path", "revision", "op", "text"}``; ``log`` and ``revisions``:
``[file_revision]`` (``FileRevision.event()``: ``{"type", "store", "path", "revision",
"op", "text", "removed", "author", "commit", "time"}``).
- ``create``/``edit``/``delete``: the ``memory_revision`` it made
- ``path``: ``{"store", "slug", "path"}``; ``fork``: ``{"source", "target", "commit"}``
- ``check``: ``{"healthy", "problems": [str]}``
- ``log --stat``: each ``memory_revision`` also has ``"added"`` and ``"removed"`` (lines)
- ``notebook show``: ``{"store", "path", "version", "content"}``; ``notebook save``: the
  ``memory_revision`` it made, or ``null`` when the text was unchanged; ``notebook
  timeline``: ``[{"version", "op", "author", "time", "commit", "chars", "added",
  "removed", "live"}]`` newest first
- ``rows show``: a row (``ops.row_json``); ``rows ls``: ``[row]``; ``rows add``/``append``/
  ``reclassify``: the ``memory_revision``; ``rows link``/``unlink``: ``[memory_revision]``
  (both rows); ``rows conflicts``: ``[{"owner", "rows": [a, b], "shared": [word]}]``
- ``tools``: the offered tools in the ``--format`` API's shape (a JSON list)
- ``sync``: ``[{"store", "before", "remote", "head", "fetched", "merged", "pushed",
  "up_to_date", "conflicts": [slug], "changed": [slug], "exceeded": [excess]}]``
- ``state``: ``memory_state``, with ``"exceeded": [{"limit", "value", "maximum", "over",
  "slug"}]`` (``slug`` null for a limit of the whole set)

A ``memory_revision`` is ``{"type", "store", "slug", "revision", "op", "description",
"body", "code", "on_use", "author", "commit", "time"}`` (``Revision.event()``).
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NoReturn, TextIO, TypeVar, cast

import click

from gitmem import ops
from gitmem.errors import GitmemError, InvalidArgument, InvalidText
from gitmem.repository import Repository
from gitmem.types import Revision

if TYPE_CHECKING:
    # imported by the commands that use them: `ls`, `show` or `log` load no adapter,
    # holder or sandbox (tests/test_cold.py holds this)
    from gitmem.adapters.launch import Launch
    from gitmem.strategies.curated import Row

# the choices of `tools --format`, `hook claude-code EVENT`, `--compaction` and
# `--started-as`, named here so the help needs no adapter or binding rules imported
# (tests/test_cold.py checks them against the modules that define them)
TOOL_FORMATS = ("anthropic", "openai", "mcp")
HOOK_EVENTS = ("session-start", "user-prompt-submit", "pre-compact", "stop")
COMPACTIONS = ("summary", "memory")
STARTS = ("root", "implementer", "subagent", "reviewer", "merge")

__all__ = ["cli", "main"]

F = TypeVar("F", bound=Callable[..., Any])


class _Group(click.Group):
    """Turns library errors into one-line click errors, and anything else likewise."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort, BrokenPipeError):
            raise  # a closed pipe (`gitmem log | head`) ends the command quietly, in main
        except GitmemError as exc:
            raise click.ClickException(_one_line(str(exc))) from exc
        except Exception as exc:
            raise click.ClickException(_unexpected(exc)) from exc


def _one_line(text: str) -> str:
    return " ".join(text.split()) or "failed"


def _unexpected(exc: BaseException) -> str:
    return _one_line(f"unexpected {type(exc).__name__}: {exc}; please report this as a bug")


class _Settings:
    """What the group's options say to every command: the repository to open."""

    def __init__(self, repo: str | None) -> None:
        self.repo = repo


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


def _launch_options(f: F) -> F:
    """The agent options ``mcp``, ``hook``, ``tools`` and ``call`` share (one home:
    :class:`gitmem.adapters.launch.Launch`)."""
    f = click.option(
        "--compaction",
        type=click.Choice(COMPACTIONS),
        default="summary",
        show_default=True,
        help="How the profile answers a compaction (memory: with memory calls).",
    )(f)
    f = click.option(
        "--store",
        "-s",
        metavar="ID",
        help="An operator-chosen store (default: the binding table's with --capability, "
        "else the repository's only store).",
    )(f)
    f = click.option(
        "--started-as",
        type=click.Choice(STARTS),
        default="root",
        show_default=True,
        help="How the agent was started.",
    )(f)
    f = click.option(
        "--instance", metavar="I", help="The agent instance (default: the profile's name)."
    )(f)
    f = click.option(
        "--profile", metavar="P", default="agent", show_default=True, help="The agent profile."
    )(f)
    return click.option(
        "--capability",
        metavar="FILE|JSON",
        help="The memories capability (default: the strategy and limits the store records).",
    )(f)


def _launch(
    capability: str | None,
    profile: str,
    instance: str | None,
    started_as: str,
    store: str | None,
    compaction: str,
) -> Launch:
    from gitmem.adapters.launch import Launch

    return Launch(capability, profile, instance, started_as, store, compaction)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--repo",
    envvar="GITMEM_REPO",
    metavar="PATH",
    help="The gitmem repository: a standalone one, or a project's work tree or .git "
    "(default: found as git finds .git: the nearest .gitmem, or project holding stores).",
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
    target = path or _settings().repo or ops.init_target(os.getcwd())
    with Repository.init(target, bare=bare) as repo:
        if repo.project:
            click.echo(
                f"gitmem stores in the project's repository {repo.directory}, as branches "
                "refs/heads/gitmem/<store>; share them with `gitmem sync`"
            )
        else:
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
            f"{row['store']}\t{row['count']} {row.get('layout', 'memories')}, {row['chars']} chars, "
            f"{row['lines']} lines"
        )


@cli.command()
@_store_option
@_json_option
def ls(store: str | None, as_json: bool) -> None:
    """List the memories in a store: slug, size and description (a file store: its files).

    \b
    Example:
        gitmem ls --store profile/researcher
    """
    repo = _open()
    name = _store(repo, store)
    if ops.is_file_store(repo, name):
        files = ops.file_rows(repo, name)
        if as_json:
            _emit(files)
            return
        for f in files:
            click.echo(f"{f['path']}  {f['chars']} chars  {f['lines']} lines")
        return
    if as_json:
        _emit(ops.memory_rows(repo, name))
        return
    listing = repo.summaries(name)
    if listing:  # one write: 10,000 lines echoed one by one cost more than reading them
        width = max(len(slug) for slug, _ in listing)
        # %-formatting: at 10,000 lines the quickest way Python has to lay them out
        click.echo(
            "\n".join(
                [
                    "%-*s  %6d chars  %s" % (width, slug, chars, description)  # noqa: UP031
                    for slug, (description, chars, _) in listing
                ]
            )
        )


@cli.command()
@click.argument("slug")
@click.option("--rev", type=click.IntRange(min=1), metavar="N", help="Show revision N.")
@_store_option
@_json_option
def show(slug: str, rev: int | None, store: str | None, as_json: bool) -> None:
    """Show a memory (or one of its past revisions); in a file store, SLUG is a path.

    \b
    Example:
        gitmem show deploy-runbook --rev 2
        gitmem show memories/notes.md --store claude
    """
    repo = _open()
    name = _store(repo, store)
    if ops.is_file_store(repo, name):
        shown = ops.show_file(repo, name, slug, rev)
        if as_json:
            _emit(
                {
                    "store": name,
                    "path": shown.path,
                    "revision": shown.revision,
                    "op": shown.op,
                    "text": shown.text,
                }
            )
            return
        gone = " (removed here; the text it removed)" if shown.removed else ""
        click.echo(f"# {slug}  revision {shown.revision}{gone}")
        click.echo(shown.text, nl=not shown.text.endswith("\n"))
        return
    found = ops.show(repo, name, slug, rev)
    if as_json:
        _emit(ops.show_json(name, found))
        return
    note = " (deleted here; the text it removed)" if found.removed else ""
    if found.op == ops.OUTSIDE:
        note = (
            ", then changed outside gitmem (the live text; `git log` shows who changed it)"
            if found.revision
            else " (written outside gitmem; gitmem has no revision of it)"
        )
    text = ops.render(found)
    click.echo(f"# {slug}  revision {found.revision}{note}")
    click.echo(text, nl=not text.endswith("\n"))


@cli.command()
@click.argument("slug", required=False)
@click.option("-p", "--patch", is_flag=True, help="Show each revision's text change as a diff.")
@click.option("--stat", is_flag=True, help="Count the lines each revision added and removed.")
@_store_option
@_json_option
def log(slug: str | None, patch: bool, stat: bool, store: str | None, as_json: bool) -> None:
    """Show the revisions of a store (or one memory, or in a file store one path),
    newest first.

    \b
    Example:
        gitmem log deploy-runbook -p
        gitmem log memory --stat --store instance/nb-1
    """
    repo = _open()
    name = _store(repo, store)
    if ops.is_file_store(repo, name):
        changes = ops.file_log(repo, name, slug, patch=patch)
        if as_json:
            _emit([{**r.event(), **({"diff": d} if patch else {})} for r, d in changes])
            return
        for r, d in changes:
            click.echo(
                f"{r.commit[:12]}  {r.op:<6} {r.path} r{r.revision}  {r.author}  {_when(r.time)}"
            )
            if patch:
                click.echo(d, nl=False)
        return
    rows = ops.log(repo, name, slug, patch=patch or stat)
    if as_json:
        events = ops.log_json(rows, patch=patch)
        if stat:
            for event, (_, d) in zip(events, rows, strict=True):
                event["added"], event["removed"] = ops.diff_stat(d)
        _emit(events)
        return
    for r, d in rows:
        counts = "  +{} -{}".format(*ops.diff_stat(d)) if stat else ""
        click.echo(
            f"{r.commit[:12]}  {r.op:<6} {r.slug} r{r.revision}  {r.author}  {_when(r.time)}"
            + counts
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
    name = _store(repo, store)
    if ops.is_file_store(repo, name):
        changes = repo.file_revisions(name, slug)
        if as_json:
            _emit([r.event() for r in changes])
            return
        for r in changes:
            click.echo(
                f"== {r.path} r{r.revision} {r.op} by {r.author} at {_when(r.time)} "
                f"({r.commit[:12]})"
            )
            click.echo(r.text, nl=not r.text.endswith("\n"))
        return
    history = repo.revisions(name, slug)
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
    for e in event["exceeded"]:
        where = f" ({e['slug']})" if e["slug"] else ""
        click.echo(
            f"exceeded: {e['limit']}{where} {e['value']} > {e['maximum']}, over by {e['over']}; "
            "writes that do not bring it down are refused"
        )


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


@cli.group()
def notebook() -> None:
    """A notebook store's one file (seed 001): show, save as the operator, timeline.

    \b
    Example:
        gitmem notebook timeline --store instance/nb-1
    """


@notebook.command("show")
@_store_option
@_json_option
def notebook_show(store: str | None, as_json: bool) -> None:
    """Print the live text of a notebook (an unwritten one reads as empty).

    \b
    Example:
        gitmem notebook show --store instance/nb-1 > memory.md
    """
    repo = _open()
    name = _store(repo, store)
    text, version = ops.notebook_text(repo, name)
    if as_json:
        _emit({"store": name, "path": "memory.md", "version": version, "content": text})
    else:
        click.echo(text, nl=False)


@notebook.command("save")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@click.option(
    "--expect",
    type=click.IntRange(min=0),
    metavar="VERSION",
    help="The version your text is based on; refused if a newer one is held.",
)
@_store_option
@_author_option
@_json_option
def notebook_save(
    file: str, expect: int | None, store: str | None, author: str | None, as_json: bool
) -> None:
    """Save FILE as the notebook's text, as the operator (at most 256 KB).

    The version it replaces stays in the history; the same text writes nothing.

    \b
    Example:
        gitmem notebook save memory.md --expect 3 --store instance/nb-1
    """
    repo = _open()
    name = _store(repo, store)
    rev = ops.notebook_save(repo, name, ops.parse_author(author), _read_text(file), expect)
    if rev is None:
        if as_json:
            _emit(None)
        else:
            click.echo("unchanged: the notebook already holds exactly this text")
        return
    _done(rev, as_json)


@notebook.command("timeline")
@_store_option
@_json_option
def notebook_timeline(store: str | None, as_json: bool) -> None:
    """List every version of a notebook, newest first, with author, time and lines
    added and removed.

    \b
    Example:
        gitmem notebook timeline --store instance/nb-1
    """
    repo = _open()
    rows = ops.notebook_timeline(repo, _store(repo, store))
    if as_json:
        _emit(rows)
        return
    for r in rows:
        live = "  (live)" if r["live"] else ""
        click.echo(
            f"v{r['version']:<4} {_when(r['time'])}  {r['author']:<20} "
            f"+{r['added']} -{r['removed']}  {r['op']}{live}"
        )


@cli.group()
def rows() -> None:
    """Curated rows (seed 002): add, append, link, reclassify, and read them.

    \b
    Example:
        gitmem rows add tz --owner user -d "Fact: the user works in UTC+2" --body "said 11-01"
        gitmem rows birth --store profile/orchestrator
    """


def _row_line(row: Row) -> str:
    flags = " superseded" if row.superseded else ""
    return f"{row.name}\t{row.whose}\t{row.role}\t{row.status}{flags}\t{row.description}"


def _row_revisions(revs: list[Revision], as_json: bool) -> None:
    if as_json:
        _emit([r.event() for r in revs])
        return
    for rev in revs:
        _done(rev, False)


@rows.command("add")
@click.argument("name")
@click.option("--description", "-d", required=True, help="The claim; its first word is its kind.")
@click.option("--owner", required=True, type=click.Choice(["user", "project", "host"]))
@click.option("--project", "-P", metavar="KEY", help="The project's key (owner project only).")
@click.option("--role", default="knowledge", type=click.Choice(["knowledge", "thread", "log"]))
@click.option("--replace", is_flag=True, help="Correct an error in an existing row (marked).")
@_body_options
@_store_option
@_author_option
@_json_option
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
    repo = _open()
    text = _body(body, body_file)
    if text is None:
        raise click.UsageError("give the content with --body or --body-file")
    rev = ops.rows_add(
        repo,
        _store(repo, store, may_create=True),
        ops.parse_author(author),
        name,
        description,
        owner,
        text,
        role=role,
        project=project,
        replace=replace,
    )
    _done(rev, as_json)


@rows.command("append")
@click.argument("name")
@click.argument("text")
@_store_option
@_author_option
@_json_option
def rows_append(name: str, text: str, store: str | None, author: str | None, as_json: bool) -> None:
    """Append TEXT to a log or a live thread.

    \b
    Example:
        gitmem rows append deploy-hang "third time, 2026-11-02"
    """
    repo = _open()
    _done(ops.rows_append(repo, _store(repo, store), ops.parse_author(author), name, text), as_json)


@rows.command("link")
@click.argument("source")
@click.argument("kind", type=click.Choice(["supersedes", "graduated_to"]))
@click.argument("target")
@_store_option
@_author_option
@_json_option
def rows_link(
    source: str, kind: str, target: str, store: str | None, author: str | None, as_json: bool
) -> None:
    """Link SOURCE to TARGET (supersedes: from the new row to the old), in one commit.

    \b
    Example:
        gitmem rows link tz-2 supersedes tz
    """
    repo = _open()
    author_ = ops.parse_author(author)
    _row_revisions(ops.rows_link(repo, _store(repo, store), author_, source, kind, target), as_json)


@rows.command("unlink")
@click.argument("source")
@click.argument("kind", type=click.Choice(["supersedes", "graduated_to"]))
@click.argument("target")
@_store_option
@_author_option
@_json_option
def rows_unlink(
    source: str, kind: str, target: str, store: str | None, author: str | None, as_json: bool
) -> None:
    """Remove a link, in one commit; the edge stays in the history.

    \b
    Example:
        gitmem rows unlink tz-2 supersedes tz
    """
    repo = _open()
    author_ = ops.parse_author(author)
    revs = ops.rows_unlink(repo, _store(repo, store), author_, source, kind, target)
    _row_revisions(revs, as_json)


@rows.command("reclassify")
@click.argument("name")
@click.option("--status", type=click.Choice(["live", "closed", "graduated"]))
@click.option("--role", type=click.Choice(["knowledge", "thread", "log"]))
@_store_option
@_author_option
@_json_option
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
    repo = _open()
    rev = ops.rows_reclassify(
        repo, _store(repo, store), ops.parse_author(author), name, status=status, role=role
    )
    _done(rev, as_json)


@rows.command("show")
@click.argument("name")
@_store_option
@_json_option
def rows_show(name: str, store: str | None, as_json: bool) -> None:
    """Show one row whole, whatever its lifecycle.

    \b
    Example:
        gitmem rows show tz
    """
    repo = _open()
    row = ops.rows_show(repo, _store(repo, store), name)
    if as_json:
        _emit(ops.row_json(row))
    else:
        from gitmem.strategies.curated import row_text

        click.echo(row_text(row))


@rows.command("ls")
@click.option("--owner", metavar="OWNER", help="user, host, or 'project KEY'.")
@click.option("--live", is_flag=True, help="Only live rows that nothing supersedes.")
@_store_option
@_json_option
def rows_ls(owner: str | None, live: bool, store: str | None, as_json: bool) -> None:
    """List rows: name, owner, role, status, description.

    \b
    Example:
        gitmem rows ls --owner "project alpha" --live
    """
    repo = _open()
    found = ops.rows_list(repo, _store(repo, store), owner=owner, live=live)
    if as_json:
        _emit([ops.row_json(r) for r in found])
        return
    for row in found:
        click.echo(_row_line(row))


@rows.command("relevant")
@click.argument("project")
@click.option("--knowledge", is_flag=True, help="Add the project's standing knowledge rows.")
@_store_option
def rows_relevant(project: str, knowledge: bool, store: str | None) -> None:
    """Print a project's whole live-pending set, with bodies.

    \b
    Example:
        gitmem rows relevant alpha --knowledge
    """
    repo = _open()
    click.echo(ops.rows_relevant(repo, _store(repo, store), project, knowledge=knowledge))


@rows.command("birth")
@_store_option
def rows_birth(store: str | None) -> None:
    """Preview the birth block a session opens with (records nothing).

    \b
    Example:
        gitmem rows birth --store profile/orchestrator
    """
    repo = _open()
    click.echo(ops.rows_birth(repo, _store(repo, store)) or "(nothing: the store holds no rows)")


@rows.command("conflicts")
@click.option("--owner", metavar="OWNER", help="user, host, or 'project KEY'.")
@_store_option
@_json_option
def rows_conflicts(owner: str | None, store: str | None, as_json: bool) -> None:
    """List live pairs of one owner that share wording: candidates, never a verdict.

    \b
    Example:
        gitmem rows conflicts --owner user
    """
    repo = _open()
    found = ops.rows_conflicts(repo, _store(repo, store), owner)
    if as_json:
        _emit(
            [{"owner": a.whose, "rows": [a.name, b.name], "shared": words} for a, b, words in found]
        )
        return
    from gitmem.strategies.curated import conflicts_text

    click.echo(conflicts_text(found))


@cli.command()
@click.argument("remote", default="origin")
@_store_option
@_json_option
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
    repo = _open()
    reports = ops.sync(repo, remote, store)
    if as_json:
        _emit([r.as_json() for r in reports])
        return
    if not reports:
        click.echo(f"no stores here or at {remote}")
    for report in reports:
        click.echo(ops.sync_line(report))


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
    Needs the console extra: pip install 'gitmem-agent[console]'.

    \b
    Example:
        gitmem console --port 8765 --open
    """
    try:
        from gitmem.adapters.console import Console
    except ImportError as exc:
        raise click.ClickException(
            f"the console needs {exc.name or 'its packages'}; install gitmem-agent[console]"
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


@cli.command()
@_launch_options
@click.option(
    "--format",
    "shape",
    type=click.Choice(TOOL_FORMATS),
    default="anthropic",
    show_default=True,
    help="Whose tool-calling API the definitions are shaped for.",
)
def tools(shape: str, **options: Any) -> None:
    """Print the holder's tool definitions as JSON, shaped for an API.

    anthropic: input_schema; openai: function.parameters, strict; mcp: inputSchema.

    \b
    Example:
        gitmem tools --format openai --capability memories.json --profile researcher
    """
    from gitmem.adapters import schemas
    from gitmem.adapters.launch import open_holder

    holder = open_holder(_open(), _launch(**options))
    try:
        _emit(schemas.tool_definitions(holder.tools(), shape))
    finally:
        holder.close()


@cli.command()
@click.argument("name")
@click.argument("arguments", default="{}")
@_launch_options
@_json_option
def call(name: str, arguments: str, as_json: bool, **options: Any) -> None:
    """Make one tool call as the agent and print the result text (exit 1 on refusal).

    ARGUMENTS is a JSON object ('-' reads it from stdin); a null argument counts as not
    given, as OpenAI's strict mode sends one.

    \b
    Example:
        gitmem call create_memory '{"name": "todo", "description": "open tasks", "body": "- ship"}'
    """
    text = _read_text("-") if arguments == "-" else arguments
    try:
        parsed = json.loads(text)
    except ValueError:
        raise InvalidArgument("ARGUMENTS is not JSON; give a JSON object such as '{}'") from None
    if not isinstance(parsed, dict):
        raise InvalidArgument("ARGUMENTS must be a JSON object such as '{}'")
    from gitmem.adapters import schemas
    from gitmem.adapters.launch import open_holder

    holder = open_holder(_open(), _launch(**options))
    try:
        result = holder.call(name, schemas.drop_nulls(cast(dict[str, object], parsed)))
    finally:
        holder.close()
    if as_json:
        _emit({"ok": result.ok, "kind": result.kind, "text": result.text})
    else:
        click.echo(result.text)
    if not result.ok:
        if not as_json:
            click.echo(f"Error: {result.kind}", err=True)
        click.get_current_context().exit(1)


@cli.command()
@_launch_options
@click.option("--programs", is_flag=True, help="Offer run_program: agent programs in the sandbox.")
def mcp(programs: bool, **options: Any) -> None:
    """Serve the agent's memories over MCP on stdin and stdout.

    Tools are the holder's; instructions are its system-prompt section and pinned block;
    resources are gitmem://memory/<store>/<slug> and gitmem://state/<store>; the prompt
    is memory-compaction. Needs the mcp extra: pip install 'gitmem-agent[mcp]'.

    \b
    Example:
        gitmem mcp --capability memories.json --profile researcher --instance r-1
    """
    try:
        from gitmem.adapters.mcp import serve
    except ImportError as exc:
        raise click.ClickException(
            f"the MCP server needs the mcp package ({exc}); install gitmem-agent[mcp]"
        ) from None
    from gitmem.adapters.launch import open_holder

    holder = open_holder(_open(), _launch(**options))
    serve(holder, programs=programs)


@cli.group()
def hook() -> None:
    """Hooks that put gitmem into an agent client's life cycle.

    \b
    Example:
        echo '{"session_id": "s1", "source": "startup"}' | gitmem hook claude-code session-start
    """


class _HookTimeout(Exception):
    pass


def _alarm(*_: object) -> None:
    raise _HookTimeout


@hook.command("claude-code")
@click.argument("event", type=click.Choice(HOOK_EVENTS))
@_launch_options
@click.option(
    "--timeout",
    type=click.FloatRange(min=0.1),
    default=20.0,
    show_default=True,
    help="Give up (silently, exit 0) after this many seconds.",
)
def claude_code_hook(event: str, timeout: float, **options: Any) -> None:
    """Run one Claude Code hook: event JSON on stdin, Claude Code's JSON on stdout.

    Events: session-start, user-prompt-submit, pre-compact, stop. It always exits 0 so
    the session goes on; a problem is one line on stderr.

    \b
    Example:
        gitmem hook claude-code user-prompt-submit --profile claude-code < event.json
    """
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        text = sys.stdin.read(1 << 20 | 1)
        try:
            data: object = json.loads(text)
        except ValueError:
            data = None  # the hook says what is wrong with it
        cwd = cast(dict[str, object], data).get("cwd") if isinstance(data, dict) else None
        settings = _settings()
        path = settings.repo or ops.find_repository(cwd if isinstance(cwd, str) else os.getcwd())
        from gitmem.adapters import claude_code

        with Repository.open(path) as repo:
            out = claude_code.hook(event, text, repo, _launch(**options))
    except _HookTimeout:
        click.echo(f"gitmem hook: gave up after {timeout:g} s; the session goes on", err=True)
        return
    except GitmemError as exc:
        click.echo(f"gitmem hook: {_one_line(str(exc))}", err=True)
        return
    except Exception as exc:
        click.echo(f"gitmem hook: {_unexpected(exc)}", err=True)
        return
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    if out:
        click.echo(out, nl=not out.endswith("\n"))


# -- guards: hooks, guard code, the allowlist (issue 11) --------------------------------


@cli.group()
def hooks() -> None:
    """Install gitmem's git hooks, which hold a plain `git push` to gitmem's rules.

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
@_json_option
def hooks_install(server: str | None, as_json: bool) -> None:
    """Install pre-receive into a shared bare repository, or pre-push into this project.

    A refused push prints one line per refused ref (commit and rule) and changes
    nothing. Pushes to refs that are not store branches pass untouched.

    \b
    Examples:
        gitmem hooks install --server /srv/project.git
        gitmem hooks install
    """
    from gitmem import githooks as git_hooks

    if server is not None:
        written = git_hooks.install_server(server)
    else:
        written = git_hooks.install(_open().directory, ["pre-push"])
    if as_json:
        _emit({"installed": written})
        return
    for path in written:
        click.echo(f"installed {path}")


@cli.group()
def guard() -> None:
    """A store's guard code (check(change) in TypeScript) and its secret allowlist.

    \b
    Example:
        gitmem guard set --store notes no-todo.ts
        gitmem guard allow 3f5a0c9e1b2d4e6f --note "the SDK docs' sample key"
    """


@guard.command("set")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@_store_option
@_author_option
def guard_set(file: str, store: str | None, author: str | None) -> None:
    """Keep FILE.ts as the store's guard: its exported check(change) judges every write.

    Returning a string refuses the write with that message; returning nothing
    accepts it. The guard is versioned in the store (see `gitmem log`).

    \b
    Example:
        gitmem guard set --store notes no-todo.ts
    """
    repo = _open()
    name = _store(repo, store, may_create=True)
    commit = repo.set_guard(name, _read_text(file), ops.parse_author(author))
    click.echo(f"guard of {name} set" if commit else f"guard of {name} unchanged")


@guard.command("clear")
@_store_option
@_author_option
def guard_clear(store: str | None, author: str | None) -> None:
    """Remove the store's guard (one commit; revert it like any other).

    \b
    Example:
        gitmem guard clear --store notes
    """
    repo = _open()
    name = _store(repo, store)
    commit = repo.set_guard(name, None, ops.parse_author(author))
    click.echo(f"guard of {name} removed" if commit else f"{name} has no guard")


@guard.command("show")
@_store_option
def guard_show(store: str | None) -> None:
    """Print the store's guard source.

    \b
    Example:
        gitmem guard show --store notes
    """
    repo = _open()
    name = _store(repo, store)
    source = repo.guard(name)
    if source is None:
        raise click.ClickException(f"{name} has no guard; set one with `gitmem guard set FILE.ts`")
    click.echo(source, nl=not source.endswith("\n"))


@guard.command("allow")
@click.argument("fingerprint")
@click.option("--note", default="", help="Why this is not a credential (kept beside it).")
@_store_option
@_author_option
def guard_allow(fingerprint: str, note: str, store: str | None, author: str | None) -> None:
    """Admit a reviewed false positive: FINGERPRINT is what the refusal named.

    The store's allowlist (`@allowlist` in its tree) gains one line, in one commit.

    \b
    Example:
        gitmem guard allow 3f5a0c9e1b2d4e6f --store notes --note "docs' sample key"
    """
    repo = _open()
    name = _store(repo, store)
    commit = repo.allow(name, fingerprint, note, ops.parse_author(author))
    click.echo(f"{fingerprint} allowed in {name}" if commit else f"{fingerprint} already allowed")


@guard.command("allowlist")
@_store_option
@_json_option
def guard_allowlist(store: str | None, as_json: bool) -> None:
    """List the fingerprints the store's allowlist admits.

    \b
    Example:
        gitmem guard allowlist --store notes
    """
    repo = _open()
    name = _store(repo, store)
    found = sorted(repo.allowed(name).fingerprints)
    if as_json:
        _emit(found)
        return
    for item in found:
        click.echo(item)


# Caret notation, as `cat -v` shows them: ESC is ^[, CR ^M, DEL ^?. Tab and newline
# stay; C1 controls (U+0080-U+009F, which some terminals obey as ESC sequences) show
# as \u0080-\u009f.
_CARETS = (
    {c: f"^{chr(c + 64)}" for c in range(32) if c not in (9, 10)}
    | {0x7F: "^?"}
    | {c: f"\\u{c:04x}" for c in range(0x80, 0xA0)}
)


class _Shown:
    """A terminal's stream that shows the control characters written to it.

    Memories, revisions, search hits and program output are agents' text. Written raw
    to an operator's terminal, an escape sequence in them could recolour or hide lines,
    move the cursor, retitle the window or rewrite the clipboard, and a carriage return
    could overwrite what came before. Output that is not a terminal is left as click
    writes it (click drops colour sequences there); ``--json`` carries the exact text.
    """

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(text.translate(_CARETS))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _shown(stream: TextIO) -> TextIO:
    try:
        terminal = stream.isatty()
    except (AttributeError, ValueError):
        terminal = False
    return cast(TextIO, _Shown(stream)) if terminal else stream


def main() -> NoReturn:
    """The console-script entry: run the CLI, never showing a traceback, then end the
    process (see ``_end``)."""
    sys.stdout, sys.stderr = _shown(sys.stdout), _shown(sys.stderr)
    try:
        cli.main(prog_name="gitmem")
    except SystemExit as exc:
        _end(exc.code)
    except BrokenPipeError:
        _end(1)
    except BaseException as exc:
        click.echo(f"Error: {_unexpected(exc)}", err=True)
        _end(1)
    _end(0)


def _end(code: str | int | None) -> NoReturn:
    """Exit with ``code`` as ``sys.exit`` does, without the interpreter's teardown.

    When a command returns, every write it acknowledged is on disk (fsynced before its
    ref moved), its repository is closed and its derived files are whole or absent.
    What the interpreter would do next is free every module and object one by one,
    which costs a command about 13 ms of CPU (a tenth of `gitmem show`). So the exit
    hooks run (the sandbox pool's stops its processes), stdout and stderr are flushed,
    and the process leaves. A command that left another thread running exits the
    ordinary way, which waits for it.
    """
    if threading.active_count() > 1:
        sys.exit(code)
    if code is None or isinstance(code, int):
        status = code or 0
    else:
        print(code, file=sys.stderr)  # as sys.exit prints a message
        status = 1
    atexit._run_exitfuncs()  # pyright: ignore[reportPrivateUsage]
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            # a reader that went away (`gitmem log | head`), or a closed stream
            status = status or 1
    os._exit(status & 0xFF)
