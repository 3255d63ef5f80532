"""Scoping: the binding table, its two coherence rules, forks and successors."""

from __future__ import annotations

import re
from typing import Any

import conftest
import pytest

from gitmem import Agent, Capability, Holder, InvalidArgument, Repository

SCOPES = ("isolated", "shared", "inherited", "read-only")


def cap(
    implementation: str = "markdown", scope: str = "isolated", enabled: bool = True
) -> Capability:
    return conftest.capability(implementation, scope, enabled=enabled)


def bind(repo: Repository, capability: Capability, agent: Agent) -> Holder:
    holder = repo.bind(capability, agent)
    assert holder is not None
    return holder


def create(holder: Holder, slug: str, body: str = "text") -> None:
    result = holder.call(
        "create_memory", {"name": slug, "description": f"about {slug}", "body": body}
    )
    assert result.ok, result.text


def slugs(holder: Holder) -> list[str]:
    return [m["slug"] for m in holder.state()["memories"]]


# Expected (store, writable) per the binding table; "own", "profile", "spawner", "forker",
# "predecessor" and "successor-profile" name the store the row says the agent binds.
TABLE: dict[str, dict[str, tuple[str, bool]]] = {
    "root": {
        "isolated": ("own", True),
        "shared": ("profile", True),
        "inherited": ("own", True),
        "read-only": ("own", True),
    },
    "implementer": {
        "isolated": ("own", True),
        "shared": ("profile", True),
        "inherited": ("own", True),
        "read-only": ("own", True),
    },
    "subagent": {
        "isolated": ("own", True),
        "shared": ("profile", True),
        "inherited": ("spawner", True),
        "read-only": ("spawner", False),
    },
    "subagent-of-no-memories": {
        "isolated": ("own", True),
        "shared": ("profile", True),
        "inherited": ("own", True),
        "read-only": ("own", True),
    },
    "reviewer": {
        "isolated": ("own", True),
        "shared": ("profile", True),
        "inherited": ("own", True),
        "read-only": ("own", True),
    },
    "merge": {
        "isolated": ("own", True),
        "shared": ("profile", True),
        "inherited": ("own", True),
        "read-only": ("own", True),
    },
    "fork": {
        "isolated": ("own", True),
        "shared": ("forker", True),
        "inherited": ("forker", True),
        "read-only": ("forker", False),
    },
    "successor": {
        "isolated": ("predecessor", True),
        "shared": ("successor-profile", True),
        "inherited": ("predecessor", True),
        "read-only": ("predecessor", False),
    },
}


@pytest.mark.parametrize("scope", SCOPES)
@pytest.mark.parametrize("started", list(TABLE))
def test_binding_table(repo: Repository, started: str, scope: str) -> None:
    """Each row of 'Which instance each kind of agent binds' under each of the four scopes."""
    where, writable = TABLE[started][scope]
    spawner = bind(repo, cap(scope="isolated"), Agent("boss", "boss-1"))
    create(spawner, "boss-note")
    capability = cap(scope=scope)
    stores: dict[str, str] = {"spawner": spawner.store_id}
    if started == "fork":
        # the forker is a subagent, so linked scopes have something to be linked to
        forker = bind(repo, capability, Agent("worker", "w-1", "subagent", spawner))
        if forker.writable:
            create(forker, "forker-note")
        holder = forker.fork("w-2")
        stores["forker"] = forker.store_id
    elif started == "successor":
        predecessor = bind(repo, capability, Agent("worker", "w-1", "subagent", spawner))
        successor = predecessor.succeed(Agent("next", "n-1", "implementer"), capability)
        assert successor is not None
        holder = successor
        stores["predecessor"] = predecessor.store_id
        stores["successor-profile"] = "profile/next"
        assert holder.transfer_note is None
    else:
        kind: Any = "subagent" if started.startswith("subagent") else started
        parent = spawner if started == "subagent" else None
        holder = bind(repo, capability, Agent("worker", "w-2", kind, parent))
    stores["own"] = "instance/w-2"
    stores["profile"] = "profile/worker"
    assert (holder.store_id, holder.writable) == (stores[where], writable)
    assert holder.scope == scope and holder.strategy == "markdown"


def test_read_only_root_writes_its_own(repo: Repository) -> None:
    """read-only restricts an inherited handle only: a root under read-only writes its own store."""
    root = bind(repo, cap(scope="read-only"), Agent("p", "root-1"))
    assert root.writable and root.store_id == "instance/root-1"
    create(root, "mine")
    assert "create_memory" in [t["name"] for t in root.tools()]


def test_read_only_agents_inherited_subagent_writes_the_same_store(repo: Repository) -> None:
    """Write access belongs to the holder: a read-only agent's inherited subagent writes its store."""
    top = bind(repo, cap(scope="isolated"), Agent("top", "t"))
    reader = bind(repo, cap(scope="read-only"), Agent("reader", "r", "subagent", top))
    assert reader.store_id == top.store_id and not reader.writable
    writer = bind(repo, cap(scope="inherited"), Agent("writer", "w", "subagent", reader))
    assert writer.store_id == top.store_id and writer.writable
    create(writer, "from-below")
    assert slugs(top) == ["from-below"]
    assert reader.call("read_memory", {"name": "from-below"}).ok


@pytest.mark.parametrize("middle", ["inherited", "read-only"])
def test_inheritance_chains_to_the_top(repo: Repository, middle: str) -> None:
    """A subagent of a subagent reaches whatever the top of the chain created."""
    top = bind(repo, cap(scope="inherited"), Agent("top", "t"))
    assert top.store_id == "instance/t"
    first = bind(repo, cap(scope=middle), Agent("a", "a-1", "subagent", top))
    second = bind(repo, cap(scope="inherited"), Agent("b", "b-1", "subagent", first))
    third = bind(repo, cap(scope="read-only"), Agent("c", "c-1", "subagent", second))
    assert {first.store_id, second.store_id, third.store_id} == {"instance/t"}
    assert (first.writable, second.writable, third.writable) == (middle == "inherited", True, False)


@pytest.mark.parametrize("implementation", ["scratchpad", "markdown", "keyword-search"])
def test_isolated_fork_is_an_independent_copy(repo: Repository, implementation: str) -> None:
    """An isolated notebook is copied at the fork, and the two then diverge."""
    original = bind(repo, cap(implementation, "isolated"), Agent("p", "orig"))
    write = "write_memory" if implementation == "scratchpad" else "create_memory"
    assert original.call(write, {"name": "before", "description": "d", "body": "b"}).ok
    fork = original.fork("copy")
    assert fork.store_id != original.store_id and fork.writable
    assert slugs(fork) == ["before"]
    assert original.call(write, {"name": "only-original", "description": "d", "body": "b"}).ok
    assert fork.call(write, {"name": "only-fork", "description": "d", "body": "b"}).ok
    assert slugs(original) == ["before", "only-original"]
    assert slugs(fork) == ["before", "only-fork"]
    assert original.notices() is None and fork.notices() is None


def test_isolated_fork_of_an_empty_notebook(repo: Repository) -> None:
    """Forking an empty isolated notebook gives an empty one of the fork's own."""
    original = bind(repo, cap(scope="isolated"), Agent("p", "orig"))
    fork = original.fork("copy")
    create(fork, "x")
    assert slugs(original) == [] and slugs(fork) == ["x"]


@pytest.mark.parametrize("scope", ["shared", "inherited"])
def test_linked_fork_shares_and_each_is_told_of_the_other(repo: Repository, scope: str) -> None:
    """Under a linking scope the original and its fork hold one store; each is told of the other's writes."""
    spawner = bind(repo, cap(), Agent("boss", "b"))
    original = bind(repo, cap(scope=scope), Agent("p", "orig", "subagent", spawner))
    fork = original.fork("copy")
    assert fork.store_id == original.store_id and fork.writable
    create(original, "from-original")
    notice = fork.notices()
    assert notice is not None and "- added `from-original` — about from-original" in notice
    assert original.notices() is None
    create(fork, "from-fork")
    notice = original.notices()
    assert notice is not None and "- added `from-fork` — about from-fork" in notice
    assert fork.notices() is None


def test_read_only_fork_holds_the_forkers_store_read_only(repo: Repository) -> None:
    """A read-only fork reads its forker's store and is told what the forker's store gains."""
    spawner = bind(repo, cap(), Agent("boss", "b"))
    original = bind(repo, cap(scope="read-only"), Agent("p", "orig", "subagent", spawner))
    fork = original.fork("copy")
    assert (fork.store_id, fork.writable) == (spawner.store_id, False)
    create(spawner, "news")
    assert fork.notices() is not None and original.notices() is not None


def test_successor_of_disabled_profile_gets_nothing(repo: Repository) -> None:
    """A successor whose profile turns memories off gets none."""
    predecessor = bind(repo, cap(), Agent("p", "a"))
    create(predecessor, "x")
    assert predecessor.succeed(Agent("q", "b"), cap(enabled=False)) is None


@pytest.mark.parametrize("scope", ["isolated", "inherited", "read-only"])
def test_successor_under_a_different_strategy_starts_fresh_and_is_told_why(
    repo: Repository, scope: str
) -> None:
    """A successor organizing memories under another strategy gets a fresh store and a note saying why."""
    predecessor = bind(repo, cap("markdown", "isolated"), Agent("p", "a"))
    create(predecessor, "x")
    successor = predecessor.succeed(Agent("q", "b"), cap("keyword-search", scope))
    assert successor is not None
    assert successor.store_id != predecessor.store_id and successor.writable
    assert successor.strategy == "keyword-search"
    assert slugs(successor) == []
    assert successor.transfer_note is not None
    assert "markdown" in successor.transfer_note and "keyword-search" in successor.transfer_note


def test_successor_is_told_why_in_its_system_prompt(repo: Repository) -> None:
    """'Is told why': the transfer note reaches the model, in the memory section of its system prompt."""
    predecessor = bind(repo, cap("markdown", "isolated"), Agent("p", "a"))
    successor = predecessor.succeed(Agent("q", "b"), cap("scratchpad", "isolated"))
    assert successor is not None and successor.transfer_note
    assert successor.transfer_note in successor.system_prompt()


@pytest.mark.parametrize("scope", ["isolated", "inherited", "read-only"])
def test_successor_is_transferred_the_store_and_sees_it_at_once(
    repo: Repository, scope: str
) -> None:
    """A transferred store carries its memories, and the successor's first block shows them."""
    predecessor = bind(repo, cap("markdown", "isolated"), Agent("p", "a"))
    create(predecessor, "handed-over")
    successor = predecessor.succeed(Agent("q", "b"), cap("markdown", scope))
    assert successor is not None and successor.store_id == predecessor.store_id
    assert successor.pinned_block() == "- `handed-over` — about handed-over"


def test_shared_successor_rebinds_its_own_profiles_store(repo: Repository) -> None:
    """shared overrides the transfer: the successor re-binds its own profile's store."""
    mine = bind(repo, cap(scope="shared"), Agent("next", "earlier"))
    create(mine, "profile-note")
    predecessor = bind(repo, cap(scope="isolated"), Agent("p", "a"))
    create(predecessor, "handed-over")
    successor = predecessor.succeed(Agent("next", "n-1"), cap(scope="shared"))
    assert successor is not None
    assert (successor.store_id, successor.writable) == ("profile/next", True)
    assert slugs(successor) == ["profile-note"]


def test_shared_successor_under_a_different_strategy_still_rebinds_its_profiles_store(
    repo: Repository,
) -> None:
    """shared overrides the transfer even across strategies: no second notebook for one profile."""
    mine = bind(repo, cap("keyword-search", "shared"), Agent("next", "earlier"))
    create(mine, "profile-note")
    predecessor = bind(repo, cap("markdown", "isolated"), Agent("p", "a"))
    create(predecessor, "handed-over")
    successor = predecessor.succeed(Agent("next", "n-1"), cap("keyword-search", "shared"))
    assert successor is not None
    assert (successor.store_id, successor.writable) == ("profile/next", True)
    assert slugs(successor) == ["profile-note"]


@pytest.mark.parametrize(
    ("profile", "instance", "says"),
    [
        ("p", "x.lock", "agent instance 'x.lock' is not usable as an id"),
        ("p.", "i", "agent profile 'p.' is not usable as an id"),
        ("p", "a..b", "agent instance 'a..b' is not usable as an id"),
        ("p", "x" * 100, "too long together to name its stores' notice marks"),
    ],
)
def test_an_agent_whose_names_would_name_no_store_is_refused_when_made(
    profile: str, instance: str, says: str
) -> None:
    """An agent's stores and its notice marks on them are named after it: a name git
    would take for no branch (a trailing ``.lock`` or ``.``), or names too long together
    for the marks, is refused when the agent is made, in one line, rather than every
    write of its being refused later, naming an id the caller never gave."""
    with pytest.raises(InvalidArgument, match=re.escape(says)):
        Agent(profile, instance)
    assert Agent("p" * 91, "i" * 91).own_store == "instance/" + "i" * 91
