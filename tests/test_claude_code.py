"""``gitmem hook claude-code <event>`` run as Claude Code runs it: a process per event,
the event JSON on stdin.

The input fields Claude Code documents and the hooks rely on:

- every event: ``session_id``, ``transcript_path`` (the session's JSONL transcript),
  ``cwd``, ``hook_event_name``;
- SessionStart: ``source``: ``startup``, ``resume``, ``clear`` or ``compact``;
- UserPromptSubmit: ``prompt``;
- PreCompact: ``trigger``: ``manual`` or ``auto`` (and ``custom_instructions``);
- Stop: ``stop_hook_active``.

Output: SessionStart and UserPromptSubmit print
``{"hookSpecificOutput": {"hookEventName": ..., "additionalContext": ...}}``; PreCompact
prints plain text (Claude Code hands it the compaction as instructions); Stop prints
nothing. Every hook exits 0.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import capability, with_stdin_open

from gitmem import Agent, Author, Memory, Repository
from gitmem.adapters.sessions import session_path
from gitmem.holder.framing import frame_notice, frame_view
from gitmem.lean.repository import hook_start
from gitmem.types import Change

GITMEM = str(Path(sys.executable).parent / "gitmem")
CAP = capability("markdown", "shared", maxLenDescription=256)
ON_USE = 'views.openText("deploy-notes", "staging needs the VPN");'


class Session:
    """One Claude Code session: its id, its transcript, and its hooks as processes."""

    def __init__(self, repo: Repository, tmp: Path, *options: str) -> None:
        self.repo = repo
        self.id = "5b0a9c1e-3f00-4a7e-9d5e-0c1d2e3f4a5b"
        self.transcript = tmp / "transcript.jsonl"
        self.transcript.write_text("")
        self.cwd = str(tmp)
        self.options = list(options) or [
            "--capability",
            json.dumps(CAP.to_dict()),
            "--profile",
            "claude-code",
        ]

    def hook(self, event: str, **fields: Any) -> subprocess.CompletedProcess[str]:
        names = {
            "session-start": "SessionStart",
            "user-prompt-submit": "UserPromptSubmit",
            "pre-compact": "PreCompact",
            "stop": "Stop",
        }
        payload = {
            "session_id": self.id,
            "transcript_path": str(self.transcript),
            "cwd": self.cwd,
            "hook_event_name": names[event],
            **fields,
        }
        done = subprocess.run(
            [GITMEM, "--repo", self.repo.directory, "hook", "claude-code", event, *self.options],
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert done.stderr == "", done.stderr
        return done

    def context(self, event: str, **fields: Any) -> str | None:
        """The additionalContext an event hands the model (``None``: nothing)."""
        out = self.hook(event, **fields).stdout
        if not out:
            return None
        data = json.loads(out)
        assert set(data) == {"hookSpecificOutput"}
        specific = data["hookSpecificOutput"]
        assert specific["hookEventName"] in ("SessionStart", "UserPromptSubmit")
        return specific["additionalContext"]

    def said(self, *entries: dict[str, Any]) -> None:
        """Append transcript lines, as Claude Code does during a turn."""
        with self.transcript.open("a") as handle:
            for entry in entries:
                handle.write(json.dumps(entry) + "\n")


def tool_use(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A transcript line holding one assistant tool call."""
    return {
        "type": "assistant",
        "message": {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": tool, "input": arguments}],
        },
    }


def other_agent(repo: Repository) -> Any:
    holder = repo.bind(CAP, Agent("claude-code", "other-session"))
    assert holder is not None
    return holder


def test_full_life_cycle(repo: Repository, tmp_path: Path) -> None:
    """Start, two prompts with a notice between them, a Stop that runs an onUse, a
    compaction: each hands the model its moment's text, once."""
    other = other_agent(repo)
    other.call("create_memory", {"name": "api", "description": "api conventions", "body": "x"})
    options = ["--capability", json.dumps(CAP.to_dict()), "--profile", "claude-code"]
    session = Session(repo, tmp_path, *options, "--compaction", "memory")

    start = session.context("session-start", source="startup", model="claude")
    assert start is not None
    assert start.startswith("## Memories\n")
    assert "- `api` — api conventions" in start
    assert "create_memory, read_memory, edit_memory, delete_memory" in start
    assert session.context("user-prompt-submit", prompt="hello") is None

    # another session writes a code memory (code halves come only through code mode)
    before = repo.head("profile/claude-code")
    repo.mutate(
        "profile/claude-code",
        Author.agent("other-session"),
        lambda _: Change(
            "create", "deploy", Memory("deploy", "how staging rolls", "VPN", "", ON_USE)
        ),
    )
    notice = session.context("user-prompt-submit", prompt="deploy it")
    assert notice == frame_notice(
        "Another agent sharing your memories has made changes since your last turn:\n\n"
        "- added `deploy` — how staging rolls\n\n"
        "Read one with `read_memory` if it bears on what you are doing.",
        (before, repo.head("profile/claude-code") or ""),
    )
    # the agent reads the code memory in this turn; Stop runs its onUse
    session.said(tool_use("mcp__plugin_gitmem_gitmem__read_memory", {"name": "deploy"}))
    assert session.hook("stop", stop_hook_active=False).stdout == ""
    assert session.context("user-prompt-submit", prompt="next") == frame_view(
        "deploy-notes", "staging needs the VPN"
    )
    assert session.context("user-prompt-submit", prompt="again") is None

    # compaction: the request goes to the compaction, then the boundary rebuilds the block
    other.call("create_memory", {"name": "late", "description": "made late", "body": "y"})
    request = session.hook("pre-compact", trigger="auto", custom_instructions="").stdout
    assert request.startswith("Your context is about to be compacted.")
    after = session.context("session-start", source="compact")
    assert after is not None
    assert "- `late` — made late" in after and "- `deploy` — how staging rolls" in after
    assert after.endswith(request.rstrip("\n"))
    # the boundary swept the notice about `late`: it is in the block
    assert session.context("user-prompt-submit", prompt="go on") is None


def test_pre_compact_without_memory_compaction_is_silent(repo: Repository, tmp_path: Path) -> None:
    """A profile that compacts by summary gets nothing from PreCompact."""
    session = Session(repo, tmp_path)
    session.hook("session-start", source="startup")
    assert session.hook("pre-compact", trigger="manual", custom_instructions="").stdout == ""


def test_resume_keeps_the_session(repo: Repository, tmp_path: Path) -> None:
    """A resumed session binds the holder it started with, whatever the hook is given."""
    session = Session(repo, tmp_path)
    session.hook("session-start", source="startup")
    resumed = Session(repo, tmp_path, "--store", "elsewhere")
    text = resumed.context("session-start", source="resume")
    assert text is not None and "Your memory calls: create_memory" in text
    assert repo.stores() == []  # reading wrote nothing


def test_a_prompt_before_any_start_opens_the_window(repo: Repository, tmp_path: Path) -> None:
    """Installed mid-session, the first hook to run still hands over the prompt and block."""
    other_agent(repo).call("create_memory", {"name": "a", "description": "first", "body": "x"})
    text = Session(repo, tmp_path).context("user-prompt-submit", prompt="hi")
    assert text is not None and "- `a` — first" in text


def test_finds_the_repository_from_cwd(tmp_path: Path) -> None:
    """Without --repo, the repository is found from the event's cwd."""
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    Repository.init(str(project / ".gitmem")).close()
    payload = {"session_id": "s", "cwd": str(project / "src"), "source": "startup"}
    done = subprocess.run(
        [GITMEM, "hook", "claude-code", "session-start", "--capability", json.dumps(CAP.to_dict())],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        cwd=str(tmp_path),
        timeout=60,
        check=False,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert done.returncode == 0 and done.stderr == ""
    assert "## Memories" in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]


def test_a_hook_serves_the_project_its_session_started_in(tmp_path: Path) -> None:
    """The event's cwd follows the session's shell: a model that moves it into another
    project moves nothing. The repository a hook binds and the one the observer records
    into are those of the project the session started in, as Claude Code names it to
    every hook (CLAUDE_PROJECT_DIR); without that name, the event's cwd."""
    places = {name: tmp_path / name for name in ("project", "other")}
    for place in places.values():
        (place / "src").mkdir(parents=True)
        Repository.init(str(place / ".gitmem")).close()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}

    def run(args: list[str], session: str, *, started: bool) -> None:
        event = {"session_id": session, "cwd": str(places["other"] / "src"), "prompt": "hi"}
        done = subprocess.run(
            [GITMEM, *args],
            input=json.dumps({**event, "source": "startup"}),
            capture_output=True,
            text=True,
            cwd=str(tmp_path),
            timeout=60,
            check=False,
            env={**env, "CLAUDE_PROJECT_DIR": str(places["project"])} if started else env,
        )
        assert done.returncode == 0 and done.stderr == "", done.stderr

    def holding(session: str) -> list[str]:
        return [
            name
            for name, place in places.items()
            if os.path.exists(session_path(str(place / ".gitmem"), session))
        ]

    start = ["hook", "claude-code", "session-start", "--capability", json.dumps(CAP.to_dict())]
    run(start, "started", started=True)
    run(start, "unnamed", started=False)
    assert (holding("started"), holding("unnamed")) == (["project"], ["other"])
    run(["observe", "capture", "user-prompt-submit"], "started", started=True)
    spools = [
        name
        for name, place in places.items()
        if (place / ".gitmem" / "gitmem" / "observe").exists()
    ]
    assert spools == ["project"]


def test_hook_start_takes_the_sessions_start_over_its_shells_folder() -> None:
    """Only an absolute CLAUDE_PROJECT_DIR counts; the event's cwd is the fallback, then
    the hook's own folder."""
    assert hook_start("/b", {"CLAUDE_PROJECT_DIR": "/a"}) == "/a"
    assert hook_start("/b", {"CLAUDE_PROJECT_DIR": "a"}) == "/b"
    assert hook_start("/b", {"CLAUDE_PROJECT_DIR": ""}) == "/b"
    assert hook_start(None, {}) == os.getcwd()
    assert hook_start("", {}) == os.getcwd()


@pytest.mark.parametrize(
    ("stdin", "args", "reason"),
    [
        ("not json", [], "gitmem hook: the hook input is not JSON"),
        ("[]", [], "gitmem hook: the hook input is not a JSON object"),
        ("[" * 100_000 + "]" * 100_000, [], "gitmem hook: the hook input is not JSON"),
        ('{"session_id": "s\\ud800"}', [], "gitmem hook: the hook input holds a lone surrogate"),
        ('{"session_id": "s", "cwd": "\\udfff"}', [], "gitmem hook: the hook input holds a lone"),
        ('{"cwd": "/"}', [], "gitmem hook: the hook input has no session_id"),
        (
            '{"session_id": "s"}',
            ["--capability", '{"id": "memories"}'],
            "gitmem hook: launch refused: no implementation is not a memory",
        ),
    ],
)
def test_problems_never_block_the_session(
    repo: Repository, stdin: str, args: list[str], reason: str
) -> None:
    """A problem is one line on stderr, nothing on stdout, and exit 0."""
    done = subprocess.run(
        [GITMEM, "--repo", repo.directory, "hook", "claude-code", "user-prompt-submit", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(reason), done.stderr


def test_no_repository_is_one_line(tmp_path: Path) -> None:
    """A project without a gitmem repository: one line, exit 0."""
    done = subprocess.run(
        [GITMEM, "--repo", str(tmp_path / "none"), "hook", "claude-code", "stop"],
        input='{"session_id": "s"}',
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and done.stdout == ""
    assert done.stderr.startswith("gitmem hook: no gitmem repository at ")
    assert len(done.stderr.splitlines()) == 1


def test_input_that_is_not_json_says_so(tmp_path: Path) -> None:
    """Input that is not JSON is named as such, before any repository is looked for
    (the working folder has none)."""
    done = subprocess.run(
        [GITMEM, "hook", "claude-code", "session-start"],
        input="not json",
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and done.stdout == ""
    assert done.stderr == "gitmem hook: the hook input is not JSON\n"


# -- the plugin ------------------------------------------------------------------------

PLUGIN = Path(__file__).resolve().parent.parent / "hooks" / "claude-code"


def _plugin_command(command: str) -> list[str]:
    return shlex.split(command.replace("${CLAUDE_PLUGIN_ROOT}", str(PLUGIN)))


def test_plugin_maps_each_event_to_its_hook() -> None:
    """hooks.json runs `gitmem hook claude-code <event>` for the five events, with the
    same identity options the MCP server gets, within a timeout; and the observer's
    capture for each event of a run."""
    manifest = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["name"] == "gitmem"
    server = json.loads((PLUGIN / ".mcp.json").read_text())["mcpServers"]["gitmem"]
    assert server["command"] == "gitmem" and server["args"][0] == "mcp"
    hooks = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"]
    expected = {
        "SessionStart": "session-start",
        "UserPromptSubmit": "user-prompt-submit",
        "PreCompact": "pre-compact",
        "Stop": "stop",
        "SessionEnd": "session-end",
    }
    captured = {
        "UserPromptSubmit": "user-prompt-submit",
        "PostToolUse": "post-tool-use",
        "Stop": "stop",
        "SubagentStop": "subagent-stop",
        "SessionEnd": "session-end",
    }
    assert set(hooks) == set(expected) | set(captured)
    for name, event in captured.items():
        (entry,) = [e for e in hooks[name] if "observe capture" in e["hooks"][0]["command"]]
        (command,) = entry["hooks"]
        assert _plugin_command(command["command"]) == ["gitmem", "observe", "capture", event]
    for name, event in expected.items():
        (entry,) = [e for e in hooks[name] if "observe capture" not in e["hooks"][0]["command"]]
        (command,) = entry["hooks"]
        assert command["type"] == "command" and command["timeout"] > 20
        argv = _plugin_command(command["command"])
        assert argv[:4] == ["gitmem", "hook", "claude-code", event]
        assert argv[4:] == [
            a.replace("${CLAUDE_PLUGIN_ROOT}", str(PLUGIN))
            for a in server["args"][1:]
            if a != "--observer"  # the server's own: the log's tools
        ]


def test_plugin_commands_run(repo: Repository, tmp_path: Path) -> None:
    """The plugin's own SessionStart command works on a fresh repository."""
    hooks = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"]
    argv = _plugin_command(hooks["SessionStart"][0]["hooks"][0]["command"])
    done = subprocess.run(
        [GITMEM, "--repo", repo.directory, *argv[1:]],
        input=json.dumps({"session_id": "s", "source": "startup", "cwd": str(tmp_path)}),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and done.stderr == ""
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "Your memory calls: create_memory, read_memory, edit_memory, delete_memory." in context


def test_a_hook_that_cannot_finish_gives_up_in_time(repo: Repository) -> None:
    """A hook whose input never ends gives up after --timeout: one line, exit 0."""
    assert with_stdin_open(
        [GITMEM, "--repo", repo.directory, "hook", "claude-code", "stop", "--timeout", "0.5"]
    ) == (0, b"", b"gitmem hook: gave up after 0.5 s; the session goes on\n")


@pytest.mark.parametrize("kind", ["/dev/zero", "fifo", "one endless line", "a folder"])
def test_a_transcript_that_never_ends_does_not_hold_the_stop_hook(
    repo: Repository, tmp_path: Path, kind: str
) -> None:
    """The Stop hook reads a regular transcript only, at most its last 8 MB, lines
    over 1 MB passed over: /dev/zero, a FIFO no one writes, a file of one huge line or
    a folder end the hook at once, with nothing to say."""
    session = Session(repo, tmp_path)
    assert session.context("session-start", source="startup") is not None
    session.context("user-prompt-submit", prompt="hi")
    if kind == "/dev/zero":
        session.transcript = Path("/dev/zero")
    elif kind == "fifo":
        session.transcript = tmp_path / "pipe"
        os.mkfifo(session.transcript)
    elif kind == "a folder":
        session.transcript = tmp_path
    else:
        with session.transcript.open("ab") as handle:
            for _ in range(24):
                handle.write(b"x" * (1 << 20))
        session.said(tool_use("read_memory", {"name": "api"}))
    done = session.hook("stop")
    assert done.stdout == ""
