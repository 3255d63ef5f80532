"""The commands an agent's client runs: tools, call, mcp, ``hook`` (agent clients'
hooks, such as Claude Code's) and run (an agent program as the operator)."""

from __future__ import annotations

import json
import signal
import sys
from typing import Any, cast

import click

from gitmem import ops
from gitmem.adapters.sessions import INPUT_MAX, TIMEOUT, gave_up, time_left
from gitmem.cli.options import (
    HOOK_EVENTS,
    TOOL_FORMATS,
    at_option,
    author_option,
    json_option,
    launch,
    launch_options,
    open_repository,
    picked,
    read_text,
    settings,
    store_option,
)
from gitmem.cli.output import emit, fail, one_line, unexpected
from gitmem.cli.output import show as print_report
from gitmem.errors import GitmemError, InvalidArgument
from gitmem.lean.repository import hook_start
from gitmem.ops import reports
from gitmem.repository import Repository

__all__ = ["COMMANDS"]


@click.command()
@launch_options
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
    from gitmem.adapters.startup import open_holder

    holder = open_holder(open_repository(), launch(**options))
    try:
        emit(schemas.tool_definitions(holder.tools(), shape))
    finally:
        holder.close()


def _arguments(text: str) -> dict[str, object]:
    """The JSON object ARGUMENTS gives ('-': stdin)."""
    try:
        parsed = json.loads(read_text("-") if text == "-" else text)
    except (ValueError, RecursionError):  # RecursionError: nested past json's depth
        raise InvalidArgument("ARGUMENTS is not JSON; give a JSON object such as '{}'") from None
    if not isinstance(parsed, dict):
        raise InvalidArgument("ARGUMENTS must be a JSON object such as '{}'")
    return cast(dict[str, object], parsed)


@click.command()
@click.argument("name")
@click.argument("arguments", default="{}")
@launch_options
@json_option
def call(name: str, arguments: str, as_json: bool, **options: Any) -> None:
    """Make one tool call as the agent and print the result text (exit 1 on refusal).

    ARGUMENTS is a JSON object ('-' reads it from stdin); a null argument counts as not
    given, as OpenAI's strict mode sends one.

    \b
    Example:
        gitmem call create_memory '{"name": "todo", "description": "open tasks", "body": "- ship"}'
    """
    from gitmem.adapters import schemas
    from gitmem.adapters.startup import open_holder

    parsed = schemas.drop_nulls(_arguments(arguments))
    holder = open_holder(open_repository(), launch(**options))
    try:
        done = reports.called(holder.call(name, parsed))
    finally:
        holder.close()
    print_report(done, as_json)
    fail(done.refusal(), quiet=as_json)


@click.command()
@launch_options
@click.option("--programs", is_flag=True, help="Offer run_program: agent programs in the sandbox.")
@click.option(
    "--observer", is_flag=True, help="Offer mem_search and mem_read over the observation log."
)
def mcp(programs: bool, observer: bool, **options: Any) -> None:
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
        raise click.ClickException(one_line(str(exc))) from None
    from gitmem.adapters.startup import open_holder

    holder = open_holder(open_repository(), launch(**options))
    serve(holder, programs=programs, observer=observer)


@click.group()
def hook() -> None:
    """Agent client hooks (Claude Code's session events); git hooks are `gitmem hooks`.

    The plugin runs `gitmem hook claude-code EVENT` at a session's start, each prompt,
    compaction and stop.

    \b
    Example:
        echo '{"session_id": "s1", "source": "startup"}' | gitmem hook claude-code session-start
    """


class _HookTimeout(Exception):
    pass


def _alarm(*_: object) -> None:
    raise _HookTimeout


def _claude_code(event: str, options: dict[str, Any]) -> str:
    """Claude Code's answer to ``event``, whose JSON is on stdin; the repository is
    --repo, else the one found from the session's working folder."""
    from gitmem.adapters import claude_code

    text = sys.stdin.read(INPUT_MAX + 1)
    cwd = claude_code.parse_input(text).get("cwd")
    path = settings().repo or ops.find_repository(hook_start(cwd))

    with Repository.open(path) as repo:
        return claude_code.hook(event, text, repo, launch(**options))


def _within(timeout: float, event: str, options: dict[str, Any]) -> str:
    """``_claude_code`` given ``timeout`` seconds, counted from when this process began
    to answer (a quiet answer tried first spent some); a problem is one line on stderr
    and no answer, so the session goes on."""
    left = time_left(timeout)
    if not left:  # spent by a quiet answer tried first: nothing is begun
        click.echo(gave_up(timeout), err=True)
        return ""
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, left)
    try:
        return _claude_code(event, options)
    except _HookTimeout:
        click.echo(gave_up(timeout), err=True)
    except GitmemError as exc:
        click.echo(f"gitmem hook: {one_line(str(exc))}", err=True)
    except Exception as exc:
        click.echo(f"gitmem hook: {unexpected(exc)}", err=True)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return ""


@hook.command("claude-code")
@click.argument("event", type=click.Choice(HOOK_EVENTS))
@launch_options
@click.option(
    "--timeout",
    type=click.FloatRange(min=0.1),
    default=TIMEOUT,
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
    out = _within(timeout, event, options)
    if out:
        click.echo(out, nl=not out.endswith("\n"))


@click.command()
@click.argument("program", type=click.Path(dir_okay=False, allow_dash=True))
@click.option(
    "--strategy",
    metavar="NAME",
    help="The strategy whose calls the program gets (default: the one the store records).",
)
@store_option
@at_option
@author_option
@json_option
def run(
    program: str,
    strategy: str | None,
    store: str | None,
    at: str | None,
    author: str | None,
    as_json: bool,
) -> None:
    """Run an agent program (TypeScript) in the sandbox against a store.

    The program may import { memories, views } from "gitmem"; its memories calls are
    the calls of the store's strategy, made as the operator under the limits the store
    records. Exits 1 if the program fails.

    \b
    Example:
        gitmem run report.ts --store profile/ops
    """
    try:
        repo, name = picked(store, at=at)
        done = ops.run(repo, name, ops.parse_author(author), read_text(program), strategy)
    except GitmemError as exc:
        if not as_json:
            raise
        emit({"ok": False, "output": "", "error": one_line(str(exc)), "views": []})
        click.get_current_context().exit(1)
    print_report(done, as_json)
    fail(done.refusal(), quiet=as_json)


COMMANDS = (tools, call, mcp, hook, run)
