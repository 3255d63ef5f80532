"""An ``ssh://`` remote, played by a stand-in for ``ssh`` (named in ``core.sshCommand``)
that runs the remote's git on this machine, or plays a hostile server: a sync through it
works as through any remote, and a remote that goes silent, never stops sending or
stops reading is given up on within the bounds, in one line, with nothing stored. An
``http://`` remote that never stops sending is held to the same bound."""

from __future__ import annotations

import socket
import stat
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from helpers_sync import ME, make_project, sh

from gitmem import Repository, ops
from gitmem.cli import cli
from gitmem.store import remote
from gitmem.store.watched import PastBound, WatchedSSH

# The remote's side: the command ssh would run there (the last argument), with the
# protocol version dulwich asks for through SetEnv.
REMOTE_GIT = """#!/bin/sh
for arg; do
  case "$arg" in "SetEnv GIT_PROTOCOL="*) export "${arg#SetEnv }";; esac
  last="$arg"
done
exec sh -c "$last"
"""
SILENT = """#!/bin/sh
exec sleep 601
"""
ENDLESS = f"""#!{sys.executable}
import sys
out = sys.stdout.buffer
out.write(b"000eversion 2\\n")
line = b"agent=" + b"x" * 200 + b"\\n"
packet = b"%04x" % (len(line) + 4) + line
while True:
    out.write(packet * 64)
"""


def stand_in(project: Path, name: str, text: str) -> None:
    """``text`` as the ``ssh`` the project's repository runs."""
    script = project.parent / name
    script.write_text(text)
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    sh(project, "config", "core.sshCommand", str(script))


def sync(project: Path, timeout: float = 60) -> Result:
    results: list[Result] = []
    syncing = threading.Thread(
        target=lambda: results.append(CliRunner().invoke(cli, ["--repo", str(project), "sync"])),
        daemon=True,
    )
    syncing.start()
    syncing.join(timeout=timeout)
    assert results, "the sync still waits for the remote"
    return results[0]


def project_with_a_memory(tmp_path: Path) -> tuple[Path, str | None]:
    project = make_project(tmp_path / "project")
    with Repository.init(str(project)) as repo:
        ops.create(repo, "notes", ME, "todo", "open tasks", "- ship\n")
        return project, repo.head("notes")


def files_of(path: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def test_a_sync_through_ssh_fetches_and_pushes(tmp_path: Path) -> None:
    project, head = project_with_a_memory(tmp_path)
    sh(tmp_path, "init", "-q", "--bare", "origin.git")
    stand_in(project, "ssh", REMOTE_GIT)
    sh(project, "remote", "add", "origin", f"ssh://server.invalid{tmp_path}/origin.git")
    result = sync(project)
    assert result.exit_code == 0, result.output
    assert sh(tmp_path / "origin.git", "rev-parse", "gitmem/notes").strip() == head
    other = tmp_path / "other"
    sh(tmp_path, "clone", "-q", "origin.git", str(other))
    with Repository.open(str(other)) as repo:
        repo.sync("origin")
        ops.create(repo, "notes", ME, "more", "from the other", "- more\n")
        repo.sync("origin")
    result = sync(project)
    assert result.exit_code == 0, result.output
    with Repository.open(str(project)) as repo:
        snapshot = repo.snapshot("notes")
        assert "todo" in snapshot and "more" in snapshot


@pytest.mark.parametrize("how", ["silent", "endless"])
def test_an_ssh_remote_past_its_bounds_is_given_up_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """A remote that never answers is left after ``SILENCE``; one that never stops
    sending, past what a fetch takes: one line says which, the ``ssh`` process is
    killed, and the repository is as it was."""
    if how == "silent":
        monkeypatch.setattr(remote, "SILENCE", 0.3)
    monkeypatch.setattr(remote, "FETCH_MAX", 0)
    monkeypatch.setattr(remote, "ANSWER_EXTRA", 1 << 20)
    project, _ = project_with_a_memory(tmp_path)
    url = "ssh://server.invalid/origin.git"
    sh(project, "remote", "add", "origin", url)
    stand_in(project, "ssh", SILENT if how == "silent" else ENDLESS)
    before = files_of(project / ".git")
    result = sync(project)
    assert result.exit_code == 1, result.output
    words = "it did not answer within 0.3 s" if how == "silent" else "it sent more than 1 MiB"
    assert result.output == f"Error: cannot fetch from {url}: {words}\n"
    assert files_of(project / ".git") == before
    assert not sleeping(b"sleep\x00601\x00")  # the silent one's ssh was killed


def sleeping(command: bytes) -> list[int]:
    """The processes running ``command`` (its arguments as /proc writes them)."""
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes() == command:
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_a_remote_that_takes_nothing_holds_a_write_no_longer_than_the_silence() -> None:
    vendor = WatchedSSH(0.3, 600, 1 << 20)
    # an ssh that never reads what it is sent (its arguments are the shell's to ignore)
    wrapper = vendor.run_command(
        "server.invalid", "git-receive-pack '/x'", ssh_command="sh -c 'exec sleep 600'"
    )
    with pytest.raises(PastBound, match=r"it did not answer within 0\.3 s"):
        wrapper.write(b"x" * (4 << 20))
    assert wrapper.proc.wait(timeout=10) < 0  # killed
    wrapper.close()


def test_a_git_protocol_remote_is_refused_before_any_connection(tmp_path: Path) -> None:
    project, _ = project_with_a_memory(tmp_path)
    url = "git://127.0.0.1:9/origin.git"
    sh(project, "remote", "add", "origin", url)
    before = files_of(project / ".git")
    result = sync(project)
    assert result.exit_code == 1
    assert result.output == (
        f"Error: cannot use the remote {url}: git:// remotes are not used: the protocol "
        "neither checks who answers nor hides what is sent; use an ssh:// or https:// URL\n"
    )
    assert files_of(project / ".git") == before


def test_an_http_remote_that_never_stops_sending_is_given_up_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server whose list of refs never ends: past what an answer may bring, one line
    says so and the repository is as it was."""
    monkeypatch.setattr(remote, "FETCH_MAX", 0)
    monkeypatch.setattr(remote, "ANSWER_EXTRA", 1 << 20)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    stop = threading.Event()

    def endless() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                connection = listener.accept()[0]
            except TimeoutError:
                continue
            with connection:
                connection.recv(65536)
                connection.sendall(
                    b"HTTP/1.1 200 OK\r\nConnection: close\r\n"
                    b"Content-Type: application/x-git-upload-pack-advertisement\r\n\r\n"
                    b"001e# service=git-upload-pack\n0000"
                )
                ref = b"%s refs/heads/gitmem/notes\0multi_ack\n" % (b"1" * 40)
                first = b"%04x" % (len(ref) + 4) + ref
                line = b"%s refs/heads/x\n" % (b"2" * 40)
                lines = (b"%04x" % (len(line) + 4) + line) * 256
                try:
                    connection.sendall(first)
                    while not stop.is_set():
                        connection.sendall(lines)
                except OSError:
                    continue  # the client hung up

    server = threading.Thread(target=endless, daemon=True)
    server.start()
    try:
        project, _ = project_with_a_memory(tmp_path)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/origin.git"
        sh(project, "remote", "add", "origin", url)
        before = files_of(project / ".git")
        result = sync(project)
        assert result.exit_code == 1, result.output
        assert result.output == f"Error: cannot fetch from {url}: it sent more than 1 MiB\n"
        assert files_of(project / ".git") == before
    finally:
        stop.set()
        server.join()
        listener.close()
