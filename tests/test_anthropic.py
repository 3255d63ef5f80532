"""gitmem.anthropic: the memory tool's commands, limits, refusals, commits and the SDK's
own tool runner driving it."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import httpx2
import pytest
from anthropic import Anthropic
from anthropic.lib.tools import BetaAbstractMemoryTool, BetaAsyncAbstractMemoryTool, ToolError
from anthropic.lib.tools._beta_builtin_memory_tool import BetaLocalFilesystemMemoryTool
from conftest import assert_fsck, git, tree_bytes
from hypothesis import given, settings
from hypothesis import strategies as st
from test_anthropic_differential import (
    answer,
    prune_empty_directories,
    sizes_of_directories_masked,
)

from gitmem import Author, GitmemError, InvalidArgument, Memory, Repository
from gitmem.anthropic import AsyncGitMemoryTool, GitMemoryTool, MemoryToolError
from gitmem.types import Change

STORE = "claude/memories"
CLAUDE = Author.agent("claude")


def tool(repo: Repository, **limits: int) -> GitMemoryTool:
    return GitMemoryTool(repo, STORE, author=CLAUDE, **limits)


def view(path: str, view_range: list[int] | None = None) -> dict[str, Any]:
    return {"command": "view", "path": path, "view_range": view_range}


def create(path: str, text: str) -> dict[str, Any]:
    return {"command": "create", "path": path, "file_text": text}


def replace(path: str, old: str, new: str) -> dict[str, Any]:
    return {"command": "str_replace", "path": path, "old_str": old, "new_str": new}


def insert(path: str, line: int, text: str) -> dict[str, Any]:
    return {"command": "insert", "path": path, "insert_line": line, "insert_text": text}


def delete(path: str) -> dict[str, Any]:
    return {"command": "delete", "path": path}


def rename(old: str, new: str) -> dict[str, Any]:
    return {"command": "rename", "old_path": old, "new_path": new}


# every error the reference words, each reached at least once, in one script
SCRIPT = [
    view("/memories"),
    create("/memories/notes.md", "one\ntwo\ntwo\nthree\n"),
    create("/memories/notes.md", "again"),
    create("/memories", "root"),
    create("/memories/projects/gitmem/plan.md", "ship it\r\nsoon"),
    view("/memories"),
    view("/memories/projects"),
    view("/memories/notes.md"),
    view("/memories/notes.md", [2, 3]),
    view("/memories/notes.md", [3, -1]),
    view("/memories/missing.md"),
    view("/etc/passwd"),
    view("/memories/../secrets"),
    replace("/memories/notes.md", "two", "2"),
    replace("/memories/notes.md", "four", "4"),
    replace("/memories/notes.md", "one", "1"),
    replace("/memories/projects", "a", "b"),
    replace("/memories/ghost.md", "a", "b"),
    insert("/memories/notes.md", 0, "zero\n"),
    insert("/memories/notes.md", 99, "far"),
    insert("/memories/notes.md", -1, "before"),
    insert("/memories/projects", 0, "x"),
    rename("/memories/notes.md", "/memories/projects"),
    rename("/memories", "/memories/elsewhere"),
    rename("/memories/ghost.md", "/memories/other.md"),
    rename("/memories/projects", "/memories/archive/projects"),
    rename("/memories/notes.md", "/memories/archive/notes.md"),
    view("/memories/archive"),
    delete("/memories"),
    delete("/memories/ghost.md"),
    delete("/memories/archive/projects"),
    view("/memories/"),
    delete("/memories/archive/notes.md"),
    view("/memories"),
]


def test_every_answer_of_a_script_is_the_references(repo: Repository, tmp_path: Path) -> None:
    """A script reaching each of the reference's errors gets its exact texts (directory
    sizes aside)."""
    reference = BetaLocalFilesystemMemoryTool(str(tmp_path / "ref"))
    ours = tool(repo)
    errors = 0
    for command in SCRIPT:
        expected, got = answer(reference, command), answer(ours, command)
        prune_empty_directories(tmp_path / "ref" / "memories")
        assert (got[0], sizes_of_directories_masked(got[1])) == (
            expected[0],
            sizes_of_directories_masked(expected[1]),
        ), command
        errors += got[0] == "error"
    assert errors == 17


def test_the_tools_are_the_sdks_memory_tools(repo: Repository) -> None:
    """Both tools subclass the SDK's abstract memory tools and declare memory_20250818;
    a refusal is the SDK's ToolError and a GitmemError at once."""
    sync = tool(repo)
    asynchronous = AsyncGitMemoryTool(repo, STORE, author="claude")
    assert isinstance(sync, BetaAbstractMemoryTool)
    assert isinstance(asynchronous, BetaAsyncAbstractMemoryTool)
    assert sync.to_dict() == {"type": "memory_20250818", "name": "memory"}
    with pytest.raises(MemoryToolError) as info:
        sync.call(view("/nowhere"))
    assert isinstance(info.value, ToolError) and isinstance(info.value, GitmemError)
    assert info.value.kind == "invalid-argument"


def test_async_twin_answers_alike(repo: Repository) -> None:
    """The async tool gives the sync tool's answers and writes the same commits."""

    async def run() -> list[tuple[str, str]]:
        ours = AsyncGitMemoryTool(repo, "claude/async", author=CLAUDE)
        out: list[tuple[str, str]] = []
        for command in SCRIPT:
            try:
                out.append(("ok", await ours.call(command)))
            except ToolError as exc:
                out.append(("error", str(exc)))
        out.append(("ok", await ours.clear_all_memory()))
        return out

    got = asyncio.run(run())
    sync = tool(repo)
    expected = [answer(sync, c) for c in SCRIPT] + [answer(sync, {"command": "view"})]
    expected[-1] = ("ok", sync.clear_all_memory())
    assert got == expected
    assert [c[:1] for c in _subjects(repo, "claude/async")] == [
        c[:1] for c in _subjects(repo, STORE)
    ]


def _subjects(repo: Repository, store: str) -> list[str]:
    return git(repo.directory, "log", "--format=%s", store).stdout.splitlines()


def test_each_command_is_one_commit_and_view_writes_nothing(repo: Repository) -> None:
    """Every mutating command is one commit named after it; views and refusals leave
    every file of the repository byte-identical."""
    ours = tool(repo)
    ours.call(create("/memories/notes.md", "a\nb\n"))
    ours.call(replace("/memories/notes.md", "a", "A"))
    ours.call(insert("/memories/notes.md", 1, "between"))
    ours.call(rename("/memories/notes.md", "/memories/kept/notes.md"))
    ours.call(create("/memories/kept/other.md", "x"))
    ours.call(delete("/memories/kept"))
    assert _subjects(repo, STORE) == [
        "delete memories/kept/notes.md, memories/kept/other.md",
        "create memories/kept/other.md",
        "rename memories/kept/notes.md, memories/notes.md",
        "insert memories/notes.md",
        "str-replace memories/notes.md",
        "create memories/notes.md",
    ]
    repo.file_revisions(STORE)  # the derived history index is up to date
    before = tree_bytes(repo.directory)
    ours.call(view("/memories"))
    for refused in (view("/memories/kept"), delete("/memories/kept"), create("/memories", "")):
        with pytest.raises(ToolError):
            ours.call(refused)
    assert tree_bytes(repo.directory) == before
    assert_fsck(repo.directory)


def test_history_per_path_follows_renames(repo: Repository) -> None:
    """Each path keeps its own revision numbers; a rename is a revision of both paths."""
    ours = tool(repo)
    ours.call(create("/memories/a.md", "1"))
    ours.call(replace("/memories/a.md", "1", "2"))
    ours.call(rename("/memories/a.md", "/memories/b.md"))
    ours.call(create("/memories/a.md", "3"))
    assert [
        (r.revision, r.op, r.text, r.removed) for r in repo.file_revisions(STORE, "memories/a.md")
    ] == [
        (1, "create", "1", False),
        (2, "str-replace", "2", False),
        (3, "rename", "2", True),
        (4, "create", "3", False),
    ]
    assert [(r.revision, r.op) for r in repo.file_revisions(STORE, "memories/b.md")] == [
        (1, "rename")
    ]


def test_clear_all_memory_is_one_commit_and_keeps_history(repo: Repository) -> None:
    """clear_all_memory removes every file in one commit; the history stays; on an
    empty store it writes nothing."""
    ours = tool(repo)
    assert ours.clear_all_memory() == "All memory cleared"
    assert repo.head(STORE) is None
    for path in ("/memories/a.md", "/memories/x/b.md", "/memories/x/y/.c"):
        ours.call(create(path, "text"))
    assert ours.clear_all_memory() == "All memory cleared"
    assert _subjects(repo, STORE)[0] == "clear memories/a.md, memories/x/b.md, memories/x/y/.c"
    assert repo.files(STORE).files() == []
    assert ours.call(view("/memories")).endswith("\t/memories")
    assert [r.removed for r in repo.file_revisions(STORE, "memories/x/b.md")] == [False, True]


LIMITS = [
    (
        {"max_file_chars": 5},
        create("/memories/c.md", "123456"),
        "No change was made: /memories/c.md would hold 6 characters, over the limit of 5 "
        "characters per file (max_file_chars). Shorten the text or split it across several "
        "files.",
    ),
    (
        {"max_files": 1},
        create("/memories/b.md", "x"),
        "No change was made: /memories would hold 2 files, over the limit of 1 files "
        "(max_files). Delete or merge files you no longer need, then try again.",
    ),
    (
        {"max_total_chars": 5},
        insert("/memories/a.md", 1, "more"),
        "No change was made: /memories would hold 9 characters, over the limit of 5 "
        "characters in all (max_total_chars). Shorten or delete files you no longer need, "
        "then try again.",
    ),
]


@pytest.mark.parametrize(("limits", "command", "message"), LIMITS)
def test_limits_refuse_in_the_references_voice(
    repo: Repository, limits: dict[str, int], command: dict[str, Any], message: str
) -> None:
    """A write over a limit is a ToolError naming the limit and the fix; nothing is written."""
    tool(repo).call(create("/memories/a.md", "abc"))
    repo.file_revisions(STORE)
    before = tree_bytes(repo.directory)
    with pytest.raises(ToolError) as info:
        tool(repo, **limits).call(command)
    assert str(info.value) == message
    assert tree_bytes(repo.directory) == before


def test_a_write_that_shrinks_an_oversized_file_is_accepted(repo: Repository) -> None:
    """A store over a lowered limit may still be reduced."""
    tool(repo).call(create("/memories/a.md", "0123456789"))
    bounded = tool(repo, max_file_chars=4, max_total_chars=4)
    assert bounded.call(replace("/memories/a.md", "0123", "")).startswith("The memory file")
    with pytest.raises(ToolError, match="max_file_chars"):
        bounded.call(replace("/memories/a.md", "45", "45"))


@pytest.mark.parametrize(
    ("path", "fragment"),
    [
        ("/memories/a/../b.md", "would escape /memories directory"),
        ("/memories/.git/config", "is not a valid memory path"),
        ("/memories/x/.GIT", "is not a valid memory path"),
        ("/memories/a//b.md", "empty segment"),
        ("/memories/./b.md", "is not a valid memory path"),
        ("/memories/" + "d/" * 15 + "f.md", "16 names deep below /memories; use at most 15"),
        ("/memories/" + "d" * 1_015 + "x", "1,016 characters after /memories/; use at most 1,015"),
        # names git reads as .git, .gitmodules or .gitattributes on some file system
        ("/memories/.git./x.md", "is read as .git"),
        ("/memories/.git..", "is read as .git"),
        ("/memories/.Git.", "is read as .git"),
        ("/memories/.git  ", "is read as .git"),
        ("/memories/git~1/x.md", "is read as .git"),
        ("/memories/.git::$INDEX_ALLOCATION/x", "is read as .git"),
        ("/memories/.g\u200cit/x.md", "is read as .git"),
        ("/memories/.git\ufeff", "is read as .git"),
        ("/memories/d/.gitmodules", "is read as .gitmodules"),
        ("/memories/.GITMODULES. ", "is read as .gitmodules"),
        ("/memories/gitmod~1", "is read as .gitmodules"),
        ("/memories/gi7eba~9", "is read as .gitmodules"),
        ("/memories/.gitattributes", "is read as .gitattributes"),
        ("/memories/.git\u200dattributes", "is read as .gitattributes"),
        # what a checkout or a commit message cannot hold
        ("/memories/a\\b.md", "backslash"),
        ("/memories/new\nline.md", "control character"),
        ("/memories/tab\t.md", "control character"),
        ("/memories/para\u2029.md", "control character"),
        ("/memories/" + "é" * 128, "bytes of UTF-8"),
    ],
)
def test_paths_git_would_not_keep_are_refused(repo: Repository, path: str, fragment: str) -> None:
    """``..``, ``.git`` in any spelling, empty segments and names a tree or a checkout
    cannot hold are one-line ToolErrors that write nothing."""
    ours = tool(repo)
    before = tree_bytes(repo.directory)
    with pytest.raises(ToolError, match=fragment.replace(".", r"\.")) as info:
        ours.call(create(path, "x"))
    assert "\n" not in str(info.value)
    assert tree_bytes(repo.directory) == before


def test_the_longest_and_deepest_paths_are_taken(repo: Repository) -> None:
    """A path of 15 names below ``/memories``, and one of 1,015 characters after it, are
    each created: the limits a refusal states are the ones held to."""
    ours = tool(repo)
    deepest = "/memories/" + "d/" * 14 + "f.md"
    longest = "/memories/" + "/".join(["e" * 200] * 5) + "/" + "f" * 10
    assert len(longest) - len("/memories/") == 1_015
    for path in (deepest, longest):
        assert ours.call(create(path, "x")) == f"File created successfully at: {path}"


def test_a_rename_that_would_take_a_file_too_deep_is_refused_in_the_tools_terms(
    repo: Repository,
) -> None:
    ours = tool(repo)
    ours.call(create("/memories/a/" + "d/" * 12 + "f.md", "x"))
    before = tree_bytes(repo.directory)
    with pytest.raises(ToolError) as info:
        ours.call(rename("/memories/a", "/memories/b/c/e"))
    assert str(info.value) == (
        "Cannot rename /memories/a to /memories/b/c/e: a file it holds would not have a "
        "valid memory path there: it is 16 names deep below /memories; use at most 15"
    )
    assert tree_bytes(repo.directory) == before


def test_renaming_what_does_not_exist_says_so_first(repo: Repository) -> None:
    """As the reference tool answers: a missing source is named before a destination
    that passes through a file."""
    ours = tool(repo)
    ours.call(create("/memories/e", "x"))
    with pytest.raises(ToolError, match=r"^The path /memories/d/b does not exist$"):
        ours.call(rename("/memories/d/b", "/memories/e/a.md"))


def test_a_secret_is_named_in_the_tools_own_paths(repo: Repository) -> None:
    ours = tool(repo)
    with pytest.raises(ToolError, match=r"^refused: the file /memories/notes\.md holds a secret"):
        ours.call(create("/memories/notes.md", "key AKIA" + "ABCDEFGHIJKLMNOP\n"))


WELCOME = [
    "sp ace.md",
    "café.md",
    "日本語/メモ.md",
    "x" * 65,
    "x.lock",
    "a:b.md",
    "~tilde",
    ".gitignore",
    "git~2",
    ".gitx",
    ".git-notes",
    "- lead",
    "trail ",
    "emoji 😀.md",
    "é" * 127,
]


@pytest.mark.parametrize("name", WELCOME)
def test_names_the_reference_accepts_are_kept(repo: Repository, tmp_path: Path, name: str) -> None:
    """A name of any script or with spaces is accepted as the reference accepts it,
    with its answers; git fsck --strict and a clone of the branch take it."""
    path = f"/memories/notes/{name}"
    reference = BetaLocalFilesystemMemoryTool(str(tmp_path / "ref"))
    ours = tool(repo)
    for command in (create(path, "x\n"), view(path), view("/memories")):
        got, expected = ours.call(command), reference.call(command)
        assert sizes_of_directories_masked(got) == sizes_of_directories_masked(expected)
    assert repo.files(STORE).read(f"memories/notes/{name}") == "x\n"
    assert_fsck(repo.directory)
    clone = tmp_path / "clone"
    done = subprocess.run(
        ["git", "clone", "-q", "--branch", STORE, repo.directory, str(clone)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert (clone / "memories" / "notes" / name).read_bytes() == b"x\n"
    renamed = f"/memories/{name}"
    assert ours.call(rename(path, renamed)) == reference.call(rename(path, renamed))
    [moved] = repo.file_revisions(STORE, f"memories/{name}")
    assert (moved.op, moved.text) == ("rename", "x\n")


@pytest.mark.parametrize(
    "command",
    [
        {"command": "explode", "path": "/memories"},
        {"path": "/memories"},
        {"command": "view"},
        {"command": "create", "path": "/memories/a.md"},
        {"command": "insert", "path": "/memories/a.md", "insert_line": "2", "insert_text": "x"},
        {"command": "view", "path": "/memories/a.md", "view_range": "all"},
        {"command": "create", "path": "/memories/b.md", "file_text": "nul\x00"},
        {"command": "create", "path": "/memories/b.md", "file_text": "lone \ud800"},
    ],
)
def test_malformed_commands_are_tool_errors(repo: Repository, command: dict[str, Any]) -> None:
    """A command the model got wrong is a ToolError, never a foreign exception."""
    ours = tool(repo)
    ours.call(create("/memories/a.md", "a\n"))
    with pytest.raises(ToolError):
        ours.call(command)


def test_a_memory_store_is_refused(repo: Repository) -> None:
    """The tool will not write files into a store of memories, and the memory API will
    not write memories into a file store."""
    repo.mutate("notes", CLAUDE, lambda _: Change("create", "m", Memory("m", "d", "b")))
    with pytest.raises(InvalidArgument, match="holds memories, not files"):
        GitMemoryTool(repo, "notes", author=CLAUDE)
    tool(repo).call(create("/memories/a.md", "x"))
    with pytest.raises(InvalidArgument, match="is a file store"):
        repo.mutate(STORE, CLAUDE, lambda _: Change("create", "m", Memory("m", "d", "b")))
    assert repo.layout(STORE) == "files" and repo.layout("notes") == "memories"


def test_git_clone_shows_the_files(repo: Repository, tmp_path: Path) -> None:
    """A clone of the store's branch is the memory folder, byte for byte; gitmem check
    and git fsck --strict accept it."""
    ours = tool(repo)
    ours.call(create("/memories/notes.md", "# notes\r\n- é\n"))
    ours.call(create("/memories/projects/plan.md", "plan"))
    clone = tmp_path / "clone"
    done = subprocess.run(
        ["git", "clone", "-q", "--branch", STORE, repo.directory, str(clone)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert (clone / "memories" / "notes.md").read_bytes() == "# notes\r\n- é\n".encode()
    assert (clone / "memories" / "projects" / "plan.md").read_bytes() == b"plan"
    assert repo.check() == []
    assert_fsck(repo.directory)


# -- the SDK's tool runner, with a model played by a mock transport ----------------------

TURNS: list[list[dict[str, Any]]] = [
    [view("/memories")],
    [create("/memories/prefs.md", "- likes tea\n"), view("/memories/prefs.md")],
    [replace("/memories/prefs.md", "tea", "coffee"), insert("/memories/prefs.md", 1, "- early")],
    [rename("/memories/prefs.md", "/memories/user/prefs.md"), delete("/memories/ghost.md")],
    [delete("/memories/user/prefs.md")],
]


def _model(requests: list[dict[str, Any]]) -> httpx2.MockTransport:
    def handle(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        requests.append(body)
        turn = len(requests) - 1
        if turn < len(TURNS):
            content: list[dict[str, Any]] = [
                {"type": "tool_use", "id": f"toolu_{turn}_{i}", "name": "memory", "input": call}
                for i, call in enumerate(TURNS[turn])
            ]
            stop = "tool_use"
        else:
            content, stop = [{"type": "text", "text": "Noted."}], "end_turn"
        return httpx2.Response(
            200,
            json={
                "id": f"msg_{turn}",
                "type": "message",
                "role": "assistant",
                "model": "claude-test",
                "content": content,
                "stop_reason": stop,
                "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1},
            },
        )

    return httpx2.MockTransport(handle)


def test_the_sdk_tool_runner_drives_the_tool(repo: Repository) -> None:
    """client.beta.messages.tool_runner runs each tool call against the store and
    sends back the reference's texts; each write is one commit."""
    requests: list[dict[str, Any]] = []
    client = Anthropic(api_key="test", http_client=httpx2.Client(transport=_model(requests)))
    runner = client.beta.messages.tool_runner(
        model="claude-test",
        max_tokens=1024,
        messages=[{"role": "user", "content": "Remember that I like coffee."}],
        tools=[tool(repo)],
    )
    final = runner.until_done()
    assert final.content[0].type == "text"
    assert requests[0]["tools"] == [{"type": "memory_20250818", "name": "memory"}]
    results = [
        [
            (block.get("is_error", False), _text(block))
            for block in request["messages"][-1]["content"]
        ]
        for request in requests[1:]
    ]
    assert results == [
        [
            (
                False,
                "Here're the files and directories up to 2 levels deep in /memories, "
                "excluding hidden items:\n0B\t/memories",
            )
        ],
        [
            (False, "File created successfully at: /memories/prefs.md"),
            (
                False,
                "Here's the content of /memories/prefs.md with line numbers:\n"
                "     1\t- likes tea\n     2\t",
            ),
        ],
        [
            (
                False,
                "The memory file has been edited. Here is the snippet showing the change "
                "(with line numbers):\n     1\t- likes coffee\n     2\t",
            ),
            (False, "The file /memories/prefs.md has been edited."),
        ],
        [
            (False, "Successfully renamed /memories/prefs.md to /memories/user/prefs.md"),
            (True, "The path /memories/ghost.md does not exist"),
        ],
        [(False, "Successfully deleted /memories/user/prefs.md")],
    ]
    assert _subjects(repo, STORE) == [
        "delete memories/user/prefs.md",
        "rename memories/user/prefs.md, memories/prefs.md",
        "insert memories/prefs.md",
        "str-replace memories/prefs.md",
        "create memories/prefs.md",
    ]
    assert [r.text for r in repo.file_revisions(STORE, "memories/user/prefs.md")] == [
        "- likes coffee\n- early\n",
        "- likes coffee\n- early\n",
    ]


def _text(block: dict[str, Any]) -> str:
    content = block["content"]
    if isinstance(content, str):
        return content
    return "".join(part["text"] for part in content)


# -- the command line reads a file store -------------------------------------------------


def _cli(repo: Repository, *args: str) -> Any:
    from click.testing import CliRunner

    from gitmem.cli import cli

    return CliRunner().invoke(cli, ["--repo", repo.directory, *args])


def test_the_cli_shows_a_file_stores_history(repo: Repository) -> None:
    """gitmem ls, log, show --rev and revisions read the files the tool wrote; the
    memory-only commands refuse a file store in one line."""
    ours = tool(repo)
    ours.call(create("/memories/notes.md", "- tea\n"))
    ours.call(replace("/memories/notes.md", "tea", "coffee"))
    ours.call(rename("/memories/notes.md", "/memories/prefs.md"))
    listed = _cli(repo, "ls", "--json")
    assert listed.exit_code == 0, listed.output
    assert json.loads(listed.output) == [{"path": "memories/prefs.md", "chars": 9, "lines": 1}]
    log = _cli(repo, "log", "memories/notes.md", "-p")
    assert log.exit_code == 0, log.output
    assert [line.split()[1:3] for line in log.output.splitlines() if line[:1].isalnum()] == [
        ["rename", "memories/notes.md"],
        ["str-replace", "memories/notes.md"],
        ["create", "memories/notes.md"],
    ]
    assert "-- tea\n+- coffee\n" in log.output
    shown = _cli(repo, "show", "memories/notes.md", "--rev", "1")
    assert shown.output == "# memories/notes.md  revision 1\n- tea\n"
    gone = _cli(repo, "show", "memories/notes.md")
    assert gone.exit_code == 1 and "was removed at revision 3" in gone.output
    events = json.loads(_cli(repo, "revisions", "memories/prefs.md", "--json").output)
    assert [(e["type"], e["op"], e["text"]) for e in events] == [
        ("file_revision", "rename", "- coffee\n")
    ]
    stores = json.loads(_cli(repo, "stores", "--json").output)
    assert stores[0]["layout"] == "files" and stores[0]["count"] == 1
    state = _cli(repo, "state")
    assert state.exit_code == 1
    assert state.output.strip().endswith("`gitmem ls`, `gitmem log` and `gitmem show PATH`")
    assert _cli(repo, "check").output == "healthy\n"


@settings(derandomize=True, max_examples=300, deadline=None)
@given(text=st.text("ab\n", max_size=30), needle=st.text("ab\n", max_size=4))
def test_occurrence_lines_match_a_naive_search(text: str, needle: str) -> None:
    """Every occurrence, overlapping ones too, with the line it starts on."""
    from gitmem.adapters.anthropic import _occurrence_lines  # pyright: ignore[reportPrivateUsage]

    naive: list[int] = []
    start = 0
    while (pos := text.find(needle, start)) != -1:
        naive.append(text[:pos].count("\n") + 1)
        start = pos + 1
    assert _occurrence_lines(text, needle) == naive
