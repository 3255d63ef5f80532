"""The pages the console hands a browser besides its own: the page that says how to get
in (a visit without the token, or under a name the console does not answer to), the
page ``--open`` hands the browser on its way to the console, and the headers every
answer carries."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import html
import os
import pathlib
import shutil
import tempfile
from collections.abc import Generator

from starlette.responses import Response
from starlette.types import Scope

from gitmem.errors import GitmemError

__all__ = ["HEADERS", "door", "leading_page", "page_visit", "shown_in_browser"]

HEADERS = {
    # the page loads only its own script and style, and nothing may frame it
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    # the first URL carries the token: never send it on to anyone
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
"""The headers of every answer."""

_DOOR_STYLE = (
    "body{font:16px/1.5 system-ui,sans-serif;color:#1d232a;background:#f4f6f8;margin:0}"
    "main{max-width:40em;margin:3em auto;padding:1em 1.5em;background:#fff;"
    "border:1px solid #d6dbe0;border-radius:6px}"
    "h1{font-size:1.3em;margin:.2em 0 .6em}code{font:14px ui-monospace,monospace;"
    "background:#f4f6f8;padding:1px 4px;border-radius:3px;overflow-wrap:anywhere}"
)
_DOOR_HEADERS = {
    **HEADERS,
    # the page's one style is allowed by its hash; nothing else may load or run
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'sha256-"
        + base64.b64encode(hashlib.sha256(_DOOR_STYLE.encode()).digest()).decode()
        + "'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
}
_DOOR_HELP = {
    "unauthorized": (
        "In the terminal where the console runs, <code>gitmem console</code> printed "
        "its address with the token: open that address, and the page keeps the token."
    ),
    "forbidden": (
        "The console answers only to the address it printed, so that another site cannot "
        "reach it under a name of its own. Open the address <code>gitmem console</code> "
        "printed in its terminal."
    ),
}


def page_visit(scope: Scope) -> bool:
    """Whether a browser is visiting a page (not calling the API): it gets a page that
    says how to get in, where the API gets its JSON refusal."""
    if scope["method"] != "GET" or scope["path"].startswith("/api/"):
        return False
    accept = dict(scope["headers"]).get(b"accept", b"")
    return b"text/html" in accept


def door(refusal: GitmemError, status: int) -> Response:
    """The page a visit without the token (or to a foreign name) gets."""
    helps = _DOOR_HELP.get(refusal.kind, "")
    text = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>gitmem console: how to get in</title><style>{_DOOR_STYLE}</style></head>"
        f'<body><main id="door" data-kind="{html.escape(refusal.kind)}">'
        "<h1>gitmem console: how to get in</h1>"
        f'<p id="refusal">{html.escape(str(refusal))}.</p><p>{helps}</p></main></body></html>'
    )
    return Response(
        text, status_code=status, media_type="text/html; charset=utf-8", headers=_DOOR_HEADERS
    )


def leading_page(url: str) -> str:
    """A page that leads a browser on to ``url`` (the address with the token), in a
    folder of its own that only this user can read; what ``--open`` hands the browser,
    whose command line every user of the machine can read. Returns its path."""
    folder = tempfile.mkdtemp(prefix="gitmem-console-")  # readable by this user alone
    path = os.path.join(folder, "open.html")
    shown = html.escape(url, quote=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as page:
        page.write(
            '<!doctype html><meta charset="utf-8"><meta name="referrer" content="no-referrer">'
            f'<meta http-equiv="refresh" content="0;url={shown}"><title>gitmem console</title>'
            f'<a href="{shown}">Open the gitmem console</a>\n'
        )
    return path


@contextlib.contextmanager
def shown_in_browser(url: str) -> Generator[None]:
    """Hand the browser :func:`leading_page` for ``url``; the page goes when the block
    ends (the console stops)."""
    import webbrowser

    path = leading_page(url)
    try:
        webbrowser.open(pathlib.Path(path).as_uri())
        yield
    finally:
        shutil.rmtree(os.path.dirname(path), ignore_errors=True)
