"""The capture hook: where it records, what it records, and when it starts a worker."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
from pathlib import Path

import pytest

from gitmem.observe.capture import (
    OUTPUT_MAX,
    Recorder,
    find_git_dir,
    log_line,
    observe_dir,
    record_hook,
    start_worker,
)
from gitmem.observe.finding import observer_settings

ENV = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}


def run_git(folder: Path, *args: str) -> None:
    """``git`` in ``folder``, as a user with no config of their own."""
    subprocess.run(
        ["git", "-c", "user.name=u", "-c", "user.email=u@e", *args],
        cwd=folder,
        check=True,
        capture_output=True,
        env=ENV,
    )


def hook(git_dir: str, event: str, **data: object) -> None:
    """One event through the hook's recording, as ``gitmem observe capture`` feeds it."""
    record_hook(event, {"session_id": "s1", **data}, git_dir)


@pytest.fixture(autouse=True)
def _no_repo_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITMEM_REPO", raising=False)


def files_under(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


@pytest.mark.parametrize("committed", ["link", "plain folder", "repository"])
def test_a_gitmem_a_project_commits_is_passed_over(tmp_path: Path, committed: str) -> None:
    """A ``.gitmem`` that came with a clone (a link out of it, a folder that is no
    repository, or a repository the project tracks) is not recorded into."""
    upstream = tmp_path / "upstream"
    (tmp_path / "elsewhere").mkdir()
    upstream.mkdir()
    run_git(upstream, "init", "-q")
    if committed == "link":
        (upstream / ".gitmem").mkdir()
        (upstream / ".gitmem" / "gitmem").symlink_to("../../elsewhere")
    elif committed == "plain folder":
        (upstream / ".gitmem").mkdir()
        (upstream / ".gitmem" / ".keep").write_text("")
    else:
        run_git(upstream, "init", "-q", "--bare", ".gitmem")
        for folder in ("objects", "gitmem"):  # git keeps no empty folder
            (upstream / ".gitmem" / folder).mkdir(exist_ok=True)
            (upstream / ".gitmem" / folder / ".keep").write_text("")
    (upstream / "README.md").write_text("# project\n")
    run_git(upstream, "add", "-A")
    run_git(upstream, "commit", "-qm", "start")
    run_git(tmp_path, "clone", "-q", "upstream", "clone")
    clone = tmp_path / "clone"
    assert find_git_dir(str(clone)) is None
    if committed == "repository":  # the same repository untracked is the user's own
        run_git(clone, "rm", "-rq", "--cached", ".gitmem")
        assert find_git_dir(str(clone)) == str(clone / ".gitmem")
        run_git(clone, "add", ".gitmem")
        run_git(clone, "update-index", "--index-version", "4")
        assert find_git_dir(str(clone)) is None


@pytest.mark.parametrize("linked", ["gitmem", "gitmem/observe", "gitmem/observe/spool"])
def test_no_link_below_the_git_directory_is_written_through(tmp_path: Path, linked: str) -> None:
    """A symbolic link anywhere below the git directory (an archive can bring one) is
    never written through: not by the spool, the log, nor the worker's files."""
    git_dir = tmp_path / "repo.git"
    subprocess.run(["git", "init", "-q", "--bare", str(git_dir)], check=True, env=ENV)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    link = git_dir / linked
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(elsewhere)
    hook(str(git_dir), "user-prompt-submit", prompt="my private prompt")
    hook(str(git_dir), "stop", last_assistant_message="done")
    log_line(observe_dir(str(git_dir)), "a line")
    assert files_under(elsewhere) == []


def test_the_hook_honours_enabled_and_skip_tools(tmp_path: Path) -> None:
    """With capture turned off nothing is written and no worker starts; a tool in
    ``skip-tools`` is never written."""
    git_dir = tmp_path / "repo.git"
    subprocess.run(["git", "init", "-q", "--bare", str(git_dir)], check=True, env=ENV)
    config = git_dir / "config"
    base = config.read_text()
    config.write_text(base + '[gitmem "observer"]\n\tenabled = false\n\tskip-tools = WebFetch\n')
    hook(str(git_dir), "post-tool-use", tool_name="WebFetch", tool_input={}, tool_response="x")
    hook(str(git_dir), "user-prompt-submit", prompt="a prompt")
    hook(str(git_dir), "stop", last_assistant_message="done")
    assert not (git_dir / "gitmem").exists()
    config.write_text(base + '[gitmem "observer"]\n\tskip-tools = "Edit, webfetch" ; a note\n')
    hook(str(git_dir), "post-tool-use", tool_name="WebFetch", tool_input={}, tool_response="x")
    hook(str(git_dir), "post-tool-use", tool_name="Bash", tool_input={}, tool_response="y")
    (spool,) = (git_dir / "gitmem" / "observe" / "spool").iterdir()
    assert [json.loads(line)["tool"] for line in spool.read_text().splitlines()] == ["Bash"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", (True, frozenset[str]())),
        ("[gitmem.observer]\nenabled = off\n", (False, frozenset[str]())),
        ('[GitMem "observer"]\nEnabled = yes\nSKIP-tools = A,b\n', (True, frozenset({"a", "b"}))),
        ('[gitmem "observer"]\nenabled\n', (True, frozenset[str]())),
        ('[gitmem "observer"]\nenabled = maybe\n', (False, frozenset[str]())),
        ('[gitmem "other"]\nenabled = false\n', (True, frozenset[str]())),
        (
            '[gitmem "observer"]\nenabled = false\nenabled = true # again\n',
            (True, frozenset[str]()),
        ),
    ],
)
def test_observer_settings_read_as_git_does(
    tmp_path: Path, text: str, expected: tuple[bool, frozenset[str]]
) -> None:
    """The two settings the hook needs, read from the config without the store; a value
    that is not true turns capture off."""
    (tmp_path / "config").write_text(text)
    assert observer_settings(str(tmp_path)) == expected


def test_control_characters_take_no_more_than_the_bound(tmp_path: Path) -> None:
    """Output of control characters (six bytes each once escaped) is clamped to the bound
    as the spool line holds it, so it fills a spool no faster than plain text."""
    with Recorder(str(tmp_path), "s1", worker=False) as recorder:
        recorder.tool("WebFetch", {}, "\x01" * 20_000, call_id="t1")
    (spool,) = Path(observe_dir(str(tmp_path)), "spool").iterdir()
    line = spool.read_bytes()
    assert OUTPUT_MAX < len(line) < OUTPUT_MAX + 200
    assert json.loads(line)["output"].endswith("…[clamped]")


def test_a_huge_tool_name_is_clamped_not_dropped(tmp_path: Path) -> None:
    """A tool's name, its call id, the session and the agent are clamped too: an event
    with a huge one is recorded, not dropped as though the spool were full."""
    with Recorder(str(tmp_path), "s" * 5000, agent="a" * 5000, worker=False) as recorder:
        recorder.tool("x" * 4_000_000, {}, "out", call_id="t" * 5000)
        assert recorder.dropped == 0
    (spool,) = Path(observe_dir(str(tmp_path)), "spool").iterdir()
    record = json.loads(spool.read_bytes())
    assert len(spool.read_bytes()) < 2000 and record["output"] == "out"


def test_a_stale_pid_does_not_keep_the_worker_from_starting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker runs while it holds its lock: a pid left behind that names a live
    process starts it all the same, and a held lock starts none."""
    started: list[str] = []
    monkeypatch.setattr(os, "posix_spawn", lambda *a, **k: started.append(a[1][-1]))  # pyright: ignore[reportUnknownLambdaType]
    folder = Path(observe_dir(str(tmp_path)))
    folder.mkdir(parents=True)
    (folder / "worker.pid").write_text(str(os.getpid()))
    assert start_worker(str(tmp_path))
    with (folder / "worker.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        assert not start_worker(str(tmp_path))
    assert started == [str(tmp_path)]
