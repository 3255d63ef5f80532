"""``gitmem mcp``: one holder served over MCP stdio, with the official ``mcp`` SDK.

- **tools**: exactly ``holder.tools()`` (names, descriptions, schemas as ``inputSchema``);
  a refusal is a result with ``isError: true`` and the refusal text. With
  ``programs``, a ``run_program`` tool runs an agent program, and every call ends the
  turn: the onUse scripts of the code memories it used run, and the views they (and
  the program) opened follow the result.
- **instructions**: the holder's system-prompt section, then its pinned block as
  built at the first turn (byte-identical while the store is unchanged).
- **notices**: an MCP client cannot be handed a message of its own, so pending notices
  are the first text block of the next tool result, once, as the holder words them.
- **the commit read**: every tool result's ``_meta`` records the store commit the call
  read (``gitmem/commit``: the head as the call began, or ``null`` before the first),
  so the run can be read again with ``--at``; a result that carries notices also
  says which commits they cover (``gitmem/notices``: ``{"from", "to"}``).
- **resources**: ``gitmem://memory/<store>/<slug>`` (text/markdown) and
  ``gitmem://state/<store>`` (``memory_state`` JSON). The store's head is watched, so
  writes by other processes raise ``resources/list_changed`` and, for subscribed
  resources, ``resources/updated``.
- **prompts**: ``memory-compaction``, the request to record working state, with the strategy's calls.
- **observation log**: with ``observer``, the tools ``mem_search`` and ``mem_read``
  follow the holder's, answered from the project's observation log.

The SDK is imported here and nowhere else (``pip install 'gitmem-agent[mcp]'``).
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import re
import sys
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from types import TracebackType
from typing import Any, TypeVar, cast
from urllib.parse import unquote

from gitmem.adapters.extras import missing_extra

try:
    import anyio
    import mcp_types as types
    from mcp.server import Server, ServerRequestContext
    from mcp.server.context import CallNext, HandlerResult
    from mcp.server.lowlevel import NotificationOptions
    from mcp.server.session import ServerSession
    from mcp.server.stdio import stdio_server
    from mcp.server.subscriptions import (
        InMemorySubscriptionBus,
        ListenHandler,
        ResourcesListChanged,
        ResourceUpdated,
    )
    from mcp.shared.exceptions import MCPError
    from mcp.shared.message import SessionMessage
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
except ImportError as exc:  # the optional packages
    raise missing_extra("mcp", exc) from exc

from gitmem import observe
from gitmem.adapters import heap
from gitmem.adapters.schemas import tool_definitions
from gitmem.errors import GitmemError
from gitmem.holder import PROGRAM_TOOL, Holder, Turn
from gitmem.lean.text import shown
from gitmem.types import check_slug

__all__ = [
    "COMMIT_META",
    "NOTICES_META",
    "PROGRAM_TOOL",
    "MemoryServer",
    "memory_uri",
    "result_meta",
    "serve",
    "state_uri",
]

_POLL_SECONDS = 0.2
_SUBSCRIPTIONS_MAX = 10_000
"""How many resources one client may subscribe to."""
_LINE_MAX = 64 << 20
P = TypeVar("P")
R = TypeVar("R")


def memory_uri(store: str, slug: str) -> str:
    """The resource URI of one memory."""
    return f"gitmem://memory/{store}/{slug}"


def state_uri(store: str) -> str:
    """The resource URI of a store's ``memory_state``."""
    return f"gitmem://state/{store}"


COMMIT_META = "gitmem/commit"
"""The ``_meta`` key of a tool result that names the store commit the call read."""
NOTICES_META = "gitmem/notices"
"""The ``_meta`` key of a tool result that names the commits its notices cover."""


def result_meta(turn: Turn) -> dict[str, Any]:
    """A tool result's ``_meta``: the commit the call read, and the notices' span."""
    meta: dict[str, Any] = {COMMIT_META: turn.commit}
    if turn.span is not None:
        meta[NOTICES_META] = {"from": turn.span[0], "to": turn.span[1]}
    return meta


def _text(text: str) -> types.TextContent:
    return types.TextContent(type="text", text=text)


def _wire_result(texts: list[str], ok: bool, meta: dict[str, Any] | None) -> dict[str, Any]:
    """A tool result exactly as the SDK puts it on the wire (its fields and their
    order, ``_meta`` only when there is one)."""
    result: dict[str, Any] = {} if meta is None else {"_meta": meta}
    result["content"] = [{"text": text, "type": "text"} for text in texts]
    result["isError"] = not ok
    return result


_CALL_FIELDS = frozenset({"name", "arguments", "_meta"})


class MemoryServer:
    """The MCP face of one holder."""

    def __init__(self, holder: Holder, *, programs: bool = False, observer: bool = False) -> None:
        self.holder = holder
        self.programs = programs
        self.observer = observer
        block = holder.pinned_block()
        self.instructions = holder.system_prompt() + (f"\n{block}" if block else "")
        # the pinned block may have read every memory once (a store whose listing is not
        # kept yet): what that left behind is let go before the server idles
        gc.collect()
        self._bus = InMemorySubscriptionBus()
        self._session: ServerSession | None = None
        self._subscribed: set[str] = set()
        self._head = holder.repo.head(holder.store_id)
        self.server: Server[Any] = Server(
            "gitmem",
            version=_version(),
            instructions=self.instructions,
            on_list_tools=self._seen(self._list_tools),
            on_call_tool=self._seen(self._call_tool),
            on_list_resources=self._seen(self._list_resources),
            on_list_resource_templates=self._seen(self._list_resource_templates),
            on_read_resource=self._seen(self._read_resource),
            on_subscribe_resource=self._seen(self._subscribe),
            on_unsubscribe_resource=self._seen(self._unsubscribe),
            on_subscriptions_listen=ListenHandler(self._bus),
            on_list_prompts=self._seen(self._list_prompts),
            on_get_prompt=self._seen(self._get_prompt),
        )
        # a tracing span per message costs a stdio round trip about a fifth of its time,
        # and nothing here exports traces
        self.server.middleware[:] = [self._answer_call]

    # -- the connection ----------------------------------------------------------------

    def _seen(
        self, handler: Callable[[P], Awaitable[R]]
    ) -> Callable[[ServerRequestContext[Any], P], Awaitable[R]]:
        """Wrap a handler so the connection it arrived on is kept for notifications."""

        async def wrapped(ctx: ServerRequestContext[Any], params: P) -> R:
            self._session = ctx.session
            self._client(ctx.session)
            return await handler(params)

        return wrapped

    async def _answer_call(
        self, ctx: ServerRequestContext[Any], call_next: CallNext
    ) -> HandlerResult:
        """Answer a plain ``tools/call`` here, already in its wire form.

        The SDK's own path checks the request against the protocol's models, builds the
        result's models, then checks and dumps them again: about as much work as the
        call itself. A request of the usual shape (a name, an object of arguments, an
        object of ``_meta``, on a session begun with ``initialize``) needs none of it:
        the holder checks the arguments, and the result is built as the wire has it.
        Anything else goes the SDK's way, with its errors: a ``tools/call`` sent as a
        notification (no id to answer) among them, which the SDK drops unrun, so no
        call is made whose result, and the notices it would carry, nobody receives."""
        params = ctx.params
        if (
            ctx.method != "tools/call"
            or ctx.request_id is None
            or ctx.protocol_version not in HANDSHAKE_PROTOCOL_VERSIONS
            or ctx.session.client_params is None
            or not isinstance(params, Mapping)
            or not _CALL_FIELDS.issuperset(params)
            or not isinstance(params.get("name"), str)
            or not isinstance(params.get("arguments") or {}, dict)
            or not isinstance(params.get("_meta") or {}, dict)
            or not _plain_meta(params.get("_meta") or {})
        ):
            return await call_next(ctx)
        self._session = ctx.session
        self._client(ctx.session)
        return self.result(params["name"], dict(params.get("arguments") or {}))

    def _client(self, session: ServerSession) -> None:
        """Record the client's own name (its ``clientInfo``) on the holder's writes."""
        params = session.client_params
        name = params.client_info.name if params is not None else ""
        if name and name != self.holder.provenance.client:
            self.holder.provenance = replace(self.holder.provenance, client=name)

    # -- tools -------------------------------------------------------------------------

    def tool_list(self) -> list[dict[str, Any]]:
        """The offered tools as ``holder.tools()`` lists them (plus ``run_program``, and
        ``mem_search`` and ``mem_read`` with ``observer``)."""
        return (
            self.holder.tools()
            + ([PROGRAM_TOOL] if self.programs else [])
            + (list(observe.TOOLS) if self.observer else [])
        )

    async def _list_tools(self, _: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=t["name"], description=t["description"], input_schema=t["inputSchema"]
                )
                for t in tool_definitions(self.tool_list(), "mcp")
            ]
        )

    async def _call_tool(self, params: types.CallToolRequestParams) -> types.CallToolResult:
        result = self.result(params.name, dict(params.arguments or {}))
        return types.CallToolResult.model_validate(result)

    def result(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """One tool call's result as the wire carries it (``content``, ``isError`` and
        the ``_meta`` of :func:`result_meta`)."""
        if self.observer and name in observe.TOOL_NAMES:
            # the observation log's tools read the project's log, not the holder's store
            texts, ok = self.call(name, arguments)
            return _wire_result(texts, ok, None)
        turn = self.turn(name, arguments)
        assert turn.result is not None  # a turn with a call
        return _wire_result(turn.texts(), turn.result.ok, result_meta(turn))

    def call(self, name: str, arguments: dict[str, Any]) -> tuple[list[str], bool]:
        """One tool call: the text blocks of its result (pending notices first) and
        whether it succeeded."""
        if self.observer and name in observe.TOOL_NAMES:
            text, ok = observe.call_tool(self.holder.repo, name, arguments)
            return [text], ok
        turn = self.turn(name, arguments)
        assert turn.result is not None  # a turn with a call
        return turn.texts(), turn.result.ok

    def turn(self, name: str, arguments: dict[str, Any]) -> Turn:
        """One tool call as the holder's turn (notices, the call, the end of the turn)."""
        turn = self.holder.turn(name, arguments, code=self.programs)
        if turn.defect is not None:
            # onUse output and errors never reach the model; the operator's log does
            print(f"gitmem mcp: an onUse script could not run: {turn.defect}", file=sys.stderr)
        return turn

    # -- resources ---------------------------------------------------------------------

    async def _list_resources(
        self, _: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        store = self.holder.store_id
        memories = self.holder.repo.snapshot(store).memories()
        resources = [
            types.Resource(
                name=m.slug,
                uri=memory_uri(store, m.slug),
                description=m.description or None,
                mime_type="text/markdown",
            )
            for m in memories
        ]
        resources.append(
            types.Resource(
                name="memory_state",
                uri=state_uri(store),
                description=f"The memory_state of {store}: memories, totals, limits, peaks.",
                mime_type="application/json",
            )
        )
        return types.ListResourcesResult(resources=resources)

    async def _list_resource_templates(
        self, _: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        store = self.holder.store_id
        template = types.ResourceTemplate(
            name="memory",
            uri_template=memory_uri(store, "{slug}"),
            description=f"One memory of {store}, by its name.",
            mime_type="text/markdown",
        )
        return types.ListResourceTemplatesResult(resource_templates=[template])

    def _slug(self, uri: str) -> str | None:
        """The memory ``uri`` names (``None``: the store's state); an MCP error if it is
        neither one of this store's memories' URIs (the memory may not exist yet) nor
        its state's."""
        store = self.holder.store_id
        if uri == state_uri(store):
            return None
        prefix = memory_uri(store, "")
        if not uri.startswith(prefix):
            raise MCPError(
                types.INVALID_PARAMS, f"there is no resource {uri[:200]}; resources/list names them"
            )
        # a client may send the slug %-escaped; a slug is checked before any lookup
        slug = unquote(uri[len(prefix) :])
        try:
            return check_slug(slug)
        except GitmemError as exc:
            raise MCPError(types.INVALID_PARAMS, f"{uri[:200]} names no memory: {exc}") from None

    def read(self, uri: str) -> tuple[str, str]:
        """The MIME type and text of one resource."""
        store = self.holder.store_id
        slug = self._slug(uri)
        if slug is None:
            return "application/json", json.dumps(self.holder.state(), ensure_ascii=False)
        memory = self.holder.repo.snapshot(store).get(slug)
        if memory is None:
            raise MCPError(
                types.INVALID_PARAMS, f"there is no resource {uri}; resources/list names them"
            )
        text = f"---\ndescription: {json.dumps(memory.description, ensure_ascii=False)}\n---\n"
        return "text/markdown", text + memory.body

    async def _read_resource(
        self, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        mime, text = self.read(str(params.uri))
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=str(params.uri), mime_type=mime, text=text)]
        )

    async def _subscribe(self, params: types.SubscribeRequestParams) -> types.EmptyResult:
        uri = str(params.uri)
        self._slug(uri)  # only this store's resources, each named by a valid slug
        if uri not in self._subscribed and len(self._subscribed) >= _SUBSCRIPTIONS_MAX:
            raise MCPError(
                types.INVALID_PARAMS,
                f"this server follows at most {_SUBSCRIPTIONS_MAX:,} resources for you; "
                "unsubscribe from some first",
            )
        self._subscribed.add(uri)
        return types.EmptyResult()

    async def _unsubscribe(self, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        self._subscribed.discard(str(params.uri))
        return types.EmptyResult()

    async def watch(self) -> None:
        """Follow the store's head (other processes write it too) and notify the client."""
        while True:
            await anyio.sleep(_POLL_SECONDS)
            try:
                await self.changed()
            except (GitmemError, OSError) as exc:
                # a notification is advisory: a store that cannot be read this time is
                # looked at again, and the server goes on serving
                print(f"gitmem mcp: watching the store: {exc}", file=sys.stderr)

    async def changed(self) -> None:
        """Send the notifications the store's changes since the last look call for."""
        repo, store = self.holder.repo, self.holder.store_id
        head = repo.head(store)
        if head == self._head:
            return
        revisions = repo.revisions_since(store, self._head, head)
        # the list changed if a memory came or went: only the folders that changed are
        # read, so a large store's names are never all held
        before = repo.snapshot(store, self._head) if self._head is not None else None
        after = repo.snapshot(store, head)
        self._head = head
        uris = [memory_uri(store, s) for s in dict.fromkeys(r.slug for r in revisions)]
        uris.append(state_uri(store))
        if any(
            before is None or (slug in before) != (slug in after)
            for slug in after.changed_since(before)
        ):
            await self._bus.publish(ResourcesListChanged())
            if self._session is not None:
                await self._session.send_resource_list_changed()
        for uri in uris:
            if uri in self._subscribed:
                await self._bus.publish(ResourceUpdated(uri=uri))
                if self._session is not None:
                    await self._session.send_resource_updated(uri)

    # -- prompts -----------------------------------------------------------------------

    async def _list_prompts(
        self, _: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult(
            prompts=[
                types.Prompt(
                    name="memory-compaction",
                    description="Record your working state in your memories instead of a summary.",
                )
            ]
        )

    async def _get_prompt(self, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        if params.name != "memory-compaction":
            raise MCPError(
                types.INVALID_PARAMS,
                f"there is no prompt {shown(params.name)}; the one prompt is memory-compaction",
            )
        text = self.holder.memory_compaction_prompt()
        return types.GetPromptResult(
            description="Record your working state in your memories instead of a summary.",
            messages=[types.PromptMessage(role="user", content=_text(text))],
        )

    # -- running -----------------------------------------------------------------------

    async def run(self) -> None:
        """Serve over this process's stdin and stdout until the client closes them."""
        options = self.server.create_initialization_options(
            NotificationOptions(resources_changed=True)
        )
        async with (
            _Wire() as (lines_in, lines_out),
            stdio_server(lines_in, lines_out) as (read, write),
            anyio.create_task_group() as group,
        ):
            group.start_soon(self.watch)
            await self.server.run(_Answering(read, lines_out), write, options)
            group.cancel_scope.cancel()


def _plain_meta(meta: Mapping[str, Any]) -> bool:
    """Whether a request's ``_meta`` holds nothing the protocol's models would refuse:
    a progress token, when there is one, is a string or a whole number."""
    token = meta.get("progressToken")
    return token is None or isinstance(token, str) or type(token) is int


class _Wire:
    """This process's stdin and stdout as the line streams the SDK's stdio transport
    reads and writes, without a worker thread per line (the SDK's own files cost a
    thread hop per read, write and flush: most of a round trip).

    As the SDK does, fd 0 and fd 1 are moved aside while serving (to the null device
    and to stderr), so nothing else in the process can read the client's messages or
    write into the wire; they are put back after.
    """

    def __init__(self) -> None:
        self._saved = (-1, -1)
        self._out = -1
        self._transport: asyncio.BaseTransport | None = None

    async def __aenter__(self) -> tuple[Any, Any]:
        wire_in, self._out = os.dup(0), os.dup(1)
        self._saved = (os.dup(0), os.dup(1))
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        os.dup2(2, 1)
        reader = asyncio.StreamReader(limit=_LINE_MAX)
        self._transport, _ = await asyncio.get_running_loop().connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(wire_in, "rb", 0)
        )
        out = _Out(self._out)
        return _Lines(reader, out), out

    async def __aexit__(self, *_: object) -> None:
        if self._transport is not None:
            self._transport.close()
        os.dup2(self._saved[0], 0)
        os.dup2(self._saved[1], 1)
        for fd in (self._out, *self._saved):
            os.close(fd)


_OVERLONG_TEXT = f"a message over {_LINE_MAX >> 20} MB was dropped unread; send smaller ones"
_OVERLONG = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": types.INVALID_REQUEST, "message": _OVERLONG_TEXT},
    },
    separators=(",", ":"),
)
"""The answer to a line over the cap: its id is never read, so it is null (JSON-RPC's
rule for a request whose id cannot be told)."""

_VALUES_MAX = 1_000_000
"""The commas and colons one message may hold: every JSON value but a container's first
follows one, so they bound its values. Parsed, each value costs the server some 50 to
100 bytes, so a message within the line cap made of millions of tiny ones (a list of
single letters) would take gigabytes and seconds while no other message is read. They
are counted in C, strings and all (a text of a million commas is refused too): counting
only those outside strings would itself take a step per value."""
_CROWDED_TEXT = (
    f"a message of more than {_VALUES_MAX:,} commas and colons (JSON values) was dropped "
    "unread; send fewer"
)
_CROWDED = _OVERLONG.replace(_OVERLONG_TEXT, _CROWDED_TEXT)


def _crowded(line: bytes) -> bool:
    """Whether ``line`` holds more than :data:`_VALUES_MAX` commas and colons."""
    return line.count(b",") + line.count(b":") > _VALUES_MAX


_HALF_PAIR = re.compile(rb"\\u[dD][89a-fA-F]")
"""An escape of a UTF-16 surrogate: half of a pair, or all of a lone one."""
_LONE_TEXT = (
    "the message holds half of a UTF-16 surrogate pair (an escape from \\ud800 to "
    "\\udfff without its other half); send valid Unicode text"
)


def _lone_half(line: bytes) -> str | None:
    """The answer to a request that is JSON, but holds a lone surrogate escape, which
    the SDK's parser refuses as if it were no JSON at all: an invalid-params error
    with the request's own id, so its client is not left waiting. ``None`` for any
    other line, which goes to the SDK as it came."""
    if _HALF_PAIR.search(line) is None:
        return None
    try:
        message: object = json.loads(line)
    except (ValueError, RecursionError):
        return None
    try:
        json.dumps(message, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        pass  # a lone half: answered below, when the request can be told
    except (ValueError, RecursionError):
        return None
    else:
        return None  # each half has its other
    if not isinstance(message, dict):
        return None
    request = cast(dict[str, object], message)
    request_id = request.get("id")
    if type(request_id) not in (str, int) or not isinstance(request.get("method"), str):
        return None
    error = {"code": types.INVALID_PARAMS, "message": _LONE_TEXT}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}, separators=(",", ":"))


def _unreadable(error: Exception) -> str:
    """The answer to a line the transport could not read as a message: a parse error
    when it is not JSON, else an invalid request; its id is never trusted, so null."""
    from pydantic import ValidationError  # the SDK's own models are pydantic's

    invalid = isinstance(error, ValidationError)
    if invalid and any(e["type"] == "json_invalid" for e in error.errors()):
        code, text = types.PARSE_ERROR, "a message that is not JSON was dropped"
    else:
        code, text = types.INVALID_REQUEST, "a message that is not JSON-RPC 2.0 was dropped"
    answer = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": text}}
    return json.dumps(answer, separators=(",", ":"))


class _Answering:
    """The transport's stream of messages as the server reads it, with each line it
    could not read answered (see :func:`_unreadable`) and passed over, where the SDK
    would drop it without a word and leave the client waiting."""

    def __init__(self, stream: Any, out: _Out) -> None:
        self._stream = stream
        self._out = out

    @property
    def last_context(self) -> object:
        return getattr(self._stream, "last_context", None)

    async def receive(self) -> SessionMessage:
        while True:
            item = await self._stream.receive()
            if not isinstance(item, Exception):
                return item
            await self._out.write(_unreadable(item) + "\n")

    def __aiter__(self) -> _Answering:
        return self

    async def __anext__(self) -> SessionMessage:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def __aenter__(self) -> _Answering:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        await self._stream.aclose()


class _Lines:
    """``async for line in ...`` over a stream reader, as text. A line over the reader's
    cap is dropped as it arrives (never held whole), answered on ``out`` with
    :data:`_OVERLONG` and said on stderr; one of too many values (:func:`_crowded`)
    likewise, with :data:`_CROWDED`, before it is parsed; a request holding a lone
    surrogate escape with :func:`_lone_half`'s answer; the next line is read as
    usual."""

    def __init__(self, reader: asyncio.StreamReader, out: _Out) -> None:
        self._reader = reader
        self._out = out

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        dropping = False
        while True:
            try:
                line = await self._reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as end:
                if dropping or not end.partial:
                    raise StopAsyncIteration from None
                return end.partial.decode("utf-8", "replace")
            except asyncio.LimitOverrunError as over:
                # what is buffered of the long line goes; the rest is dropped as it comes
                await self._reader.readexactly(over.consumed)
                dropping = True
                continue
            if not dropping and not _crowded(line):
                refused = _lone_half(line)
                if refused is None:
                    return line.decode("utf-8", "replace")
                print(f"gitmem mcp: {_LONE_TEXT}", file=sys.stderr)
                await self._out.write(refused + "\n")
                continue
            text, answer = (_OVERLONG_TEXT, _OVERLONG) if dropping else (_CROWDED_TEXT, _CROWDED)
            dropping = False
            print(f"gitmem mcp: {text}", file=sys.stderr)
            await self._out.write(answer + "\n")


class _Out:
    """Writes whole lines to the wire; a blocking write, as a pipe's buffer is large
    and the client is reading it."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    async def write(self, text: str) -> None:
        data = memoryview(text.encode("utf-8"))
        while data:
            data = data[os.write(self._fd, data) :]

    async def flush(self) -> None:
        return None


def serve(holder: Holder, *, programs: bool = False, observer: bool = False) -> None:
    """Serve ``holder`` over stdio until the client goes away; close it after."""
    # answering initialize copies a large store's instructions (megabytes) a few times
    heap.keep_small()
    try:
        anyio.run(MemoryServer(holder, programs=programs, observer=observer).run)
    finally:
        holder.close()


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("gitmem-agent")
    except PackageNotFoundError:
        return "0"
