"""``gitmem tools`` and ``gitmem call``: the holder's tools for harnesses in any language."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner, Result
from conftest import capability

from gitmem import Agent, Repository
from gitmem.adapters.schemas import drop_nulls, tool_definitions
from gitmem.cli import cli

CAP = json.dumps(capability("keyword-search", "shared", maxLenDescription=20).to_dict())


def run(repo: Repository, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--repo", repo.directory, *args])


@pytest.mark.parametrize("shape", ["anthropic", "openai", "mcp"])
def test_tools_in_each_shape(repo: Repository, shape: str) -> None:
    """`tools --format` prints the holder's definitions in the API's shape."""
    holder = repo.bind(
        capability("keyword-search", "shared", maxLenDescription=20), Agent("p", "p")
    )
    assert holder is not None
    result = run(repo, "tools", "--format", shape, "--capability", CAP, "--profile", "p")
    assert result.exit_code == 0, result.output
    printed = json.loads(result.output)
    assert printed == tool_definitions(holder.tools(), shape)
    names = [t["function"]["name"] if shape == "openai" else t["name"] for t in printed]
    assert names == list(holder.offered())


def test_openai_shape_is_strict() -> None:
    """Strict mode: every property required, optional ones nullable, nothing extra."""
    (tool,) = tool_definitions(
        [
            {
                "name": "create_memory",
                "description": "d",
                "input_schema": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}, "description": {"type": "string"}},
                    "required": ["name"],
                    "additionalProperties": False,
                },
            }
        ],
        "openai",
    )
    function = tool["function"]
    assert function["strict"] is True
    assert function["parameters"]["required"] == ["name", "description"]
    assert function["parameters"]["properties"]["description"]["type"] == ["string", "null"]
    assert function["parameters"]["properties"]["name"]["type"] == "string"
    assert drop_nulls({"name": "a", "description": None}) == {"name": "a"}


def test_call_prints_the_result_and_exits_1_on_refusal(repo: Repository) -> None:
    """`call` prints the holder's text; a refusal exits 1 with its kind on stderr."""
    args = ["--capability", CAP, "--profile", "p"]
    made = run(
        repo, "call", "create_memory", '{"name": "a", "description": null, "body": "x"}', *args
    )
    assert made.exit_code == 0, made.output
    assert made.stdout == "Created `a`.\n"
    again = run(repo, "call", "create_memory", '{"name": "a", "body": "x"}', *args)
    assert again.exit_code == 1
    assert again.stdout.startswith("a memory named `a` already exists")
    assert again.stderr == "Error: already-exists\n"
    as_json = run(repo, "call", "read_memory", '{"name": "a"}', "--json", *args)
    printed = json.loads(as_json.stdout)
    assert (printed["ok"], printed["kind"]) == (True, "ok")
    assert printed["text"].startswith("`a`") and printed["text"].endswith("\n\nx")


@pytest.mark.parametrize(
    ("arguments", "line"),
    [
        ("{", "Error: ARGUMENTS is not JSON; give a JSON object such as '{}'"),
        ("[]", "Error: ARGUMENTS must be a JSON object such as '{}'"),
        (
            "[" * 100_000 + "]" * 100_000,
            "Error: ARGUMENTS is not JSON; give a JSON object such as '{}'",
        ),
    ],
)
def test_call_with_bad_arguments_is_one_line(repo: Repository, arguments: str, line: str) -> None:
    """Arguments that are not a JSON object: one line, exit 1."""
    result = run(repo, "call", "read_memory", arguments, "--capability", CAP)
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [line]


def test_a_capability_nested_past_jsons_depth_is_one_line(repo: Repository) -> None:
    """A capability that nests deeper than json reads is refused as not JSON, in one line."""
    deep = '{"id": "memories", "scope": ' + "[" * 100_000 + "]" * 100_000 + "}"
    result = run(repo, "call", "read_memory", "{}", "--capability", deep)
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        "Error: launch refused: the configuration is not valid JSON: it is nested too deeply"
    ]
