"""``gitmem mcp`` driven by the official MCP client over stdio, as a real subprocess."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from conftest import capability
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from gitmem import Agent, Repository
from gitmem.adapters.schemas import tool_definitions
from gitmem.holder import frame_view

GITMEM = str(Path(sys.executable).parent / "gitmem")
WRITE = {
    "create_memory": {"name": "runbook", "description": "how staging rolls", "body": "step 1"},
    "write_memory": {"name": "runbook", "description": "how staging rolls", "body": "step 1"},
}


def cap_json(implementation: str = "markdown", scope: str = "shared", **extra: Any) -> str:
    """A capability as the JSON text ``--capability`` takes."""
    return json.dumps(capability(implementation, scope, **extra).to_dict())


@asynccontextmanager
async def server(
    repo: Repository,
    *args: str,
    on_message: Callable[[Any], None] | None = None,
    errors: str = os.devnull,
) -> AsyncIterator[tuple[ClientSession, types.InitializeResult]]:
    """A ``gitmem mcp`` subprocess and an initialized client session on it (its stderr
    goes to the file ``errors``)."""

    async def handler(message: Any) -> None:
        if on_message is not None:
            on_message(message)

    params = StdioServerParameters(command=GITMEM, args=["--repo", repo.directory, "mcp", *args])
    with open(errors, "w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, message_handler=handler) as session,
        ):
            yield session, await session.initialize()


def texts(result: types.CallToolResult) -> list[str]:
    return [c.text for c in result.content if isinstance(c, types.TextContent)]


def run(fn: Callable[[], Any]) -> Any:
    return anyio.run(fn)


# -- initialize and tools --------------------------------------------------------------


def test_instructions_are_the_prompt_then_the_block(repo: Repository) -> None:
    """Initialize carries the system-prompt section then the pinned block, byte-identical
    across two sessions on an unchanged store."""
    cap = cap_json()
    holder = repo.bind(capability("markdown", "shared"), Agent("p", "writer"))
    assert holder is not None
    holder.call("create_memory", {"name": "a", "description": "first", "body": "x"})
    expected = holder.system_prompt() + "\n" + holder.pinned_block()

    async def main() -> list[str | None]:
        seen: list[str | None] = []
        for _ in range(2):
            async with server(repo, "--capability", cap, "--profile", "p") as (_, init):
                seen.append(init.instructions)
        return seen

    first, second = run(main)
    assert first == expected
    assert second == first
    assert "- `a` — first" in (first or "")


@pytest.mark.parametrize(
    ("implementation", "scope", "revise", "names"),
    [
        (
            "markdown",
            "shared",
            True,
            ["create_memory", "read_memory", "edit_memory", "delete_memory"],
        ),
        ("markdown", "shared", False, ["create_memory", "read_memory"]),
        ("scratchpad", "shared", True, ["write_memory", "update_memory", "delete_memory"]),
        (
            "keyword-search",
            "shared",
            True,
            ["create_memory", "read_memory", "edit_memory", "delete_memory", "search_memories"],
        ),
    ],
)
def test_tools_are_the_holders(
    repo: Repository, implementation: str, scope: str, revise: bool, names: list[str]
) -> None:
    """tools/list is exactly holder.tools(): names, descriptions, schemas."""
    cap = capability(implementation, scope, revise=revise)
    holder = repo.bind(cap, Agent("p", "i"))
    assert holder is not None
    expected = tool_definitions(holder.tools(), "mcp")

    async def main() -> list[dict[str, Any]]:
        text = json.dumps(cap.to_dict())
        async with server(repo, "--capability", text, "--profile", "p") as (session, _):
            listed = await session.list_tools()
        return [
            {"name": t.name, "description": t.description, "inputSchema": t.input_schema}
            for t in listed.tools
        ]

    got = run(main)
    assert [t["name"] for t in got] == names
    assert got == expected


def test_read_only_holder_offers_its_read_calls(repo: Repository) -> None:
    """A read-only subagent of a markdown spawner is offered read_memory only."""
    spawner = repo.bind(capability("markdown", "isolated"), Agent("lead", "lead-1"))
    assert spawner is not None
    spawner.call("create_memory", {"name": "a", "description": "d", "body": "x"})

    async def main() -> tuple[list[str], types.CallToolResult]:
        args = ["--capability", cap_json(scope="read-only"), "--store", "instance/lead-1"]
        async with server(repo, *args) as (session, init):
            assert "another agent's" in (init.instructions or "")
            names = [t.name for t in (await session.list_tools()).tools]
            refused = await session.call_tool("create_memory", {"name": "b", "body": "y"})
        return names, refused

    names, refused = run(main)
    assert names == ["read_memory"]
    assert refused.is_error
    assert "another agent's" in texts(refused)[0]


@pytest.mark.parametrize("implementation", ["markdown", "scratchpad", "keyword-search"])
def test_every_tool_succeeds_and_refuses(repo: Repository, implementation: str) -> None:
    """Each tool's success and refusal texts are the holder's; a refusal is isError."""
    cap = capability(implementation, "shared", maxLenDescription=40)
    twin = repo.bind(cap, Agent("p", "twin"))
    assert twin is not None
    write = "write_memory" if implementation == "scratchpad" else "create_memory"
    long = {"name": "x", "description": "d" * 41, "body": "b"}
    calls: list[tuple[str, dict[str, Any]]] = [
        (write, WRITE[write]),
        (write, WRITE[write]),  # already exists
        (write, long),  # over maxLenDescription
    ]
    if implementation == "scratchpad":
        calls += [
            ("update_memory", {"name": "runbook", "body": "step 2"}),
            ("update_memory", {"name": "nope", "body": "z"}),
        ]
    else:
        calls += [
            ("read_memory", {"name": "runbook"}),
            ("read_memory", {"name": "nope"}),
            ("edit_memory", {"name": "runbook", "old_text": "1", "new_text": "2"}),
            ("edit_memory", {"name": "runbook", "old_text": "zzz", "new_text": "2"}),
        ]
    if implementation == "keyword-search":
        calls += [
            ("search_memories", {"keywords": ["step"]}),
            ("search_memories", {"keywords": []}),
        ]
    calls += [("delete_memory", {"name": "runbook"}), ("delete_memory", {"name": "runbook"})]
    calls += [("no_such_tool", {})]

    async def main() -> list[types.CallToolResult]:
        text = json.dumps(cap.to_dict())
        async with server(repo, "--capability", text, "--profile", "p") as (session, _):
            return [await session.call_tool(name, args) for name, args in calls]

    results = run(main)
    # the same calls through a holder on a fresh store give the same texts
    fresh = Repository.init(repo.directory + "-twin")
    twin = fresh.bind(cap, Agent("p", "p"))
    assert twin is not None
    for (name, args), got in zip(calls, results, strict=True):
        expected = twin.call(name, args)
        assert texts(got) == [expected.text], name
        assert got.is_error == (not expected.ok), name
    assert any(r.is_error for r in results) and any(not r.is_error for r in results)
    fresh.close()


# -- notices across processes ---------------------------------------------------------


def test_notices_between_two_servers_arrive_once(repo: Repository) -> None:
    """A write through one server reaches the other's next tool result, once, in the
    notice's form; never the writer's own."""
    cap = cap_json()

    async def main() -> tuple[list[str], list[str], list[str]]:
        a_args = ["--capability", cap, "--profile", "team", "--instance", "a"]
        b_args = ["--capability", cap, "--profile", "team", "--instance", "b"]
        async with server(repo, *a_args) as (a, _), server(repo, *b_args) as (b, _):
            await b.call_tool("read_memory", {"name": "none"})  # b takes its first look
            await a.call_tool("create_memory", WRITE["create_memory"])
            own = texts(await a.call_tool("read_memory", {"name": "runbook"}))
            first = texts(await b.call_tool("read_memory", {"name": "runbook"}))
            second = texts(await b.call_tool("read_memory", {"name": "runbook"}))
        return own, first, second

    own, first, second = run(main)
    assert len(own) == 1
    assert first[0] == (
        "Another agent sharing your memories has made changes since your last turn:\n\n"
        "- added `runbook` — how staging rolls\n\n"
        "Read one with `read_memory` if it bears on what you are doing."
    )
    assert first[1].startswith("`runbook` — how staging rolls")
    assert len(second) == 1


def test_concurrent_servers_lose_no_update(repo: Repository) -> None:
    """Two servers writing one store at once: every write lands, as for two holders."""
    cap = cap_json()

    async def main() -> None:
        a_args = ["--capability", cap, "--profile", "team", "--instance", "a"]
        b_args = ["--capability", cap, "--profile", "team", "--instance", "b"]
        async with server(repo, *a_args) as (a, _), server(repo, *b_args) as (b, _):

            async def write(session: ClientSession, who: str) -> None:
                for n in range(15):
                    body = {"name": f"{who}-{n}", "description": "d", "body": "x"}
                    result = await session.call_tool("create_memory", body)
                    assert not result.is_error, texts(result)

            async with anyio.create_task_group() as group:
                group.start_soon(write, a, "a")
                group.start_soon(write, b, "b")

    run(main)
    assert len(repo.snapshot("profile/team")) == 30
    assert len(repo.revisions("profile/team")) == 30


# -- resources and prompts -------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:resources/subscribe is removed")
def test_resources_read_and_update_notifications(repo: Repository) -> None:
    """Memories and the state are resources; a write by another process raises
    list_changed and, for a subscribed resource, updated."""
    holder = repo.bind(capability("markdown", "shared"), Agent("p", "other"))
    assert holder is not None
    holder.call("create_memory", {"name": "a", "description": "first", "body": "alpha"})
    seen: list[str] = []

    def note(message: Any) -> None:
        method = getattr(getattr(message, "root", message), "method", None)
        uri = getattr(getattr(getattr(message, "root", message), "params", None), "uri", None)
        if method:
            seen.append(f"{method} {uri}" if uri else method)

    async def main() -> tuple[list[str], str, dict[str, Any]]:
        args = ["--capability", cap_json(), "--profile", "p", "--instance", "me"]
        async with server(repo, *args, on_message=note) as (session, _):
            listed = [str(r.uri) for r in (await session.list_resources()).resources]
            body = await session.read_resource("gitmem://memory/profile/p/a")
            state = await session.read_resource("gitmem://state/profile/p")
            await session.subscribe_resource("gitmem://memory/profile/p/a")
            holder.call("edit_memory", {"name": "a", "old_text": "alpha", "new_text": "beta"})
            holder.call("create_memory", {"name": "b", "description": "second", "body": "x"})
            with anyio.fail_after(20):
                while "notifications/resources/list_changed" not in seen or not any(
                    s.startswith("notifications/resources/updated") for s in seen
                ):
                    await anyio.sleep(0.05)
        first = body.contents[0]
        assert isinstance(first, types.TextResourceContents) and first.mime_type == "text/markdown"
        data = state.contents[0]
        assert isinstance(data, types.TextResourceContents)
        assert data.mime_type == "application/json"
        return listed, first.text, json.loads(data.text)

    listed, text, state = run(main)
    assert listed == ["gitmem://memory/profile/p/a", "gitmem://state/profile/p"]
    assert text.endswith("alpha") and '"first"' in text
    assert state["type"] == "memory_state" and state["totals"]["count"] == 1
    assert "notifications/resources/updated gitmem://memory/profile/p/a" in seen


@pytest.mark.parametrize("slug", ["café", "caf%C3%A9", "日本", "%FF", "a%2Fb", "x" * 300])
def test_reading_a_resource_that_is_no_slug_is_a_proper_error(repo: Repository, slug: str) -> None:
    """resources/read of a URI whose slug is not valid is an MCP error saying so, and
    the server keeps serving."""
    holder = repo.bind(capability("markdown", "shared"), Agent("p", "other"))
    assert holder is not None
    holder.call("create_memory", {"name": "a", "description": "first", "body": "alpha"})

    async def main() -> tuple[str, str]:
        args = ["--capability", cap_json(), "--profile", "p", "--instance", "me"]
        async with server(repo, *args) as (session, _):
            with pytest.raises(MCPError) as info:
                await session.read_resource(f"gitmem://memory/profile/p/{slug}")
            body = await session.read_resource("gitmem://memory/profile/p/a")
        first = body.contents[0]
        assert isinstance(first, types.TextResourceContents)
        return str(info.value), first.text

    message, text = run(main)
    assert "names no memory" in message and "Internal" not in message
    assert "\n" not in message and "Traceback" not in message
    assert text.endswith("alpha")


def test_a_subscription_names_one_of_the_stores_resources_and_is_bounded(
    repo: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    """resources/subscribe takes this store's state and its memories' URIs (a memory
    not written yet included); any other URI is an MCP error, and past the most one
    client may follow, so is a new one: a client cannot make the server hold URIs
    without bound."""
    from gitmem.adapters import mcp as adapter

    holder = repo.bind(capability("markdown", "shared"), Agent("p", "me"))
    assert holder is not None
    served = adapter.MemoryServer(holder)
    monkeypatch.setattr(adapter, "_SUBSCRIPTIONS_MAX", 3)

    async def subscribe(uri: str) -> None:
        await served._subscribe(types.SubscribeRequestParams(uri=uri))  # pyright: ignore[reportPrivateUsage]

    async def main() -> list[str]:
        refused: list[str] = []
        for uri in [
            "gitmem://state/profile/p",
            "gitmem://memory/profile/p/later",
            "file:///etc/passwd",
            "gitmem://memory/other/a",
            "gitmem://memory/profile/p/" + "x" * 100_000,
            "gitmem://memory/profile/p/b",
            "gitmem://memory/profile/p/c",
            "gitmem://memory/profile/p/b",
        ]:
            try:
                await subscribe(uri)
            except MCPError as exc:
                refused.append(str(exc))
        return refused

    refused = run(main)
    assert len(refused) == 4
    assert refused[0].startswith("there is no resource file:///etc/passwd")
    assert refused[1].startswith("there is no resource gitmem://memory/other/a")
    assert "names no memory" in refused[2]
    assert refused[3].startswith("this server follows at most 3 resources")
    assert served._subscribed == {  # pyright: ignore[reportPrivateUsage]
        "gitmem://state/profile/p",
        "gitmem://memory/profile/p/later",
        "gitmem://memory/profile/p/b",
    }
    holder.close()


def test_memory_compaction_prompt(repo: Repository) -> None:
    """The memory-compaction prompt is the holder's request, naming its write calls."""
    holder = repo.bind(capability("keyword-search", "shared"), Agent("p", "p"))
    assert holder is not None

    async def main() -> tuple[list[str], str]:
        args = ["--capability", cap_json("keyword-search"), "--profile", "p"]
        async with server(repo, *args) as (session, _):
            names = [p.name for p in (await session.list_prompts()).prompts]
            got = await session.get_prompt("memory-compaction")
        content = got.messages[0].content
        assert isinstance(content, types.TextContent)
        return names, content.text

    names, text = run(main)
    assert names == ["memory-compaction"]
    assert text == holder.memory_compaction_prompt()
    assert "create_memory" in text


# -- programs, defaults, shutdown, many calls ------------------------------------------


def test_programs_run_with_views_and_on_use(repo: Repository) -> None:
    """With --programs, run_program runs a program; a read code memory's onUse runs at
    the end of the call and its view follows the result."""
    holder = repo.bind(capability("markdown", "shared"), Agent("p", "author"))
    assert holder is not None
    source = (
        'import { memories } from "gitmem";\n'
        "memories.createMemory({name: 'tool', description: 'a tool', body: 'b', "
        "code: 'export function two(): number { return 2; }', "
        'onUse: \'views.openText("used", "tool was used");\'});\n'
        "console.log('made');\n"
    )

    async def main() -> tuple[list[str], list[str], list[str]]:
        args = ["--capability", cap_json(), "--profile", "p", "--programs"]
        async with server(repo, *args) as (session, _):
            names = [t.name for t in (await session.list_tools()).tools]
            made = texts(await session.call_tool("run_program", {"source": source}))
            read = texts(await session.call_tool("read_memory", {"name": "tool"}))
        return names, made, read

    names, made, read = run(main)
    assert names[-1] == "run_program"
    assert made[0] == "made\n"
    assert read[0].startswith("`tool` — a tool")
    assert frame_view("used", "tool was used") in read


def test_defaults_serve_the_only_store(repo: Repository) -> None:
    """With no options, the server serves the repository's one store under what it records."""
    holder = repo.bind(capability("keyword-search", "shared"), Agent("p", "w"))
    assert holder is not None
    holder.call("create_memory", {"name": "a", "description": "d", "body": "x"})

    async def main() -> tuple[list[str], types.CallToolResult]:
        async with server(repo) as (session, _):
            names = [t.name for t in (await session.list_tools()).tools]
            program = await session.call_tool("run_program", {"source": "1"})
        return names, program

    names, program = run(main)
    assert names[-1] == "search_memories" and "run_program" not in names
    assert program.is_error  # programs are off unless --programs is given
    assert texts(program)[0].startswith("`run_program` is not available under keyword-search")


def test_observer_tools_search_and_read_the_log(repo: Repository) -> None:
    """With --observer, mem_search and mem_read follow the holder's tools and answer
    from the observation log; a bad argument is an error result of one line."""
    from gitmem.observe import ObservationLog, ObserverConfig, Run, ScriptedModel, observe_run

    answer = (
        "<observation>\ntype: change\ntitle: Moved the cache\nnarrative: It moved.\n</observation>"
    )
    done = observe_run(
        ObservationLog(repo),
        ScriptedModel([answer, ""]),
        Run("s1", prompt="p"),
        ObserverConfig.from_settings({"consolidate": "false"}),
    )
    (entry,) = done.observations

    async def main() -> tuple[list[str], list[str], list[str], types.CallToolResult]:
        args = ["--capability", cap_json(), "--profile", "p", "--observer"]
        async with server(repo, *args) as (session, _):
            names = [t.name for t in (await session.list_tools()).tools]
            found = texts(await session.call_tool("mem_search", {"query": "cache", "limit": 3}))
            read = texts(await session.call_tool("mem_read", {"id": entry.id}))
            bad = await session.call_tool("mem_read", {"id": "nope"})
        return names, found, read, bad

    names, found, read, bad = run(main)
    assert names[-2:] == ["mem_search", "mem_read"]
    assert f"<id>{entry.id}</id>" in found[0] and 'count="1"' in found[0]
    assert read[0].startswith(f"## {entry.id} [change] Moved the cache")
    assert bad.is_error and texts(bad) == [
        "Error: an entry id is obs- or sum- and six hex digits, e.g. obs-9f3a1b"
    ]


def _children() -> set[int]:
    me = os.getpid()
    found: set[int] = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == me:
                found.add(int(entry))
    return found


def test_thousand_calls_leak_nothing(repo: Repository, tmp_path: Path) -> None:
    """1,000 calls over one connection, then a clean shutdown: no process or file
    descriptor is left behind, and the server says nothing on stderr."""
    errors = tmp_path / "stderr.txt"
    before_fds = len(os.listdir("/proc/self/fd"))
    before_children = _children()

    async def main() -> int:
        ok = 0
        args = ["--capability", cap_json(), "--profile", "p"]
        async with server(repo, *args, errors=str(errors)) as (session, _):
            await session.call_tool("create_memory", WRITE["create_memory"])
            for _ in range(1000):
                result = await session.call_tool("read_memory", {"name": "runbook"})
                ok += not result.is_error
        return ok

    assert run(main) == 1000
    assert errors.read_text() == ""
    assert _children() <= before_children
    assert len(os.listdir("/proc/self/fd")) <= before_fds


def test_bad_options_are_one_line(tmp_path: Path) -> None:
    """A server that cannot start says why in one line and exits 1."""
    import subprocess

    Repository.init(str(tmp_path / "r")).close()
    done = subprocess.run(
        [GITMEM, "--repo", str(tmp_path / "r"), "mcp"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "Error: the repository has no stores yet; create one with "
        "`gitmem create --store NAME SLUG --description TEXT`"
    ]


def test_the_server_keeps_its_heap_small(repo: Repository, monkeypatch: pytest.MonkeyPatch) -> None:
    """``gitmem mcp`` sets the allocator to give large freed blocks back before it
    serves (a large store's instructions are copied a few times over as it answers)."""
    from gitmem.adapters import heap, mcp

    order: list[str] = []
    monkeypatch.setattr(heap, "keep_small", lambda: order.append("keep_small") or True)
    monkeypatch.setattr(mcp.anyio, "run", lambda *_: order.append("served"))
    holder = repo.bind(capability("markdown", "shared"), Agent("p", "writer"))
    assert holder is not None
    mcp.serve(holder)
    assert order == ["keep_small", "served"]
