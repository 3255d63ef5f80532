"""A strategy is one module and one registry line: a test strategy that the holder, the
CLI and telemetry serve without a change to any of them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest
from click.testing import CliRunner

from gitmem import Agent, Capability, Repository, edits, strategies
from gitmem.cli import cli
from gitmem.store import Storage as Store
from gitmem.strategies import Desk, PromptContext, Tool, registry
from gitmem.strategies.calls import NAME, read_memory
from gitmem.types import Memory, check_slug, check_text


def _jot(desk: Desk, args: dict[str, object]) -> str:
    slug = check_slug(args["name"])
    memory = Memory(slug, "jotted", check_text(args["text"], "text"))
    desk.publish(edits.create(desk.rules, memory, op="jot"))
    return f"Jotted `{slug}`."


class Jottings:
    """Short jottings; the newest two are pinned, one line each."""

    name = "jottings"
    aggregate_limits = frozenset({"maxCount"})
    loads_code_on: Literal["write", "read"] = "read"
    notice_bodies = False
    notice_tail = "Read one with `read_memory`."
    find_hint = "the pinned block shows the newest jottings"
    revise_call = "jot"
    pinned_in_prompt = False

    def __init__(self) -> None:
        text = {"type": "string", "description": "What to jot down."}
        self.tools: tuple[Tool, ...] = (
            Tool(
                "jot", "Jot something down.", {"name": NAME, "text": text}, ("name", "text"), _jot
            ),
            read_memory(),
        )

    def pinned(self, memories: list[Memory]) -> str:
        return "\n".join(f"* {m.slug}: {m.body}" for m in memories[-2:])

    def in_context(self) -> str:
        return "Your two newest jottings are pinned below."

    def index_line(self, memory: Memory) -> str:
        return ""

    def pinned_from(self, repo: Store, store: str, cache: dict[str, object]) -> str | None:
        return None

    def prompt_section(self, context: PromptContext) -> str | None:
        return None

    def operator_refusal(self, op: str, slug: str) -> str | None:
        return None


@pytest.fixture
def jottings() -> Iterator[Capability]:
    """The test strategy, registered for one test."""
    strategy = Jottings()
    strategies.register(strategy)
    params: dict[str, Any] = {"scope": "shared", "maxCount": 3, "maxLenPerMemory": 0}
    params |= {"maxTotalLen": 0, "maxLenIndex": 0, "maxLenDescription": 0, "maxResults": 0}
    try:
        yield Capability.from_dict({"implementation": "jottings", "params": params})
    finally:
        registry._REGISTRY.pop("jottings")  # pyright: ignore[reportPrivateUsage]


def test_unknown_until_registered(jottings: Capability) -> None:
    """The capability names every registered strategy, the test one included."""
    assert "jottings" in strategies.names()
    assert jottings.implementation == "jottings"


def test_holder_serves_the_strategy(repo: Repository, jottings: Capability) -> None:
    """Tools, dispatch, limits, the pinned block, the prompt and notices all come from the strategy."""
    writer = repo.bind(jottings, Agent("team", "w"))
    reader = repo.bind(jottings, Agent("team", "r"))
    assert writer is not None and reader is not None
    assert [t["name"] for t in writer.tools()] == ["jot", "read_memory"]
    assert reader.notices() is None
    for slug in ("a", "b", "c"):
        assert writer.call("jot", {"name": slug, "text": f"text {slug}"}).ok
    refused = writer.call("jot", {"name": "d", "text": "one too many"})
    assert (refused.ok, refused.kind) == (False, "limit-exceeded")
    assert "maxCount" in refused.text
    assert writer.call("jot", {"name": "e"}).text == "jot needs text"
    assert writer.call("create_memory", {}).kind == "unavailable"
    assert writer.pinned_block() == "* b: text b\n* c: text c"
    assert "Your two newest jottings" in writer.system_prompt()
    assert "Your memory calls: jot, read_memory." in writer.system_prompt()
    assert writer.call("read_memory", {"name": "zz"}).text == (
        "there is no memory named `zz`; the pinned block shows the newest jottings"
    )
    notice = reader.notices()
    assert notice is not None and "- added `c` — jotted" in notice
    assert notice.endswith("Read one with `read_memory`.")


def test_telemetry_serves_the_strategy(repo: Repository, jottings: Capability) -> None:
    """Revisions carry the strategy's own op; state reports its limits."""
    holder = repo.bind(jottings, Agent("team", "w"))
    assert holder is not None
    events: list[dict[str, Any]] = []
    holder.subscribe(events.append)
    holder.call("jot", {"name": "a", "text": "x"})
    assert [(e["type"], e["op"], e["slug"]) for e in events] == [("memory_revision", "jot", "a")]
    assert holder.state()["limits"]["maxCount"] == 3


def test_cli_serves_the_strategy(repo: Repository, jottings: Capability, tmp_path: Path) -> None:
    """The CLI reads the recorded strategy: state, log, an operator edit under its limits, a program."""
    holder = repo.bind(jottings, Agent("team", "w"))
    assert holder is not None
    holder.call("jot", {"name": "a", "text": "x"})

    def run(*args: str) -> Any:
        result = CliRunner().invoke(cli, ["--repo", repo.directory, *args])
        return result

    state = json.loads(run("state", "--json").stdout)
    assert state["limits"]["maxCount"] == 3
    assert "jot" in run("log").stdout
    program = tmp_path / "p.ts"
    program.write_text(
        'import { memories } from "gitmem";\n'
        'console.log(memories.jot({ name: "b", text: "from a program" }));\n'
        'memories.jot({ name: "c", text: "third" });\n'
    )
    ran = run("run", str(program))
    assert ran.exit_code == 0, ran.output
    assert ran.stdout == "Jotted `b`.\n"
    over = run("create", "d", "-d", "x", "--body", "four is over maxCount")
    assert over.exit_code == 1 and "maxCount" in over.stderr
    assert [m.slug for m in repo.snapshot("profile/team").memories()] == ["a", "b", "c"]
