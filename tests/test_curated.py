"""The curated strategy: append-only rows with owners, roles, claim kinds and
a lifecycle of links and statuses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import capability
from hypothesis import given, settings
from hypothesis import strategies as st

from gitmem import Agent, Author, InvalidArgument, Memory, Repository, ops
from gitmem.cli import cli
from gitmem.holder import Holder
from gitmem.strategies.curated import Curated, NotARow, Row, RowIndex, parse_row
from gitmem.types import Change

OPERATOR = Author("Ada Operator", "ada@example.org")
STORE = "profile/orch"


def bind(repo: Repository, instance: str = "o-1", **limits: int) -> Holder:
    holder = repo.bind(capability("curated", "shared", **limits), Agent("orch", instance))
    assert holder is not None
    return holder


def add(holder: Holder, name: str, description: str, owner: str = "user", **more: object) -> None:
    args: dict[str, object] = {"name": name, "description": description, "owner": owner}
    args["body"] = more.pop("body", f"about {name}")
    result = holder.call("add_row", args | more)
    assert result.ok, result.text


def seeded(repo: Repository) -> Holder:
    holder = bind(repo)
    add(holder, "tz", "Fact: the user works in UTC+2")
    add(holder, "terse", "Preference: short replies without preamble")
    add(
        holder, "hang", "Pending: deploys hang at step 3", "project", project="alpha", role="thread"
    )
    add(
        holder,
        "flaky",
        "Pending: the CI runner loses its cache",
        "project",
        project="alpha",
        role="thread",
    )
    add(holder, "beta-db", "Decision: beta stays on Postgres 15", "project", project="beta")
    add(holder, "disk", "Symptom: the host disk fills at night", "host", role="thread")
    return holder


def test_the_tools(repo: Repository) -> None:
    """The curated rows' seven calls; a read-only holder gets the three reads."""
    holder = bind(repo)
    assert holder.offered() == (
        "add_row",
        "append_row",
        "link_rows",
        "reclassify_row",
        "read_row",
        "search_rows",
        "get_relevant",
    )
    reader = repo.bind(
        capability("curated", "read-only"), Agent("sub", "s-1", "subagent", spawner=holder)
    )
    assert reader is not None
    assert reader.offered() == ("read_row", "search_rows", "get_relevant")
    assert reader.call("add_row", {}).kind == "read-only"


def test_an_unknown_claim_kind_is_refused_naming_the_known_ones(repo: Repository) -> None:
    """The description's first word is the claim kind, from the vocabulary."""
    holder = bind(repo)
    refused = holder.call(
        "add_row", {"name": "x", "description": "Note: hi", "owner": "user", "body": "b"}
    )
    assert (refused.kind, refused.text) == (
        "invalid-argument",
        "the description's first word names the kind of claim, and `note` is not one; begin "
        "it with one of fact, preference, decision, milestone, learning, dead-end, pending, "
        'feedback, symptom (e.g. "Fact: ...")',
    )
    assert repo.head(holder.store_id) is None


@pytest.mark.parametrize(
    ("owner", "project", "text"),
    [
        ("project", None, "a project row names its project: give project=<key>"),
        ("user", "alpha", "a user row holds in any project, so it has no project"),
        ("host", "alpha", "a host row is about the host, not a project"),
        ("team", None, "owner must be one of user, project, host, not 'team'"),
    ],
)
def test_owner_and_project_must_fit(
    repo: Repository, owner: str, project: str | None, text: str
) -> None:
    """A project row names its project; user and host rows name none."""
    args: dict[str, object] = {"name": "r", "description": "Fact: x", "owner": owner, "body": "b"}
    if project:
        args["project"] = project
    refused = bind(repo).call("add_row", args)
    assert refused.kind == "invalid-argument" and refused.text.startswith(text)


def test_append_only_and_the_marked_correction(repo: Repository) -> None:
    """add over a name is refused; replace=true corrects, marked in the commit."""
    holder = seeded(repo)
    again = holder.call(
        "add_row", {"name": "tz", "description": "Fact: UTC+3", "owner": "user", "body": "b"}
    )
    assert again.kind == "already-exists"
    assert again.text.startswith("a row named `tz` already exists, and rows are append-only")
    fixed = holder.call(
        "add_row",
        {"name": "tz", "description": "Fact: UTC+3", "owner": "user", "body": "b", "replace": True},
    )
    assert fixed.ok and fixed.text.startswith("Corrected `tz`")
    last = repo.revisions(STORE, "tz")[-1]
    assert last.op == "correct"
    assert repo.snapshot(STORE).trailers["Gitmem-Correction"] == "replaces revision 1"
    missing = holder.call(
        "add_row",
        {"name": "new", "description": "Fact: x", "owner": "user", "body": "b", "replace": True},
    )
    assert missing.kind == "not-found"


def test_append_grows_threads_and_logs_only(repo: Repository) -> None:
    """Durable knowledge never grows; a thread does, and a named project is never swapped."""
    holder = seeded(repo)
    assert holder.call("append_row", {"name": "hang", "text": "third time, 11-02"}).ok
    assert parse_row(repo.snapshot(STORE).get("hang")).content == "about hang\nthird time, 11-02"  # type: ignore[arg-type]
    refused = holder.call("append_row", {"name": "tz", "text": "x"})
    assert refused.text.startswith("`tz` is durable knowledge, which is never edited")
    swapped = holder.call("append_row", {"name": "hang", "text": "x", "project": "beta"})
    assert swapped.text.startswith("`hang` is not a row of project beta: it is project alpha's.")
    assert holder.call("append_row", {"name": "nope", "text": "x"}).kind == "not-found"


def test_the_birth_block(repo: Repository) -> None:
    """Projects with their live-pending counts, the host's, then user rows and preferences whole."""
    holder = seeded(repo)
    assert bind(repo, "o-2").pinned_block() == (
        "## Projects\n"
        "- `alpha`: 2 live pending threads (get_relevant reads them)\n"
        "- `beta`: 0 live pending threads (get_relevant reads them)\n"
        "\n## Environment\n- host: 1 live pending thread\n"
        "\n## User\n- `tz` — Fact: the user works in UTC+2\n  about tz\n"
        "\n## Preferences\n- `terse` — Preference: short replies without preamble\n  about terse"
    )
    assert RowIndex().follow(repo, STORE).birth_block() == bind(repo, "o-3").pinned_block()
    memories = repo.snapshot(STORE).memories()
    assert Curated().pinned(memories) == bind(repo, "o-4").pinned_block()
    assert holder.pinned_block().startswith("## Projects")


def test_a_superseded_row_leaves_the_birth_block_and_stays_readable(repo: Repository) -> None:
    """The arrow goes from the new row to the old, in one commit that changes both."""
    holder = seeded(repo)
    add(holder, "tz-2", "Fact: the user works in UTC+1 since November")
    head = repo.head(STORE)
    done = holder.call("link_rows", {"source": "tz-2", "kind": "supersedes", "target": "tz"})
    assert done.ok
    commits = [r.commit for r in repo.revisions(STORE) if r.op == "link"]
    assert len(commits) == 2 and len(set(commits)) == 1  # both rows, one commit
    assert repo.snapshot(STORE, commits[0]) is not None and head != commits[0]
    block = bind(repo, "o-2").pinned_block()
    assert "`tz-2`" in block and "`tz` —" not in block
    read = holder.call("read_row", {"name": "tz"})
    assert read.ok and "superseded by `tz-2`" in read.text
    backwards = holder.call("link_rows", {"source": "tz", "kind": "supersedes", "target": "tz-2"})
    assert backwards.text.startswith("`tz` is itself superseded (by tz-2)")
    assert sorted(repo.snapshot(STORE).slugs()) == sorted(
        ["beta-db", "disk", "flaky", "hang", "terse", "tz", "tz-2"]
    )


def test_lifecycle_closes_and_graduates_without_deleting(repo: Repository) -> None:
    """reclassify and graduated_to change status and lineage; no row is removed."""
    holder = seeded(repo)
    assert holder.call("reclassify_row", {"name": "flaky", "status": "closed"}).ok
    add(
        holder,
        "deploy-steps",
        "Learning: deploys need the lock released first",
        "project",
        project="alpha",
    )
    assert holder.call(
        "link_rows", {"source": "hang", "kind": "graduated_to", "target": "deploy-steps"}
    ).ok
    assert holder.call("reclassify_row", {"name": "hang", "status": "graduated"}).ok
    assert "`alpha`: 0 live pending threads" in bind(repo, "o-2").pinned_block()
    row = parse_row(repo.snapshot(STORE).get("deploy-steps"))  # type: ignore[arg-type]
    assert row.linked("graduated_from") == ("hang",)
    again = holder.call("reclassify_row", {"name": "hang", "status": "graduated"})
    assert again.text == "`hang` is already thread, graduated; nothing to change"
    assert not any(r.removed for r in repo.revisions(STORE))


def test_get_relevant_is_the_whole_live_pending_set(repo: Repository) -> None:
    """Uncapped, with bodies; an empty answer says it is complete."""
    holder = seeded(repo)
    holder.call("append_row", {"name": "flaky", "text": "seen on runner 4"})
    text = holder.call("get_relevant", {"project": "alpha"}).text
    assert text.startswith("Project alpha: 2 live pending threads, every one, with its body:")
    assert "seen on runner 4" in text and "about hang" in text
    assert "beta-db" not in text
    empty = holder.call("get_relevant", {"project": "beta"}).text
    assert empty.startswith("Project beta owes nothing")
    standing = holder.call("get_relevant", {"project": "beta", "knowledge": True}).text
    assert "`beta-db` — Decision: beta stays on Postgres 15" in standing


def test_search_is_scoped(repo: Repository) -> None:
    """User and host rows, plus the project named; nothing else."""
    holder = seeded(repo)
    bare = holder.call("search_rows", {"keywords": ["deploys"]}).text
    assert "No row mentions" in bare and "Searched user and host rows only" in bare
    scoped = holder.call("search_rows", {"keywords": ["deploys"], "project": "alpha"}).text
    assert "`hang`" in scoped and "(Searched project alpha, user and host rows.)" in scoped
    host = holder.call("search_rows", {"keywords": ["disk"]}).text
    assert host.startswith("1 row matches:\n- `disk` — Symptom: the host disk fills at night")
    assert "No row mentions" in holder.call("search_rows", {"keywords": ["owner"]}).text
    holder.call("append_row", {"name": "disk", "text": "owner unknown"})
    assert "`disk`" in holder.call("search_rows", {"keywords": ["owner"]}).text


def test_conflicts_lists_candidate_pairs(repo: Repository) -> None:
    """Live rows of one owner sharing wording are listed; other owners and superseded rows are not."""
    holder = seeded(repo)
    add(holder, "tz-b", "Fact: the user works from Lisbon in UTC+2")
    add(holder, "alpha-tz", "Fact: the user works in UTC+2 for alpha", "project", project="alpha")
    found = ops.rows_conflicts(repo, STORE)
    assert [(a.name, b.name) for a, b, _ in found] == [("tz", "tz-b")]
    assert found[0][2] == ["user", "utc", "works"]
    holder.call("link_rows", {"source": "tz-b", "kind": "supersedes", "target": "tz"})
    assert ops.rows_conflicts(repo, STORE) == []


def test_unlink_is_versioned(repo: Repository) -> None:
    """An operator removes an edge in one commit; the edge stays in history."""
    holder = seeded(repo)
    add(holder, "tz-2", "Fact: UTC+1")
    holder.call("link_rows", {"source": "tz-2", "kind": "supersedes", "target": "tz"})
    revs = ops.rows_unlink(repo, STORE, OPERATOR, "tz-2", "supersedes", "tz")
    assert [(r.slug, r.op, r.author) for r in revs] == [
        ("tz-2", "unlink", "Ada Operator"),
        ("tz", "unlink", "Ada Operator"),
    ]
    assert not ops.rows_show(repo, STORE, "tz").superseded
    history = [r.body for r in repo.revisions(STORE, "tz")]
    assert any("superseded_by: tz-2" in body for body in history)


def test_the_row_header_is_read_strictly() -> None:
    """Fixed keys in a fixed order, then a blank line; anything else is not a row."""
    good = "owner: project alpha\nrole: thread\nstatus: live\nsupersedes: a b\n\ncontent\n"
    row = parse_row(Memory("r", "Fact: x", good))
    assert (row.project, row.linked("supersedes"), row.content) == (
        "alpha",
        ("a", "b"),
        "content\n",
    )
    assert row.body() == good
    for bad in (
        "role: thread\nowner: user\nstatus: live\n\nx",
        "owner: user\nrole: thread\nstatus: live\nx",
        "owner: user\nrole: chat\nstatus: live\n\nx",
        "owner: project\nrole: log\nstatus: live\n\nx",
        "owner: user" + "x" * 40_000,
    ):
        with pytest.raises(NotARow):
            parse_row(Memory("r", "Fact: x", bad))


def test_operators_use_the_row_verbs(repo: Repository, tmp_path: Path) -> None:
    """Plain create/edit are refused on a curated store; `gitmem rows` does the work."""
    seeded(repo)
    with pytest.raises(InvalidArgument, match="rows are append-only"):
        ops.edit(repo, STORE, OPERATOR, "tz", body="x")

    def run(*args: str) -> object:
        return CliRunner().invoke(cli, ["--repo", repo.directory, *args, "--store", STORE])

    added = run("rows", "add", "ci", "--owner", "host", "-d", "Feedback: CI is slow", "--body", "x")
    assert added.exit_code == 0, added.output  # type: ignore[attr-defined]
    assert run("rows", "append", "ci", "y").exit_code == 1  # type: ignore[attr-defined]
    assert run("rows", "reclassify", "ci", "--role", "log").exit_code == 0  # type: ignore[attr-defined]
    me = "Ada Operator <ada@example.org>"
    assert run("rows", "append", "ci", "y", "--author", me).exit_code == 0  # type: ignore[attr-defined]
    shown = json.loads(run("rows", "show", "ci", "--json").stdout)  # type: ignore[attr-defined]
    assert (shown["role"], shown["content"]) == ("log", "x\ny")
    assert "`alpha`: 2 live" in run("rows", "birth").stdout  # type: ignore[attr-defined]
    assert "about hang" in run("rows", "relevant", "alpha").stdout  # type: ignore[attr-defined]
    listed = run("rows", "ls", "--owner", "project alpha", "--json").stdout  # type: ignore[attr-defined]
    assert [r["name"] for r in json.loads(listed)] == ["flaky", "hang"]
    assert run("rows", "conflicts").stdout.startswith("No two live rows")  # type: ignore[attr-defined]
    assert repo.revisions(STORE, "ci")[-1].author == "Ada Operator"


APPENDER = """
import sys
from gitmem import Agent, Capability, Repository
from gitmem.limits import LIMITS
cap = Capability.from_dict(
    {"implementation": "curated", "params": {"scope": "shared", **dict.fromkeys(LIMITS, 0)}}
)
repo = Repository.open(sys.argv[1])
holder = repo.bind(cap, Agent("orch", sys.argv[2]))
for i in range(int(sys.argv[3])):
    result = holder.call("append_row", {"name": "live", "text": f"{sys.argv[2]} {i}"})
    assert result.ok, result.text
"""


def test_two_processes_appending_to_one_live_thread_lose_nothing(repo: Repository) -> None:
    """Each append re-runs against the newer head when it loses the race."""
    holder = bind(repo)
    add(holder, "live", "Pending: who is on call", "project", project="alpha", role="thread")
    n = 15
    procs = [
        subprocess.Popen([sys.executable, "-c", APPENDER, repo.directory, who, str(n)])
        for who in ("p1", "p2")
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    lines = parse_row(repo.snapshot(STORE).get("live")).content.splitlines()  # type: ignore[arg-type]
    assert sorted(lines[1:]) == sorted(f"{who} {i}" for who in ("p1", "p2") for i in range(n))
    assert len(repo.revisions(STORE, "live")) == 1 + 2 * n


def test_check_reports_a_memory_that_is_not_a_row(repo: Repository) -> None:
    """`gitmem check` reads every row of a curated store's head."""
    seeded(repo)
    assert ops.strategy_problems(repo) == []
    bad = Memory("stray", "Fact: x", "no header\n")
    snapshot = repo.snapshot(STORE)
    repo.mutate(STORE, OPERATOR, lambda s: Change("create", "stray", bad, snapshot.trailers))
    assert ops.strategy_problems(repo) == [
        "profile/orch: `stray` is not a row: line 1 of its header should be `owner: ...`"
    ]


@settings(derandomize=True, max_examples=80, deadline=None)
@given(
    owner=st.sampled_from([("user", ""), ("host", ""), ("project", "alpha")]),
    role=st.sampled_from(["knowledge", "thread", "log"]),
    status=st.sampled_from(["live", "closed", "graduated"]),
    links=st.dictionaries(
        st.sampled_from(["supersedes", "superseded_by", "graduated_to", "graduated_from"]),
        st.lists(st.sampled_from(["a", "b-1", "c.d"]), min_size=1, max_size=3, unique=True).map(
            tuple
        ),
    ),
    content=st.text(
        alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
        max_size=120,
    )
    | st.sampled_from(["", "\n", "owner: user\n\nx", "status: live\n"]),
)
def test_a_row_round_trips(
    owner: tuple[str, str],
    role: str,
    status: str,
    links: dict[str, tuple[str, ...]],
    content: str,
) -> None:
    """Whatever a row holds, its body reads back as the same row."""
    row = Row("r", "Fact: x", owner[0], owner[1], role, status, content, links)
    assert parse_row(row.memory()) == row


def test_notices_telemetry_and_successors(repo: Repository) -> None:
    """Another holder is told of both rows a link changed; revisions carry the row ops;
    a successor under another strategy starts fresh and is told why, in its prompt."""
    one, two = bind(repo, "o-1"), bind(repo, "o-2")
    assert two.notices() is None
    add(one, "tz", "Fact: UTC+2")
    add(one, "tz-2", "Fact: UTC+1")
    one.call("link_rows", {"source": "tz-2", "kind": "supersedes", "target": "tz"})
    notice = two.notices()
    assert notice is not None
    assert "- added `tz` — Fact: UTC+2" in notice and "- added `tz-2` — Fact: UTC+1" in notice
    assert notice.endswith("Read one with `read_row` if it bears on what you are doing.")
    assert [e["op"] for e in two.revisions()] == ["add", "add", "link", "link"]
    assert two.state()["totals"]["count"] == 2
    successor = one.succeed(Agent("next", "n-1"), capability("notebook", "isolated"))
    assert successor is not None and successor.store_id != one.store_id
    assert successor.transfer_note and "curated" in successor.transfer_note
    assert successor.transfer_note in successor.system_prompt()
