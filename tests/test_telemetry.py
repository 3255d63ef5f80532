"""Telemetry: memory_state, memory_revision and the stream each goes to."""

from __future__ import annotations

from typing import Any

from gitmem import Agent, Capability, Holder, Repository
from gitmem.limits import LIMITS

SIX = LIMITS
LIMITS = {
    "maxCount": 10,
    "maxLenPerMemory": 100,
    "maxTotalLen": 0,
    "maxLenIndex": 500,
    "maxLenDescription": 50,
    "maxResults": 5,
}


def cap(scope: str = "shared", implementation: str = "markdown") -> Capability:
    return Capability.from_dict(
        {
            "id": "memories",
            "enabled": True,
            "implementation": implementation,
            "params": {"scope": scope, **LIMITS},
        }
    )


def bind(repo: Repository, instance: str, scope: str = "shared", **agent: Any) -> Holder:
    holder = repo.bind(cap(scope), Agent("team", instance, **agent))
    assert holder is not None
    return holder


def ok(holder: Holder, call: str, **args: Any) -> None:
    result = holder.call(call, args)
    assert result.ok, result


def test_state_shape_and_values(repo: Repository) -> None:
    """memory_state lists each memory with description, characters and lines, the totals, limits, peaks, scope and writability."""
    holder = bind(repo, "a")
    ok(holder, "create_memory", name="one", description="first", body="é\n\U0001f600")
    ok(holder, "create_memory", name="two", description="second", body="abc")
    state = holder.state()
    expected = {
        "type": "memory_state",
        "store": "profile/team",
        "scope": "shared",
        "writable": True,
        "memories": [
            {"slug": "one", "description": "first", "chars": 3, "lines": 2},
            {"slug": "two", "description": "second", "chars": 3, "lines": 1},
        ],
        "totals": {"count": 2, "chars": 6, "lines": 3},
        "limits": LIMITS,
        "peaks": {"count": 2, "chars": 6, "lines": 3},
    }
    assert {key: state[key] for key in expected} == expected


def test_empty_state(repo: Repository) -> None:
    """A holder of an empty store reports nothing held and zero peaks."""
    state = bind(repo, "a", "isolated").state()
    assert state["memories"] == []
    assert state["totals"] == state["peaks"] == {"count": 0, "chars": 0, "lines": 0}
    assert (state["store"], state["scope"], state["writable"]) == ("instance/a", "isolated", True)


def test_peaks_are_kept_after_deletes(repo: Repository) -> None:
    """Peaks record the most ever held at once, after the live figures fall."""
    holder = bind(repo, "a")
    ok(holder, "create_memory", name="big", description="d", body="x\n" * 20)
    ok(holder, "create_memory", name="small", description="d", body="y")
    ok(holder, "delete_memory", name="big")
    ok(holder, "create_memory", name="other", description="d", body="zz")
    state = holder.state()
    assert state["totals"] == {"count": 2, "chars": 3, "lines": 2}
    assert state["peaks"] == {"count": 2, "chars": 41, "lines": 21}


def test_read_only_holder_reports_how_it_holds_the_store(repo: Repository) -> None:
    """Two holders of one store report their own scope and writability."""
    boss = bind(repo, "boss", "isolated")
    reader = bind(repo, "r", "read-only", started_as="subagent", spawner=boss)
    assert (reader.state()["store"], reader.state()["scope"], reader.state()["writable"]) == (
        "instance/boss",
        "read-only",
        False,
    )


def test_revisions_number_per_slug_across_delete_and_recreate(repo: Repository) -> None:
    """Revision numbers are per slug and keep counting across a delete; each carries the text as of it."""
    holder = bind(repo, "a")
    ok(holder, "create_memory", name="x", description="v1", body="one")
    ok(holder, "create_memory", name="y", description="y1", body="why")
    ok(holder, "edit_memory", name="x", old_text="one", new_text="two", description="v2")
    ok(holder, "delete_memory", name="x")
    ok(holder, "create_memory", name="x", description="v4", body="four")
    got = [
        (r["slug"], r["revision"], r["op"], r["description"], r["body"]) for r in holder.revisions()
    ]
    assert got == [
        ("x", 1, "create", "v1", "one"),
        ("y", 1, "create", "y1", "why"),
        ("x", 2, "edit", "v2", "two"),
        ("x", 3, "delete", "v2", "two"),
        ("x", 4, "create", "v4", "four"),
    ]
    for event in holder.revisions():
        assert event["type"] == "memory_revision"
        assert event["author"] == "a"
        assert len(event["commit"]) == 40 and isinstance(event["time"], int)


def test_refused_mutation_records_no_revision(repo: Repository) -> None:
    """A refused mutation adds nothing to the record."""
    holder = bind(repo, "a")
    ok(holder, "create_memory", name="x", description="d", body="b")
    assert not holder.call("create_memory", {"name": "x", "description": "d", "body": "b"}).ok
    assert not holder.call("create_memory", {"name": "y", "description": "d", "body": "b" * 101}).ok
    assert len(holder.revisions()) == 1


def test_revision_goes_to_the_writer_and_state_to_every_other_holder(repo: Repository) -> None:
    """The writer's stream gets the memory_revision alone; every other holder of the store gets a fresh memory_state."""
    writer, peer = bind(repo, "writer"), bind(repo, "peer")
    boss = bind(repo, "boss", "isolated")
    reader = bind(repo, "reader", "read-only", started_as="subagent", spawner=writer)
    elsewhere = bind(repo, "elsewhere", "isolated")
    streams: dict[str, list[dict[str, Any]]] = {}
    for name, holder in (
        ("writer", writer),
        ("peer", peer),
        ("reader", reader),
        ("elsewhere", elsewhere),
        ("boss", boss),
    ):
        streams[name] = []
        holder.subscribe(streams[name].append)
    ok(writer, "create_memory", name="x", description="d", body="b")
    assert [e["type"] for e in streams["writer"]] == ["memory_revision"]
    assert streams["writer"][0]["slug"] == "x" and streams["writer"][0]["revision"] == 1
    for name, holder in (("peer", peer), ("reader", reader)):
        assert streams[name] == [holder.state()]
        assert streams[name][0]["totals"]["count"] == 1
    assert streams["reader"][0]["writable"] is False
    assert streams["elsewhere"] == [] and streams["boss"] == []


def test_unsubscribe_and_refusals_stream_nothing(repo: Repository) -> None:
    """A refused call streams nothing, and an unsubscribed callback hears nothing more."""
    writer, peer = bind(repo, "writer"), bind(repo, "peer")
    mine: list[dict[str, Any]] = []
    theirs: list[dict[str, Any]] = []
    stop = writer.subscribe(mine.append)
    peer.subscribe(theirs.append)
    assert not writer.call("delete_memory", {"name": "ghost"}).ok
    assert mine == [] and theirs == []
    stop()
    ok(writer, "create_memory", name="x", description="d", body="b")
    assert mine == [] and len(theirs) == 1
