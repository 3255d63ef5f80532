"""A prompt with nothing to give (the session started, no views waiting, nothing new in
its store for its instance) and a Stop that runs nothing (the turn read no memory) are
answered without binding a holder; every other is the full hook's, and either way the
process prints, and leaves on disk, what the full hook alone would.

Each case runs one hook twice from the same repository: through ``gitmem`` (which may
answer it quietly) and through the command line itself (``gitmem.cli.main``, which never
does), each on a fresh copy of the same state at the same path, and compares the
output, the exit status and every file of the repository."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import capability, tree_bytes, with_stdin_open
from helpers_sync import ENV, make_project, sh

from gitmem import Agent, Repository
from gitmem.adapters.sessions import capability_digest, session_path

GITMEM = str(Path(sys.executable).parent / "gitmem")
IMPORTS = [sys.executable, "-X", "importtime", "-m", "gitmem"]
"""gitmem, saying on stderr each module it imports (each line starting IMPORTED)."""
IMPORTED = b"import time:"
FULL = "import sys; from gitmem.cli import main; sys.argv[0] = 'gitmem'; main()"
SHARED = capability("markdown", "shared", maxLenDescription=256)
SESSION = "0e3b7c1d-prompt"
FRAME_ID = re.compile(rb' id=\\"[0-9a-f]+\\"')


def event(cwd: Path, transcript: Path, name: str = "UserPromptSubmit", **fields: str) -> bytes:
    data = {
        "session_id": SESSION,
        "transcript_path": str(transcript),
        "cwd": str(cwd),
        "hook_event_name": name,
        **fields,
    }
    return json.dumps(data).encode()


class Place:
    """A repository with one Claude Code session started in it, its capability a file:
    a standalone one named by ``--repo``, one found from the session's folder, or a
    project's own."""

    def __init__(self, tmp: Path, kind: str, *, empty: bool = False) -> None:
        self.tmp = tmp
        self.cap = tmp / "capability.json"
        self.transcript = tmp / "transcript.jsonl"
        self._outside()
        if kind == "project":
            self.top = make_project(tmp / "project")
            sh(self.top, "config", "user.name", "Dev")
            sh(self.top, "config", "user.email", "dev@example.com")
            self.cwd = self.top / "src"
            self.cwd.mkdir()
            self.repo_args: list[str] = []
            subprocess.run([GITMEM, "init"], cwd=self.top, env=ENV, check=True, capture_output=True)
            self.directory = str(self.top / ".git")
        elif kind == "found":  # a standalone repository found from the session's folder
            self.top = tmp / "work" / ".gitmem"
            self.top.parent.mkdir()
            Repository.init(str(self.top)).close()
            self.cwd = tmp / "work" / "src"
            self.cwd.mkdir()
            self.repo_args = []
            self.directory = str(self.top)
        else:
            self.top = tmp / "mem.git"
            Repository.init(str(self.top)).close()
            self.cwd = tmp
            self.repo_args = ["--repo", str(self.top)]
            self.directory = str(self.top)
        if not empty:
            with Repository.open(self.directory) as repo:
                other = repo.bind(SHARED, Agent("claude-code", "other"))
                assert other is not None
                other.call(
                    "create_memory", {"name": "api", "description": "api notes", "body": "x"}
                )
        start = self.hook("session-start", event(self.cwd, self.transcript, "SessionStart"))
        assert start.returncode == 0 and start.stderr == b"", start.stderr
        self.snapshot = tmp / "snapshot"
        shutil.copytree(self.top, self.snapshot, symlinks=True)

    def args(self, event_name: str) -> list[str]:
        return [
            *self.repo_args,
            "hook",
            "claude-code",
            event_name,
            "--capability",
            str(self.cap),
            "--profile",
            "claude-code",
        ]

    def hook(
        self, event_name: str, data: bytes, *extra: str, full: bool = False, imports: bool = False
    ) -> subprocess.CompletedProcess[bytes]:
        head = [sys.executable, "-c", FULL] if full else IMPORTS if imports else [GITMEM]
        return subprocess.run(
            [*head, *self.args(event_name), *extra],
            input=data,
            capture_output=True,
            cwd=self.cwd,
            env=ENV,
            timeout=120,
            check=False,
        )

    def _outside(self) -> None:
        """The capability file and the transcript as the session started with them."""
        self.cap.unlink(missing_ok=True)
        self.cap.write_text(json.dumps(SHARED.to_dict()))
        self.transcript.write_text("")

    def reset(self) -> Place:
        """All as the session started: the repository, the capability, the transcript."""
        self._outside()
        self.restore()
        return self

    def restore(self, state: Path | None = None) -> None:
        shutil.rmtree(self.top)
        shutil.copytree(state or self.snapshot, self.top, symlinks=True)

    def session_file(self) -> Path:
        return Path(session_path(self.directory, SESSION))

    def files(self) -> dict[str, bytes]:
        return tree_bytes(self.top)


def same_as_the_full_hook(
    place: Place,
    data: bytes,
    change: Callable[[Place], None] = lambda _: None,
    hook: str = "user-prompt-submit",
) -> tuple[subprocess.CompletedProcess[bytes], bool]:
    """Run the hook ``data`` through ``gitmem`` and through the command line alone, each
    from the snapshot as ``change`` leaves it; what each printed (but for a frame's id,
    new each time, and the imports ``gitmem`` is asked to say) and left must be the
    same. The first run's outcome, and whether it answered without binding a holder."""
    place.restore()
    change(place)
    changed = place.tmp / "changed"
    shutil.rmtree(changed, ignore_errors=True)
    shutil.copytree(place.top, changed, symlinks=True)
    outcomes: list[tuple[subprocess.CompletedProcess[bytes], dict[str, bytes]]] = []
    for full in (False, True):
        place.restore(changed)
        done = place.hook(hook, data, full=full, imports=not full)
        outcomes.append((done, place.files()))
    (ours, ours_files), (theirs, theirs_files) = outcomes
    quiet = b"gitmem.holder" not in ours.stderr
    said = b"".join(
        line for line in ours.stderr.splitlines(keepends=True) if not line.startswith(IMPORTED)
    )
    assert (ours.returncode, FRAME_ID.sub(b"", ours.stdout), said) == (
        theirs.returncode,
        FRAME_ID.sub(b"", theirs.stdout),
        theirs.stderr,
    )
    assert ours_files == theirs_files
    return ours, quiet


@pytest.fixture(scope="module")
def made() -> dict[str, Place]:
    """The places made so far, one of each kind, each reset before a test takes it."""
    return {}


def _place(made: dict[str, Place], factory: pytest.TempPathFactory, kind: str) -> Place:
    if kind not in made:
        made[kind] = Place(factory.mktemp(kind), kind)
    return made[kind].reset()


@pytest.fixture(params=["standalone", "found", "project"])
def place(
    request: pytest.FixtureRequest, made: dict[str, Place], tmp_path_factory: pytest.TempPathFactory
) -> Place:
    return _place(made, tmp_path_factory, request.param)


@pytest.fixture(params=["standalone", "project"])
def either(
    request: pytest.FixtureRequest, made: dict[str, Place], tmp_path_factory: pytest.TempPathFactory
) -> Place:
    return _place(made, tmp_path_factory, request.param)


@pytest.fixture
def standalone(made: dict[str, Place], tmp_path_factory: pytest.TempPathFactory) -> Place:
    return _place(made, tmp_path_factory, "standalone")


def test_a_prompt_with_nothing_to_give_binds_no_holder(place: Place) -> None:
    """The quiet answer prints nothing and keeps the transcript's length, byte for byte
    as the full hook keeps it."""
    place.transcript.write_text('{"type": "user"}\n')
    data = event(place.cwd, place.transcript, prompt="go on")
    done, quiet = same_as_the_full_hook(place, data)
    assert quiet and done.stdout == b""
    kept = json.loads(place.session_file().read_bytes())
    assert kept["offset"] == place.transcript.stat().st_size
    assert kept["bound"] == {
        "directory": place.directory,
        "store": "profile/claude-code",
        "instance": "claude-code",
        "capability": capability_digest(str(place.cap)),
    }


@pytest.mark.parametrize("written", [False, True], ids=["none-yet", "a-first-write"])
def test_a_store_with_no_commit_yet(tmp_path: Path, written: bool) -> None:
    """A session that began before its store had a commit: a prompt is quiet while the
    store has none, and the full hook's (a notice) once another agent wrote to it."""
    place = Place(tmp_path, "standalone", empty=True)
    data = event(place.cwd, place.transcript, prompt="go on")
    done, quiet = same_as_the_full_hook(place, data, _another_write if written else _nothing)
    if written:
        assert not quiet and b"added `deploy`" in done.stdout
    else:
        assert quiet and done.stdout == b""


def test_the_watermark_before_a_first_commit_is_gitmems_own() -> None:
    from gitmem.adapters.sessions import BEFORE_FIRST
    from gitmem.store import markers

    assert BEFORE_FIRST == markers._ORIGIN_ID  # pyright: ignore[reportPrivateUsage]


def _nothing(place: Place) -> None:
    pass


def _another_write(place: Place) -> None:
    with Repository.open(place.directory) as repo:
        other = repo.bind(SHARED, Agent("claude-code", "other"))
        assert other is not None
        other.call("create_memory", {"name": "deploy", "description": "how", "body": "y"})


def _views_waiting(place: Place) -> None:
    path = place.session_file()
    kept = json.loads(path.read_bytes())
    kept["views"] = [["deploy-notes", "staging needs the VPN"]]
    path.write_text(json.dumps(kept, ensure_ascii=False))


def _edited(**changes: object) -> Callable[[Place], None]:
    def change(place: Place) -> None:
        path = place.session_file()
        kept = json.loads(path.read_bytes())
        for key, value in changes.items():
            if key.startswith("bound_"):
                kept["bound"][key[len("bound_") :]] = value
            elif value is None:
                del kept[key]
            else:
                kept[key] = value
        path.write_text(json.dumps(kept, ensure_ascii=False))

    return change


def _another_capability(place: Place) -> None:
    place.cap.write_text(json.dumps(capability("markdown", "isolated").to_dict()))


def _spaced_file(place: Place) -> None:
    path = place.session_file()
    path.write_text(json.dumps(json.loads(path.read_bytes()), indent=1))


@pytest.mark.parametrize(
    "change",
    [
        _another_write,
        _views_waiting,
        _another_capability,
        _edited(started=False),
        _edited(bound=None),
        _edited(bound_instance="claude-code-elsewhere"),
        _edited(bound_store="profile/other"),
        _edited(bound_directory="/elsewhere"),
        _edited(session_id="another-session"),
        _spaced_file,
    ],
    ids=lambda change: getattr(change, "__name__", "edited"),
)
def test_every_other_prompt_is_the_full_hooks(
    either: Place, change: Callable[[Place], None]
) -> None:
    """Something to give, or a session's file that does not say the holder is the same:
    the full hook answers, and what it prints and keeps is its own."""
    data = event(either.cwd, either.transcript, prompt="go on")
    assert not same_as_the_full_hook(either, data, change)[1]


@pytest.mark.parametrize(
    "data",
    [
        b"\xff\xfe not text",
        b"not json",
        b"[]",
        b'{"cwd": "/"}',
        b'{"session_id": "\\ud800"}',
        b"[" * 100_000,
        b'{"session_id": "' + b"x" * (1 << 20) + b'"}',
    ],
    ids=["bytes", "words", "array", "no-session", "surrogate", "deep", "long"],
)
def test_an_event_that_does_not_read_is_the_full_hooks(standalone: Place, data: bytes) -> None:
    """The command line reads the event again, exactly as it would have, and says what
    is wrong with it in its own words."""
    done, quiet = same_as_the_full_hook(standalone, data)
    said = [line for line in done.stderr.splitlines() if not line.startswith(IMPORTED)]
    assert not quiet and done.returncode == 0 and said[0].startswith(b"gitmem hook: ")


def test_other_command_lines_are_the_full_hooks(standalone: Place) -> None:
    """An option the quiet answer does not take, or given twice, is the command line's
    to read."""
    data = event(standalone.cwd, standalone.transcript, prompt="go on")
    for extra in (["--started-as", "root"], ["--profile", "a", "--profile", "b"], ["--help"]):
        standalone.restore()
        done = standalone.hook("user-prompt-submit", data, *extra, imports=True)
        assert b"gitmem.cli" in done.stderr, extra


def test_a_prompt_whose_event_never_ends_gives_up_in_time(standalone: Place) -> None:
    """As every hook does: one line after --timeout, exit 0, nothing written."""
    before = standalone.files()
    assert with_stdin_open(
        [GITMEM, *standalone.args("user-prompt-submit"), "--timeout", "0.5"],
        event(standalone.cwd, standalone.transcript)[:20],
        cwd=standalone.cwd,
        env=ENV,
    ) == (0, b"", b"gitmem hook: gave up after 0.5 s; the session goes on\n")
    assert standalone.files() == before


def test_the_command_line_has_only_what_the_quiet_answer_left(
    standalone: Place, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hook the quiet answer passes on to the command line keeps one --timeout in
    all: here the quiet answer began a minute ago, so the command line, which would
    answer this prompt, gives up at once, in the same words, and writes nothing."""
    from click.testing import CliRunner

    from gitmem.adapters import sessions
    from gitmem.cli import cli

    data = event(standalone.cwd, standalone.transcript, prompt="go on")
    before = standalone.files()
    monkeypatch.chdir(standalone.cwd)
    monkeypatch.setattr(sessions, "_BEGUN", [time.monotonic() - 60])
    args = [*standalone.args("user-prompt-submit"), "--timeout", "5"]
    late = CliRunner().invoke(cli, args, input=data)
    assert (late.exit_code, late.stdout) == (0, "")
    assert late.stderr == "gitmem hook: gave up after 5 s; the session goes on\n"
    assert standalone.files() == before
    monkeypatch.setattr(sessions, "_BEGUN", [])  # begun now: all of it is left
    assert CliRunner().invoke(cli, args, input=data).stderr == ""


def _said(*lines: object) -> str:
    return "".join(json.dumps(line) + "\n" for line in lines)


def _tool_use(name: str, arguments: dict[str, str]) -> dict[str, object]:
    content = [{"type": "tool_use", "id": "toolu_1", "name": name, "input": arguments}]
    return {"type": "assistant", "message": {"role": "assistant", "content": content}}


@pytest.mark.parametrize(
    ("turn", "quiet"),
    [
        (
            _said({"type": "assistant", "message": {"content": [{"type": "text", "text": "ok"}]}}),
            True,
        ),
        (_said(_tool_use("Bash", {"command": "make test"})), True),
        (_said(_tool_use("mcp__gitmem__read_memory", {"name": "api"})), False),
        (_said(_tool_use("Read", {"file_path": "notes/read_memory.md"})), False),
        ('{"type": "user", "message": {"content": "caf\\u00e9 \\u001b[31m"}}\n', True),
        (_said(_tool_use("re\\u0061d_memory", {"name": "api"})).replace("\\\\", "\\"), False),
        (_said(_tool_use("mcp__gitmem__READ_MEMORY", {"name": "api"})), True),
    ],
    ids=["text", "another-tool", "read-memory", "the-name", "escapes", "spelled", "upper"],
)
def test_a_stop_that_runs_nothing_binds_no_holder(either: Place, turn: str, quiet: bool) -> None:
    """A turn whose transcript names no ``read_memory`` runs no onUse script: its Stop
    keeps the transcript's length and binds nothing; any other is the full hook's."""
    with either.transcript.open("a") as handle:
        handle.write(turn)
    data = event(either.cwd, either.transcript, "Stop", stop_hook_active="false")
    done, answered = same_as_the_full_hook(either, data, hook="stop")
    assert answered is quiet and done.stdout == b""
    kept = json.loads(either.session_file().read_bytes())
    assert kept["offset"] == either.transcript.stat().st_size


def _shorter(place: Place) -> None:
    path = place.session_file()
    kept = json.loads(path.read_bytes())
    kept["offset"] = 10**6
    path.write_text(json.dumps(kept, ensure_ascii=False))


def test_a_stop_past_the_transcripts_end_is_the_full_hooks(standalone: Place) -> None:
    """A transcript shorter than where the turn began is read again from its start."""
    standalone.transcript.write_text(_said(_tool_use("Bash", {"command": "ls"})))
    data = event(standalone.cwd, standalone.transcript, "Stop")
    assert not same_as_the_full_hook(standalone, data, _shorter, hook="stop")[1]


def _capability_that_never_opens(place: Place) -> None:
    place.cap.unlink()
    os.mkfifo(place.cap)  # opening it waits for a writer that never comes


def test_a_quiet_answer_that_cannot_finish_gives_up_in_time(standalone: Place) -> None:
    """Past the event's reading, the quiet answer keeps --timeout too: one line, exit 0,
    nothing written, as the full hook gives up."""
    data = event(standalone.cwd, standalone.transcript, prompt="go on")
    try:
        outcomes = []
        for full in (False, True):
            standalone.restore()
            _capability_that_never_opens(standalone)
            done = standalone.hook("user-prompt-submit", data, "--timeout", "0.5", full=full)
            outcomes.append((done.returncode, done.stdout, done.stderr, standalone.files()))
    finally:
        standalone.cap.unlink()
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][:3] == (0, b"", b"gitmem hook: gave up after 0.5 s; the session goes on\n")


def test_a_session_file_cut_short_at_any_step_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hook's alarm can come the moment the temporary file is made: it is removed,
    and the session's file is the one before."""
    from gitmem.adapters import sessions

    path = str(tmp_path / "gitmem" / "claude-code" / "s.json")
    sessions.write_session(path, "before")
    real = os.open

    def made_then_cut(name: str, flags: int, mode: int = 0o777) -> int:
        fd = real(name, flags, mode)
        os.close(fd)
        raise KeyboardInterrupt  # as an alarm's exception lands: at the next step

    monkeypatch.setattr(sessions.os, "open", made_then_cut)
    with pytest.raises(KeyboardInterrupt):
        sessions.write_session(path, "after")
    monkeypatch.undo()
    assert os.listdir(os.path.dirname(path)) == ["s.json"]
    assert Path(path).read_text() == "before"
