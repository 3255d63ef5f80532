"""The three strategies: their tools, the revise switch, read-only holders, editing, limits, search."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from conftest import capability

from gitmem import Agent, Capability, Holder, Repository
from gitmem.limits import LIMITS

STRATEGIES = ("scratchpad", "markdown", "keyword-search")
TOOLS = {
    "scratchpad": ["write_memory", "update_memory", "delete_memory"],
    "markdown": ["create_memory", "read_memory", "edit_memory", "delete_memory"],
    "keyword-search": [
        "create_memory",
        "read_memory",
        "edit_memory",
        "delete_memory",
        "search_memories",
    ],
}
READ_CALLS = {
    "scratchpad": [],
    "markdown": ["read_memory"],
    "keyword-search": ["read_memory", "search_memories"],
}
REVISE_CALLS = {"update_memory", "edit_memory", "delete_memory"}
ALL_CALLS = sorted({c for calls in TOOLS.values() for c in calls})
SIX = LIMITS


def cap(
    implementation: str = "markdown", scope: str = "isolated", revise: bool = True, **limits: int
) -> Capability:
    return capability(implementation, scope, revise=revise, **limits)


def bind(repo: Repository, capability: Capability, instance: str = "a") -> Holder:
    holder = repo.bind(capability, Agent("p", instance))
    assert holder is not None
    return holder


def write_call(strategy: str) -> str:
    return "write_memory" if strategy == "scratchpad" else "create_memory"


def write(holder: Holder, slug: str, body: str, description: str = "d") -> Any:
    return holder.call(
        write_call(holder.strategy), {"name": slug, "description": description, "body": body}
    )


def stored(holder: Holder) -> dict[str, tuple[str, int]]:
    return {m["slug"]: (m["description"], m["chars"]) for m in holder.state()["memories"]}


def body_of(holder: Holder, slug: str) -> str:
    return next(r["body"] for r in reversed(holder.revisions()) if r["slug"] == slug)


def read_only(repo: Repository, strategy: str, revise: bool = True) -> tuple[Holder, Holder]:
    """A writable spawner (with one memory) and its read-only subagent."""
    spawner = bind(repo, cap(strategy, revise=revise), "boss")
    assert write(spawner, "note", "the body", "the note").ok
    reader = repo.bind(
        cap(strategy, "read-only", revise=revise), Agent("q", "r", "subagent", spawner)
    )
    assert reader is not None and not reader.writable
    return spawner, reader


# -- tools ----------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_tools_offered_per_strategy(repo: Repository, strategy: str) -> None:
    """Each strategy offers exactly its documented tools, in its order."""
    assert [t["name"] for t in bind(repo, cap(strategy)).tools()] == TOOLS[strategy]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_every_tool_has_a_json_schema_and_no_code_fields(repo: Repository, strategy: str) -> None:
    """Each tool has a name, a description and a JSON Schema object with no code or onUse field."""
    for tool in bind(repo, cap(strategy)).tools():
        assert set(tool) >= {"name", "description", "input_schema"}
        assert tool["description"]
        schema = tool["input_schema"]
        assert schema["type"] == "object"
        assert set(schema["required"]) <= set(schema["properties"])
        for prop in schema["properties"].values():
            assert prop["type"] in ("string", "array")
        text = json.dumps(schema).lower()
        assert not re.search(r'"(code|onuse|on_use)"', text), text


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_description_is_optional_only_under_keyword_search(repo: Repository, strategy: str) -> None:
    """A create without a description is accepted under keyword-search and refused elsewhere."""
    holder = bind(repo, cap(strategy))
    result = holder.call(write_call(strategy), {"name": "x", "body": "b"})
    assert result.ok == (strategy == "keyword-search"), result
    if not result.ok:
        assert result.kind == "invalid-argument" and "description" in result.text


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_revise_switch_withholds_update_edit_delete(repo: Repository, strategy: str) -> None:
    """reviseMemories off withholds update_memory, edit_memory and delete_memory."""
    names = [t["name"] for t in bind(repo, cap(strategy, revise=False)).tools()]
    assert names == [c for c in TOOLS[strategy] if c not in REVISE_CALLS]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_withheld_revise_call_arriving_anyway_is_unavailable(
    repo: Repository, strategy: str
) -> None:
    """A withheld revise call that arrives anyway is refused as unavailable and changes nothing."""
    holder = bind(repo, cap(strategy, revise=False))
    assert write(holder, "x", "one line").ok
    for call in set(TOOLS[strategy]) & REVISE_CALLS:
        args: dict[str, Any] = {"name": "x"}
        if call == "edit_memory":
            args |= {"old_text": "one", "new_text": "two"}
        if call == "update_memory":
            args |= {"body": "two"}
        result = holder.call(call, args)
        assert (result.ok, result.kind) == (False, "unavailable"), result
    assert body_of(holder, "x") == "one line" and len(holder.revisions()) == 1


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_another_strategys_call_is_unavailable(repo: Repository, strategy: str) -> None:
    """A call the active strategy does not offer is refused as unavailable."""
    holder = bind(repo, cap(strategy))
    for call in ALL_CALLS:
        if call in TOOLS[strategy]:
            continue
        result = holder.call(call, {"name": "x", "description": "d", "body": "b"})
        assert (result.ok, result.kind) == (False, "unavailable"), (call, result)
    assert holder.call("rm_rf", {}).kind == "unavailable"
    assert holder.revisions() == []


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_read_only_holder_gets_exactly_the_read_calls(repo: Repository, strategy: str) -> None:
    """A read-only holder is offered exactly the read calls (none under scratchpad)."""
    _, reader = read_only(repo, strategy)
    assert [t["name"] for t in reader.tools()] == READ_CALLS[strategy]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_read_only_write_arriving_anyway_is_refused_naming_its_calls(
    repo: Repository, strategy: str
) -> None:
    """A write that reaches a read-only holder is refused as read-only, naming the calls it has."""
    spawner, reader = read_only(repo, strategy)
    for call in set(TOOLS[strategy]) - set(READ_CALLS[strategy]):
        result = reader.call(
            call,
            {"name": "note", "description": "d", "body": "b", "old_text": "the", "new_text": "a"}
            if call == "edit_memory"
            else {"name": "note", "body": "b"}
            if call == "update_memory"
            else {"name": "note"}
            if call == "delete_memory"
            else {"name": "new", "description": "d", "body": "b"},
        )
        assert (result.ok, result.kind) == (False, "read-only"), (call, result)
        for have in READ_CALLS[strategy]:
            assert have in result.text
        assert "another agent" in result.text.lower()
    assert len(spawner.revisions()) == 1


@pytest.mark.parametrize("strategy", ["markdown", "keyword-search"])
def test_read_only_holder_reads(repo: Repository, strategy: str) -> None:
    """A read-only holder's read_memory returns the spawner's memory."""
    _, reader = read_only(repo, strategy)
    result = reader.call("read_memory", {"name": "note"})
    assert result.ok and "the body" in result.text and "the note" in result.text


# -- editing --------------------------------------------------------------------------


@pytest.fixture(params=["markdown", "keyword-search"])
def editor(request: pytest.FixtureRequest, repo: Repository) -> Holder:
    holder = bind(repo, cap(request.param))
    assert write(holder, "notes", "first line\nsecond line\nthird").ok
    return holder


def edit(holder: Holder, old: str, new: str, slug: str = "notes") -> Any:
    return holder.call("edit_memory", {"name": slug, "old_text": old, "new_text": new})


def test_edit_replaces_text_that_appears_once(editor: Holder) -> None:
    """An edit quoting text that appears exactly once replaces it."""
    assert edit(editor, "second", "2nd").ok
    assert body_of(editor, "notes") == "first line\n2nd line\nthird"


def test_edit_of_absent_text_is_not_found(editor: Holder) -> None:
    """Text that does not appear is refused as not-found, and nothing changes."""
    result = edit(editor, "fourth", "4th")
    assert (result.ok, result.kind) == (False, "not-found")
    assert body_of(editor, "notes") == "first line\nsecond line\nthird"


def test_edit_of_repeated_text_says_how_many_and_asks_for_context(editor: Holder) -> None:
    """Text that appears twice is refused, saying '2 times' and asking for more context."""
    result = edit(editor, "line", "LINE")
    assert not result.ok and result.kind == "invalid-argument"
    assert "2 times" in result.text
    assert re.search(r"more (of the surrounding text|context)", result.text), result.text
    assert body_of(editor, "notes") == "first line\nsecond line\nthird"


def test_append_by_quoting_the_last_line(editor: Holder) -> None:
    """Appending is quoting the last line and replacing it with itself plus the addition."""
    assert edit(editor, "third", "third\nfourth").ok
    assert body_of(editor, "notes") == "first line\nsecond line\nthird\nfourth"


def test_edit_leaving_the_body_empty_is_refused_with_delete_advice(editor: Holder) -> None:
    """An edit that would empty the memory is refused, and the model is told to delete instead."""
    whole = "first line\nsecond line\nthird"
    result = edit(editor, whole, "")
    assert not result.ok and "delete" in result.text
    assert body_of(editor, "notes") == whole


def test_edit_of_missing_memory_is_not_found(editor: Holder) -> None:
    """An edit of a memory that does not exist is not-found."""
    assert edit(editor, "a", "b", slug="ghost").kind == "not-found"


def test_scratchpad_update_to_an_empty_body_is_refused_with_delete_advice(repo: Repository) -> None:
    """Under scratchpad, an update to an empty body is refused with the delete advice."""
    holder = bind(repo, cap("scratchpad"))
    assert write(holder, "x", "keep").ok
    result = holder.call("update_memory", {"name": "x", "body": ""})
    assert not result.ok and "delete" in result.text
    assert body_of(holder, "x") == "keep"


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_create_of_an_existing_name_is_already_exists(repo: Repository, strategy: str) -> None:
    """A second create of one name is refused as already-exists."""
    holder = bind(repo, cap(strategy))
    assert write(holder, "x", "one").ok
    assert write(holder, "x", "two").kind == "already-exists"
    assert body_of(holder, "x") == "one"


# -- limits ---------------------------------------------------------------------------

# Which limits bind each strategy (maxResults is a search cap, tested below).
APPLIES = {
    "maxCount": {"scratchpad", "keyword-search"},
    "maxLenPerMemory": {"scratchpad", "markdown", "keyword-search"},
    "maxTotalLen": {"scratchpad"},
    "maxLenIndex": {"markdown"},
    "maxLenDescription": {"scratchpad", "markdown", "keyword-search"},
}
WIDE = "\U0001f600"  # one character, four UTF-8 bytes


def fill_to_limit(holder: Holder, limit: str, value: int) -> dict[str, Any]:
    """Write memories reaching ``limit`` exactly; return the arguments of one write past it."""
    if limit == "maxCount":
        for i in range(value):
            assert write(holder, f"m{i}", "body").ok
        return {"name": "over", "description": "d", "body": "body"}
    if limit == "maxLenPerMemory":
        assert write(holder, "exact", WIDE * value).ok
        return {"name": "over", "description": "d", "body": WIDE * (value + 1)}
    if limit == "maxTotalLen":
        assert write(holder, "half", WIDE * (value // 2)).ok
        assert write(holder, "rest", "é" * (value - value // 2)).ok
        return {"name": "over", "description": "d", "body": "x"}
    if limit == "maxLenIndex":
        line = "- `exact` — " + WIDE * (value - len("- `exact` — "))
        assert len(line) == value
        assert write(holder, "exact", "body", WIDE * (value - len("- `exact` — "))).ok
        return {"name": "o", "description": "", "body": "b"}
    assert limit == "maxLenDescription"
    assert write(holder, "exact", "body", WIDE * value).ok
    return {"name": "over", "description": WIDE * (value + 1), "body": "body"}


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("limit", list(APPLIES))
def test_each_limit_on_each_strategy(repo: Repository, strategy: str, limit: str) -> None:
    """A limit admits writes up to it in characters (not bytes) and refuses one past it where it applies, and only there."""
    value = 40
    holder = bind(repo, cap(strategy, **{limit: value}))
    args = fill_to_limit(holder, limit, value)
    if limit == "maxLenIndex" and strategy != "markdown":
        args["description"] = "d"
    before = stored(holder)
    result = holder.call(write_call(strategy), args)
    if strategy not in APPLIES[limit]:
        assert result.ok, result
        return
    assert (result.ok, result.kind) == (False, "limit-exceeded"), result
    assert limit in result.text
    assert stored(holder) == before  # refused, never truncated


@pytest.mark.parametrize(
    ("strategy", "limit", "value", "args", "figure"),
    [
        ("markdown", "maxLenPerMemory", 10, {"body": "x" * 13}, 13),
        ("keyword-search", "maxLenPerMemory", 10, {"body": "x" * 11}, 11),
        ("scratchpad", "maxLenPerMemory", 10, {"body": "x" * 1234}, 1234),
        ("markdown", "maxLenDescription", 5, {"description": "d" * 9}, 9),
        ("scratchpad", "maxTotalLen", 10, {"body": "x" * 12}, 12),
        ("keyword-search", "maxCount", 1, {}, 2),
        ("scratchpad", "maxCount", 1, {}, 2),
        ("markdown", "maxLenIndex", 20, {"description": "a" * 20}, 30),
    ],
)
def test_refusal_names_the_limit_the_figure_and_a_fix(
    repo: Repository, strategy: str, limit: str, value: int, args: dict[str, Any], figure: int
) -> None:
    """A limit refusal names the limit, the figure the write would reach, its maximum and the fix."""
    holder = bind(repo, cap(strategy, **{limit: value}))
    if limit == "maxCount":
        assert write(holder, "first", "b").ok
    result = holder.call(
        write_call(strategy), {"name": "new", "description": "d", "body": "b", **args}
    )
    assert result.kind == "limit-exceeded", result
    assert limit in result.text
    assert f"{figure:,}" in result.text and f"{value:,}" in result.text
    assert re.search(r"shorten|delete|evict|revise|split|merge", result.text, re.I), result.text


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_description_is_checked_before_the_body(repo: Repository, strategy: str) -> None:
    """A write breaching both the description and body limits is told about the description."""
    holder = bind(
        repo, cap(strategy, maxLenDescription=5, maxLenPerMemory=5, maxTotalLen=5, maxLenIndex=5)
    )
    result = write(holder, "x", "b" * 50, "d" * 50)
    assert result.kind == "limit-exceeded"
    assert "maxLenDescription" in result.text
    for other in ("maxLenPerMemory", "maxTotalLen", "maxLenIndex"):
        assert other not in result.text


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_revisions_are_held_to_the_limits_too(repo: Repository, strategy: str) -> None:
    """An edit or update growing a body past maxLenPerMemory is refused and the old body kept."""
    holder = bind(repo, cap(strategy, maxLenPerMemory=10))
    assert write(holder, "x", "short").ok
    if strategy == "scratchpad":
        result = holder.call("update_memory", {"name": "x", "body": "much too long now"})
    else:
        result = holder.call(
            "edit_memory", {"name": "x", "old_text": "short", "new_text": "much too long now"}
        )
    assert result.kind == "limit-exceeded" and "maxLenPerMemory" in result.text
    assert body_of(holder, "x") == "short"


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_description_limit_holds_on_revisions(repo: Repository, strategy: str) -> None:
    """A revision that lengthens the description past maxLenDescription is refused."""
    holder = bind(repo, cap(strategy, maxLenDescription=5))
    assert write(holder, "x", "body", "short").ok
    if strategy == "scratchpad":
        result = holder.call("update_memory", {"name": "x", "description": "far too long"})
    else:
        result = holder.call(
            "edit_memory",
            {"name": "x", "old_text": "body", "new_text": "body", "description": "far too long"},
        )
    assert result.kind == "limit-exceeded" and "maxLenDescription" in result.text
    assert stored(holder) == {"x": ("short", 4)}


@pytest.mark.parametrize(
    ("slug", "ok"),
    [
        ("a" * 64, True),
        ("a" * 65, False),
        ("A.b_c-9", True),
        ("a/b", False),
        ("é", False),
        ("a b", False),
    ],
)
def test_slug_rule(repo: Repository, slug: str, ok: bool) -> None:
    """A slug is up to 64 characters of letters, digits, '-', '_' and '.'."""
    result = write(bind(repo, cap("markdown")), slug, "body")
    assert result.ok == ok, result
    if not ok:
        assert result.kind == "invalid-argument"


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_zero_turns_every_limit_off(repo: Repository, strategy: str) -> None:
    """With every limit 0 nothing is bounded."""
    holder = bind(repo, cap(strategy))
    for i in range(30):
        assert write(holder, f"m{i}", "x" * 5000, "d" * 500).ok
    assert holder.state()["totals"]["count"] == 30


def test_maxcount_counts_memories_held_at_once(repo: Repository) -> None:
    """maxCount bounds memories held at once: deleting one makes room again."""
    holder = bind(repo, cap("keyword-search", maxCount=2))
    assert write(holder, "a", "x").ok and write(holder, "b", "x").ok
    assert write(holder, "c", "x").kind == "limit-exceeded"
    assert holder.call("delete_memory", {"name": "a"}).ok
    assert write(holder, "c", "x").ok


# -- search ---------------------------------------------------------------------------


def search(holder: Holder, *keywords: str) -> tuple[list[str], str]:
    result = holder.call("search_memories", {"keywords": list(keywords)})
    assert result.ok, result
    return re.findall(r"^- `([^`]+)`", result.text, re.M), result.text


@pytest.fixture
def searcher(repo: Repository) -> Holder:
    holder = bind(repo, cap("keyword-search"))
    for slug, description, body in [
        ("one", "five of the first", "alpha alpha alpha alpha alpha"),
        ("two", "both once", "alpha and beta"),
        ("beta-three", "ALPHA things", "x BETA beta"),
        ("four", "none here", "gamma"),
    ]:
        assert write(holder, slug, body, description).ok
    return holder


def test_search_ranks_distinct_keywords_then_frequency(searcher: Holder) -> None:
    """Hits rank by how many distinct keywords they mention, then by how often, across slug, description and body."""
    assert search(searcher, "alpha", "beta")[0] == ["beta-three", "two", "one"]


def test_search_is_case_insensitive_substring(searcher: Holder) -> None:
    """Keywords match case-insensitively as substrings."""
    assert search(searcher, "ALP")[0] == ["one", "beta-three", "two"]
    assert search(searcher, "Amm")[0] == ["four"]


def test_search_hit_carries_description_and_excerpt(repo: Repository) -> None:
    """Each hit shows its description and a short excerpt of the body around the match."""
    holder = bind(repo, cap("keyword-search"))
    body = "filler words " * 200 + "the needle is here " + "more filler " * 200
    assert write(holder, "long", body, "where the needle lives").ok
    _, text = search(holder, "needle")
    assert "where the needle lives" in text
    assert "the needle is here" in text
    assert len(text) < 500


def test_search_without_description_shows_the_hit(repo: Repository) -> None:
    """Under keyword-search a memory without a description is still found."""
    holder = bind(repo, cap("keyword-search"))
    assert holder.call("create_memory", {"name": "bare", "body": "plain text"}).ok
    assert search(holder, "plain")[0] == ["bare"]


@pytest.mark.parametrize(("max_results", "shown"), [(1, 1), (2, 2), (25, 3), (0, 3)])
def test_max_results_caps_hits(repo: Repository, max_results: int, shown: int) -> None:
    """search_memories returns at most maxResults hits (0: no cap)."""
    holder = bind(repo, cap("keyword-search", maxResults=max_results))
    for i in range(3):
        assert write(holder, f"m{i}", "kw " * (i + 1)).ok
    found, _ = search(holder, "kw")
    assert found == ["m2", "m1", "m0"][:shown]


def test_search_sees_writes_at_once(searcher: Holder) -> None:
    """A memory created, edited or deleted is found (or not) by the very next search."""
    assert write(searcher, "fresh", "zeta zeta").ok
    assert search(searcher, "zeta")[0] == ["fresh"]
    assert searcher.call(
        "edit_memory", {"name": "fresh", "old_text": "zeta zeta", "new_text": "eta"}
    ).ok
    assert search(searcher, "zeta")[0] == []
    assert searcher.call("delete_memory", {"name": "four"}).ok
    assert search(searcher, "gamma")[0] == []
