"""Write guards as code: a store's ``@guard.ts`` judges every write in the sandbox
(tool calls, programs, the CLI; the push is in ``test_githooks``), and a broken guard
refuses, never accepts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace

import pytest
from click.testing import CliRunner
from conftest import assert_fsck, capability, tree_bytes

from gitmem import Agent, Holder, Repository, ops
from gitmem.cli import cli
from gitmem.errors import GuardFailed, GuardRefused, InvalidArgument, LimitExceeded
from gitmem.guard import Guards
from gitmem.lean.heads import CAPABILITY_TRAILER
from gitmem.limits import Limits
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


def test_guard_and_allowlist_commits_keep_the_limits_the_store_records(repo: Repository) -> None:
    """Setting or clearing a guard and admitting a fingerprint change no memory and no
    limit: the store still records the limits its binding wrote under, so an operator's
    write after them is held to those limits as before."""
    held = replace(capability("markdown", "shared"), limits=Limits(max_len_per_memory=100))
    bound = repo.bind(held, Agent("p", "i", started_as="root"))
    assert bound is not None
    bound.call("create_memory", {"name": "a", "description": "d", "body": "b"})
    bound.close()
    store = bound.store_id
    before = repo.snapshot(store).trailers[CAPABILITY_TRAILER]
    assert repo.set_guard(store, NO_TODO, ME) is not None
    assert repo.allow(store, "3f5a0c9e1b2d4e6f", "a sample key", ME) is not None
    assert repo.set_guard(store, None, ME) is not None
    assert repo.snapshot(store).trailers[CAPABILITY_TRAILER] == before
    with pytest.raises(LimitExceeded):
        ops.create(repo, store, ME, "big", "d", "x" * 5000)


COUNTS = """
let seen = 0;
export function check(change: { body: string | null }): string | undefined {
  seen += 1;
  if (change.body === "count") return `check ${seen}`;
}
"""
STALE = """
let seen = 0;
export function check(change: unknown): undefined {
  seen += 1;
  if (seen > 1) throw new Error("stale state");
}
"""
PATCHES = """
export function check(change: { body: string | null }): string | undefined {
  if (change.body === "global") (globalThis as any).leak = 1;
  if (change.body === "proto") (Object.prototype as any).leak = 1;
  return (globalThis as any).leak ?? ({} as any).leak ? "leaked" : undefined;
}
"""
LATE = """
let late = false;
export function check(change: unknown): string | undefined {
  if (late) return "a timer of an earlier check ran";
  setTimeout(() => { late = true; }, 0);
  setInterval(() => { late = true; }, 1);
}
"""


def _change(store: str, body: str = "b") -> dict[str, object]:
    return {"store": store, "op": "create", "slug": "s", "body": body}


def test_a_guard_keeps_one_worker_per_store_and_text() -> None:
    """A store's checks share the guard's worker (its module state carries on); another
    store, another repository's guards or another text start from a fresh load."""
    first, second = Guards(), Guards()
    try:
        first.check(COUNTS, _change("a"))
        with pytest.raises(GuardRefused, match="check 2"):
            first.check(COUNTS, _change("a", "count"))
        with pytest.raises(GuardRefused, match="check 1"):
            first.check(COUNTS, _change("b", "count"))
        with pytest.raises(GuardRefused, match="check 1"):
            second.check(COUNTS, _change("a", "count"))
        with pytest.raises(GuardRefused, match="check 1"):
            first.check(COUNTS + "\n", _change("a", "count"))
    finally:
        first.close()
        second.close()


def test_a_failure_in_a_shared_worker_is_asked_again_of_a_fresh_one() -> None:
    """A check that fails where an earlier check ran is not believed: a fresh worker
    answers, and its answer stands."""
    guards = Guards()
    try:
        for _ in range(3):
            guards.check(STALE, _change("a"))
        with pytest.raises(GuardFailed, match="guard bug"):
            guards.check(THROWS, _change("a"))
    finally:
        guards.close()


def test_a_check_leaves_nothing_for_the_next() -> None:
    """Globals and Object.prototype are frozen for checks, and their timers end with
    them: no check changes what the next one sees."""
    guards = Guards()
    try:
        for body in ("global", "proto"):
            with pytest.raises(GuardFailed, match="TypeError"):
                guards.check(PATCHES, _change("a", body))
            guards.check(PATCHES, _change("a"))
        for _ in range(3):
            guards.check(LATE, _change("a"))
    finally:
        guards.close()
