"""What the commands share before they call the library: the repository the group's
options name, the store a command works on, the options themselves, and text read
from a file or stdin."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from gitmem import ops
from gitmem.errors import InvalidArgument, InvalidText
from gitmem.repository import Repository

if TYPE_CHECKING:
    # imported by the commands that use them: `ls`, `show` or `log` load no adapter,
    # holder or sandbox (tests/test_cold.py holds this)
    from gitmem.adapters.startup import Launch

__all__ = [
    "COMPACTIONS",
    "HOOK_EVENTS",
    "STARTS",
    "TOOL_FORMATS",
    "Settings",
    "at_option",
    "author_option",
    "body",
    "body_options",
    "json_option",
    "launch",
    "launch_options",
    "open_repository",
    "picked",
    "read_text",
    "settings",
    "store_option",
]

# the choices of `tools --format`, `hook claude-code EVENT`, `--compaction` and
# `--started-as`, named here so the help needs no adapter or binding rules imported
# (tests/test_cold.py checks them against the modules that define them)
TOOL_FORMATS = ("anthropic", "openai", "mcp")
HOOK_EVENTS = ("session-start", "user-prompt-submit", "pre-compact", "stop", "session-end")
COMPACTIONS = ("summary", "memory")
STARTS = ("root", "implementer", "subagent", "reviewer", "merge")
TEXT_MAX = 64 << 20
"""The most a command reads of a file or stdin as one text (a body, a program, a guard,
a notebook): as much as the MCP server takes in one request."""

F = TypeVar("F", bound=Callable[..., Any])


class Settings:
    """What the group's options say to every command: the repository to open."""

    def __init__(self, repo: str | None) -> None:
        self.repo = repo


def settings() -> Settings:
    """The group's settings for the command running now."""
    obj = click.get_current_context().find_object(Settings)
    return obj if obj is not None else Settings(None)


def open_repository() -> Repository:
    """The repository ``--repo`` names, else the one found from the working folder;
    closed when the command ends."""
    chosen = settings().repo
    repo = Repository.open(chosen if chosen is not None else ops.find_repository(os.getcwd()))
    return click.get_current_context().with_resource(repo)


def picked(
    store: str | None, *, may_create: bool = False, at: str | None = None
) -> tuple[Repository, str]:
    """The repository, and the store ``--store`` names (else its only store); with
    ``at`` (``--at``), the repository reading that store as of that moment."""
    repo = open_repository()
    name = ops.pick_store(repo, store, may_create=may_create)
    return (repo if at is None else repo.as_of(name, at)), name


def read_text(path: str) -> str:
    """The UTF-8 text of the file at ``path`` (``-``: stdin)."""
    where = "stdin" if path == "-" else path
    if path == "-":
        data = sys.stdin.buffer.read(TEXT_MAX + 1)
    else:
        try:
            with open(path, "rb") as handle:
                data = handle.read(TEXT_MAX + 1)
        except OSError as exc:
            raise InvalidArgument(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > TEXT_MAX:
        raise InvalidArgument(
            f"{where} holds more than {TEXT_MAX >> 20} MB; a command reads at most that as one text"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidText(
            f"{where} is not UTF-8 text (byte {exc.start}); convert it first"
        ) from None


def body(text: str | None, body_file: str | None) -> str | None:
    """The body ``--body`` or ``--body-file`` gives, if either does."""
    if text is not None and body_file is not None:
        raise click.UsageError("give the body with --body or --body-file, not both")
    if body_file is not None:
        return read_text(body_file)
    return text


def store_option(f: F) -> F:
    return click.option(
        "--store",
        "-s",
        metavar="ID",
        help="The store to use (default: the repository's only store).",
    )(f)


def at_option(f: F) -> F:
    return click.option(
        "--at",
        metavar="COMMIT|DATE",
        help="Read the store as it stood then: a commit of its history (full or short id) "
        "or an ISO 8601 date or time (its newest commit at or before it; a date alone: "
        "the end of that day, UTC).",
    )(f)


def json_option(f: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON.")(f)


def author_option(f: F) -> F:
    return click.option(
        "--author",
        metavar='"NAME <EMAIL>"',
        help="Who the edit is by (default: your git identity, else your login name).",
    )(f)


def body_options(f: F) -> F:
    f = click.option(
        "--body-file",
        type=click.Path(dir_okay=False, allow_dash=True),
        help="Read the body from a file ('-' for stdin).",
    )(f)
    return click.option("--body", help="The body text.")(f)


def launch_options(f: F) -> F:
    """The agent options ``mcp``, ``hook``, ``tools`` and ``call`` share (one home:
    :class:`gitmem.adapters.startup.Launch`)."""
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
        "--per-session",
        is_flag=True,
        help="Without --instance: each client session is its own instance, "
        "PROFILE-HOST-PID (PID: the client's process).",
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


def launch(
    capability: str | None,
    profile: str,
    instance: str | None,
    started_as: str,
    store: str | None,
    compaction: str,
    per_session: bool = False,
) -> Launch:
    """The launch the agent options describe."""
    from gitmem.adapters.startup import Launch

    return Launch(capability, profile, instance, started_as, store, compaction, per_session)
