"""``gitmem console``: a local web page where operators see and correct what agents remember.

One Starlette application serves the page (``console_static/``, hand-written, shipped in
the package) and a JSON API over :mod:`gitmem.ops`; uvicorn runs it. Every read and
every write goes through the same library functions as the CLI's, so the console
refuses what the CLI refuses, in the same words.

Security (see docs/console.md, "Security model"):

- it binds loopback unless told otherwise;
- every API request carries the per-launch token: ``Authorization: Bearer`` (how the
  page sends it, from its own origin's storage), or ``?token=``, compared in constant
  time; never a cookie, which a browser would send to any other port of the host too.
  The page and its script and style are the same for everyone and hold no secret;
- a write (``PUT``, ``DELETE``) also needs an ``Origin`` equal to the console's own;
- the ``Host`` header must name the bound address, so a DNS-rebound name is refused;
- the page builds every memory text with ``textContent`` under a strict CSP.

    console = Console(repo, token=Console.new_token(), host="127.0.0.1", port=0)
    console.serve(print)  # prints http://127.0.0.1:PORT/?token=... and serves
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import secrets
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Generator
from importlib import resources
from typing import Any
from urllib.parse import parse_qs

from gitmem.adapters import heap
from gitmem.adapters.extras import missing_extra
from gitmem.adapters.own_names import outward_address, own_names

try:
    import uvicorn
    from starlette.applications import Starlette
    from starlette.background import BackgroundTask
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response, StreamingResponse
    from starlette.routing import Route
    from starlette.types import ASGIApp, Receive, Scope, Send
except ImportError as exc:  # the optional packages
    raise missing_extra("console", exc) from exc

import gitmem.adapters.console_pages as pages
import gitmem.adapters.console_requests as parse
from gitmem import ops
from gitmem.adapters.console_pages import HEADERS
from gitmem.adapters.console_requests import PreconditionRequired, TooLarge
from gitmem.errors import GitmemError, InternalError, InvalidArgument, NotFound, StaleRevision
from gitmem.ops import review as reviewing
from gitmem.repository import Repository
from gitmem.types import Author

__all__ = ["STATUS", "Console", "Forbidden", "PreconditionRequired", "TooLarge", "Unauthorized"]

POLL_SECONDS = 0.25
"""How often the event stream looks at the store heads."""

STATUS = {
    "ok": 200,  # Unchanged: a write identical to what is held, which writes nothing
    "invalid-argument": 400,
    "unauthorized": 401,
    "forbidden": 403,
    "read-only": 403,
    "unavailable": 403,
    "not-found": 404,
    "method-not-allowed": 405,
    "already-exists": 409,
    "stale": 412,
    "limit-exceeded": 422,
    "precondition-required": 428,
    "too-large": 413,
    "io-error": 500,
}
"""The HTTP status of each error kind (the table in docs/console-api.md)."""

_STATIC = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/app.css": ("app.css", "text/css; charset=utf-8"),
}
_PUBLIC = frozenset({*_STATIC, "/favicon.ico"})
"""What is read without the token: the page's shell, script and style, and no icon."""
_READS = frozenset({"GET", "HEAD"})
"""The methods that change nothing; every other one is a change, whatever its name."""
_WILDCARDS = ("0.0.0.0", "::", "")
_LOOPBACK = {"127.0.0.1", "::1", "localhost"}


class Unauthorized(GitmemError):
    """A request without the console's token."""

    kind = "unauthorized"


class Forbidden(GitmemError):
    """A request from another origin, or addressed to another host."""

    kind = "forbidden"


class _NotAllowed(GitmemError):
    """A method a route does not answer."""

    kind = "method-not-allowed"


def _error(exc: GitmemError, **extra: Any) -> JSONResponse:
    body: dict[str, Any] = {"error": {"kind": exc.kind, "message": str(exc)}, **extra}
    return JSONResponse(body, status_code=STATUS.get(exc.kind, 500), headers=HEADERS)


class Console:
    """The console of one repository, as served on ``host:port`` with ``token``."""

    def __init__(
        self,
        repo: Repository,
        *,
        token: str,
        host: str = "127.0.0.1",
        port: int = 0,
        author: Author | None = None,
    ) -> None:
        self.repo = repo
        self.token = token
        self.host = host
        self.port = port
        self.author = author or ops.operator_author()
        # one repository object serves every request thread: its caches are not
        # meant for concurrent writers, and a console is one operator's tool
        self._lock = threading.Lock()
        self._closing = threading.Event()
        # a store's first fold of its history runs on a thread of its own
        self._ledgers = ops.Ledgers(repo, self._lock, self._closing, heap.give_back)
        self._hosts: tuple[int, set[str]] | None = None
        self.app = Starlette(
            routes=self._routes(), exception_handlers={404: _no_route, 405: _no_method}
        )

    @staticmethod
    def new_token() -> str:
        """A fresh per-launch token."""
        return secrets.token_urlsafe(24)

    @property
    def wildcard(self) -> bool:
        """Whether the console listens on every address of the machine."""
        return self.host in _WILDCARDS

    @property
    def origin(self) -> str:
        return f"http://{self.netloc(self.address)}"

    @property
    def address(self) -> str:
        """The address a browser should use: the bound one, or on a wildcard bind the
        machine's own outward address (its hostname, or loopback, failing that)."""
        if not self.wildcard:
            return self.host
        return outward_address() or socket.gethostname() or "127.0.0.1"

    def url(self, address: str | None = None) -> str:
        """The address the command prints: the page, with the token."""
        return f"http://{self.netloc(address or self.address)}/?token={self.token}"

    def netloc(self, host: str) -> str:
        """``host:port`` as a ``Host`` header carries it."""
        shown = f"[{host}]" if ":" in host else host
        return f"{shown}:{self.port}"

    def hosts(self) -> set[str]:
        """The ``Host`` values the console answers to: the bound address (any name of
        loopback, on loopback); on a wildcard bind, the machine's own names and
        addresses, and never a name it does not know as its own (a DNS-rebound one)."""
        cached = self._hosts
        if cached is not None and cached[0] == self.port:
            return cached[1]
        if self.wildcard:
            names = own_names() | ({self.host} - {""})
        else:
            names = {self.host}
            if self.host in _LOOPBACK:
                names |= _LOOPBACK
        allowed = {self.netloc(name) for name in names}
        self._hosts = (self.port, allowed)
        return allowed

    # -- serving -------------------------------------------------------------------

    def serve(self, echo: Callable[[str], None] = print, *, open_browser: bool = False) -> None:
        """Bind, print the URL and serve until interrupted."""
        # a first answer of a large store is megabytes, built once: the idle server
        # should not stay as large as that
        heap.keep_small()
        sock = self.bind()
        echo(self.url())
        if self.wildcard:
            echo(
                f"listening on every address of this machine ({self.host}): open the address "
                f"above from elsewhere, or {self.url('127.0.0.1')} from this machine"
            )
        # uvicorn re-raises the Ctrl-C it caught once it has shut down: that is the
        # operator's way to stop the console, not an error
        shown = pages.shown_in_browser(self.url()) if open_browser else contextlib.nullcontext()
        with shown, contextlib.suppress(KeyboardInterrupt):
            self.server().run(sockets=[sock])

    @contextlib.contextmanager
    def running(self) -> Generator[str]:
        """Serve from a background thread while the block runs; yields the URL."""
        sock = self.bind()
        server = self.server()
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        deadline = time.monotonic() + 30
        while not server.started and thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.005)
        try:
            if not server.started:
                raise InvalidArgument(f"the console did not start on {self.host}:{self.port}")
            yield self.url()
        finally:
            self._closing.set()
            server.should_exit = True
            thread.join(10)
            sock.close()

    def bind(self) -> socket.socket:
        """A listening socket on ``host:port`` (port 0: a free one, recorded in ``port``)."""
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.host, self.port))
        except OSError as exc:
            sock.close()
            raise InvalidArgument(
                f"cannot listen on {self.host}:{self.port} ({exc.strerror}); "
                "choose another --port or --host"
            ) from None
        sock.listen(64)
        sock.set_inheritable(True)
        self.port = sock.getsockname()[1]
        # a wildcard bind's own names take lookups: made once here, not in a request
        self.hosts()
        return sock

    def server(self) -> uvicorn.Server:
        """A uvicorn server for the console (``run(sockets=[self.bind()])`` starts it)."""
        config = uvicorn.Config(
            self.asgi(),
            http=parse.protocol(),
            backlog=64,  # taken at a time, so the longest waiting go before more come
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=1,
            lifespan="off",
        )
        return uvicorn.Server(config)

    def asgi(self) -> ASGIApp:
        """The guarded application (what the server runs and tests call)."""
        return _Guard(self.app, self)

    # -- routes --------------------------------------------------------------------

    def _routes(self) -> list[Route]:
        return [
            Route("/", self._static),
            Route("/app.js", self._static),
            Route("/app.css", self._static),
            Route("/favicon.ico", self._no_icon),
            Route("/api/stores", self._stores),
            Route("/api/agents", self._agents),
            Route("/api/modules", self._modules),
            Route("/api/events", self._events),
            Route("/api/review", self._review),
            Route("/api/review/{decision}", self._decide, methods=["POST"]),
            Route("/api/stores/{rest:path}", self._store, methods=["GET", "PUT", "DELETE"]),
        ]

    async def _static(self, request: Request) -> Response:
        name, media = _STATIC[request.url.path]
        text = resources.files("gitmem.adapters").joinpath("console_static", name).read_bytes()
        return Response(text, media_type=media, headers=HEADERS)

    async def _no_icon(self, request: Request) -> Response:
        return Response(status_code=204, headers=HEADERS)

    async def _call(self, fn: Callable[[], Any], *, locked: bool = True) -> Any:
        def run() -> Any:
            if not locked:
                return fn()
            with self._lock:
                return fn()

        return await run_in_threadpool(run)

    def _ledger(self, store: str) -> ops.Ledger:
        return self._ledgers.ledger(store)

    def _existing(self, store: str) -> str:
        return ops.pick_store(self.repo, store)

    async def _stores(self, request: Request) -> Response:
        def rows() -> list[dict[str, Any]]:
            held = ops.holders(self.repo)
            found: list[dict[str, Any]] = []
            for store in self.repo.stores():
                # a store whose history is still being read says so, and what it knows
                ledger = self._ledgers.held(store)
                history = self._ledgers.history(store) if ledger is None else None
                found.append(
                    ops.store_overview(self.repo, ledger, held.get(store, []), store, history)
                )
            return found

        return await self._answer(rows, folds=self._ledgers.settle)

    async def _agents(self, request: Request) -> Response:
        return await self._answer(
            lambda: ops.agents(self.repo, self._followed()), folds=self._ledgers.wait
        )

    async def _modules(self, request: Request) -> Response:
        return await self._answer(
            lambda: ops.modules(self.repo, self._followed()), folds=self._ledgers.wait
        )

    async def _review(self, request: Request) -> Response:
        return await self._answer(lambda: reviewing.review(self.repo).to_dict())

    async def _decide(self, request: Request) -> Response:
        """``POST /api/review/approve`` or ``/reject`` with ``{"proposal", "slugs", "head"}``."""
        act = {"approve": reviewing.approve, "reject": reviewing.reject}.get(
            request.path_params["decision"]
        )
        if act is None:
            return _error(NotFound("no such route; POST to /api/review/approve or /reject"))
        try:
            proposal, slugs, head = parse.decision(await parse.body(request))
        except GitmemError as exc:
            return _error(exc)
        return await self._answer(
            lambda: act(self.repo, proposal, slugs, self.author, head).to_dict()
        )

    def _followed(self) -> list[ops.Ledger]:
        return [self._ledger(store) for store in self.repo.stores()]

    async def _store(self, request: Request) -> Response:
        parts = parse.segments(request)
        method = request.method
        if len(parts) >= 4 and parts[-3] == "memories" and parts[-1] == "blame":
            store, slug = "/".join(parts[:-3]), parts[-2]
            at = request.query_params.get("at") or None
            return await self._answer(lambda: self._blame(store, slug, at, method))
        if len(parts) >= 3 and parts[-2] == "memories":
            store, slug = "/".join(parts[:-2]), parts[-1]
            if method in _READS:
                return await self._answer(lambda: self._memory(store, slug))
            return await self._write(request, store, slug)
        if method not in _READS:
            return _error(
                InvalidArgument(
                    f"{method} changes one memory: send it to /api/stores/<store>/memories/<slug>"
                )
            )
        store, tail = "/".join(parts[:-1]), parts[-1]
        if tail == "state":
            return await self._answer(lambda: ops.store_state(self.repo, self._existing(store)))
        if tail == "memories":
            answer = await self._answer(lambda: self._panel(store), raw=True, locked=False)
            if self._ledgers.shed:
                # a first answer of a large store built megabytes on the way, all freed
                self._ledgers.shed = False
                answer.background = BackgroundTask(heap.give_back)
            return answer
        if tail == "actions":
            return await self._answer(lambda: ops.allowed_actions(self.repo, self._existing(store)))
        if tail == "timeline":
            author = request.query_params.get("author") or None
            limit = request.query_params.get("limit")
            return await self._answer(
                lambda: ops.timeline(
                    self.repo, self._existing(store), author, parse.count(limit, 500)
                )
            )
        return _error(
            NotFound(
                "no such route; use /api/stores/<store>/state, /memories, /memories/<slug>, "
                "/memories/<slug>/blame, /actions or /timeline"
            )
        )

    def _panel(self, store: str) -> bytes:
        """The treemap's rows as JSON (``Ledgers.panel``), kept until the store's head
        moves: the panel redraws on every live update, mostly of other stores. While
        the store's history is first read, the rows its listing knows, at once."""
        with self._lock:
            found = self._existing(store)
        return self._ledgers.panel(found)

    def _blame(self, store: str, slug: str, at: str | None, method: str) -> list[dict[str, Any]]:
        """Each line of a memory with the revision that last changed it (``gitmem blame``)."""
        if method not in _READS:
            raise InvalidArgument(f"{method} changes nothing here: blame is read with GET")
        return [line.to_dict() for line in self.repo.blame(self._existing(store), slug, at)]

    def _memory(self, store: str, slug: str) -> dict[str, Any]:
        return ops.memory_history(self.repo, self._existing(store), slug)

    async def _answer(
        self,
        fn: Callable[[], Any],
        *,
        raw: bool = False,
        locked: bool = True,
        folds: Callable[[list[str]], None] | None = None,
    ) -> Response:
        """``fn``'s answer as JSON (``raw``: its bytes are); ``locked``: called holding the
        lock on the repository; ``folds``: called first with every store, without the
        lock (it waits for their first folds, while the Memories panel answers)."""
        try:
            if folds is not None:
                stores: list[str] = await self._call(self.repo.stores)
                await self._call(lambda: folds(stores), locked=False)
            data = await self._call(fn, locked=locked)
        except GitmemError as exc:
            return _error(exc)
        except Exception as exc:
            return _error(_unexpected(exc))
        if raw:
            return _paged(data)
        return JSONResponse(data, headers=HEADERS)

    async def _write(self, request: Request, store: str, slug: str) -> Response:
        try:
            if request.method not in ("PUT", "DELETE"):
                raise InvalidArgument(
                    f"{request.method} changes nothing: a memory is saved with PUT and "
                    "deleted with DELETE"
                )
            expected = parse.if_match(request.headers.get("if-match"))
            if request.method == "PUT":
                fields = parse.fields(await parse.body(request))

                def save() -> tuple[dict[str, Any], bool]:
                    rev = ops.save(
                        self.repo,
                        store,
                        self.author,
                        slug,
                        fields["description"],
                        fields["body"],
                        expected=expected,
                    )
                    return rev.to_dict(), rev.op == "create"

                event, created = await self._call(save)
                return JSONResponse(event, status_code=201 if created else 200, headers=HEADERS)

            def delete() -> dict[str, Any]:
                return ops.delete(
                    self.repo, self._existing(store), self.author, slug, expected=expected
                ).to_dict()

            return JSONResponse(await self._call(delete), headers=HEADERS)
        except StaleRevision as exc:
            # the newer text goes back with the refusal, so the editor can show it
            current = await self._call(lambda: self._current(store, slug))
            return _error(exc, current=current)
        except GitmemError as exc:
            return _error(exc)
        except Exception as exc:
            return _error(_unexpected(exc))

    def _current(self, store: str, slug: str) -> dict[str, Any] | None:
        try:
            found = ops.memory_history(self.repo, store, slug)
        except GitmemError:
            return None
        return {k: found[k] for k in ("revision", "live", "memory")}

    async def _events(self, request: Request) -> Response:
        async def stream() -> AsyncIterator[str]:
            last: dict[str, str | None] | None = None
            quiet = 0.0
            yield "retry: 1000\n\n"
            while not self._closing.is_set() and not await request.is_disconnected():
                heads = await self._call(self._heads)
                if heads != last:
                    yield f"event: heads\ndata: {json.dumps(heads)}\n\n"
                    last, quiet = heads, 0.0
                elif quiet >= 15:
                    yield ": still here\n\n"
                    quiet = 0.0
                await asyncio.sleep(POLL_SECONDS)
                quiet += POLL_SECONDS

        return StreamingResponse(
            stream(),
            media_type="text/event-stream",
            headers={**HEADERS, "X-Accel-Buffering": "no"},
        )

    def _heads(self) -> dict[str, str | None]:
        return {store: self.repo.head(store) for store in self.repo.stores()}


PAGE_BYTES = 1 << 18
"""How much of a long JSON answer is handed to the connection at a time."""


def _paged(data: bytes) -> Response:
    """``data`` (JSON) sent a page at a time, with its length said up front: the
    connection's buffer then holds a page, where an answer handed over whole is copied
    into it whole (megabytes for the Memories panel of 100,000 memories, kept by the
    allocator once freed)."""
    if len(data) <= PAGE_BYTES:
        return Response(data, media_type="application/json", headers=HEADERS)

    async def pages() -> AsyncIterator[memoryview]:
        whole = memoryview(data)
        for at in range(0, len(whole), PAGE_BYTES):
            yield whole[at : at + PAGE_BYTES]

    headers = {**HEADERS, "Content-Length": str(len(data))}
    return StreamingResponse(pages(), media_type="application/json", headers=headers)


async def _no_route(request: Request, _: Exception) -> Response:
    return _error(NotFound(f"no such route: {request.url.path[:200]}; see the console's API"))


async def _no_method(request: Request, _: Exception) -> Response:
    method = request.method[:20]
    return _error(_NotAllowed(f"{method} is not answered at {request.url.path[:200]}"))


def _unexpected(exc: Exception) -> GitmemError:
    """A defect of gitmem's, said in one line: the operator sees no traceback."""
    return InternalError(f"unexpected {type(exc).__name__}: {exc}; please report this as a bug")


class _Guard:
    """The checks every request passes before it reaches a route: host, token, origin."""

    def __init__(self, app: ASGIApp, console: Console) -> None:
        self.app = app
        self.console = console

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self._refusal(scope)
        if refusal is not None:
            answer = (
                pages.door(refusal, STATUS.get(refusal.kind, 500))
                if pages.page_visit(scope)
                else _error(refusal)
            )
            # and the connection ends with it: a client that sends request after request
            # without the token and never reads an answer would otherwise hold its
            # connection for ever, each answer waiting in progress for a reader
            answer.headers["Connection"] = "close"
            await answer(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _refusal(self, scope: Scope) -> GitmemError | None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        console = self.console
        host = headers.get("host", "").lower()
        if host not in console.hosts():
            return Forbidden(
                f"this console answers only to {console.netloc(console.address)}"
                + (" and this machine's other names" if console.wildcard else "")
                + "; open the address the command printed"
            )
        if scope["path"] in _PUBLIC and scope["method"] in _READS:
            return None  # the page, its script and style: the same for all, no secret in them
        if not self._token_ok(scope, headers):
            return Unauthorized(
                "this console needs its token; open the address `gitmem console` printed"
            )
        if scope["method"] not in _READS and headers.get("origin") not in {
            f"http://{allowed}" for allowed in console.hosts()
        }:
            return Forbidden("a change must come from the console's own page (Origin)")
        return None

    def _token_ok(self, scope: Scope, headers: dict[str, str]) -> bool:
        token = self.console.token.encode()
        offered: list[str] = []
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        offered += query.get("token", [])
        auth = headers.get("authorization", "")
        if auth[:7].lower() == "bearer ":
            offered.append(auth[7:].strip())
        # every candidate is compared, in constant time, so timing tells nothing
        ok = False
        for candidate in offered:
            ok |= hmac.compare_digest(candidate.encode("utf-8", "replace"), token)
        return ok
