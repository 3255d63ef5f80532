"""The ``gitmem`` command line: a thin skin over the library.

Each command opens the repository, calls one library function and prints its report
(:mod:`gitmem.ops.reports`) as text or, under ``--json``, as JSON (the shapes are in
``docs/cli-json.md``). A ``GitmemError`` becomes one line ``Error: <message>`` on
stderr and exit status 1, and so does a usage error; nothing ever prints a traceback. What
agents wrote reaches a terminal with its control characters shown, not obeyed.

The commands live by group: :mod:`~gitmem.cli.memories` (one store's memories),
:mod:`~gitmem.cli.stores`, :mod:`~gitmem.cli.sync`, :mod:`~gitmem.cli.guards`,
:mod:`~gitmem.cli.agents`, :mod:`~gitmem.cli.console`, and a strategy's own
(:mod:`~gitmem.cli.notebook`, :mod:`~gitmem.cli.rows`).
"""

from __future__ import annotations

import importlib
import sys
from typing import Any, NoReturn

import click

from gitmem.cli.options import COMPACTIONS, HOOK_EVENTS, STARTS, TOOL_FORMATS, Settings
from gitmem.cli.output import end, one_line, shown, unexpected
from gitmem.errors import GitmemError

__all__ = ["COMPACTIONS", "HOOK_EVENTS", "STARTS", "TOOL_FORMATS", "cli", "main"]


# the command groups' modules, the most used first: a command loads its group's module
# and those before it, not every command's (`gitmem show` loads no agent command)
_GROUPS = (
    "gitmem.cli.memories",
    "gitmem.cli.stores",
    "gitmem.cli.sync",
    "gitmem.cli.review",
    "gitmem.cli.notebook",
    "gitmem.cli.rows",
    "gitmem.cli.guards",
    "gitmem.cli.console",
    "gitmem.cli.agents",
    "gitmem.cli.observe",
    "gitmem.cli.recall",
)


class _Group(click.Group):
    """Loads the command groups' modules as far as the command named, and turns library
    errors into one-line click errors, and anything else likewise."""

    _loaded = 0

    @property
    def commands(self) -> dict[str, click.Command]:  # pyright: ignore[reportIncompatibleVariableOverride]
        """Every command, every group's module loaded."""
        self._load_until(None)
        return self._commands

    @commands.setter
    def commands(self, value: dict[str, click.Command]) -> None:  # pyright: ignore[reportIncompatibleVariableOverride]
        self._commands = dict(value)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        self._load_until(cmd_name)
        return self._commands.get(cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(self.commands)

    def _load_until(self, name: str | None) -> None:
        while name not in self._commands and self._loaded < len(_GROUPS):
            module = importlib.import_module(_GROUPS[self._loaded])
            self._loaded += 1
            commands: tuple[click.Command, ...] = module.COMMANDS
            self._commands.update((c.name or "", c) for c in commands)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            raise _usage(exc) from exc

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:
            raise _usage(exc) from exc
        except (click.ClickException, click.exceptions.Exit, click.Abort, BrokenPipeError):
            raise  # a closed pipe (`gitmem log | head`) ends the command quietly, in main
        except GitmemError as exc:
            raise click.ClickException(one_line(str(exc))) from exc
        except Exception as exc:
            raise click.ClickException(unexpected(exc)) from exc


def _usage(exc: click.UsageError) -> click.ClickException:
    """A usage error as one line, exit status 1, naming the help to read."""
    path = exc.ctx.command_path.split()[1:] if exc.ctx is not None else []
    command = " ".join(["gitmem", *path])
    return click.ClickException(one_line(f"{exc.format_message()} (see `{command} --help`)"))


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--repo",
    envvar="GITMEM_REPO",
    metavar="PATH",
    help="The gitmem repository: a standalone one, or a project's work tree or .git "
    "(default: found as git finds .git: the nearest .gitmem, or project holding stores).",
)
@click.version_option(
    package_name="gitmem-agent", prog_name="gitmem", message="%(prog)s %(version)s"
)
@click.pass_context
def cli(ctx: click.Context, repo: str | None) -> None:
    """Durable, bounded, versioned memory for AI agents, kept in a git repository.

    \b
    Example:
        gitmem init && gitmem create --store notes todo --description "open tasks" --body "- ship"
    """
    ctx.obj = Settings(repo)


def main() -> NoReturn:
    """The console-script entry: run the CLI, never showing a traceback, then end the
    process without the interpreter's teardown."""
    sys.stdout, sys.stderr = shown(sys.stdout), shown(sys.stderr)
    try:
        cli.main(prog_name="gitmem")
    except SystemExit as exc:
        end(exc.code)
    except BrokenPipeError:
        end(1)
    except BaseException as exc:
        click.echo(f"Error: {unexpected(exc)}", err=True)
        end(1)
    end(0)
