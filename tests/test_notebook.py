"""The notebook strategy: one file rewritten whole, every version kept for
the operator, the agent shown only the live text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from conftest import capability

from gitmem import Agent, Author, InvalidArgument, LimitExceeded, Repository, StaleRevision, ops
from gitmem.cli import cli
from gitmem.holder import Holder
from gitmem.strategies.notebook import SLUG

OPERATOR = Author("Ada Operator", "ada@example.org")


def bind(repo: Repository, instance: str = "nb-1", scope: str = "shared", **limits: int) -> Holder:
    holder = repo.bind(capability("notebook", scope, **limits), Agent("routine", instance))
    assert holder is not None
    return holder


def commits(repo: Repository, store: str) -> int:
    return sum(1 for _ in repo.iter_commits(store))


def test_one_tool_that_replaces_the_file_whole(repo: Repository) -> None:
    """memory_write is the one tool; it replaces the whole text and answers the path."""
    holder = bind(repo)
    assert [t["name"] for t in holder.tools()] == ["memory_write"]
    assert holder.tools()[0]["input_schema"]["required"] == ["content"]
    first = holder.call("memory_write", {"content": "# Pending\n- reply to Bo\n"})
    assert (first.ok, first.kind, first.text) == (True, "ok", "memory.md")
    holder.call("memory_write", {"content": "# Pending\nnothing\n"})
    assert repo.snapshot(holder.store_id).slugs() == [SLUG]
    assert repo.snapshot(holder.store_id).get(SLUG).body == "# Pending\nnothing\n"  # type: ignore[union-attr]


@pytest.mark.parametrize(("param", "cap"), [(0, 12_000), (500, 500)])
def test_over_the_cap_the_exact_refusal(repo: Repository, param: int, cap: int) -> None:
    """Over the cap (maxLenPerMemory; 12,000 when it is 0) the answer is exact and nothing is written."""
    holder = bind(repo, maxLenPerMemory=param)
    assert holder.call("memory_write", {"content": "x" * cap}).ok
    head = repo.head(holder.store_id)
    refused = holder.call("memory_write", {"content": "y" * (cap + 1)})
    assert (refused.ok, refused.kind) == (False, "limit-exceeded")
    assert refused.text == f"ERROR: memory exceeds {cap} characters"
    assert repo.head(holder.store_id) == head


def test_an_identical_write_is_a_no_op(repo: Repository) -> None:
    """Byte-identical content writes no commit; so does an empty write to an empty notebook."""
    holder = bind(repo)
    assert holder.call("memory_write", {"content": ""}).ok
    assert repo.head(holder.store_id) is None
    holder.call("memory_write", {"content": "same\n"})
    head = repo.head(holder.store_id)
    again = holder.call("memory_write", {"content": "same\n"})
    assert again.ok and "unchanged" in again.text
    assert repo.head(holder.store_id) == head
    assert commits(repo, holder.store_id) == 1
    assert holder.call("memory_write", {"content": "same"}).ok  # one byte differs
    assert commits(repo, holder.store_id) == 2


def test_delete_is_refused(repo: Repository) -> None:
    """No tool deletes the notebook, and an operator delete is refused."""
    holder = bind(repo)
    holder.call("memory_write", {"content": "keep\n"})
    assert holder.call("delete_memory", {"name": SLUG}).kind == "unavailable"
    with pytest.raises(InvalidArgument, match="cannot delete this file"):
        ops.delete(repo, holder.store_id, OPERATOR, SLUG)
    with pytest.raises(InvalidArgument, match="gitmem notebook save"):
        ops.edit(repo, holder.store_id, OPERATOR, SLUG, body="x")


def test_the_memory_section_with_the_tool(repo: Repository) -> None:
    """With memory_write offered: the write rules, the one test, what passes and what does
    not (secrets included), then the live text; earlier versions are never shown."""
    writer = bind(repo, "nb-0")
    writer.call("memory_write", {"content": "old version\n"})
    writer.call("memory_write", {"content": "- resume at step 4\n"})
    prompt = bind(repo).system_prompt()
    assert prompt.startswith("<memory>\n### Your Memory\n")
    assert prompt.endswith("- resume at step 4\n</memory>\n")
    for phrase in (
        "memory_write rewrites it",
        "at most 12000 characters",
        "The Task stays as the operator wrote it",
        "write only when the next run would make a mistake, repeat work, or waste steps",
        "where to resume",
        "a log of the run",
        "secrets",
        "a write replaces the whole file",
    ):
        assert phrase.lower() in prompt.lower(), phrase
    assert "old version" not in prompt


def test_the_memory_section_with_the_tool_off(repo: Repository) -> None:
    """With the tool bound off (a read-only holder): the short form, without the tool's name."""
    owner = bind(repo, "boss", scope="isolated")
    owner.call("memory_write", {"content": "the owner's notes\n"})
    reader = repo.bind(
        capability("notebook", "read-only"),
        Agent("helper", "h-1", "subagent", spawner=owner),
    )
    assert reader is not None and not reader.writable
    assert reader.tools() == []
    prompt = reader.system_prompt()
    assert "memory_write" not in prompt
    assert "a private place for whatever future runs should remember" in prompt
    assert "no required format" in prompt
    assert prompt.endswith("the owner's notes\n</memory>\n")
    assert reader.call("memory_write", {"content": "x"}).kind == "read-only"


def test_the_memory_switch_off(repo: Repository) -> None:
    """A disabled capability: no holder, so no section and no tool."""
    assert repo.bind(capability("notebook", enabled=False), Agent("routine", "x")) is None


def test_the_section_keeps_its_text_until_a_compaction(repo: Repository) -> None:
    """A run keeps the section it started with (nothing else pins); a compaction renews it."""
    holder = bind(repo)
    holder.call("memory_write", {"content": "before\n"})
    first = holder.system_prompt()
    holder.call("memory_write", {"content": "after\n"})
    assert holder.system_prompt() == first
    assert holder.pinned_block() == ""
    holder.compact()
    assert holder.system_prompt().endswith("after\n</memory>\n")


def test_an_operator_save_between_two_agent_writes(repo: Repository) -> None:
    """Both versions stay in the timeline, newest first, each with its author and line counts."""
    holder = bind(repo)
    holder.call("memory_write", {"content": "a\nb\n"})
    text, version = ops.notebook_text(repo, holder.store_id)
    assert (text, version) == ("a\nb\n", 1)
    saved = ops.notebook_save(repo, holder.store_id, OPERATOR, "a\nB\nc\n", expected=version)
    assert saved is not None and saved.op == "save"
    holder.call("memory_write", {"content": "a\nB\nc\nd\n"})
    rows = ops.notebook_timeline(repo, holder.store_id)
    assert [(r["version"], r["author"], r["added"], r["removed"]) for r in rows] == [
        (3, "nb-1", 1, 0),
        (2, "Ada Operator", 2, 1),
        (1, "nb-1", 2, 0),
    ]
    assert [r["live"] for r in rows] == [True, False, False]
    assert [r.body for r in repo.revisions(holder.store_id, SLUG)][:2] == ["a\nb\n", "a\nB\nc\n"]


def test_an_operator_save_never_silently_discards_the_agents_version(repo: Repository) -> None:
    """A save based on an older version is refused, and nothing is written."""
    holder = bind(repo)
    holder.call("memory_write", {"content": "one\n"})
    holder.call("memory_write", {"content": "two\n"})
    head = repo.head(holder.store_id)
    with pytest.raises(StaleRevision, match="at revision 2, not 1"):
        ops.notebook_save(repo, holder.store_id, OPERATOR, "mine\n", expected=1)
    assert repo.head(holder.store_id) == head
    assert ops.notebook_save(repo, holder.store_id, OPERATOR, "two\n") is None  # identical


def test_the_operator_cap_is_256_kb(repo: Repository) -> None:
    """An operator may save more than the agent's 12,000 characters, up to 256 KB."""
    holder = bind(repo)
    holder.call("memory_write", {"content": "x\n"})
    assert ops.notebook_save(repo, holder.store_id, OPERATOR, "o" * 262_144) is not None
    with pytest.raises(LimitExceeded, match="256 KB"):
        ops.notebook_save(repo, holder.store_id, OPERATOR, "o" * 262_145)


def test_notices_carry_the_text_and_telemetry_counts_it(repo: Repository) -> None:
    """A shared notebook: the other holder's notice carries the live text; state and
    revisions report the one file."""
    one, two = bind(repo, "nb-1"), bind(repo, "nb-2")
    assert two.notices() is None
    one.call("memory_write", {"content": "line one\nline two\n"})
    notice = two.notices()
    assert notice is not None and "- added `memory`\n  line one\n  line two" in notice
    state = two.state()
    assert state["totals"] == {"count": 1, "chars": 18, "lines": 2}
    assert [(e["op"], e["author"]) for e in two.revisions()] == [("write", "nb-1")]


def test_a_fork_copies_an_isolated_notebook(repo: Repository) -> None:
    """An isolated notebook is copied by a fork and the two diverge."""
    holder = bind(repo, "solo", scope="isolated")
    holder.call("memory_write", {"content": "shared past\n"})
    fork = holder.fork("solo-2")
    fork.call("memory_write", {"content": "fork's own\n"})
    assert ops.notebook_text(repo, holder.store_id)[0] == "shared past\n"
    assert ops.notebook_text(repo, fork.store_id)[0] == "fork's own\n"


def test_a_program_writes_the_notebook(repo: Repository) -> None:
    """Under responses-as-code the call is memories.memoryWrite."""
    holder = bind(repo)
    try:
        result = holder.run_program(
            'import { memories } from "gitmem";\n'
            'console.log(memories.memoryWrite({ content: "from a program\\n" }));\n'
        )
    finally:
        holder.close()
    assert result.ok, result.error
    assert result.output == "memory.md\n"
    assert ops.notebook_text(repo, holder.store_id)[0] == "from a program\n"


def test_the_operator_commands(repo: Repository, tmp_path: Path) -> None:
    """gitmem notebook show/save/timeline and log --stat, as thin skins over ops."""
    holder = bind(repo)
    holder.call("memory_write", {"content": "a\nb\n"})

    def run(*args: str) -> Result:
        return CliRunner().invoke(cli, ["--repo", repo.directory, *args])

    assert run("notebook", "show").stdout == "a\nb\n"
    saved = tmp_path / "memory.md"
    saved.write_text("a\nc\n")
    me = "Ada Operator <ada@example.org>"
    stale = run("notebook", "save", str(saved), "--expect", "0", "--author", me)
    assert stale.exit_code == 1 and "at revision 1, not 0" in stale.stderr
    assert run("notebook", "save", str(saved), "--expect", "1", "--author", me).exit_code == 0
    assert run("notebook", "save", str(saved)).stdout.startswith("unchanged")
    rows = json.loads(run("notebook", "timeline", "--json").stdout)
    assert [(r["author"], r["added"], r["removed"]) for r in rows] == [
        ("Ada Operator", 1, 1),
        ("nb-1", 2, 0),
    ]
    assert "+1 -1" in run("log", "--stat").stdout.splitlines()[0]
    refused = run("delete", SLUG)
    assert refused.exit_code == 1 and "cannot delete this file" in refused.stderr
