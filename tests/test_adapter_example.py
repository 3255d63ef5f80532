"""An adapter for an OpenAI Agents SDK-style harness, built only on the library's front
(``gitmem``'s top-level names): its tools as function-tool dicts, and each tool call one
``Holder.turn`` whose notices, answer and views go back to the model."""

from __future__ import annotations

import json
from typing import Any

from gitmem import Agent, Capability, Holder, Limits, Repository, Turn
from gitmem.holder import frame_view

CODE = "export function parseCsv(text: string): string[][] {\n  return [text.split(',')];\n}\n"
ON_USE = 'views.openText("csv-notes", "Row 1 is a header on exports after March.");'


class AgentsSdkMemory:
    """A holder's tools as an Agents SDK ``FunctionTool`` list, and a call as one turn."""

    def __init__(self, holder: Holder) -> None:
        self.holder = holder

    def function_tools(self) -> list[dict[str, Any]]:
        """Each offered tool as a function tool: name, description, JSON schema."""
        return [
            {
                "type": "function",
                "name": tool["name"],
                "description": tool["description"],
                "params_json_schema": tool["input_schema"],
                "strict_json_schema": False,
            }
            for tool in self.holder.tools()
        ]

    def invoke(self, name: str, arguments_json: str) -> tuple[str, Turn]:
        """Run one tool call as a turn: the text for the model, and the turn itself."""
        turn = self.holder.turn(name, json.loads(arguments_json or "{}"))
        return "\n\n".join(turn.texts()), turn


def test_an_agents_sdk_adapter_runs_a_turn_with_a_notice_a_write_and_a_view(
    repo: Repository,
) -> None:
    """Another holder's write arrives as a notice, the agent's write is saved, and a code
    memory it reads opens its onUse view at the end of the turn."""
    shared = Capability("markdown", "shared", Limits())
    mine = repo.bind(shared, Agent("researcher", "r-1"))
    other = repo.bind(shared, Agent("researcher", "r-2"))
    assert mine is not None and other is not None
    try:
        adapter = AgentsSdkMemory(mine)
        tools = {t["name"]: t for t in adapter.function_tools()}
        assert tools["create_memory"]["type"] == "function"
        assert "name" in tools["create_memory"]["params_json_schema"]["properties"]

        fields = {"name": "csv-tools", "description": "Vendor CSV exports.", "body": "b"}
        source = (
            'import { memories } from "gitmem";\n'
            f"memories.createMemory({json.dumps({**fields, 'code': CODE, 'onUse': ON_USE})});\n"
        )
        assert other.run_program(source).ok

        note = {"name": "plan", "description": "Today's plan.", "body": "Read the exports."}
        text, turn = adapter.invoke("create_memory", json.dumps(note))
        assert turn.notices is not None and "- added `csv-tools` — Vendor CSV exports." in (
            turn.notices
        )
        assert turn.result is not None and turn.result.ok
        assert text.startswith(turn.notices) and turn.result.text in text
        plan = repo.snapshot("profile/researcher").get("plan")
        assert plan is not None and plan.body == "Read the exports."

        text, turn = adapter.invoke("read_memory", '{"name": "csv-tools"}')
        assert turn.notices is None and turn.result is not None and turn.result.ok
        views = {v.title: v.text for v in turn.views}
        assert views["csv-notes"] == "Row 1 is a header on exports after March."
        assert "csvTools.parseCsv" in views
        assert text.endswith(frame_view("csv-notes", "Row 1 is a header on exports after March."))
    finally:
        mine.close()
        other.close()
