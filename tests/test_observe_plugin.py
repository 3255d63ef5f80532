"""The observer end to end through the Claude Code plugin's own hook commands: three
recorded sessions (hook input JSON and transcripts as Claude Code writes them), the
background worker after each, then the fourth session's SessionStart output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from gitmem.observe.blocks import BlockIndex, index_path
from gitmem.observe.capture import observe_dir
from gitmem.repository import Repository

PLUGIN = Path(__file__).resolve().parent.parent / "hooks" / "claude-code"
BIN = str(Path(sys.executable).parent)

# A stand-in model: answers each step from its prompt's first line, naming the session.
MODEL = r'''
import sys
text = sys.stdin.read()
first = text.splitlines()[0]
session = text.split("session: ", 1)[1].split()[0] if "session: " in text else "?"
if first.startswith("You are the observer"):
    print(f"""<observation>
type: discovery
title: Learned how {session} builds
keywords: build, {session}
facts:
- make build runs the compiler for {session}
narrative: The build of {session} goes through make. Tests follow it.
source: toolu_{session}_1
</observation>""")
elif first.startswith("You summarize"):
    print(f"<summary>\nrequest: build {session}\nlearned: make builds {session}\ncompleted: built {session}\n</summary>")
elif first.startswith("You are the librarian"):
    print("""<file name="active_context.md">- builds work; next: release</file>
<file name="decisions.md">- build through make, not by hand</file>
<file name="lessons.md">- run the tests after every build</file>
<file name="notes.md">- the Makefile is the entry point</file>""")
'''


def run_event(
    project: Path, env: dict[str, str], event: str, data: dict[str, Any], *, every: bool = True
) -> list[str]:
    """Run every command hooks.json gives ``event``, as Claude Code does (only the
    observer's capture unless ``every``); their stdouts."""
    hooks = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"][event]
    outs: list[str] = []
    for group in hooks:
        for hook in group["hooks"]:
            if not every and "observe capture" not in hook["command"]:
                continue
            command = hook["command"].replace("${CLAUDE_PLUGIN_ROOT}", str(PLUGIN))
            done = subprocess.run(
                command,
                shell=True,
                cwd=project,
                env=env,
                input=json.dumps({**data, "hook_event_name": event}),
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            assert done.returncode == 0 and done.stderr == "", (command, done.stderr)
            outs.append(done.stdout)
    return outs


def wait_for_worker(git_dir: str) -> None:
    """Until the worker has taken every run and left."""
    folder = observe_dir(git_dir)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        spool = os.path.join(folder, "spool")
        idle = not os.path.exists(os.path.join(folder, "worker.pid"))
        if idle and (not os.path.isdir(spool) or not os.listdir(spool)):
            return
        time.sleep(0.1)
    raise AssertionError("the worker did not finish: " + _log(folder))


def _log(folder: str) -> str:
    path = os.path.join(folder, "observer.log")
    return Path(path).read_text() if os.path.exists(path) else ""


def session(project: Path, env: dict[str, str], name: str, *, every: bool) -> str:
    """One recorded session; returns its SessionStart context. Without ``every``, only
    the observer's commands run (the holder's hooks cost a second each, and the first
    session shows they and the capture run side by side)."""
    transcript = project / f"{name}.jsonl"
    base = {"session_id": name, "transcript_path": str(transcript), "cwd": str(project)}
    start = run_event(project, env, "SessionStart", {**base, "source": "startup"}, every=every)
    prompt = f"build {name} please"
    run_event(project, env, "UserPromptSubmit", {**base, "prompt": prompt}, every=every)
    for n, (tool, tool_input, response) in enumerate(
        [
            (
                "Bash",
                {"command": "make build"},
                {"stdout": "ok", "stderr": "", "interrupted": False},
            ),
            ("Read", {"file_path": str(project / "Makefile")}, {"type": "text"}),
        ],
        1,
    ):
        run_event(
            project,
            env,
            "PostToolUse",
            {
                **base,
                "tool_name": tool,
                "tool_input": tool_input,
                "tool_response": response,
                "tool_use_id": f"toolu_{name}_{n}",
            },
            every=every,
        )
    lines = [
        {"type": "user", "message": {"role": "user", "content": prompt}},
        {
            "type": "assistant",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": f"{name} built."}],
            },
        },
    ]
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines))
    run_event(project, env, "Stop", {**base, "stop_hook_active": False}, every=every)
    run_event(project, env, "SessionEnd", {**base, "reason": "exit"}, every=every)
    return json.loads(start[0])["hookSpecificOutput"]["additionalContext"] if start else ""


def test_three_sessions_then_the_fourth_starts_with_the_panel(tmp_path: Path) -> None:
    """Each run is captured by the plugin's hooks, the worker writes it as observer,
    summarizer and librarian commits, and the next session starts with the panel."""
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    env = {
        **os.environ,
        "PATH": BIN + os.pathsep + os.environ.get("PATH", ""),
        "CLAUDE_PLUGIN_ROOT": str(PLUGIN),
        "CLAUDE_PROJECT_DIR": str(project),
        "GITMEM_USER_REPO": str(tmp_path / "user.git"),
        "GITMEM_OBSERVER_IDLE": "0.3",
    }
    env.pop("GITMEM_REPO", None)
    model = tmp_path / "model.py"
    model.write_text(MODEL)
    gitmem = [os.path.join(BIN, "gitmem")]
    subprocess.run([*gitmem, "init"], cwd=project, env=env, check=True, capture_output=True)
    for key, value in (("model", "command"), ("command", f"{sys.executable} {model}")):
        subprocess.run(
            [*gitmem, "observe", "config", key, value],
            cwd=project,
            env=env,
            check=True,
            capture_output=True,
        )
    git_dir = str(project / ".git")

    first = session(project, env, "s1", every=True)
    assert "# Project memory" not in first
    wait_for_worker(git_dir)
    for name in ("s2", "s3"):
        session(project, env, name, every=False)
        wait_for_worker(git_dir)

    fourth = run_event(
        project,
        env,
        "SessionStart",
        {"session_id": "s4", "cwd": str(project), "source": "startup", "transcript_path": ""},
    )
    context = json.loads(fourth[0])["hookSpecificOutput"]["additionalContext"]
    panel = context[context.index("<system-reminder>\n# Project memory") :]
    assert "## Active context\n- builds work; next: release\n" in panel
    assert "## Decisions\n- build through make, not by hand\n" in panel
    recent = panel[panel.index("## Recent\n") :].splitlines()[1:]
    assert recent[0].startswith("- [summary] Session summary (sum-")
    assert recent[1].startswith("- [discovery] Learned how s3 builds (obs-")
    assert any("Learned how s1 builds" in line for line in recent)
    assert "mem_search" in context

    with Repository.open(str(project)) as repo:
        head = repo.head("observations")
        assert head is not None
        authors = subprocess.run(
            ["git", "--git-dir", git_dir, "log", "--format=%an", head],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        block = repo.files("observations").read(
            next(p for p in repo.files("observations").files("sessions"))
        )
        # the worker left the block index up to date: no search has to make it
        index = BlockIndex.load(index_path(git_dir, "observations"))
        assert index is not None
        assert index.tree == repo.files("observations").object_ids()["sessions"]
    assert authors.count("observer") == 3 and authors.count("summarizer") == 3
    assert authors.count("librarian") == 1  # the curated files were unchanged after
    assert set(authors) == {"observer", "summarizer", "librarian"}
    assert block is not None and "- source: toolu_s1_1" in block
    assert "- session: s1" in block
    assert "no model" not in _log(observe_dir(git_dir))
