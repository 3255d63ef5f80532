"""``gitmem observe``: the observer that keeps a project's observation log.

``observe config`` shows and sets its configuration (kept in the repository's git
config under ``gitmem.observer.*``); ``observe panel``, ``observe search`` and
``observe read`` read the log as an agent would.
"""

from __future__ import annotations

import click

from gitmem.cli.options import json_option, open_repository
from gitmem.cli.output import emit

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


COMMANDS = (observe,)
