"""The model step, its prompts and the observer's configuration."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import gitmem as gitmem_package
from gitmem.errors import InvalidArgument, NotFound, Unavailable
from gitmem.observe import (
    RUN_MARK,
    AnthropicModel,
    CommandModel,
    ModelFailed,
    ScriptedModel,
    configure,
    model_from_config,
    prompt,
    read_config,
)
from gitmem.observe.config import DEFAULTS, tracked_by
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


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_command_models_children_do_not_outlive_its_time(tmp_path: Path) -> None:
    """A command that answers but leaves a child holding its output runs out of time,
    and that child is killed with it (its whole session), never left behind."""
    pidfile = tmp_path / "child.pid"
    model = CommandModel(["sh", "-c", f"sleep 60 & echo $! > {pidfile}; echo hi"], timeout=1.5)
    with pytest.raises(ModelFailed, match="in time"):
        model.complete("p", "x")
    child = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    if _alive(child):
        os.kill(child, signal.SIGKILL)
        pytest.fail("the model command's child outlived its time")


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


def test_observe_config_command(repo: Repository) -> None:
    """`gitmem observe config` shows and sets the settings; a bad value is one line and
    changes nothing."""
    from click.testing import CliRunner

    from gitmem.cli import cli

    def run(*args: str):
        return CliRunner().invoke(cli, ["--repo", repo.directory, "observe", "config", *args])

    done = run("max-results", "7")
    assert done.exit_code == 0 and "max-results = 7" in done.stdout
    refused = run("max-results", "70")
    assert refused.exit_code == 1
    assert refused.stderr == "Error: max-results must be between 1 and 10\n"
    assert read_config(repo).max_results == 7
    assert run("max-results").stdout == "max-results = 7\n"
    assert run("max-results", "--unset").exit_code == 0
    assert read_config(repo).max_results == 5
    for key, value, said in (
        ("nope", "1", "there is no observer setting 'nope'; the settings are enabled, model"),
        ("timeout", "nan", "timeout must be more than 0 and at most 3600 seconds"),
        ("gate-command", 'a "b', "does not parse: No closing quotation"),
    ):
        refused = run(key, value)
        assert refused.exit_code == 1 and said in refused.stderr, refused.stderr
        assert len(refused.stderr.splitlines()) == 1
    assert set(read_config(repo).settings) == set(DEFAULTS)
    assert read_config(repo).settings["timeout"] == "120"


def _project(tmp_path: Path) -> tuple[Path, Callable[..., None]]:
    """A project with a git work tree of its own, and its ``git`` run quietly."""
    project = tmp_path / "project"
    project.mkdir()
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(project), *args], check=True, env=env, capture_output=True)

    git("init", "-q")
    return project, git


def test_a_command_that_came_with_a_projects_files_is_not_run(tmp_path: Path) -> None:
    """A repository committed into a project (a .gitmem a clone brings along) names
    its model command in a config whoever committed it wrote: no such command runs,
    for the steps nor the gate, and the refusal is one line; untracked, it runs."""
    project, git = _project(tmp_path)
    with Repository.init(str(project / ".gitmem")) as repo:
        configure(repo, "model", "command")
        configure(repo, "command", "touch pwned")
        configure(repo, "gate-model", "command")
        configure(repo, "gate-command", "touch pwned")
        assert isinstance(read_config(repo).model(), CommandModel)  # not tracked yet
        git("add", ".gitmem/config")
        config = read_config(repo)
        assert config.tracked_by == os.path.realpath(project)
        for made in (config.model, config.gate_model):
            with pytest.raises(Unavailable, match="it came with the project's files") as refused:
                made()
            assert "\n" not in str(refused.value)
        git("rm", "-q", "--cached", ".gitmem/config")
        assert isinstance(read_config(repo).model(), CommandModel)
    assert tracked_by(str(project / ".git")) == ""  # a project's own repository
    assert tracked_by(str(tmp_path / "elsewhere.git")) == ""  # in no project at all


def test_no_model_that_came_with_a_projects_files_is_run(tmp_path: Path) -> None:
    """Which model runs, and so where the runs' text is sent, is the machine's user's
    choice: a tracked config naming an anthropic model, for the steps or the gate, is
    refused as a command is; untracked, it runs."""
    project, git = _project(tmp_path)
    with Repository.init(str(project / ".gitmem")) as repo:
        configure(repo, "model", "anthropic")
        configure(repo, "anthropic-model", "claude-opus-4-1")
        configure(repo, "gate-model", "anthropic")
        assert isinstance(read_config(repo).model(), AnthropicModel)  # not tracked yet
        git("add", ".gitmem/config")
        config = read_config(repo)
        for made in (config.model, config.gate_model):
            with pytest.raises(Unavailable, match="the model is set in a repository config"):
                made()
        configure(repo, "model", "none")
        configure(repo, "gate-model", "none")
        git("add", ".gitmem/config")
        config = read_config(repo)
        assert config.model() is None and config.gate_model() is None


def test_a_command_not_set_on_this_machine_is_not_run(tmp_path: Path) -> None:
    """A config can arrive with files nobody here wrote (a project unpacked from an
    archive carries its .gitmem, and no work tree tracks it): a model or gate command
    runs only once set with `gitmem observe config` on this machine, for that
    repository and that setting; one written any other way, or changed since, is
    refused in one line, and runs once it is set."""
    folder = tmp_path / "unpacked" / ".gitmem"
    with Repository.init(str(folder)) as repo:
        for key, value in [("model", "command"), ("command", "touch pwned")]:
            repo.set_setting("observer", key, value)
        repo.set_setting("observer", "gate-model", "command")
        repo.set_setting("observer", "gate-command", "touch pwned")
        config = read_config(repo)
        for made, key in ((config.model, "command"), (config.gate_model, "gate-command")):
            with pytest.raises(Unavailable, match=f"the {key} .* was not set on this machine"):
                made()
        configure(repo, "command", "touch pwned")
        assert isinstance(read_config(repo).model(), CommandModel)
        with pytest.raises(Unavailable, match="gate-command"):
            read_config(repo).gate_model()  # trusted as the steps' command, not the gate's
        configure(repo, "gate-command", "touch pwned")
        assert isinstance(read_config(repo).gate_model(), CommandModel)
        repo.set_setting("observer", "command", "touch pwned again")  # changed by hand
        with pytest.raises(Unavailable, match="was not set on this machine") as refused:
            read_config(repo).model()
        assert "\n" not in str(refused.value)
    with Repository.init(str(tmp_path / "other.git")) as other:  # the same line elsewhere
        other.set_setting("observer", "model", "command")
        other.set_setting("observer", "command", "touch pwned")
        with pytest.raises(Unavailable, match="was not set on this machine"):
            read_config(other).model()
    assert not (tmp_path / "pwned").exists()


def test_capture_hook_never_fails_the_session(tmp_path: Path) -> None:
    """`gitmem observe capture` exits 0 with nothing on stdout, on good input and bad."""
    gitmem = str(Path(sys.executable).parent / "gitmem")
    env = {**os.environ, "GITMEM_REPO": str(tmp_path)}
    good = json.dumps({"session_id": "s", "cwd": str(tmp_path), "prompt": "hi"})
    # a tool's input as a model may nest it, past the depth json reads
    deep = '{"session_id": "s", "tool_name": "t", "tool_input": ' + "[" * 100_000 + "]" * 100_000
    cases = [("user-prompt-submit", good), ("post-tool-use", "not json")]
    cases += [("post-tool-use", deep + "}"), ("nope", "")]
    # a number longer than Python reads: the call is still recorded
    huge = '{"session_id": "s", "tool_name": "calc", "tool_input": {"n": ' + "9" * 5000 + "}}"
    cases += [("post-tool-use", huge)]
    for event, text in cases:
        done = subprocess.run(
            [gitmem, "observe", "capture", event],
            input=text,
            env=env,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0 and done.stdout == ""
        assert len(done.stderr.splitlines()) <= 1, done.stderr
    spool = (tmp_path / "gitmem" / "observe" / "spool" / "s.jsonl").read_text()
    records = [json.loads(line) for line in spool.splitlines()]
    assert records[0]["text"] == "hi"
    assert [r["tool"] for r in records[1:]] == ["calc"]
    assert records[1]["input"].startswith('{"n": "9999')


def test_the_capture_hook_loads_neither_the_store_nor_the_command_line(tmp_path: Path) -> None:
    """The capture path imports no dulwich, no click and no gitmem module beyond it and
    the one (``os`` alone) that says which folder a Claude Code hook serves."""
    script = (
        "import sys, io; sys.argv = ['gitmem', 'observe', 'capture', 'post-tool-use']\n"
        "sys.stdin = io.TextIOWrapper(io.BytesIO(b'{}'))\n"
        "from gitmem.__main__ import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('gitmem', 'dulwich', 'click')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=tmp_path
    )
    assert json.loads(done.stdout.replace("'", '"')) == [
        "gitmem",
        "gitmem.__main__",
        "gitmem.errors",
        "gitmem.lazy",
        "gitmem.lean",
        "gitmem.lean.repository",
        "gitmem.observe",
        "gitmem.observe.capture",
        "gitmem.observe.finding",
    ]


def test_the_capture_hook_loads_no_typing_re_or_json_layer(tmp_path: Path) -> None:
    """Past Python's own start, a hook loads only gitmem's few modules and the C codec
    under json: not typing, re or json's Python layer (each costs more than the work)."""
    root = str(Path(gitmem_package.__file__).parent.parent)
    event = {"session_id": "s", "cwd": str(tmp_path), "tool_name": "Bash", "tool_input": {}}
    script = (
        f"import sys, io; sys.path.insert(0, {root!r}); before = set(sys.modules)\n"
        "sys.argv = ['gitmem', 'observe', 'capture', 'post-tool-use']\n"
        f"sys.stdin = io.TextIOWrapper(io.BytesIO({json.dumps(event).encode()!r}))\n"
        "from gitmem.__main__ import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(' '.join(sorted(set(sys.modules) - before)))"
    )
    # -S: without site, whose editable-install finder loads re into every process
    done = subprocess.run(
        [sys.executable, "-S", "-c", script],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    loaded = set(done.stdout.split())
    assert not loaded & {"typing", "re", "json", "json.decoder", "enum", "collections"}
    assert "gitmem.observe.capture" in loaded


def test_capture_finds_only_a_repository_in_gitmem_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A git project gitmem does not serve is passed over (nothing is recorded there);
    one where `gitmem init` ran is found from a folder inside it."""
    from gitmem.observe.capture import find_git_dir

    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    monkeypatch.delenv("GITMEM_REPO", raising=False)
    assert find_git_dir(str(project / "src")) is None
    Repository.init(str(project)).close()
    assert find_git_dir(str(project / "src")) == str(project / ".git")
