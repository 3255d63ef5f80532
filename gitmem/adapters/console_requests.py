"""What a console request says: its path's parts, a count in its query, the revision
a write is based on, and its body, each read within a bound of size and time and
refused in one line when it is not what the route expects; and the connection it
arrives on, which has a bound of time for sending a request's head (:func:`protocol`)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any, ClassVar
from urllib.parse import unquote

from starlette.requests import Request
from uvicorn.protocols.http.h11_impl import H11Protocol

from gitmem.errors import GitmemError, InvalidArgument

__all__ = [
    "BODY_MAX",
    "PreconditionRequired",
    "TooLarge",
    "body",
    "count",
    "decision",
    "fields",
    "if_match",
    "number",
    "protocol",
    "segments",
]

BODY_MAX = 4 * 1024 * 1024
_BODY_SECONDS = 30.0
"""How long a request body may take to arrive."""
_NUMBER_DIGITS = 9
HEAD_SECONDS = 10.0
"""How long a connection may take to send a request's head (its line and headers),
from when it opens or its last answer ends."""
WAITING_MAX = 256
"""How many connections may wait for a request's head at once; past it, the one that
has waited longest is closed."""


class TooLarge(GitmemError):
    """A request body over the console's cap: refused once the cap is reached."""

    kind = "too-large"


class PreconditionRequired(GitmemError):
    """A write that does not say which revision it is based on (``If-Match``)."""

    kind = "precondition-required"


def number(text: str) -> int | None:
    """``text`` as a whole number if it is 1-9 ASCII digits, else ``None`` (``int``
    takes other scripts' digits, and ``str.isdigit`` takes ``²``, which ``int`` does not)."""
    if not 0 < len(text) <= _NUMBER_DIGITS or not (text.isascii() and text.isdigit()):
        return None
    return int(text)


def segments(request: Request) -> list[str]:
    """The path after ``/api/stores/``, split at its slashes before decoding: a store id
    holds ``/`` as separators, while a file store's path (``notes%2Ftodo.md``) arrives
    encoded as one segment."""
    raw = request.scope.get("raw_path")
    if not isinstance(raw, bytes):
        return request.path_params["rest"].split("/")
    tail = raw.decode("latin-1").removeprefix("/api/stores/")
    return [unquote(part) for part in tail.split("/")]


def count(value: str | None, default: int) -> int:
    """A query's count (``default`` when absent or empty)."""
    if value is None or value == "":
        return default
    whole = number(value)
    if whole is None:
        raise InvalidArgument(f"limit {value[:20]!r} is not a whole number; send e.g. 100")
    return whole


def if_match(value: str | None) -> int:
    """The revision number an ``If-Match`` header names (``PreconditionRequired`` if
    there is none)."""
    if value is None:
        raise PreconditionRequired(
            "say which revision your change is based on with an If-Match header "
            "(the memory's revision number; 0 for a new memory)"
        )
    revision = number(value.strip().removeprefix("W/").strip('"'))
    if revision is None:
        raise InvalidArgument(
            f"If-Match {value[:20]!r} is not a revision number; send the number, e.g. 3"
        )
    return revision


async def body(request: Request) -> bytes:
    """The request's body, read as it arrives and refused (``TooLarge``) as soon as it
    passes the cap, or ``InvalidArgument`` if it takes over the time allowed: a client
    never makes the console hold more than the cap, nor wait for ever."""
    declared = request.headers.get("content-length")
    # the server takes only digits here; more of them than a count holds is over the cap
    if declared is not None and (
        len(declared) > _NUMBER_DIGITS or (number(declared) or 0) > BODY_MAX
    ):
        raise TooLarge(f"the request is over {BODY_MAX:,} bytes; send less text")
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(_BODY_SECONDS):
            async for chunk in request.stream():
                size += len(chunk)
                if size > BODY_MAX:
                    raise TooLarge(f"the request is over {BODY_MAX:,} bytes; send less text")
                chunks.append(chunk)
    except TimeoutError:
        raise InvalidArgument(
            f"the request body took over {_BODY_SECONDS:.0f} seconds to arrive; send it again"
        ) from None
    return b"".join(chunks)


def fields(raw: bytes) -> dict[str, str]:
    """A save's description and body, from its JSON body."""
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: nested past json's depth
        raise InvalidArgument(
            'the request body is not JSON; send {"description": ..., "body": ...}'
        ) from None
    if not isinstance(data, dict):
        raise InvalidArgument('send a JSON object: {"description": ..., "body": ...}')
    found: dict[str, str] = {}
    for key in ("description", "body"):
        value = data.get(key)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        if not isinstance(value, str):
            raise InvalidArgument(f"the {key} must be a string")
        found[key] = value
    return found


def decision(raw: bytes) -> tuple[str, list[str], str | None]:
    """An approval's or rejection's proposal, the memories it names (none: all) and the
    proposal's head as the page showed it (none: whatever it is now)."""
    with contextlib.suppress(ValueError, RecursionError, AttributeError):
        data: Any = json.loads(raw)
        proposal, slugs, head = data.get("proposal"), data.get("slugs", []), data.get("head")
        listed: list[Any] = slugs if isinstance(slugs, list) else [None]  # pyright: ignore[reportUnknownVariableType]
        if (
            isinstance(proposal, str)
            and all(isinstance(slug, str) for slug in listed)
            and (head is None or isinstance(head, str))
        ):
            return proposal, [str(slug) for slug in listed], head
    raise InvalidArgument(
        'send a JSON object: {"proposal": "STORE/HOLDER", "slugs": [SLUG, ...], "head": COMMIT}'
    )


class _Deadline(H11Protocol):
    """uvicorn's HTTP/1.1 connection with a bound on the wait for each request's head.

    uvicorn waits for a head for ever: connections that open and send half a request
    (or nothing) would hold the console's file descriptors until none is left, and no
    one could reach it, with or without the token. Here a connection that has no
    request in hand is closed once :data:`HEAD_SECONDS` pass, and when more than
    :data:`WAITING_MAX` wait at once the longest waiting goes first. A request being
    answered (a slow fold, the event stream) is never cut."""

    waiting: ClassVar[dict[_Deadline, None]] = {}
    """The server's connections waiting for a head, longest waiting first."""
    _timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # pyright: ignore[reportIncompatibleMethodOverride]
        super().connection_made(transport)
        self._wait()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._wait()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop()
        super().connection_lost(exc)

    def _idle(self) -> bool:
        """Whether no request is in hand (none yet, or the last one answered)."""
        return self.cycle is None or self.cycle.response_complete  # pyright: ignore[reportUnnecessaryComparison]

    def _wait(self) -> None:
        """Start the wait for the next head (and close the longest waiting, if over)."""
        if self.transport.is_closing():
            return
        self._stop()
        self._timer = self.loop.call_later(HEAD_SECONDS, self._expire)
        waiting = self.waiting
        waiting[self] = None
        for other in list(waiting)[: max(0, len(waiting) - WAITING_MAX)]:
            if other._idle():
                other._close()
            else:
                waiting.pop(other, None)

    def _expire(self) -> None:
        self._timer = None
        if self._idle():
            self._close()
        else:
            self.waiting.pop(self, None)

    def _stop(self) -> None:
        self.waiting.pop(self, None)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _close(self) -> None:
        self._stop()
        if not self.transport.is_closing():
            self.transport.close()


def protocol() -> type[H11Protocol]:
    """The HTTP protocol a console's server runs: uvicorn's, with a bound on the wait
    for each request's head (each server keeps its own count of waiting connections)."""

    class Deadline(_Deadline):
        waiting: ClassVar[dict[_Deadline, None]] = {}

    return Deadline
