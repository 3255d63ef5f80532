"""Reads as of any moment: a moment names a commit of the store's own history; a reading
of the past answers every read as of it, refuses every write (changing nothing) and
leaves the derived indexes the head's; programs and MCP results record the commit read;
notices carry the commits they cover."""

from __future__ import annotations

import itertools
import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from click.testing import CliRunner, Result
from conftest import capability, tree_bytes
from test_mcp import cap_json, server, texts

from gitmem import Agent, Author, Repository, ops
from gitmem.cli import cli
from gitmem.errors import InvalidArgument, NotFound, ReadOnly
from gitmem.lean.asof import parse_date, resolve
from gitmem.search import index_file
from gitmem.types import Edit, Memory

ME = Author("Operator", "op@example.com")
STORE = "notes"


def history(repo: Repository) -> list[str]:
    """Three commits: ``a`` created, ``a`` edited, ``b`` created; their ids, oldest first."""
    first = ops.create(repo, STORE, ME, "a", "the a", "alpha one\n")
    second = ops.edit(repo, STORE, ME, "a", body="alpha two\n")
    third = ops.create(repo, STORE, ME, "b", "the b", "beta\n")
    return [first.commit, second.commit, third.commit]


def cli_run(repo: Repository, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--repo", repo.directory, *args])


# -- naming a moment -------------------------------------------------------------------


def test_a_moment_is_a_full_or_short_id_or_a_date(repo: Repository) -> None:
    """Full and short ids name their commit; a date is the newest commit at or before it."""
    commits = history(repo)
    assert repo.commit_at(STORE, commits[0]) == commits[0]
    assert repo.commit_at(STORE, commits[1][:8]) == commits[1]
    assert repo.commit_at(STORE, commits[1][:8].upper()) == commits[1]
    today = datetime.now(UTC).date().isoformat()
    assert repo.commit_at(STORE, today) == commits[2]
    assert repo.commit_at(STORE, "2099-01-01T00:00:00Z") == commits[2]


@pytest.mark.parametrize(
    ("moment", "error", "words"),
    [
        ("yesterday", InvalidArgument, "is neither a commit id"),
        ("abc", InvalidArgument, "is neither a commit id"),
        ("2000-01-01", NotFound, "has no commit at or before 2000-01-01 23:59:59 UTC"),
        (
            "2000-01-01T05:00:00+05:00",
            NotFound,
            "has no commit at or before 2000-01-01 00:00:00 UTC",
        ),
        ("0000000", NotFound, "names no commit of store 'notes'"),
    ],
)
def test_a_moment_that_names_no_commit_is_refused(
    repo: Repository, moment: str, error: type[Exception], words: str
) -> None:
    """Words, dates before the first commit and unknown ids are refused in one line."""
    history(repo)
    with pytest.raises(error, match=words):
        repo.commit_at(STORE, moment)


def test_a_commit_of_another_store_is_not_on_this_history(repo: Repository) -> None:
    """A moment must be a commit of the store's own history."""
    history(repo)
    other = ops.create(repo, "other", ME, "x", "x", "x\n").commit
    with pytest.raises(NotFound, match="names no commit of store 'notes'"):
        repo.commit_at(STORE, other)
    with pytest.raises(NotFound, match="has no commits yet"):
        repo.commit_at("empty", other)


def test_a_short_id_that_names_two_commits_is_refused() -> None:
    """An ambiguous prefix asks for more digits."""
    commits = ["abcd" + "1" * 36, "abcd" + "2" * 36, "ffff" + "0" * 36]
    with pytest.raises(InvalidArgument, match="abcd names 2 commits of store 'notes'"):
        resolve(
            STORE,
            commits[2],
            "abcd",
            contains=commits.__contains__,
            commits=lambda: commits,
            line=lambda: commits,
            commit_time=lambda _: 0,
        )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-05-01", datetime(2026, 5, 1, 23, 59, 59, 999999, UTC)),
        ("2026-05-01T14:30:00Z", datetime(2026, 5, 1, 14, 30, tzinfo=UTC)),
        ("2026-05-01T14:30", datetime(2026, 5, 1, 14, 30, tzinfo=UTC)),
        ("2026-05-01T16:30:00+02:00", datetime(2026, 5, 1, 14, 30, tzinfo=UTC)),
        ("May 1", None),
        ("2026-13-01", None),
    ],
)
def test_iso_dates(text: str, expected: datetime | None) -> None:
    """A date alone is the end of its day; a time without a zone is UTC."""
    assert parse_date(text) == expected


# -- reading the past ------------------------------------------------------------------


def test_a_reading_of_the_past_answers_every_read_as_of_its_commit(repo: Repository) -> None:
    """show, ls, search, state and log read the moment; the repository reads the head."""
    commits = history(repo)
    past = repo.as_of(STORE, commits[0][:10])
    assert past.head(STORE) == commits[0]
    assert past.pinned(STORE) == commits[0] and repo.pinned(STORE) is None
    assert ops.show(past, STORE, "a").body == "alpha one\n"
    assert [slug for slug, _ in past.summaries(STORE)] == ["a"]
    assert [h.memory.slug for h in ops.search(past, STORE, ["alpha", "beta"])] == ["a"]
    assert ops.state(past, STORE)["totals"]["count"] == 1
    assert [r.commit for r, _ in ops.log(past, STORE)] == [commits[0]]
    with pytest.raises(NotFound, match="no memory named 'b'"):
        ops.show(past, STORE, "b")
    assert ops.show(repo, STORE, "a").body == "alpha two\n"
    assert repo.head(STORE) == commits[2]


def test_a_reading_of_the_past_refuses_every_write_and_changes_nothing(
    repo: Repository,
) -> None:
    """Edits, markers and forks through the past refuse with the reason; no ref moves."""
    commits = history(repo)
    past = repo.as_of(STORE, commits[1])
    before = tree_bytes(repo.directory)
    writes = [
        lambda: ops.edit(past, STORE, ME, "a", body="changed\n"),
        lambda: ops.create(past, STORE, ME, "c", "c", "c\n"),
        lambda: past.set_marker(f"notices/x/{STORE}", commits[0]),
        lambda: past.fork(STORE, "copy"),
        lambda: past.revert(STORE, commits[1], ME),
    ]
    for write in writes:
        with pytest.raises(ReadOnly, match="as it stood at commit " + commits[1][:12]):
            write()
    past.close()  # the repository it was made from owns the files
    assert repo.head(STORE) == commits[2]
    assert "copy" not in repo.stores()
    assert tree_bytes(repo.directory) == before


def test_a_read_of_the_past_leaves_the_heads_indexes_in_place(repo: Repository) -> None:
    """The search index file and the kept listing stay the head's after as-of reads
    (the summaries kept by blob id may grow, as any listing lets them)."""
    commits = history(repo)
    assert ops.search(repo, STORE, ["beta"])
    repo.summaries(STORE)
    kept = os.path.join(repo.directory, "gitmem")
    files = {p: b for p, b in tree_bytes(kept).items() if not p.startswith("history")}
    past = repo.as_of(STORE, commits[0])
    assert ops.search(past, STORE, ["beta"]) == []
    assert [slug for slug, _ in past.summaries(STORE)] == ["a"]
    after = {p: b for p, b in tree_bytes(kept).items() if not p.startswith("history")}
    # summaries are kept by blob id, whatever the commit: an old blob's may be added
    assert after.pop("summaries").startswith(files.pop("summaries"))
    assert after == files
    assert os.path.exists(index_file(repo, STORE))
    assert [h.memory.slug for h in ops.search(repo, STORE, ["beta"])] == ["b"]


def test_a_holder_bound_at_a_moment_reads_it_and_refuses_writes(repo: Repository) -> None:
    """bind(at=) reads the moment, offers the reading calls, refuses writes saying why,
    takes no notices and writes no marker."""
    writer = repo.bind(capability("markdown", "shared"), Agent("team", "writer"))
    assert writer is not None
    writer.call("create_memory", {"name": "a", "description": "the a", "body": "one"})
    then = repo.head("profile/team")
    assert then is not None
    writer.call("edit_memory", {"name": "a", "old_text": "one", "new_text": "two"})
    past = repo.bind(capability("markdown", "shared"), Agent("team", "reader"), at=then[:7])
    assert past is not None
    assert "create_memory" not in past.offered()
    assert past.call("read_memory", {"name": "a"}).text.endswith("one")
    refused = past.call("create_memory", {"name": "b", "description": "b", "body": "b"})
    assert (refused.ok, refused.kind) == (False, "read-only")
    assert "as it stood at commit " + then[:12] in refused.text
    writer.call("create_memory", {"name": "c", "description": "the c", "body": "three"})
    assert past.notices() is None
    turn = past.turn("read_memory", {"name": "a"}, code=False)
    assert turn.commit == then and turn.span is None
    assert repo.markers("notices") == []


# -- the commit read -------------------------------------------------------------------


def test_a_program_records_the_commit_it_read_and_runs_again_at_it(repo: Repository) -> None:
    """ProgramResult.commit is the head as the run began; `gitmem run --at` it reads the
    store as that run found it (JSON through the CLI)."""
    holder = repo.bind(capability("markdown", "shared"), Agent("team", "coder"))
    assert holder is not None
    holder.call("create_memory", {"name": "a", "description": "the a", "body": "first"})
    source = (
        'import { memories } from "gitmem";\nconsole.log(await memories.readMemory({name: "a"}));\n'
    )
    try:
        first = holder.run_program(source)
    finally:
        holder.close()
    assert first.ok, first.error
    assert first.commit == repo.head("profile/team")
    ops.edit(repo, "profile/team", ME, "a", body="second")
    program = Path(repo.directory) / "read.ts"
    program.write_text(source)
    assert first.commit is not None
    again = cli_run(repo, "run", str(program), "-s", "profile/team", "--at", first.commit, "--json")
    assert again.exit_code == 0, again.output
    report = json.loads(again.stdout)
    assert report["commit"] == first.commit
    assert report["output"] == first.output
    now = json.loads(cli_run(repo, "run", str(program), "-s", "profile/team", "--json").stdout)
    assert "second" in now["output"] and now["commit"] == repo.head("profile/team")


def test_notices_carry_their_commit_span_to_the_holder_and_onuse(repo: Repository) -> None:
    """holder.notice_span and the turn's span name (from, to); a program (or onUse
    script) asks for it with memories.noticeSpan()."""
    writer = repo.bind(capability("markdown", "shared"), Agent("team", "writer"))
    reader = repo.bind(capability("markdown", "shared"), Agent("team", "reader"))
    assert writer is not None and reader is not None
    writer.call("create_memory", {"name": "a", "description": "the a", "body": "one"})
    assert reader.notices() is not None
    assert reader.notice_span == (None, repo.head("profile/team"))
    base = repo.head("profile/team")
    writer.call("create_memory", {"name": "b", "description": "the b", "body": "two"})
    source = 'import { memories } from "gitmem";\nconsole.log(await memories.noticeSpan({}));\n'
    try:
        turn = reader.turn("run_program", {"source": source})
    finally:
        reader.close()
    assert turn.notices is not None
    assert turn.span == (base, repo.head("profile/team"))
    assert turn.result is not None and turn.result.ok
    assert json.loads(turn.result.text) == {"from": base, "to": repo.head("profile/team")}


# -- the command line ------------------------------------------------------------------


def test_the_reading_commands_take_at(repo: Repository) -> None:
    """show, ls, log, search and state answer as of --at, in text and JSON."""
    commits = history(repo)
    at = ["-s", STORE, "--at", commits[0][:8]]
    shown = json.loads(cli_run(repo, "show", "a", *at, "--json").stdout)
    assert (shown["body"], shown["revision"]) == ("alpha one\n", 1)
    assert [m["slug"] for m in json.loads(cli_run(repo, "ls", *at, "--json").stdout)] == ["a"]
    logged = json.loads(cli_run(repo, "log", *at, "--json").stdout)
    assert [r["commit"] for r in logged] == [commits[0]]
    found = json.loads(cli_run(repo, "search", "beta", "alpha", *at, "--json").stdout)
    assert [h["slug"] for h in found] == ["a"]
    assert json.loads(cli_run(repo, "state", *at, "--json").stdout)["totals"]["count"] == 1
    second = cli_run(repo, "show", "a", "--rev", "2", "-s", STORE, "--at", commits[1])
    assert second.exit_code == 0 and "alpha two" in second.stdout
    assert cli_run(repo, "ls", "-s", STORE).stdout.count("\n") == 2


@pytest.mark.parametrize(
    ("moment", "line"),
    [
        ("soon", "Error: 'soon' is neither a commit id (at least 4 hex digits) nor an ISO 8601"),
        ("1999-12-31", "Error: store 'notes' has no commit at or before 1999-12-31 23:59:59 UTC"),
        ("0000000", "Error: 0000000 names no commit of store 'notes'"),
    ],
)
def test_a_bad_at_is_one_line(repo: Repository, moment: str, line: str) -> None:
    """A moment that names nothing is refused in one line, exit 1, no traceback."""
    history(repo)
    result = cli_run(repo, "show", "a", "-s", STORE, "--at", moment)
    assert result.exit_code == 1
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith(line)


# -- over MCP --------------------------------------------------------------------------


def test_mcp_results_record_the_commit_read_and_the_notices_span(repo: Repository) -> None:
    """Each tool result's _meta names the commit the call read; one carrying notices
    (here, of an operator's revert) names the commits they cover."""
    writer = repo.bind(capability("markdown", "shared"), Agent("p", "writer"))
    assert writer is not None
    writer.call("create_memory", {"name": "a", "description": "the a", "body": "one"})
    store = writer.store_id

    async def main() -> list[types.CallToolResult]:
        results: list[types.CallToolResult] = []
        async with server(repo, "--capability", cap_json(), "--profile", "p") as (session, _):
            results.append(await session.call_tool("read_memory", {"name": "a"}))
            base = repo.head(store)
            assert base is not None
            repo.revert(store, base, ME)
            results.append(await session.call_tool("list_memories", {}))
        return results

    first, second = anyio.run(main)
    assert first.meta is not None and second.meta is not None
    head = repo.head(store)
    assert head is not None
    base = repo.parents(head)[0]
    assert first.meta == {"gitmem/commit": base}
    assert second.meta["gitmem/commit"] == head
    assert second.meta["gitmem/notices"] == {"from": base, "to": head}
    assert "- deleted `a`" in texts(second)[0]


@pytest.mark.parametrize(
    ("moment", "expected"),
    [
        ("1970-01-01T00:00:35Z", "c2"),
        ("1970-01-01T00:00:30Z", "c2"),
        ("1970-01-01T00:00:10Z", "c0"),
        ("1970-01-01", "c4"),
    ],
)
def test_a_date_is_the_newest_commit_of_the_line_at_or_before_it(
    moment: str, expected: str
) -> None:
    """The first-parent line is searched by its commits' times."""
    line = [f"c{i}" for i in range(5)]
    times = {sha: 10 * (i + 1) for i, sha in enumerate(line)}
    assert on_the_line(line, times, moment) == expected


def on_the_line(line: list[str], times: dict[str, int], moment: str) -> str:
    """The commit ``moment`` names on a first-parent ``line`` whose commits claim ``times``."""
    return resolve(
        STORE,
        line[-1],
        moment,
        contains=line.__contains__,
        commits=lambda: line,
        line=lambda: line,
        commit_time=times.__getitem__,
    )


def test_a_date_on_a_line_whose_times_go_back_names_a_commit_at_a_boundary() -> None:
    """Commits that claim times out of order (a clock behind, a time made up far ahead):
    every date still names a commit that claims a time at or before it, whose next
    commit on the line claims a later one."""
    times = [10, 20, 4_000_000_000, 30, 40, 15, 50, 60, 70]
    line = [f"c{i}" for i in range(len(times))]
    claimed = dict(zip(line, times, strict=True))
    for second in range(10, 80):
        found = on_the_line(line, claimed, datetime.fromtimestamp(second, UTC).isoformat())
        at = line.index(found)
        assert claimed[found] <= second
        assert at == len(line) - 1 or claimed[line[at + 1]] > second


def test_the_first_parent_line_leaves_out_what_a_merge_brought_in(repo: Repository) -> None:
    """A date searches the commits the branch pointed at, not a merged-in side's."""
    ours = ops.create(repo, STORE, ME, "a", "the a", "ours\n").commit
    repo.fork(STORE, "side")
    theirs = ops.create(repo, "side", ME, "b", "the b", "theirs\n").commit
    edit = Edit("create", "b", Memory("b", "the b", "theirs\n"))
    merged = repo.merge(STORE, ME, ours, theirs, [edit], {})
    assert merged is not None
    history = repo._history(STORE)  # pyright: ignore[reportPrivateUsage]
    assert history.commits(merged, line=True) == [ours, merged]
    assert history.commits(merged) == [ours, theirs, merged]


def test_a_date_is_found_by_halving_the_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A date names the same commit in a fresh repository as in one that has read its
    history, and a fresh one finds it reading a few commits' times, not every one's."""
    clock = itertools.count(1_800_000_000, 100)
    monkeypatch.setattr(time, "time", lambda: next(clock))
    path = str(tmp_path / "dated.git")
    made: list[tuple[str, int]] = []
    with Repository.init(path) as repo:
        for n in range(40):
            commit = ops.create(repo, STORE, ME, f"m{n}", "a memory", f"{n}\n").commit
            made.append((commit, repo.revisions(STORE, f"m{n}")[-1].time))
        repo.commit_at(STORE, made[0][0])  # the history index, written as any read writes it
    read: list[str] = []
    real = Repository._commit_time  # pyright: ignore[reportPrivateUsage]

    def counted(self: Repository, sha: str) -> int:
        read.append(sha)
        return real(self, sha)

    monkeypatch.setattr(Repository, "_commit_time", counted)
    stamp = lambda when: datetime.fromtimestamp(when, UTC).isoformat()  # noqa: E731
    for commit, when in [made[0], made[7], made[20], made[38]]:
        for moment in (stamp(when), stamp(when + 50)):
            read.clear()
            with Repository.open(path) as fresh:
                assert fresh.commit_at(STORE, moment) == commit
            assert len(read) <= 8, read
            with Repository.open(path) as warm:
                warm.commit_at(STORE, made[1][0][:8])  # reads the whole history index
                assert warm.commit_at(STORE, moment) == commit
    with Repository.open(path) as fresh, pytest.raises(NotFound, match="no commit at or before"):
        fresh.commit_at(STORE, stamp(made[0][1] - 1))
