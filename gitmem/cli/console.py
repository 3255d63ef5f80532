"""The commands that show memories to a person: console (the web page) and demo."""

from __future__ import annotations

import click

from gitmem import ops
from gitmem.cli.options import author_option, open_repository, settings
from gitmem.cli.output import one_line

__all__ = ["COMMANDS"]


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to listen on.")
@click.option(
    "--port", type=click.IntRange(0, 65535), default=0, help="The port (default: a free one)."
)
@click.option("--open", "open_browser", is_flag=True, help="Open the page in a browser.")
@author_option
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
        raise click.ClickException(one_line(str(exc))) from None
    page = Console(
        open_repository(),
        token=Console.new_token(),
        host=host,
        port=port,
        author=ops.parse_author(author),
    )
    page.serve(click.echo, open_browser=open_browser)


@click.command()
def demo() -> None:
    """Run the scripted two-agent demo on a temporary repository (or --repo).

    \b
    Example:
        gitmem demo
        gitmem --repo /tmp/demo.git demo
    """
    from gitmem.demo import run_demo

    run_demo(settings().repo, click.echo)


COMMANDS = (console, demo)
