"""What ``gitmem mcp`` puts on the wire for a tool call, beside what the SDK's own path
makes of the same result; and the pinned index a large store's listing gives."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import IO, Any

import mcp_types as types
import pytest
from conftest import capability
from mcp.server.runner import _dump_result  # pyright: ignore[reportPrivateUsage]
from mcp_types import methods
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from gitmem import Agent, Repository
from gitmem.adapters.mcp import _LINE_MAX, MemoryServer  # pyright: ignore[reportPrivateUsage]
from gitmem.strategies.markdown import Markdown

GITMEM = str(Path(sys.executable).parent / "gitmem")


def sdk_wire(result: dict[str, Any], version: str) -> dict[str, Any]:
    """The result as the SDK's path puts it on the wire: the model, dumped, checked and
    sieved for ``version``."""
    model = types.CallToolResult.model_validate(result)
    return methods.serialize_server_result("tools/call", version, _dump_result(model))


def test_a_tool_result_is_what_the_sdk_would_send(repo: Repository) -> None:
    """A result, a refusal and a result led by notices (with their ``_meta`` span) are
    each, field for field and in order, what the SDK makes of them, in every version
    a client can agree on with ``initialize``."""
    writer = repo.bind(capability("markdown", "shared"), Agent("p", "writer"))
    reader = repo.bind(capability("markdown", "shared"), Agent("p", "reader"))
    assert writer is not None and reader is not None
    writer.call("create_memory", {"name": "a", "description": "first", "body": "x"})
    server = MemoryServer(reader)
    results = [server.result("read_memory", {"name": "a"})]
    results.append(server.result("read_memory", {"name": "nope"}))
    writer.call("create_memory", {"name": "b", "description": "second", "body": "y"})
    results.append(server.result("read_memory", {"name": "b"}))
    assert results[1]["isError"] is True
    assert "gitmem/notices" in results[2]["_meta"]
    for result in results:
        for version in HANDSHAKE_PROTOCOL_VERSIONS:
            wire = sdk_wire(result, version)
            assert result == wire
            assert json.dumps(result) == json.dumps(wire)


def test_a_request_of_another_shape_gets_the_sdks_refusal(repo: Repository) -> None:
    """``tools/call`` with arguments that are not an object, or without a name, is
    answered by the SDK's own checks: an invalid-params error, and the server goes on."""
    holder = repo.bind(capability("markdown", "shared"), Agent("p", "writer"))
    assert holder is not None
    holder.call("create_memory", {"name": "a", "description": "first", "body": "x"})
    cap = json.dumps(capability("markdown", "shared").to_dict())
    requests: list[dict[str, Any]] = [
        {
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "wire-test", "version": "0"},
            },
        },
        {"method": "tools/call", "params": {"name": "read_memory", "arguments": "a"}},
        {"method": "tools/call", "params": {"arguments": {"name": "a"}}},
        {"method": "tools/call", "params": {"name": "read_memory", "arguments": {"name": "a"}}},
    ]
    lines = [
        json.dumps({"jsonrpc": "2.0", "id": n, **request}) for n, request in enumerate(requests)
    ]
    lines.insert(1, json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    process = subprocess.Popen(
        [GITMEM, "--repo", repo.directory, "mcp", "--capability", cap, "--profile", "p"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write("\n".join(lines) + "\n")
    process.stdin.flush()
    answers: dict[int, Any] = {}
    while len(answers) < len(requests):
        message = json.loads(process.stdout.readline())
        answers[message["id"]] = message
    process.stdin.close()
    assert process.wait(timeout=60) == 0
    assert answers[1]["error"]["code"] == types.INVALID_PARAMS
    assert answers[2]["error"]["code"] == types.INVALID_PARAMS
    result = answers[3]["result"]
    assert result["isError"] is False
    assert list(result) == ["_meta", "content", "isError"]
    assert "x" in result["content"][0]["text"]


@pytest.mark.parametrize("review", [False, True])
def test_the_markdown_index_is_every_memorys_line(repo: Repository, review: bool) -> None:
    """The index a markdown holder pins, taken from the store's kept listing, is the one
    its lines over every memory make; a holder whose writes await review pins its
    pending memories too."""
    writer = repo.bind(capability("markdown", "shared"), Agent("p", "writer"))
    assert writer is not None
    for n in range(5):
        writer.call("create_memory", {"name": f"m{n}", "description": f"d {n}", "body": "x"})
    held = replace(capability("markdown", "shared"), review=review)
    holder = repo.bind(held, Agent("p", "held"))
    assert holder is not None
    if review:
        holder.call("create_memory", {"name": "pending", "description": "p", "body": "y"})
        holder.compact()
    shown = holder.pinned_block()
    memories = repo.snapshot(holder.store_id).memories()
    assert ("- `pending` — p" in shown) is review
    if not review:
        assert shown == Markdown().pinned(memories)


_START = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "wire-test", "version": "0"},
    },
}
_CALL = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "read_memory", "arguments": {"name": "a"}},
}


def _served(repo: Repository) -> subprocess.Popen[bytes]:
    """``gitmem mcp`` over pipes, for a holder of a store holding memory ``a``; the
    test writes :data:`_START`, then what it tries, then :data:`_CALL`."""
    holder = repo.bind(capability("markdown", "shared"), Agent("p", "writer"))
    assert holder is not None
    holder.call("create_memory", {"name": "a", "description": "first", "body": "x"})
    holder.close()
    cap = json.dumps(capability("markdown", "shared").to_dict())
    return subprocess.Popen(
        [GITMEM, "--repo", repo.directory, "mcp", "--capability", cap, "--profile", "p"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _tried(repo: Repository, tried: bytes) -> subprocess.Popen[bytes]:
    """:func:`_served`, written :data:`_START` and the initialized notice, then ``tried``,
    then :data:`_CALL`."""
    process = _served(repo)
    assert process.stdin is not None
    process.stdin.write(
        json.dumps(_START).encode()
        + b'\n{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
        + tried
        + json.dumps(_CALL).encode()
        + b"\n"
    )
    process.stdin.flush()
    return process


def _answers(out: IO[bytes], count: int, *, seconds: float) -> list[dict[str, Any]]:
    """Up to ``count`` lines read from ``out``, as JSON, within ``seconds``: a server
    that never answers fails the test rather than hanging it."""
    deadline = time.monotonic() + seconds
    fd = out.fileno()
    read = b""
    while read.count(b"\n") < count:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        chunk = os.read(fd, 1 << 16) if ready else b""
        if not chunk:
            break
        read += chunk
    return [json.loads(line) for line in read.splitlines()[:count]]


def test_an_unreadable_line_is_answered_and_the_server_goes_on(repo: Repository) -> None:
    """A line that is not JSON gets a parse error and one that is JSON but no JSON-RPC
    message an invalid-request error, each with a null id (the SDK alone would drop
    both without a word); the next request is answered as usual."""
    process = _tried(repo, b'{"jsonrpc":"2.0","id":7,"method":\n{"id":8,"hello":"there"}\n')
    assert process.stdin is not None and process.stdout is not None
    answers = _answers(process.stdout, 4, seconds=60)
    process.stdin.close()
    process.wait(timeout=60)
    assert process.returncode == 0
    assert [a.get("id") for a in answers] == [0, None, None, 1]
    assert answers[1]["error"]["code"] == types.PARSE_ERROR
    assert answers[2]["error"]["code"] == types.INVALID_REQUEST
    assert answers[3]["result"]["isError"] is False


def test_a_lone_surrogate_escape_is_refused_with_the_requests_own_id(repo: Repository) -> None:
    """JSON allows an escape of half a UTF-16 pair alone, which the SDK's parser takes
    for no JSON at all: the request is answered with an invalid-params error carrying
    its own id (its client is not left waiting on it), nothing is written, and one
    line goes to stderr. A whole pair, escaped, is read as the character it makes."""
    lone = {
        "name": "create_memory",
        "arguments": {"name": "n", "description": "x\ud800", "body": "b"},
    }
    pair = {
        "name": "create_memory",
        "arguments": {"name": "m", "description": "\U0001f600", "body": "b"},
    }
    tried = b"".join(
        json.dumps({"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": params}).encode()
        + b"\n"
        for id_, params in (("lone", lone), (8, pair))
    )
    assert b"\\ud800" in tried and b"\\ud83d\\ude00" in tried
    process = _tried(repo, tried)
    assert process.stdin is not None and process.stdout is not None
    answers = _answers(process.stdout, 4, seconds=60)
    process.stdin.close()
    err = process.stderr.read() if process.stderr else b""
    process.wait(timeout=60)
    # the refusal is the transport's, so it may come before the answer to initialize
    by_id = {a.get("id"): a for a in answers}
    assert sorted(map(str, by_id)) == ["0", "1", "8", "lone"]
    assert by_id["lone"]["error"]["code"] == types.INVALID_PARAMS
    assert "half of a UTF-16 surrogate pair" in by_id["lone"]["error"]["message"]
    assert by_id[8]["result"]["isError"] is False
    assert [line for line in err.decode().splitlines() if "surrogate" in line] == [
        "gitmem mcp: " + by_id["lone"]["error"]["message"]
    ]
    with Repository.open(repo.directory) as again:
        assert sorted(again.snapshot(store).slugs() for store in again.stores()) == [["a", "m"]]


def test_a_call_sent_as_a_notification_is_not_made(repo: Repository) -> None:
    """A ``tools/call`` with no id, or an id no request may carry, has nobody to answer:
    it is not made (no memory is written whose result, and the notices it would carry,
    nobody receives), and the next request is answered as usual."""
    calls = [
        {"jsonrpc": "2.0", **({} if id_ == "none" else {"id": id_}), "method": "tools/call"}
        for id_ in ("none", None, 1.5, True, [1])
    ]
    tried = b"".join(
        json.dumps(
            {
                **call,
                "params": {
                    "name": "create_memory",
                    "arguments": {"name": f"n{n}", "description": "d", "body": "b"},
                },
            }
        ).encode()
        + b"\n"
        for n, call in enumerate(calls)
    )
    process = _tried(repo, tried)
    assert process.stdin is not None and process.stdout is not None
    answers = _answers(process.stdout, 2, seconds=60)
    process.stdin.close()
    process.wait(timeout=60)
    assert process.returncode == 0
    assert [a.get("id") for a in answers] == [0, 1]
    assert answers[1]["result"]["isError"] is False
    with Repository.open(repo.directory) as again:
        assert [again.snapshot(store).slugs() for store in again.stores()] == [["a"]]


def test_a_message_of_millions_of_values_is_answered_unread(repo: Repository) -> None:
    """A message within the line cap that holds more than a million commas and colons
    (here search keywords of one letter each: parsed, gigabytes) is dropped before it
    is parsed, answered with an invalid-request error and one line on stderr; one just
    under the bound is read; the next request is answered."""
    keywords = json.dumps(["a"] * 1_100_000)
    crowded = (
        '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search_memories",'
        f'"arguments":{{"keywords":{keywords}}}}}}}\n'
    )
    commas = {"name": "read_memory", "arguments": {"name": "," * (1_000_000 - 11)}}
    text = json.dumps({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": commas})
    assert text.count(",") + text.count(":") == 1_000_000  # the most a message may hold
    process = _tried(repo, crowded.encode() + text.encode() + b"\n")
    assert process.stdin is not None and process.stdout is not None
    answers = _answers(process.stdout, 4, seconds=120)
    process.stdin.close()
    err = process.stderr.read() if process.stderr else b""
    process.wait(timeout=60)
    said = "a message of more than 1,000,000 commas and colons (JSON values) was dropped unread; send fewer"
    assert [a.get("id") for a in answers] == [0, None, 8, 1]
    assert answers[1]["error"] == {"code": types.INVALID_REQUEST, "message": said}
    assert answers[2]["result"]["isError"] is True  # no such memory, read after all
    assert answers[3]["result"]["isError"] is False
    assert err.decode().splitlines() == [f"gitmem mcp: {said}"]


def test_a_line_over_the_cap_is_answered_and_the_server_goes_on(repo: Repository) -> None:
    """A message longer than the line cap is dropped as it arrives, answered with an
    invalid-request error (its id unread, so null) and one line on stderr; the next
    request is answered as usual."""
    pad = b"x" * (_LINE_MAX + 1024)
    process = _tried(
        repo, b'{"jsonrpc":"2.0","id":7,"method":"ping","params":{"pad":"' + pad + b'"}}\n'
    )
    assert process.stdin is not None and process.stdout is not None
    answers = [json.loads(process.stdout.readline()) for _ in range(3)]
    process.stdin.close()
    err = process.stderr.read() if process.stderr else b""
    process.wait(timeout=60)
    assert process.returncode == 0
    assert [a.get("id") for a in answers] == [0, None, 1]
    assert answers[1]["error"]["code"] == types.INVALID_REQUEST
    assert answers[1]["error"]["message"].startswith("a message over 64 MB was dropped")
    assert answers[2]["result"]["isError"] is False
    assert err.decode().splitlines() == [
        "gitmem mcp: a message over 64 MB was dropped unread; send smaller ones"
    ]
