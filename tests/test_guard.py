"""Write guards as code: a store's ``@guard.ts`` judges every write in the sandbox
(tool calls, programs, the CLI; the push is in ``test_githooks``), and a broken guard
refuses, never accepts."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from click.testing import CliRunner
from conftest import assert_fsck, capability, tree_bytes

from gitmem import Agent, Holder, Repository, ops
from gitmem.cli import cli
from gitmem.errors import GuardFailed, GuardRefused, InvalidArgument
from gitmem.sandbox import Sandbox
from gitmem.types import Author

ME = Author("Operator", "op@example.com")

NO_TODO = """
export function check(change: { body: string | null }): string | undefined {
  if (change.body !== null && change.body.includes("TODO")) return "no TODO in bodies";
}
"""
LOOPS = "export function check(change: unknown) { while (true) {} }\n"
THROWS = "export function check(change: unknown) { throw new Error('guard bug'); }\n"
READS = "export function check(change: unknown) { return Deno.readTextFileSync('/etc/passwd'); }\n"
NUMBER = "export function check(change: unknown) { return 42; }\n"
ECHO = "export function check(change: unknown) { return JSON.stringify(change); }\n"


@pytest.fixture
def holder(repo: Repository) -> Iterator[Holder]:
    bound = repo.bind(capability("markdown", "shared"), Agent("p", "i", started_as="root"))
    assert bound is not None
    bound.use_sandbox(Sandbox(time_limit=5.0))
    yield bound
    bound.close()


def _guarded(repo: Repository, holder: Holder, source: str) -> str:
    ops.create(repo, holder.store_id, ME, "seed", "first", "first memory\n")
    assert repo.set_guard(holder.store_id, source, ME) is not None
    return holder.store_id


def test_guard_refuses_a_tool_call_in_the_limit_voice(repo: Repository, holder: Holder) -> None:
    """A TODO body is refused as limit-exceeded with the guard's message; others pass."""
    store = _guarded(repo, holder, NO_TODO)
    before = tree_bytes(repo.directory)
    result = holder.call("create_memory", {"name": "n", "description": "d", "body": "TODO: x"})
    assert (result.ok, result.kind) == (False, "limit-exceeded")
    assert result.text == "refused by the store's guard: no TODO in bodies. Nothing was written."
    assert tree_bytes(repo.directory) == before
    assert holder.call("create_memory", {"name": "n", "description": "d", "body": "done"}).ok
    assert repo.snapshot(store).get("n") is not None


def test_guard_refuses_a_program(repo: Repository, holder: Holder) -> None:
    """memories.* from a program: the call throws the guard's refusal."""
    store = _guarded(repo, holder, NO_TODO)
    result = holder.run_program(
        'import { memories } from "gitmem";\n'
        "try { memories.createMemory({name: 'n', description: 'd', body: 'a TODO'}); }\n"
        "catch (e) { console.log(String(e)); }\n"
    )
    assert "no TODO in bodies" in result.output
    assert repo.snapshot(store).get("n") is None


def test_guard_refuses_an_operator_edit_through_the_cli(repo: Repository, holder: Holder) -> None:
    """`gitmem edit` is held to the guard too: exit 1, the guard's message."""
    store = _guarded(repo, holder, NO_TODO)
    result = CliRunner().invoke(
        cli,
        [
            "--repo",
            repo.directory,
            "edit",
            "seed",
            "--store",
            store,
            "--old",
            "first",
            "--new",
            "TODO",
        ],
    )
    assert result.exit_code == 1
    assert result.output == (
        "Error: refused by the store's guard: no TODO in bodies. Nothing was written.\n"
    )
    assert repo.snapshot(store).get("seed") is not None
    assert "TODO" not in repo.snapshot(store).get("seed").body  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("source", "why"),
    [
        (LOOPS, "time limit"),
        (THROWS, "guard bug"),
        (READS, ""),
        (NUMBER, "returned a number"),
    ],
    ids=["infinite-loop", "throws", "reads-a-file", "returns-a-number"],
)
def test_a_broken_guard_refuses_as_io_error(
    repo: Repository, holder: Holder, source: str, why: str
) -> None:
    """A guard that loops, throws, reaches for a file or answers nonsense refuses the
    write as io-error (the guard's defect), never accepts it; the holder goes on."""
    store = _guarded(repo, holder, source)
    before = tree_bytes(repo.directory)
    result = holder.call("create_memory", {"name": "n", "description": "d", "body": "fine"})
    assert (result.ok, result.kind) == (False, "io-error")
    assert "guard" in result.text and why in result.text
    assert tree_bytes(repo.directory) == before
    assert holder.call("read_memory", {"name": "seed"}).ok
    repo.set_guard(store, None, ME)
    assert holder.call("create_memory", {"name": "n", "description": "d", "body": "fine"}).ok


def test_reading_a_file_is_denied_not_answered(repo: Repository) -> None:
    """The guard runs with no permission: the file read throws inside the sandbox."""
    with pytest.raises(GuardFailed) as caught:
        repo.guards.check(READS, {"store": "s", "op": "create"})
    assert "root:" not in str(caught.value)


def test_the_change_shape(repo: Repository, holder: Holder) -> None:
    """check(change) is handed {store, op, slug, description, body, code, onUse, author}."""
    store = _guarded(repo, holder, ECHO)
    result = holder.call("create_memory", {"name": "n", "description": "d", "body": "b"})
    seen = json.loads(
        result.text.removeprefix("refused by the store's guard: ").removesuffix(
            ". Nothing was written."
        )
    )
    assert seen == {
        "store": store,
        "op": "create",
        "slug": "n",
        "description": "d",
        "body": "b",
        "code": "",
        "onUse": "",
        "author": "i",
    }
    with pytest.raises(GuardRefused, match='"op":"delete","slug":"seed","description":null'):
        ops.delete(repo, store, ME, "seed")


def test_set_guard_refuses_code_that_does_not_compile(repo: Repository) -> None:
    """A guard that does not compile is refused with a located diagnostic; nothing set."""
    ops.create(repo, "notes", ME, "a", "d", "b\n")
    head = repo.head("notes")
    with pytest.raises(InvalidArgument, match=r"the guard does not compile: \d+:\d+"):
        repo.set_guard("notes", "export function check( {", ME)
    assert repo.head("notes") == head


def test_guard_is_versioned_in_the_store(repo: Repository) -> None:
    """Setting and clearing the guard are commits of the store; revisions, state and
    health are unmoved; the CLI shows it."""
    ops.create(repo, "notes", ME, "a", "d", "b\n")
    runner = CliRunner()
    path = repo.directory
    guard_file = f"{path}/../no-todo.ts"
    with open(guard_file, "w") as f:
        f.write(NO_TODO)
    result = runner.invoke(cli, ["--repo", path, "guard", "set", "--store", "notes", guard_file])
    assert (result.exit_code, result.output) == (0, "guard of notes set\n")
    shown = runner.invoke(cli, ["--repo", path, "guard", "show", "--store", "notes"])
    assert shown.output == NO_TODO
    with pytest.raises(GuardRefused):
        ops.create(repo, "notes", ME, "b", "d", "TODO\n")
    result = runner.invoke(cli, ["--repo", path, "guard", "clear", "--store", "notes"])
    assert (result.exit_code, result.output) == (0, "guard of notes removed\n")
    ops.create(repo, "notes", ME, "b", "d", "TODO\n")
    assert [r.slug for r in repo.revisions("notes")] == ["a", "b"]
    assert repo.snapshot("notes").totals.count == 2
    assert repo.check() == []
    assert_fsck(repo.directory)
