"""The Claude Code plugin as a team meets it: the plugin's own ``hooks/hooks.json`` and
``.mcp.json`` commands, run by stand-ins for Claude Code processes (``helpers_client.py``)
for two sessions in one project and a teammate's session in a clone that syncs. Each
session is its own instance, so each is told of the others' writes, including the first
writes to a store that did not exist when the sessions started."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from helpers_sync import ENV, make_project, sh

BIN = str(Path(sys.executable).parent)
PLUGIN = Path(__file__).resolve().parent.parent / "hooks" / "claude-code"
HELPER = str(Path(__file__).resolve().parent / "helpers_client.py")
PATHS = {**ENV, "PATH": BIN + os.pathsep + ENV.get("PATH", "")}


class Session:
    """One Claude Code session: a stand-in client process running the plugin."""

    def __init__(self, project: Path, session_id: str) -> None:
        self.id = session_id
        self.project = project
        self.transcript = project.parent / f"{session_id}.jsonl"
        self.transcript.write_text("")
        self.process = subprocess.Popen(
            [sys.executable, HELPER, str(PLUGIN), str(project)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=PATHS,
        )

    def ask(self, request: dict[str, Any]) -> Any:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def hook(self, event: str, **fields: Any) -> str:
        data = {
            "session_id": self.id,
            "transcript_path": str(self.transcript),
            "cwd": str(self.project),
            "hook_event_name": event,
            **fields,
        }
        done = self.ask({"hook": event, "input": data})
        assert done["code"] == 0 and done["stderr"] == "", done["stderr"]
        if not done["stdout"]:
            return ""
        return json.loads(done["stdout"])["hookSpecificOutput"]["additionalContext"]

    def prompt(self) -> str:
        return self.hook("UserPromptSubmit", prompt="go on")

    def write(self, name: str) -> None:
        arguments = {"name": name, "description": f"about {name}", "body": f"{name} body"}
        result = self.ask({"tool": "create_memory", "arguments": arguments})
        assert not result.get("isError"), result

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        assert self.process.wait(timeout=120) == 0


def gitmem(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["gitmem", *args], cwd=cwd, env=PATHS, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_sessions_and_a_teammate_are_told_of_each_others_writes(tmp_path: Path) -> None:
    project = make_project(tmp_path / "project")
    gitmem(project, "init")
    first, second = Session(project, "session-one"), Session(project, "session-two")
    try:
        # both start before the store exists
        for session in (first, second):
            assert "Your memory calls" in session.hook("SessionStart", source="startup")
        first.write("alpha")
        told = second.prompt()
        assert "`alpha`" in told
        assert "alpha" not in first.prompt()  # never about its own writes
        second.write("beta")
        told = first.prompt()
        assert "`beta`" in told and "`alpha`" not in told

        sh(tmp_path, "clone", "-q", str(project), "clone")
        clone = tmp_path / "clone"
        gitmem(clone, "sync")
        teammate = Session(clone, "teammate")
        try:
            teammate.hook("SessionStart", source="startup")
            teammate.write("gamma")
            gitmem(clone, "sync")
            for session in (first, second):
                told = session.prompt()
                assert "`gamma`" in told
            first.write("delta")
            gitmem(clone, "sync")
            told = teammate.prompt()
            assert "`delta`" in told and "`gamma`" not in told
        finally:
            teammate.close()
    finally:
        first.close()
        second.close()
