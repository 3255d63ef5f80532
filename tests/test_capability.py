"""Launch: reading the capability block and every condition that refuses a launch."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gitmem import Agent, Capability, LaunchRefused, Repository
from gitmem.limits import LIMITS

SIX = LIMITS


def block(**changes: Any) -> dict[str, Any]:
    """The documented example block, with top-level keys or params replaced (None drops one)."""
    params: dict[str, Any] = {
        "scope": "isolated",
        "maxCount": 64,
        "maxLenPerMemory": 0,
        "maxTotalLen": 0,
        "maxLenIndex": 4096,
        "maxLenDescription": 256,
        "maxResults": 25,
    }
    config: dict[str, Any] = {
        "id": "memories",
        "enabled": True,
        "implementation": "markdown",
        "params": params,
    }
    for key, value in changes.items():
        target = config if key in ("id", "enabled", "implementation", "features") else params
        if value is None:
            target.pop(key, None)
        else:
            target[key] = value
    return config


def refused(config: dict[str, Any]) -> list[str]:
    with pytest.raises(LaunchRefused) as caught:
        Capability.from_dict(config)
    return list(caught.value.problems)


def test_seed_example_block_reads_as_written() -> None:
    """The documented JSON block reads as is, with every limit and the revise switch on."""
    cap = Capability.from_json(json.dumps(block()))
    assert cap.implementation == "markdown"
    assert cap.scope == "isolated"
    assert cap.enabled and cap.revise_memories
    assert cap.limits.as_params() == {
        "maxCount": 64,
        "maxLenPerMemory": 0,
        "maxTotalLen": 0,
        "maxLenIndex": 4096,
        "maxLenDescription": 256,
        "maxResults": 25,
    }


def test_revise_feature_switches_off() -> None:
    """features.reviseMemories false is read as the revise switch off."""
    assert not Capability.from_dict(block(features={"reviseMemories": False})).revise_memories


@pytest.mark.parametrize("implementation", ["scratchpad", "markdown", "keyword-search"])
@pytest.mark.parametrize("scope", ["isolated", "shared", "inherited", "read-only"])
def test_every_implementation_and_scope_launches(implementation: str, scope: str) -> None:
    """Each of the three strategies and four scopes is accepted."""
    cap = Capability.from_dict(block(implementation=implementation, scope=scope))
    assert (cap.implementation, cap.scope) == (implementation, scope)


@pytest.mark.parametrize("name", SIX)
def test_missing_param_refuses(name: str) -> None:
    """All six limits are required whatever the strategy; a missing one refuses the launch."""
    for implementation in ("scratchpad", "markdown", "keyword-search"):
        problems = refused(block(implementation=implementation, **{name: None}))
        assert len(problems) == 1 and name in problems[0]


def test_missing_scope_refuses() -> None:
    """An enabled capability without a scope refuses the launch."""
    problems = refused(block(scope=None))
    assert len(problems) == 1 and "scope" in problems[0]


def test_unknown_param_refuses() -> None:
    """A param name the capability does not know refuses the launch, naming it."""
    problems = refused(block(maxMemories=3))
    assert len(problems) == 1 and "maxMemories" in problems[0]


@pytest.mark.parametrize(
    "value", [1.5, "64", "sixty", None, [64], {"n": 64}, True, False], ids=repr
)
def test_non_whole_count_refuses(value: object) -> None:
    """A value that is not a whole count (a bool included) refuses the launch, naming the param."""
    config = block()
    config["params"]["maxCount"] = value
    problems = refused(config)
    assert len(problems) == 1 and "maxCount" in problems[0]


@pytest.mark.parametrize("name", SIX)
def test_negative_count_refuses(name: str) -> None:
    """A negative limit refuses the launch (0 is how a limit is turned off)."""
    problems = refused(block(**{name: -1}))
    assert len(problems) == 1 and name in problems[0]


def test_zero_turns_limits_off_and_is_accepted() -> None:
    """0 for every limit is a valid launch."""
    cap = Capability.from_dict(block(**dict.fromkeys(SIX, 0)))
    assert cap.limits.values() == (0,) * 6


@pytest.mark.parametrize("implementation", ["vector", "Markdown", "keyword_search", None])
def test_unknown_implementation_refuses_naming_the_three(implementation: str | None) -> None:
    """An unknown (or missing) implementation refuses, naming the three that exist."""
    problems = refused(
        block(implementation=implementation) if implementation else block(implementation=None)
    )
    assert len(problems) == 1
    for name in ("scratchpad", "markdown", "keyword-search"):
        assert name in problems[0]


@pytest.mark.parametrize("scope", ["global", "readonly", "Shared", ""])
def test_unknown_scope_refuses(scope: str) -> None:
    """A scope gg does not recognize refuses the launch, naming the value."""
    problems = refused(block(scope=scope))
    assert len(problems) == 1 and repr(scope) in problems[0]


def test_every_problem_is_listed_at_once() -> None:
    """A configuration with several problems is refused once, with every problem listed."""
    config = block(implementation="vector", scope="global", maxCount=None, maxResults=-2, bogus=1)
    config["params"]["maxTotalLen"] = 2.5
    problems = refused(config)
    assert len(problems) == 6, problems
    text = "\n".join(problems)
    for needle in ("vector", "global", "maxCount", "maxResults", "bogus", "maxTotalLen"):
        assert needle in text


def test_from_json_refuses_like_from_dict() -> None:
    """from_json refuses the same configuration with the same problems."""
    config = block(scope="global", maxCount=None)
    with pytest.raises(LaunchRefused) as caught:
        Capability.from_json(json.dumps(config))
    assert caught.value.problems == refused(config)


@pytest.mark.parametrize("scope", ["global", 7, None])
def test_disabled_capability_with_odd_scope_is_not_refused(scope: object) -> None:
    """A disabled capability records the configuration and refuses nothing for its scope."""
    config = block(enabled=False)
    if scope is None:
        del config["params"]["scope"]
    else:
        config["params"]["scope"] = scope
    cap = Capability.from_dict(config)
    assert not cap.enabled


def test_disabled_capability_binds_to_nothing(repo: Repository) -> None:
    """bind() of a disabled capability returns None."""
    cap = Capability.from_dict(block(enabled=False, scope="global"))
    assert repo.bind(cap, Agent("p", "a")) is None


@pytest.mark.parametrize("implementation", ["scratchpad", "markdown", "keyword-search"])
@pytest.mark.parametrize("started_as", ["root", "implementer", "reviewer", "merge"])
def test_read_only_under_memory_compaction_refuses_at_bind(
    repo: Repository, implementation: str, started_as: Any
) -> None:
    """A profile configured for memory-compaction that declares its memories read-only refuses."""
    cap = Capability.from_dict(block(implementation=implementation, scope="read-only"))
    before = repo.stores()
    with pytest.raises(LaunchRefused) as caught:
        repo.bind(cap, Agent("p", "a", started_as), compaction="memory")
    assert "read-only" in "\n".join(caught.value.problems)
    assert repo.stores() == before


def test_read_only_subagent_under_memory_compaction_refuses(repo: Repository) -> None:
    """The refusal holds for a read-only subagent with a live spawner too."""
    spawner = repo.bind(Capability.from_dict(block()), Agent("boss", "b"))
    cap = Capability.from_dict(block(scope="read-only"))
    with pytest.raises(LaunchRefused):
        repo.bind(cap, Agent("p", "a", "subagent", spawner), compaction="memory")


@pytest.mark.parametrize("scope", ["isolated", "shared", "inherited"])
def test_memory_compaction_is_fine_for_writable_scopes(repo: Repository, scope: str) -> None:
    """Every other scope launches under memory-compaction."""
    holder = repo.bind(
        Capability.from_dict(block(scope=scope)), Agent("p", "a"), compaction="memory"
    )
    assert holder is not None and holder.writable


@pytest.mark.parametrize("scope", ["inherited", "read-only"])
def test_strategy_disagreement_with_spawner_refuses(repo: Repository, scope: str) -> None:
    """An inheriting subagent naming another strategy than its spawner's store refuses."""
    spawner = repo.bind(Capability.from_dict(block(implementation="markdown")), Agent("boss", "b"))
    cap = Capability.from_dict(block(implementation="keyword-search", scope=scope))
    with pytest.raises(LaunchRefused) as caught:
        repo.bind(cap, Agent("helper", "h", "subagent", spawner))
    text = "\n".join(caught.value.problems)
    assert "markdown" in text and "keyword-search" in text


@pytest.mark.parametrize("scope", ["isolated", "shared"])
def test_strategy_difference_is_fine_when_nothing_is_inherited(
    repo: Repository, scope: str
) -> None:
    """A subagent that keeps its own or its profile's store may name any strategy."""
    spawner = repo.bind(Capability.from_dict(block(implementation="markdown")), Agent("boss", "b"))
    cap = Capability.from_dict(block(implementation="scratchpad", scope=scope))
    holder = repo.bind(cap, Agent("helper", "h", "subagent", spawner))
    assert holder is not None and holder.strategy == "scratchpad"


def test_launch_refused_names_every_bind_problem_at_once(tmp_path: Path) -> None:
    """Read-only under memory-compaction and a strategy disagreement are both listed."""
    with Repository.init(str(tmp_path / "r.git")) as repo:
        spawner = repo.bind(Capability.from_dict(block()), Agent("boss", "b"))
        cap = Capability.from_dict(block(implementation="scratchpad", scope="read-only"))
        with pytest.raises(LaunchRefused) as caught:
            repo.bind(cap, Agent("p", "a", "subagent", spawner), compaction="memory")
        assert len(caught.value.problems) == 2
