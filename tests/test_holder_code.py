"""Code memories through a holder: load rules, module keys, programs, onUse and faults."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from conftest import tree_bytes

from gitmem import Agent, Capability, Holder, InternalError, Repository
from gitmem.sandbox import Sandbox

CSV_CODE = """export function parseCsv(text: string): string[][] {
  return text.trim().split("\\n").map((l) => l.split(",").map((c) => c.replace(/^"|"$/g, "")));
}
"""
ON_USE = 'views.openText("csv-notes", "Row 1 is a header on exports after March.");'


def capability(implementation: str, scope: str = "isolated") -> Capability:
    return Capability.from_dict(
        {
            "implementation": implementation,
            "params": {
                "scope": scope,
                "maxCount": 0,
                "maxLenPerMemory": 0,
                "maxTotalLen": 0,
                "maxLenIndex": 0,
                "maxLenDescription": 0,
                "maxResults": 10,
            },
        }
    )


@pytest.fixture
def holders(repo: Repository) -> Iterator[list[Holder]]:
    """Holders made by a test; their Deno processes stop afterwards."""
    made: list[Holder] = []
    yield made
    for holder in made:
        holder.close()


def bind(repo: Repository, holders: list[Holder], implementation: str, **agent: str) -> Holder:
    holder = repo.bind(
        capability(implementation, agent.pop("scope", "isolated")),
        Agent(agent.pop("profile", "p"), agent.pop("instance", "i"), **agent),  # type: ignore[arg-type]
    )
    assert holder is not None
    holder.use_sandbox(Sandbox(time_limit=3.0))
    holders.append(holder)
    return holder


def write_program(call: str, **fields: str) -> str:
    return f'import {{ memories }} from "gitmem";\nconsole.log(memories.{call}({json.dumps(fields)}));\n'


def test_csv_tools_end_to_end(repo: Repository, holders: list[Holder]) -> None:
    """The csv-tools example: written with code, documented, imported, and its onUse view next turn."""
    holder = bind(repo, holders, "scratchpad")
    stored = holder.run_program(
        write_program(
            "writeMemory",
            name="csv-tools",
            description="Parsing the vendor CSV exports.",
            body="parseCsv handles both quotings.",
            code=CSV_CODE,
            onUse=ON_USE,
        )
    )
    assert stored.ok, stored
    docs = holder.take_views()
    assert [v.title for v in docs] == ["csvTools.parseCsv"]
    assert "parseCsv(text: string): string[][]" in docs[0].text
    assert 'import { csvTools } from "gitmem";' in docs[0].text

    used = holder.run_program(
        'import { csvTools } from "gitmem";\n'
        "console.log(JSON.stringify(csvTools.parseCsv('a,\"b\"\\nc,d')));"
    )
    assert used.output == '[["a","b"],["c","d"]]\n'
    assert holder.take_views() == []  # onUse runs after the turn, not during it
    holder.end_turn()
    views = holder.take_views()
    assert [(v.title, v.text) for v in views] == [
        ("csv-notes", "Row 1 is a header on exports after March.")
    ]
    holder.end_turn()
    assert holder.take_views() == []  # once per use, not every turn


def test_scratchpad_refuses_a_write_whose_code_does_not_compile(
    repo: Repository, holders: list[Holder]
) -> None:
    """Under scratchpad the write loads, so broken code is refused with a located diagnostic."""
    holder = bind(repo, holders, "scratchpad")
    before = tree_bytes(repo.directory)
    result = holder.run_program(
        write_program(
            "writeMemory", name="bad", description="d", body="b", code="export function ("
        )
    )
    assert not result.ok
    assert result.error is not None and "1:17:" in result.error
    assert "nothing was written" in result.error
    assert tree_bytes(repo.directory) == before


@pytest.mark.parametrize("implementation", ["markdown", "keyword-search"])
def test_file_strategies_load_on_read_and_append_the_diagnostic(
    repo: Repository, holders: list[Holder], implementation: str
) -> None:
    """Markdown and keyword-search store the code, and a read returns the body plus the diagnostic."""
    holder = bind(repo, holders, implementation)
    assert holder.run_program(
        write_program(
            "createMemory", name="bad", description="d", body="the body", code="let x = ;"
        )
    ).ok
    read = holder.call("read_memory", {"name": "bad"})
    assert read.ok
    assert read.text.startswith("`bad` — d\n\nthe body")
    assert "does not compile: 1:9:" in read.text


def test_code_loads_on_read_not_before(repo: Repository, holders: list[Holder]) -> None:
    """Under markdown a module can be imported only once its memory has been read."""
    holder = bind(repo, holders, "markdown")
    assert holder.run_program(
        write_program("createMemory", name="csv-tools", description="d", body="b", code=CSV_CODE)
    ).ok
    program = 'import { csvTools } from "gitmem";\nconsole.log(csvTools.parseCsv("x,y")[0][1]);'
    assert not holder.run_program(program).ok
    assert holder.call("read_memory", {"name": "csv-tools"}).ok
    assert [v.title for v in holder.take_views()] == ["csvTools.parseCsv"]
    assert holder.run_program(program).output == "y\n"


def test_module_keys_are_camel_case_and_made_unique(
    repo: Repository, holders: list[Holder]
) -> None:
    """csv-tools and csv_tools.x load as csvTools and csvToolsX; csv.tools then as csvTools2."""
    holder = bind(repo, holders, "markdown")
    for slug in ("csv-tools", "csv_tools.x", "csv.tools"):
        code = f'export function name(): string {{ return "{slug}"; }}'
        assert holder.run_program(
            write_program("createMemory", name=slug, description="d", body="b", code=code)
        ).ok
        assert holder.call("read_memory", {"name": slug}).ok
    assert holder.modules() == {
        "csvTools": "csv-tools",
        "csvToolsX": "csv_tools.x",
        "csvTools2": "csv.tools",
    }
    result = holder.run_program(
        'import { csvTools2 } from "gitmem";\nconsole.log(csvTools2.name());'
    )
    assert result.output == "csv.tools\n"


def test_native_schemas_carry_no_code_and_native_updates_keep_it(
    repo: Repository, holders: list[Holder]
) -> None:
    """Native tools have no code fields; a native update keeps the code, a code-mode one clears it."""
    holder = bind(repo, holders, "scratchpad")
    for tool in holder.tools():
        assert not {"code", "onUse", "on_use"} & set(tool["input_schema"]["properties"])
    refused = holder.call(
        "write_memory", {"name": "m", "description": "d", "body": "b", "code": "x"}
    )
    assert refused.kind == "invalid-argument"
    assert holder.run_program(
        write_program("writeMemory", name="m", description="d", body="b", code=CSV_CODE)
    ).ok
    assert holder.call("update_memory", {"name": "m", "body": "new body"}).ok
    assert repo.snapshot(holder.store_id).get("m").code == CSV_CODE  # type: ignore[union-attr]
    assert holder.run_program(write_program("updateMemory", name="m", body="newer")).ok
    assert repo.snapshot(holder.store_id).get("m").code == ""  # type: ignore[union-attr]


def test_a_call_the_strategy_does_not_offer_throws_the_unavailable_text(
    repo: Repository, holders: list[Holder]
) -> None:
    """A program's memories call the strategy lacks throws an Error with the native refusal."""
    holder = bind(repo, holders, "markdown")
    native = holder.call("search_memories", {"keywords": ["x"]})
    result = holder.run_program(
        'import { memories } from "gitmem";\nmemories.searchMemories({ keywords: ["x"] });'
    )
    assert not result.ok
    assert result.error is not None and native.text in result.error


def test_memories_lists_the_holders_calls_as_programs_name_them(
    repo: Repository, holders: list[Holder]
) -> None:
    """Object.keys(memories) is the holder's offered calls in camel case, in order."""
    holder = bind(repo, holders, "markdown")
    result = holder.run_program(
        'import { memories } from "gitmem";\n'
        'console.log(Object.keys(memories).join(), "readMemory" in memories);'
    )
    camel = [
        n.split("_")[0] + "".join(p.title() for p in n.split("_")[1:]) for n in holder.offered()
    ]
    assert "readMemory" in camel
    assert result.output == f"{','.join(camel)} true\n"


def test_on_use_runs_on_the_holders_own_grants(repo: Repository, holders: list[Holder]) -> None:
    """A read-only holder's onUse script cannot write: the write is refused as read-only."""
    owner = bind(repo, holders, "markdown", instance="owner")
    on_use = (
        'try { memories.createMemory({ name: "sneaky", description: "d", body: "b" }); '
        'views.openText("wrote", "yes"); } '
        'catch (e) { views.openText("refused", String(e.message)); }'
    )
    assert owner.run_program(
        write_program(
            "createMemory", name="tool", description="d", body="b", code=CSV_CODE, onUse=on_use
        )
    ).ok
    reader = bind(
        repo, holders, "markdown", instance="reader", scope="read-only", started_as="subagent"
    )
    assert reader.store_id == "instance/reader"  # no spawner: its own store, writable
    reader = repo.bind(
        capability("markdown", "read-only"), Agent("p", "sub", "subagent", spawner=owner)
    )
    assert reader is not None and not reader.writable
    holders.append(reader)
    assert reader.call("read_memory", {"name": "tool"}).ok
    reader.take_views()
    reader.end_turn()
    views = reader.take_views()
    assert [v.title for v in views] == ["refused"]
    assert "another agent's" in views[0].text
    assert "sneaky" not in repo.snapshot(owner.store_id)


def test_modules_survive_compaction_but_not_a_fork_or_successor(
    repo: Repository, holders: list[Holder]
) -> None:
    """A compaction keeps loaded modules; a fork and a successor start with none."""
    holder = bind(repo, holders, "scratchpad")
    assert holder.run_program(
        write_program("writeMemory", name="csv-tools", description="d", body="b", code=CSV_CODE)
    ).ok
    holder.compact()
    assert holder.modules() == {"csvTools": "csv-tools"}
    fork = holder.fork("i-fork")
    holders.append(fork)
    assert fork.modules() == {}
    successor = holder.succeed(Agent("p", "i-next"), capability("scratchpad"))
    assert successor is not None
    holders.append(successor)
    assert successor.modules() == {}


def test_code_over_its_limit_is_refused_before_compiling(
    repo: Repository, holders: list[Holder]
) -> None:
    """A code half over 32,768 characters is refused in the limit-exceeded voice."""
    holder = bind(repo, holders, "scratchpad")
    result = holder.run_program(
        write_program("writeMemory", name="big", description="d", body="b", code="x" * 32_769)
    )
    assert not result.ok
    assert result.error is not None and "32,769" in result.error and "32,768" in result.error


def test_a_loader_crash_is_an_io_error_and_the_next_call_works(
    repo: Repository, holders: list[Holder], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sandbox crash refuses the call as io-error, records the defect, and recovers."""
    holder = bind(repo, holders, "markdown")
    assert holder.run_program(
        write_program("createMemory", name="csv-tools", description="d", body="b", code=CSV_CODE)
    ).ok

    def crash(key: str, source: str) -> list[object]:
        raise InternalError("the sandbox runtime died")

    monkeypatch.setattr(holder.loader, "load", crash)
    result = holder.call("read_memory", {"name": "csv-tools"})
    assert (result.ok, result.kind) == (False, "io-error")
    assert "died" not in result.text  # crash detail is for the operator, not the model
    assert isinstance(holder.defect, InternalError)
    monkeypatch.undo()
    assert holder.call("read_memory", {"name": "csv-tools"}).ok
