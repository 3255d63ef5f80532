"""``gitmem observe``: the observer that keeps a project's observation log.

``observe config`` shows and sets its configuration (kept in the repository's git
config under ``gitmem.observer.*``); ``observe panel``, ``observe search`` and
``observe read`` read the log as an agent would; ``observe drain`` takes the finished
runs waiting in the spool through the model steps here and now; ``observe capture`` is
the plugin's capture hook.
"""

from __future__ import annotations

import click

from gitmem.cli.options import json_option, open_repository
from gitmem.cli.output import emit
from gitmem.observe.capture import HOOK_EVENTS as CAPTURED

__all__ = ["COMMANDS"]


@click.group()
def observe() -> None:
    """The observer: capture of agent runs into the project's observation log.

    \b
    Example:
        gitmem observe config model command
        gitmem observe config command "claude -p --model claude-haiku-4-5"
    """


@observe.command("config")
@click.argument("key", required=False)
@click.argument("value", required=False)
@click.option("--unset", is_flag=True, help="Remove KEY (back to its default).")
@json_option
def observe_config(key: str | None, value: str | None, unset: bool, as_json: bool) -> None:
    """Show the observer's settings, or set KEY to VALUE (git config gitmem.observer.KEY).

    A command or gate-command runs only once set here: this records it as this
    machine's choice (a config that came with a project's files runs nothing).

    \b
    Examples:
        gitmem observe config
        gitmem observe config skip-tools websearch,webfetch
        gitmem observe config budget --unset
    """
    from gitmem.observe.config import configure, read_config

    repo = open_repository()
    if key is None:
        held = dict(read_config(repo).settings)
    elif value is None and not unset:
        held = {key: dict(read_config(repo).settings).get(key.lower(), "")}
    else:
        held = configure(repo, key, None if unset else value)
    if as_json:
        emit(held)
        return
    for name, text in sorted(held.items()):
        click.echo(f"{name} = {text}")


@observe.command("panel")
@click.option("--budget", type=click.IntRange(min=0), help="Characters (default: the setting).")
def observe_panel(budget: int | None) -> None:
    """Print the panel a run starting now is given.

    \b
    Example:
        gitmem observe panel --budget 4000
    """
    from gitmem.observe import ObservationLog, panel, read_config

    repo = open_repository()
    size = budget if budget is not None else read_config(repo).budget
    click.echo(panel(ObservationLog(repo), size), nl=False)


@observe.command("search")
@click.argument("query")
@click.option("--limit", type=int, help="At most this many results, 1 to 10.")
def observe_search(query: str, limit: int | None) -> None:
    """Search the observation log; the results as XML, as mem_search gives them.

    \b
    Example:
        gitmem observe search "auth token refresh" --limit 3
    """
    from gitmem.observe import ObservationLog, mem_search, read_config

    repo = open_repository()
    click.echo(mem_search(ObservationLog(repo), query, limit, config=read_config(repo)), nl=False)


@observe.command("read")
@click.argument("entry_id", metavar="ID")
def observe_read(entry_id: str) -> None:
    """Print one entry of the observation log (obs-… or sum-…).

    \b
    Example:
        gitmem observe read obs-9f3a1b
    """
    from gitmem.observe import ObservationLog, mem_read

    click.echo(mem_read(ObservationLog(open_repository()), entry_id), nl=False)


@observe.command("drain")
def observe_drain() -> None:
    """Take the finished runs waiting in the spool through the model steps, here.

    It runs as the repository's one worker: a worker running already is waited for.

    \b
    Example:
        gitmem observe drain
    """
    from gitmem.observe import Worker

    worker = Worker(open_repository())
    count = worker.drain()
    click.echo(
        f"{count} run{'' if count == 1 else 's'} processed; the log: {worker.folder}/observer.log"
    )


@observe.command("capture")
@click.argument("event", type=click.Choice(sorted(CAPTURED)))
def observe_capture(event: str) -> None:
    """Record one Claude Code hook event (its JSON on stdin) for the observer.

    Appends to the spool and returns: always exit 0, nothing on stdout. At the end
    of a run it starts the background worker when none is running.

    \b
    Example:
        gitmem observe capture post-tool-use < event.json
    """
    from gitmem.observe.capture import hook_main

    hook_main([event])


COMMANDS = (observe,)
