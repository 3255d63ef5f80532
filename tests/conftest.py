"""Fixtures shared by every test module: a fresh repository and byte-level snapshots."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gitmem import Capability, Repository
from gitmem.limits import LIMITS
from gitmem.sandbox.launch import _deno_binary, runtime_file  # pyright: ignore[reportPrivateUsage]


@pytest.fixture(scope="session")
def config_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("config")


@pytest.fixture(autouse=True)
def _no_machine_config(config_folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads or writes the machine user's own config folder (gitmem keeps the
    model commands its user trusts there), nor takes a Claude Code session's folders
    from the environment it was started in."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config_folder))
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)


@pytest.fixture
def operator_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home folder whose git identity is Ada Operator, no git or gitmem configuration
    from the machine, and no GITMEM_REPO (a module uses it for every test with
    ``pytestmark = pytest.mark.usefixtures("operator_home")``)."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tname = Ada Operator\n\temail = ada@example.org\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.delenv("GITMEM_REPO", raising=False)
    return home


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Repository]:
    """A fresh, empty gitmem repository in ``tmp_path / "mem.git"``."""
    repository = Repository.init(str(tmp_path / "mem.git"))
    try:
        yield repository
    finally:
        repository.close()


def tree_bytes(directory: str | os.PathLike[str]) -> dict[str, bytes]:
    """Every file under ``directory`` (relative path → content), for byte-identical checks."""
    found: dict[str, bytes] = {}
    for root, _, names in os.walk(directory):
        for name in names:
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                found[os.path.relpath(path, directory)] = f.read()
    return found


def with_stdin_open(
    args: list[str], first: bytes = b"", **options: Any
) -> tuple[int, bytes, bytes]:
    """Run ``args`` with ``first`` on its stdin, left open until it has exited (an input
    that never ends); its exit status, stdout and stderr."""
    process = subprocess.Popen(
        args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **options
    )
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    if first:
        process.stdin.write(first)
        process.stdin.flush()
    try:
        process.wait(timeout=120)
    finally:
        process.stdin.close()
    out, err = process.stdout.read(), process.stderr.read()
    process.stdout.close()
    process.stderr.close()
    return process.returncode, out, err


def git(directory: str | os.PathLike[str], *args: str) -> subprocess.CompletedProcess[str]:
    """Run the ``git`` binary against the bare repository at ``directory``."""
    return subprocess.run(
        ["git", f"--git-dir={os.fspath(directory)}", *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull},
    )


def commit_by_hand(directory: str, store: str, work: Path, change: Callable[[Path], None]) -> None:
    """What an operator correcting memories with plain git does: clone the store's
    branch of the repository at ``directory`` into ``work``, let ``change`` edit the
    files, commit (no gitmem trailers) and push."""
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}

    def run(*args: str) -> None:
        done = subprocess.run(["git", *args], capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stderr

    run("clone", "-q", "--branch", store, directory, str(work))
    change(work)
    run("-C", str(work), "add", "-A")
    who = ("-c", "user.name=Ana Operator", "-c", "user.email=ana@example.com")
    run("-C", str(work), *who, "commit", "-qm", "correct by hand")
    run("-C", str(work), "push", "-q", "origin", store)


def assert_fsck(directory: str | os.PathLike[str]) -> None:
    """``git fsck --strict`` accepts the repository."""
    result = git(directory, "fsck", "--strict", "--no-dangling")
    assert result.returncode == 0, result.stdout + result.stderr


def capability(
    implementation: str = "markdown",
    scope: str = "isolated",
    *,
    revise: bool = True,
    enabled: bool = True,
    **limits: int,
) -> Capability:
    """A configuration in the launch format: every limit off unless given."""
    params: dict[str, Any] = {"scope": scope, **dict.fromkeys(LIMITS, 0), **limits}
    return Capability.from_dict(
        {
            "id": "memories",
            "enabled": enabled,
            "implementation": implementation,
            "params": params,
            "features": {"reviseMemories": revise},
        }
    )


def gone(pid: int) -> bool:
    """Whether no process ``pid`` is left (ended, and reaped by its parent)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def run_beside_runtime(folder: Path, names: str, files: dict[str, str], stdin: str) -> str:
    """What ``driver.js`` prints, run by Deno in ``folder`` (which it alone may read),
    beside ``files`` and a copy of the sandbox runtime that exports ``names``."""
    (folder / "runtime.js").write_text(runtime_file().read_text() + f"\nexport {{ {names} }};\n")
    for name, text in files.items():
        (folder / name).write_text(text)
    done = subprocess.run(
        [
            _deno_binary(),
            "run",
            "--quiet",
            "--no-config",
            f"--allow-read={folder}",
            str(folder / "driver.js"),
        ],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout
