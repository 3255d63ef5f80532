"""The model step, its prompts and the observer's configuration."""

from __future__ import annotations

import subprocess
import sys

import pytest

from gitmem.errors import InvalidArgument, NotFound
from gitmem.observe import (
    RUN_MARK,
    CommandModel,
    ModelFailed,
    ScriptedModel,
    configure,
    model_from_config,
    prompt,
    read_config,
)
from gitmem.repository import Repository


def test_scripted_model_answers_in_order_and_records_calls() -> None:
    """A scripted model answers from its list, repeating the last, and keeps each call."""
    model = ScriptedModel(["one", "two"])
    assert [model.complete("p", str(i)) for i in range(3)] == ["one", "two", "two"]
    assert model.calls == [("p", "0"), ("p", "1"), ("p", "2")]
    assert ScriptedModel(lambda p, x: p + x).complete("a", "b") == "ab"


def test_command_model_pipes_prompt_and_payload_and_marks_the_run() -> None:
    """The command reads prompt and payload on stdin and runs under the run mark."""
    script = f"import os,sys; print(os.environ.get('{RUN_MARK}'), sys.stdin.read())"
    model = CommandModel([sys.executable, "-c", script], timeout=30)
    assert model.complete("do this", "with that") == "1 do this\n\nwith that\n"
    assert model.name == "command:" + sys.executable.rsplit("/", 1)[-1]


@pytest.mark.parametrize(
    ("script", "said"),
    [
        ("import sys; sys.exit(3)", "exited 3"),
        ("import time; time.sleep(30)", "in time"),
        ("import sys; sys.stdout.write('x' * 400000)", "more than"),
    ],
)
def test_command_model_failures_are_clear_errors(script: str, said: str) -> None:
    """A failing, slow or over-talkative command is a ModelFailed, never a hang."""
    model = CommandModel([sys.executable, "-c", script], timeout=1.5)
    with pytest.raises(ModelFailed, match=said):
        model.complete("p", "x")


def test_command_model_that_cannot_start() -> None:
    """A missing program is a clear error."""
    with pytest.raises(ModelFailed, match="cannot run"):
        CommandModel(["/nonexistent/model-cli"]).complete("p", "x")


def test_prompts_are_versioned_files() -> None:
    """Each step's prompt carries a version; an unknown one is NotFound."""
    for name in ("observer", "summarizer", "librarian", "gate"):
        found = prompt(name)
        assert found.version >= 1 and found.text.strip()
        assert found.label == f"{name}@{found.version}"
    with pytest.raises(NotFound):
        prompt("nothing")
    with pytest.raises(InvalidArgument):
        prompt("../x")


def test_model_from_config() -> None:
    """Settings name the model; none configured is None."""
    assert model_from_config({}) is None
    made = model_from_config({"model": "command", "command": "echo 'a b'", "timeout": "5"})
    assert isinstance(made, CommandModel) and list(made.argv) == ["echo", "a b"]
    with pytest.raises(InvalidArgument, match="not known"):
        model_from_config({"model": "gpt"})


def test_configuration_lives_in_git_config(repo: Repository) -> None:
    """Settings are gitmem.observer.* in the repository's config, readable by git."""
    configure(repo, "skip-tools", "WebSearch, webfetch")
    configure(repo, "model", "command")
    configure(repo, "command", "claude -p")
    config = read_config(repo)
    assert config.skip_tools == {"websearch", "webfetch"}
    assert config.budget == 8000
    shown = subprocess.run(
        ["git", "--git-dir", repo.directory, "config", "--get-regexp", r"^gitmem\.observer\."],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "gitmem.observer.skip-tools WebSearch, webfetch" in shown
    assert "gitmem.observer.command claude -p" in shown
    with pytest.raises(InvalidArgument, match="budget"):
        configure(repo, "budget", "lots")
    configure(repo, "skip-tools", None)
    assert read_config(repo).skip_tools == frozenset()
