"""A stand-in for a Claude Code process, run as a script, that runs the plugin's own
commands as Claude Code does: ``python helpers_client.py <plugin folder> <project>``.

Each line on stdin is a request; each answer is one JSON line on stdout:

- ``{"hook": "SessionStart", "input": {...}}``: the command ``hooks/hooks.json`` gives
  the event, ``${CLAUDE_PLUGIN_ROOT}`` substituted, run through the shell in the project
  with the input on stdin; the answer is its ``stdout``, ``stderr`` and ``code``;
- ``{"tool": "create_memory", "arguments": {...}}``: a ``tools/call`` to the MCP server
  ``.mcp.json`` describes, started (once, in the project) on the first call.

Hooks and the server are this process's children, as they are Claude Code's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any


class Client:
    def __init__(self, plugin: str, project: str) -> None:
        self.plugin = plugin
        self.project = project
        self.env = {**os.environ, "CLAUDE_PLUGIN_ROOT": plugin, "CLAUDE_PROJECT_DIR": project}
        self.server: subprocess.Popen[str] | None = None
        self.next_id = 0

    def expand(self, text: str) -> str:
        return text.replace("${CLAUDE_PLUGIN_ROOT}", self.plugin)

    def hook(self, event: str, data: dict[str, Any]) -> dict[str, Any]:
        with open(os.path.join(self.plugin, "hooks", "hooks.json")) as handle:
            entry = json.load(handle)["hooks"][event][0]["hooks"][0]
        done = subprocess.run(
            self.expand(entry["command"]),
            shell=True,
            cwd=self.project,
            env=self.env,
            input=json.dumps(data),
            capture_output=True,
            text=True,
            timeout=entry["timeout"],
            check=False,
        )
        return {"stdout": done.stdout, "stderr": done.stderr, "code": done.returncode}

    def request(self, method: str, params: dict[str, Any]) -> Any:
        assert self.server is not None and self.server.stdin and self.server.stdout
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.server.stdin.write(json.dumps(message) + "\n")
        self.server.stdin.flush()
        while True:
            line = self.server.stdout.readline()
            if not line:
                raise RuntimeError("the MCP server ended")
            answer = json.loads(line)
            if answer.get("id") == self.next_id:
                return answer.get("result", answer.get("error"))

    def tool(self, name: str, arguments: dict[str, Any]) -> Any:
        if self.server is None:
            with open(os.path.join(self.plugin, ".mcp.json")) as handle:
                spec = json.load(handle)["mcpServers"]["gitmem"]
            self.server = subprocess.Popen(
                [spec["command"], *(self.expand(a) for a in spec["args"])],
                cwd=self.project,
                env=self.env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            self.request(
                "initialize",
                {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "stand-in", "version": "1"},
                },
            )
            assert self.server.stdin is not None
            self.server.stdin.write(
                json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n"
            )
            self.server.stdin.flush()
        return self.request("tools/call", {"name": name, "arguments": arguments})

    def close(self) -> None:
        if self.server is not None and self.server.stdin is not None:
            self.server.stdin.close()
            self.server.wait(timeout=60)


def main(argv: list[str]) -> None:
    client = Client(argv[0], argv[1])
    try:
        for line in sys.stdin:
            asked = json.loads(line)
            if "hook" in asked:
                answer = client.hook(asked["hook"], asked["input"])
            else:
                answer = client.tool(asked["tool"], asked["arguments"])
            sys.stdout.write(json.dumps(answer) + "\n")
            sys.stdout.flush()
    finally:
        client.close()


if __name__ == "__main__":
    main(sys.argv[1:])
