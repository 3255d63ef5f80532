"""A refusal names what the caller got wrong without echoing the argument back whole:
a tool name, an argument's name, a choice or a keyword of a million characters is cut
to a few dozen in the answer, a lone surrogate in one is escaped (the answer can always
be written out), and a search takes a bounded number of bounded keywords. Nothing a
refusal answers changes the repository."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import capability, tree_bytes

from gitmem import Agent, Repository
from gitmem.cli import cli
from gitmem.holder import Holder
from gitmem.lean.text import SHOWN, shown
from gitmem.search.index import KEYWORD_MAX, KEYWORDS_MAX

HUGE = "x" * 1_000_000
ANSWER_MAX = 2_000  # a refusal's text, whatever it was given


def _bind(repo: Repository, implementation: str = "keyword-search") -> Holder:
    holder = repo.bind(capability(implementation, "shared"), Agent("p", "p"))
    assert holder is not None
    return holder


def test_shown_cuts_quotes_and_escapes() -> None:
    """Short printable text as it is; long or unprintable text quoted, escaped, cut;
    numbers as they are; anything else by its type."""
    assert shown("owner") == "owner"
    assert shown("owner", quoted=True) == "'owner'"
    assert shown(HUGE) == repr("x" * SHOWN) + "..."
    assert shown("a\ud800") == "'a\\ud800'"
    assert shown("a\ud800").encode() == b"'a\\ud800'"
    assert shown("line\nbreak") == "'line\\nbreak'"
    assert (shown(5), shown(None), shown(True)) == ("5", "None", "True")
    assert shown(list(range(1_000_000))) == "a list"


@pytest.mark.parametrize(
    ("name", "arguments", "starts"),
    [
        (HUGE, {}, f"`{'x' * SHOWN}"),
        ("read_memory", dict.fromkeys((f"k{i}" for i in range(100_000)), 1), "read_memory does"),
        ("read_memory", {"name": "a", HUGE: 1}, "read_memory does not take"),
        ("read_memory", {"name": "a", "\ud800": 1}, "read_memory does not take '\\ud800'"),
    ],
)
def test_a_refusal_answers_in_a_few_lines_whatever_it_was_given(
    repo: Repository, name: str, arguments: dict[str, object], starts: str
) -> None:
    holder = _bind(repo)
    holder.call("create_memory", {"name": "a", "description": "d", "body": "b"})
    before = tree_bytes(repo.directory)
    result = holder.call(name, arguments)
    assert result.text.lstrip("`'").startswith(starts.lstrip("`'")), result.text[:200]
    assert len(result.text) < ANSWER_MAX
    result.text.encode()  # nothing that cannot be written out
    assert tree_bytes(repo.directory) == before


def test_a_search_that_finds_nothing_names_each_keyword_cut(repo: Repository) -> None:
    holder = _bind(repo)
    holder.call("create_memory", {"name": "a", "description": "d", "body": "b"})
    keywords = ["y" * KEYWORD_MAX] * KEYWORDS_MAX
    result = holder.call("search_memories", {"keywords": keywords})
    assert result.text == "No memory mentions " + ", ".join([f"`{shown(keywords[0])}`"] * 64) + "."


def test_unknown_arguments_are_named_a_few_and_counted(repo: Repository) -> None:
    result = _bind(repo).call("read_memory", {"name": "a", **{f"k{i}": 1 for i in range(9)}})
    assert result.text == (
        "read_memory does not take k0, k1, k2, k3, k4 and 4 more; its arguments are name"
    )


@pytest.mark.parametrize(
    ("keywords", "text"),
    [
        (["k"] * (KEYWORDS_MAX + 1), f"{KEYWORDS_MAX + 1} keywords were given; search with at"),
        (["k", "y" * (KEYWORD_MAX + 1)], "a keyword is 1,025 characters long; use at most 1024"),
    ],
)
def test_a_search_takes_a_bounded_number_of_bounded_keywords(
    repo: Repository, keywords: list[str], text: str
) -> None:
    holder = _bind(repo)
    holder.call("create_memory", {"name": "a", "description": "d", "body": "b"})
    within = [k[:KEYWORD_MAX] for k in keywords[:KEYWORDS_MAX]]
    assert holder.call("search_memories", {"keywords": within}).ok
    result = holder.call("search_memories", {"keywords": keywords})
    assert result.kind == "invalid-argument" and result.text.startswith(text)
    command = ["--repo", repo.directory, "search", *keywords]
    printed = CliRunner().invoke(cli, command)
    assert printed.exit_code != 0 and text in printed.output


def test_a_curated_choice_is_named_cut(repo: Repository) -> None:
    holder = _bind(repo, "curated")
    arguments = {"name": "r", "description": "Fact: x", "owner": HUGE, "body": "b"}
    result = holder.call("add_row", arguments)
    assert result.text == f"owner must be one of user, project, host, not {shown(HUGE)}"


def test_the_command_line_names_a_lone_surrogate_in_an_argument(repo: Repository) -> None:
    """``gitmem call`` with an argument named by a lone surrogate: one line that names
    it escaped, never an unexpected error."""
    cap = json.dumps(capability("markdown", "shared").to_dict())
    arguments = '{"name": "a", "description": "d", "body": "b", "\\ud800": 1}'
    command = ["--repo", repo.directory, "call", "create_memory", arguments]
    result = CliRunner().invoke(cli, [*command, "--capability", cap, "--profile", "p"])
    assert result.exit_code == 1
    assert "create_memory does not take '\\ud800'" in result.output
    assert "report" not in result.output
