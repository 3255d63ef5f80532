"""What a newcomer meets at the command line: every error one line (and JSON under
``--json``), every count in the right number, the version, a fresh clone's stores, and
the MCP server's version and resource template."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result
from helpers_sync import make_project, sh

from gitmem import Author, Memory, Repository
from gitmem.cli import cli
from gitmem.ops import reports
from gitmem.sync import StoreSync
from gitmem.types import Change, FileChange, FileEdit

GITMEM = str(Path(sys.executable).parent / "gitmem")
AGENT = Author.agent("agent-1")


pytestmark = pytest.mark.usefixtures("operator_home")


def run(repo: Repository | Path, *args: str) -> Result:
    path = repo.directory if isinstance(repo, Repository) else str(repo)
    return CliRunner().invoke(cli, ["--repo", path, *args])


def put(repo: Repository, store: str, slug: str) -> None:
    repo.mutate(store, AGENT, lambda _: Change("create", slug, Memory(slug, "d", "body\n")))


def error_line(result: Result) -> str:
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_a_program_that_cannot_be_read_is_one_line(repo: Repository, tmp_path: Path) -> None:
    put(repo, "notes", "todo")
    missing = str(tmp_path / "missing.ts")
    result = run(repo, "run", missing, "--strategy", "markdown")
    assert result.exit_code == 1
    assert error_line(result) == f"Error: cannot read {missing}: No such file or directory"
    result = run(repo, "run", missing, "--strategy", "markdown", "--json")
    assert result.exit_code == 1
    assert json.loads(result.stdout) == {
        "ok": False,
        "output": "",
        "error": f"cannot read {missing}: No such file or directory",
        "views": [],
    }
    assert repo.revisions("notes") and len(repo.revisions("notes")) == 1


def test_a_thrown_error_says_error_once(repo: Repository, tmp_path: Path) -> None:
    put(repo, "notes", "todo")
    program = tmp_path / "boom.ts"
    program.write_text('throw new Error("boom");\n')
    result = run(repo, "run", str(program), "--strategy", "markdown")
    assert result.exit_code == 1
    assert error_line(result) == "Error: boom at program:1:7"


@pytest.mark.parametrize("command", ["log", "revisions"])
def test_the_history_of_no_memory_is_an_error(repo: Repository, command: str) -> None:
    put(repo, "notes", "todo")
    result = run(repo, command, "nope")
    assert result.exit_code == 1 and result.stdout == ""
    assert error_line(result) == (
        "Error: there is no memory named 'nope' in notes; `gitmem ls` lists them"
    )


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["show"], "Error: Missing argument 'SLUG'. (see `gitmem show --help`)"),
        (["nosuch"], "Error: No such command 'nosuch'. (see `gitmem --help`)"),
        (["ls", "--bogus"], "Error: No such option '--bogus'. (see `gitmem ls --help`)"),
    ],
)
def test_usage_errors_are_one_line_and_exit_1(repo: Repository, args: list[str], line: str) -> None:
    result = run(repo, *args)
    assert result.exit_code == 1
    assert error_line(result) == line


def test_version() -> None:
    from importlib.metadata import version

    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0
    assert result.stdout == f"gitmem {version('gitmem-agent')}\n"


def test_counts_are_singular_for_one(repo: Repository) -> None:
    put(repo, "notes", "todo")
    result = run(repo, "stores")
    assert result.stdout == "notes\t1 memory, 5 chars, 1 line\n"
    state = run(repo, "state").stdout
    assert "totals: 1 memory, 5 chars, 1 line" in state


def test_a_sync_line_names_the_conflict_copy() -> None:
    done = StoreSync(
        "notes",
        head="3f9c2a1b7d04aa",
        fetched=True,
        merged=True,
        pushed=True,
        conflicts=["deploy"],
        changed=["deploy", "deploy.conflict-9d41c07"],
    )
    assert reports.sync_line(done) == (
        "notes: merged (2 memories changed here), pushed at 3f9c2a1b7d04; "
        "1 conflict: deploy (theirs kept as deploy.conflict-9d41c07)"
    )


def test_a_file_store_lists_in_columns(repo: Repository) -> None:
    edits = (FileEdit("create", "a.md", "x\n"), FileEdit("create", "notes/long.md", "y" * 120))
    repo.publish_files("files", AGENT, lambda _: FileChange(edits))
    assert run(repo, "ls").stdout == (
        "a.md                2 chars      1 lines\nnotes/long.md     120 chars      1 lines\n"
    )


def test_a_fresh_clone_says_to_sync(tmp_path: Path) -> None:
    project = make_project(tmp_path / "project")
    with Repository.init(str(project)) as repo:
        put(repo, "notes", "todo")
    sh(tmp_path, "clone", "-q", str(project), "clone")
    clone = tmp_path / "clone"
    result = run(clone, "ls")
    assert result.exit_code == 1
    assert error_line(result) == (
        "Error: no stores here yet, but origin has notes; run `gitmem sync` to fetch them"
    )
    result = run(clone, "ls", "--store", "notes")
    assert error_line(result) == (
        "Error: store 'notes' is on origin but not here yet; run `gitmem sync` to fetch it"
    )
    assert run(clone, "stores").stdout == "notes\ton origin only; `gitmem sync` fetches it\n"
    assert run(clone, "sync").exit_code == 0
    assert run(clone, "ls").stdout.startswith("todo")


@pytest.mark.parametrize(("module", "extra"), [("anthropic", "anthropic"), ("adapters.mcp", "mcp")])
def test_an_adapter_without_its_extra_names_it(module: str, extra: str) -> None:
    blocked = {"anthropic": "anthropic", "mcp": "mcp"}[extra]
    code = f"import sys; sys.modules[{blocked!r}] = None; import gitmem.{module}"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60
    )
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(
        f"ImportError: gitmem's {extra} adapter needs the {extra} extra: "
        f"pip install 'gitmem-agent[{extra}]'"
    ), done.stderr


@pytest.mark.parametrize(
    ("command", "blocked", "extra"), [("console", "starlette", "console"), ("mcp", "mcp", "mcp")]
)
def test_a_command_without_its_extra_says_which_in_one_line(
    repo: Repository, command: str, blocked: str, extra: str
) -> None:
    code = (
        f"import sys; sys.modules[{blocked!r}] = None; "
        f"sys.argv = ['gitmem', '--repo', {repo.directory!r}, {command!r}]; "
        "from gitmem.cli import main; main()"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60
    )
    assert done.returncode == 1
    assert done.stderr.startswith(
        f"Error: gitmem's {extra} adapter needs the {extra} extra: "
        f"pip install 'gitmem-agent[{extra}]'"
    ), done.stderr
    assert done.stderr.count("\n") == 1


def test_the_mcp_server_reports_its_version_and_template(repo: Repository) -> None:
    from importlib.metadata import version

    put(repo, "notes", "todo")
    requests = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "resources/templates/list", "params": {}},
    ]
    server = subprocess.Popen(
        [GITMEM, "--repo", repo.directory, "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write("".join(json.dumps(r) + "\n" for r in requests))
    server.stdin.flush()
    answers: dict[int, dict[str, Any]] = {}
    while 2 not in answers:
        answer = json.loads(server.stdout.readline())
        answers[answer.get("id", 0)] = answer
    server.stdin.close()
    server.stdout.close()
    assert server.wait(timeout=60) == 0
    assert answers[1]["result"]["serverInfo"]["version"] == version("gitmem-agent")
    (template,) = answers[2]["result"]["resourceTemplates"]
    assert template["uriTemplate"] == "gitmem://memory/notes/{slug}"


def _commands(group: click.Group, path: tuple[str, ...]) -> list[tuple[str, ...]]:
    found: list[tuple[str, ...]] = [path]
    for name in group.list_commands(click.Context(group)):
        command = group.get_command(click.Context(group), name)
        assert command is not None
        if isinstance(command, click.Group):
            found += _commands(command, (*path, name))
        else:
            found.append((*path, name))
    return found


def test_every_commands_help_has_an_example() -> None:
    missing: list[str] = []
    for path in _commands(cli, ()):
        result = CliRunner().invoke(cli, [*path, "--help"])
        assert result.exit_code == 0, result.output
        if "Example" not in result.stdout and "$ gitmem" not in result.stdout:
            missing.append(" ".join(["gitmem", *path]))
    assert missing == []


@pytest.mark.parametrize("command", ["mcp", "tools"])
def test_an_agent_command_on_a_file_store_says_what_it_is(repo: Repository, command: str) -> None:
    edit = FileEdit("create", "memories/f2.md", "plain text, no front matter")
    repo.publish_files("claude", AGENT, lambda _: FileChange((edit,)))
    result = run(repo, command)
    assert result.exit_code == 1
    assert error_line(result) == (
        "Error: store 'claude' is a file store (the memory tool's plain files), not a store "
        "of memories; name a store of memories with --store (a new name starts one)"
    )
    assert repo.stores() == ["claude"]


def test_the_pre_push_hook_works_in_a_linked_worktree(tmp_path: Path) -> None:
    from helpers_sync import ENV

    from gitmem import ops

    sh(tmp_path, "init", "-q", "--bare", "server.git")
    project = make_project(tmp_path / "project")
    sh(project, "remote", "add", "origin", str(tmp_path / "server.git"))
    with Repository.init(str(project)) as repo:
        ops.create(repo, "notes", Author("Ada", "ada@example.org"), "todo", "tasks", "- ship\n")
    installed = run(project, "hooks", "install")
    assert installed.exit_code == 0, installed.output
    sh(project, "worktree", "add", "-q", str(tmp_path / "wt"))
    pushed = subprocess.run(
        ["git", "push", "origin", "gitmem/notes"],
        cwd=tmp_path / "wt",
        capture_output=True,
        text=True,
        env=ENV,
        check=False,
    )
    assert pushed.returncode == 0, pushed.stderr
    assert sh(tmp_path / "server.git", "branch", "--list", "gitmem/notes").strip()


def test_a_program_may_call_in_either_case(repo: Repository, tmp_path: Path) -> None:
    """memories.read_memory is memories.readMemory, so the names an unknown call's
    error lists are names a program may call."""
    put(repo, "notes", "todo")
    program = tmp_path / "p.ts"
    program.write_text(
        'import { memories } from "gitmem";\n'
        'console.log(await memories.read_memory({ name: "todo" }));\n'
        'console.log(await memories.readMemory({ name: "todo" }));\n'
        "try { await memories.nosuch({}); } catch (e) { console.log(String(e)); }\n"
    )
    result = run(repo, "run", str(program), "--strategy", "markdown")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines.count("body") == 2
    assert lines[-1] == (
        "Error: `nosuch` is not available under markdown. "
        "Your memory calls: create_memory, read_memory, edit_memory, delete_memory."
    )
