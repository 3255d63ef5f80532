"""Blame: each line of a memory's files with the revision that last changed it, checked
against ``git blame`` on the same file at every commit of the store."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import commit_by_hand, git
from hypothesis import given, settings
from hypothesis import strategies as st

from gitmem import (
    Agent,
    Author,
    BlameLine,
    Capability,
    Holder,
    LimitExceeded,
    Limits,
    NotFound,
    Provenance,
    Repository,
)
from gitmem.cli import cli
from gitmem.store import Snapshot, blame
from gitmem.store import memoryfiles as files
from gitmem.types import Change, Edit, Memory

S = "notes"
T = "notes-copy"
ADA = Author("Ada Operator", "ada@example.com")
BOT = Author.agent("bot-1")
_HEADER = re.compile(r"^([0-9a-f]{40}) \d+ (\d+)")
_FILE = {"memory": files.MD, "code": files.CODE, "onUse": files.ON_USE}


def write(
    repo: Repository,
    slug: str,
    body: str,
    *,
    description: str = "notes",
    code: str = "",
    author: Author = ADA,
    store: str = S,
) -> str:
    """Write ``slug`` whole (created or replaced); returns the commit."""

    def change(snapshot: Snapshot) -> Change:
        op = "write" if slug in snapshot else "create"
        return Change(op, slug, Memory(slug, description, body, code))

    return repo.mutate(store, author, change).commit


def rename(repo: Repository, old: str, new: str) -> str:
    def change(snapshot: Snapshot) -> Change:
        memory = snapshot.get(old)
        assert memory is not None
        moved = Memory(new, memory.description, memory.body, memory.code)
        return Change("rename", new, moved, also=(Edit("rename", old, None),))

    return repo.mutate(S, ADA, change).commit


def git_blame(repo: Repository, commit: str, path: str) -> list[str]:
    """The commit ``git blame`` gives each line of ``path`` at ``commit``."""
    done = git(repo.directory, "blame", "--porcelain", commit, "--", path)
    assert done.returncode == 0, done.stderr
    found: dict[int, str] = {}
    for line in done.stdout.splitlines():
        match = _HEADER.match(line)
        if match:
            found[int(match.group(2))] = match.group(1)
    return [found[n] for n in sorted(found)]


def assert_agrees_with_git(repo: Repository, slug: str, store: str = S) -> int:
    """At every commit of the store's history that holds ``slug``, its blame gives
    each line of each of its files the commit ``git blame`` gives it; returns how
    many commits were compared."""
    compared = 0
    for commit in repo.iter_commits(store):
        if slug not in repo.snapshot(store, commit):
            continue
        lines = repo.blame(store, slug, commit)
        for name, suffix in _FILE.items():
            ours = [b.commit for b in lines if b.file == name]
            path = f"{files.bucket(slug)}/{slug}{suffix}"
            if not ours and git(repo.directory, "cat-file", "-e", f"{commit}:{path}").returncode:
                continue
            assert ours == git_blame(repo, commit, path), (commit, name)
        compared += 1
    return compared


def test_each_line_is_credited_to_the_revision_that_last_changed_it(repo: Repository) -> None:
    """Description, body and code lines each carry the revision, commit, author and date
    of their last change, and agree with `git blame` at every commit."""
    first = write(repo, "todo", "one\ntwo\nthree\n", code="export const a = 1;\n")
    second = write(repo, "todo", "one\nTWO\nthree\nfour\n", code="export const a = 1;\n")
    third = write(
        repo,
        "todo",
        "one\nTWO\nthree\nfour\n",
        description="tasks",
        code="export const a = 1;\nexport const b = 2;\n",
        author=BOT,
    )
    lines = repo.blame(S, "todo")
    assert all(isinstance(b, BlameLine) for b in lines)
    by_text = {(b.file, b.text): (b.revision, b.commit, b.author, b.by) for b in lines}
    assert by_text["memory", 'description: "tasks"'] == (3, third, "bot-1", "operator")
    assert by_text["memory", "one"] == (1, first, "Ada Operator", "operator")
    assert by_text["memory", "TWO"] == (2, second, "Ada Operator", "operator")
    assert by_text["code", "export const a = 1;"][:2] == (1, first)
    assert by_text["code", "export const b = 2;"][:2] == (3, third)
    assert [b.line for b in lines if b.file == "memory"] == list(range(1, 8))
    assert assert_agrees_with_git(repo, "todo") == 3


def test_blame_as_of_a_commit_reads_that_moment(repo: Repository) -> None:
    """`at` (a full or short commit id) blames the memory as that commit left it."""
    first = write(repo, "todo", "one\n")
    write(repo, "todo", "one\ntwo\n")
    then = repo.blame(S, "todo", first[:8])
    assert [b.text for b in then][-1] == "one" and {b.commit for b in then} == {first}
    with pytest.raises(NotFound):
        repo.blame(S, "missing")


def test_blame_follows_a_rename(repo: Repository) -> None:
    """Lines written before a rename keep their revision under the old name."""
    first = write(repo, "draft", "alpha\nbeta\n")
    rename(repo, "draft", "plan")
    last = write(repo, "plan", "alpha\nbeta\ngamma\n")
    lines = repo.blame(S, "plan")
    body = [(b.text, b.slug, b.revision, b.commit) for b in lines if b.line > 3]
    assert body == [
        ("alpha", "draft", 1, first),
        ("beta", "draft", 1, first),
        ("gamma", "plan", 2, last),
    ]
    assert assert_agrees_with_git(repo, "plan") == 2


def test_a_commit_by_hand_is_blamed_on_its_git_author(repo: Repository, tmp_path: Path) -> None:
    """A plain `git commit` on the store's branch is a revision by its git author, in
    blame as in `revisions`, and a hand-made rename is followed as git follows it."""
    write(repo, "todo", "one\ntwo\n")
    old = files.memory_path("todo")
    new = files.memory_path("tasks")

    def by_hand(work: Path) -> None:
        text = (work / old).read_text()
        (work / old).write_text(text.replace("two\n", "two, by hand\nthree\n"))

    commit_by_hand(repo.directory, S, tmp_path / "work", by_hand)
    lines = repo.blame(S, "todo")
    hand = [b for b in lines if b.author == "Ana Operator"]
    assert [b.text for b in hand] == ["two, by hand", "three"]
    assert {(b.by, b.revision, b.session) for b in hand} == {("git", 2, "")}
    assert repo.revisions(S, "todo")[-1].author == "Ana Operator"

    def move(work: Path) -> None:
        (work / new).parent.mkdir(exist_ok=True)
        (work / old).rename(work / new)

    commit_by_hand(repo.directory, S, tmp_path / "work2", move)
    moved = repo.blame(S, "tasks")
    assert [(b.slug, b.revision) for b in moved if b.text == "three"] == [("todo", 2)]
    assert assert_agrees_with_git(repo, "tasks") == 1
    assert assert_agrees_with_git(repo, "todo") == 2


@pytest.mark.parametrize("far", ["99999999999999", "253402300800"])
def test_a_commit_dated_past_any_calendar_is_read_as_its_number(
    repo: Repository, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, far: str
) -> None:
    """Git keeps any number of seconds as a commit's time: one no date can show (here
    the year 3,170,843, and the first second of the year 10,000) is printed as that
    number by log, revisions and blame, never a failure that keeps the history from
    being read."""
    write(repo, "todo", "one\n")
    monkeypatch.setenv("GIT_AUTHOR_DATE", f"@{far} +0000")
    monkeypatch.setenv("GIT_COMMITTER_DATE", f"@{far} +0000")

    def by_hand(work: Path) -> None:
        path = work / files.memory_path("todo")
        path.write_text(path.read_text() + "two\n")

    commit_by_hand(repo.directory, S, tmp_path / "work", by_hand)
    runner = CliRunner()
    for args in (["log"], ["log", "todo", "-p"], ["revisions", "todo"], ["blame", "todo"]):
        done = runner.invoke(cli, ["--repo", repo.directory, *args, "--store", S])
        assert done.exit_code == 0, (args, done.output)
        assert "please report" not in done.output
    blamed = runner.invoke(cli, ["--repo", repo.directory, "blame", "todo", "--store", S])
    assert f" @{far} memory" in blamed.output
    logged = runner.invoke(cli, ["--repo", repo.directory, "log", "--store", S])
    assert logged.output.splitlines()[0].endswith(f"@{far}")


def test_blame_credits_each_side_of_a_merge(repo: Repository) -> None:
    """After a merge of two lines of work, each line is its own side's, the lines the
    merge itself wrote are the merge's, and `git blame` agrees."""
    base = write(repo, "todo", "one\ntwo\nthree\nfour\n")
    repo.fork(S, T)
    ours = write(repo, "todo", "ONE\ntwo\nthree\nfour\n")
    theirs = write(repo, "todo", "one\ntwo\nthree\nFOUR\n", store=T, author=BOT)
    ours_head, theirs_head = repo.head(S), repo.head(T)
    assert ours_head is not None and theirs_head is not None
    merged = Memory("todo", "notes", "ONE\ntwo\nthree\nFOUR\nfive\n")
    made = repo.merge(S, ADA, ours_head, theirs_head, [Edit("merge", "todo", merged)], {})
    assert made is not None
    owners = {b.text: (b.commit, b.revision) for b in repo.blame(S, "todo")}
    assert owners["ONE"] == (ours, 2)
    assert owners["FOUR"] == (theirs, 3)
    assert owners["two"] == (base, 1)
    assert owners["five"] == (made, 4)
    assert assert_agrees_with_git(repo, "todo") == 4


def test_blame_names_the_session_the_harness_gave(repo: Repository) -> None:
    """An agent's line carries the session its harness bound it with, and its kind."""
    holder = repo.bind(
        Capability("markdown", "shared", Limits()),
        Agent("researcher", "r-1"),
        provenance=Provenance(session="sess-42", client="claude-code"),
    )
    assert holder is not None
    result = holder.call(
        "create_memory", {"name": "found", "description": "a finding", "body": "x\n"}
    )
    assert result.ok, result.text
    [line] = [b for b in repo.blame(holder.store_id, "found") if b.text == "x"]
    assert (line.author, line.by, line.session) == ("r-1", "agent", "sess-42")


def test_the_cli_prints_blame_as_text_and_json(repo: Repository) -> None:
    """`gitmem blame` prints one row per line; `--json` the same lines as objects; a
    bad `--at` is a one-line refusal."""
    first = write(repo, "todo", "one\n")
    second = write(repo, "todo", "one\ntwo\n")
    runner = CliRunner()
    base = ["--repo", repo.directory, "blame", "todo", "--store", S]
    text = runner.invoke(cli, base)
    assert text.exit_code == 0, text.output
    rows = text.output.splitlines()
    assert len(rows) == 5
    assert rows[-1].startswith(f"{second[:12]} r2 ") and rows[-1].endswith("5) two")
    data = json.loads(runner.invoke(cli, [*base, "--json"]).output)
    assert [d["commit"] for d in data] == [first] * 4 + [second]
    assert set(data[0]) == {
        "file",
        "line",
        "text",
        "slug",
        "revision",
        "commit",
        "author",
        "by",
        "session",
        "time",
    }
    at = json.loads(runner.invoke(cli, [*base, "--at", first[:7], "--json"]).output)
    assert len(at) == 4
    bad = runner.invoke(cli, [*base, "--at", "not-a-commit"])
    assert bad.exit_code == 1
    assert bad.output.splitlines() == [
        "Error: 'not-a-commit' is neither a commit id (at least 4 hex digits) nor an "
        "ISO 8601 date such as 2026-05-01 or 2026-05-01T14:30:00Z"
    ]
    dated = json.loads(runner.invoke(cli, [*base, "--at", "2999-01-01", "--json"]).output)
    assert [d["commit"] for d in dated] == [first] * 4 + [second]


def test_a_commit_by_hand_reaches_holders_as_a_notice(repo: Repository, tmp_path: Path) -> None:
    """A holder is told of a memory a plain `git commit` changed, like any other write."""
    write(repo, "todo", "one\n")
    capability = Capability("markdown", "shared", Limits())
    holder = Holder.bind_store(repo, S, capability, Agent("ops", "bob"))
    holder.notices()  # its first look

    def by_hand(work: Path) -> None:
        path = work / files.memory_path("todo")
        path.write_text(path.read_text() + "two, by hand\n")

    commit_by_hand(repo.directory, S, tmp_path / "work", by_hand)
    told = holder.notices()
    assert told is not None and "`todo`" in told


def test_the_core_stops_reading_once_every_line_has_its_owner() -> None:
    """Texts are taken newest first and only while some line is unexplained: a file
    whose lines all changed in its last revision reads two texts of a hundred."""
    taken: list[int] = []

    def revisions() -> Iterator[tuple[int, bytes]]:
        for n in range(100, 0, -1):
            taken.append(n)
            yield n, (b"new\nlines\n" if n == 100 else b"old\ntext\n" * (n % 3 + 1))

    owned = blame.attribute(revisions())
    assert owned == [(b"new", 100), (b"lines", 100)]
    assert taken == [100, 99]
    assert blame.attribute([]) == []
    # the oldest owns what no older text explains; equal texts pass every line on
    assert blame.attribute([("c", b"a\nb\n"), ("b", b"a\nb\n"), ("a", b"a\n")]) == [
        (b"a", "a"),
        (b"b", "b"),
    ]


def test_blame_reads_only_the_revisions_it_needs(
    repo: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A memory whose code was rewritten whole in its last revision reads two of its
    code's texts, however many revisions it has; its description, whose front-matter
    lines date from the first, reads back to it, one text per change of the file."""
    for n in range(1, 13):
        write(repo, "tool", f"step {n}\n", code=f"export const v{n} = {n};\n")
    drawn: dict[int, int] = {}
    real = blame.attribute

    def counting(revisions: Iterable[tuple[Any, bytes]]) -> list[tuple[bytes, Any]]:
        call = len(drawn)
        drawn[call] = 0

        def counted() -> Iterator[tuple[Any, bytes]]:
            for item in revisions:
                drawn[call] += 1
                yield item

        return real(counted())

    monkeypatch.setattr(blame, "attribute", counting)
    lines = repo.blame(S, "tool")
    assert [b.revision for b in lines if b.file == "code"] == [12]
    assert drawn == {0: 12, 1: 2, 2: 0}  # .md, .code.ts, .onuse.ts


@settings(max_examples=300, derandomize=True, deadline=None)
@given(
    st.lists(st.sampled_from(["a", "b", "", "é"]), max_size=6),
    st.lists(st.sampled_from(["a", "b", "", "é"]), max_size=6),
    st.booleans(),
    st.booleans(),
)
def test_shared_ends_agree_with_a_line_by_line_comparison(
    old: list[str], new: list[str], old_newline: bool, new_newline: bool
) -> None:
    """The lines two texts share at their start and end, found on their bytes, are
    the ones a comparison line by line finds, with or without a final newline."""

    def text(lines: list[str], newline: bool) -> bytes:
        return ("\n".join(lines) + ("\n" if newline and lines else "")).encode()

    a, b = text(old, old_newline), text(new, new_newline)
    x, y = blame.split_lines(a), blame.split_lines(b)
    most = min(len(x), len(y))
    start = next((i for i in range(most) if x[i] != y[i]), most)
    end = next((i for i in range(most - start) if x[-1 - i] != y[-1 - i]), most - start)
    assert blame._shared(x, y) == (start, end)  # pyright: ignore[reportPrivateUsage]


def _plain_attribute(revisions: list[tuple[int, bytes]]) -> list[tuple[bytes, int]]:
    """The core's rule written plainly: every pair of neighbouring texts compared line
    by line in full (their shared ends, then the matcher over what lies between), every
    line of the newest followed back until a text does not hold it."""
    from difflib import SequenceMatcher

    key, text = revisions[0]
    lines = blame.split_lines(text)
    owners: list[int] = [key] * len(lines)
    here = {i: i for i in range(len(lines))}  # a line of the text at hand → its final line
    new, new_text = lines, text
    for older_key, older in revisions[1:]:
        old = blame.split_lines(older)
        if older != new_text:
            most = min(len(old), len(new))
            start = next((i for i in range(most) if old[i] != new[i]), most)
            end = next((i for i in range(most - start) if old[-1 - i] != new[-1 - i]), most - start)
            keep = {i: i for i in range(start)}
            keep.update({len(new) - 1 - i: len(old) - 1 - i for i in range(end)})
            old_middle, new_middle = old[start : len(old) - end], new[start : len(new) - end]
            if set(old_middle) & set(new_middle):
                matcher = SequenceMatcher(None, old_middle, new_middle, False)
                for a, b, size in matcher.get_matching_blocks():
                    keep.update({start + b + k: start + a + k for k in range(size)})
            for line, final in here.items():
                if line not in keep:
                    owners[final] = key
            here = {keep[line]: final for line, final in here.items() if line in keep}
        new, new_text, key = old, older, older_key
        if not here:
            break
    for final in here.values():
        owners[final] = key
    return list(zip(lines, owners, strict=True))


_TEXTS = st.lists(
    st.builds(
        lambda lines, newline: ("\n".join(lines) + ("\n" if newline else "")).encode(),
        st.lists(st.sampled_from(["a", "b", "c", "", "a b"]), max_size=8),
        st.booleans(),
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=400, derandomize=True, deadline=None)
@given(_TEXTS)
def test_the_core_decides_as_a_plain_comparison_of_every_pair_does(texts: list[bytes]) -> None:
    """The core's shortcuts (lines passed on without copying when no line asked for
    changed, ends found without a loop over lines) give every line the owner a plain
    comparison of every pair of neighbouring texts gives it."""
    revisions = list(enumerate(texts))
    assert blame.attribute(revisions) == _plain_attribute(revisions)


# -- bounds: what one memory can make a blame spend ----------------------------------------


def test_a_file_past_the_line_bound_is_refused_in_one_line(
    repo: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every blamed line costs a record of some hundreds of bytes, and a memory of a
    million empty lines packs to a few kilobytes: a file past the bound is refused as a
    limit, in one line, before its lines are walked; one at the bound is blamed."""
    monkeypatch.setattr(blame, "BLAME_LINES", 40)
    write(repo, "long", "x\n" * 37)  # and three lines of front matter: 40 in the file
    assert len([b for b in repo.blame(S, "long") if b.file == "memory"]) == 40
    write(repo, "long", "x\n" * 38)
    with pytest.raises(LimitExceeded, match="at most 40 lines of a file, and this one has 41"):
        repo.blame(S, "long")
    done = CliRunner().invoke(cli, ["--repo", repo.directory, "blame", "long", "--store", S])
    assert done.exit_code == 1 and done.output.count("\n") == 1
    assert done.output.startswith("Error: blame reads at most 40 lines")
    # an older revision past the bound is refused before it is split, however short
    # the newest: its lines would be read to explain the newest's
    write(repo, "long", "x\n" * 37)
    with pytest.raises(LimitExceeded, match="at most 40 lines of a file, and this one has 41"):
        repo.blame(S, "long")


def test_a_long_rewrite_of_repeated_lines_gives_the_matcher_a_bounded_part(
    repo: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The line-by-line matcher's work grows with the product of the parts it is given,
    and worse where lines repeat (a 300 KB memory of three lines over and over took
    nearly a minute): it is given at most MATCHED_MAX line pairs, and a longer rewrite
    is matched by the lines each side holds once. Lines still pass to the revision
    that wrote them where such lines anchor them."""
    import difflib

    given: list[int] = []
    real = difflib.SequenceMatcher

    def counted(junk: Any, a: Any, b: Any, autojunk: bool) -> Any:
        given.append(len(a) * len(b))
        return real(junk, a, b, autojunk)

    monkeypatch.setattr(difflib, "SequenceMatcher", counted)
    first = write(repo, "todo", "a\nb\nc\n" * 1000)
    second = write(repo, "todo", "c\na\nb\n" * 1000 + "z\n")
    lines = [b for b in repo.blame(S, "todo") if b.file == "memory"]
    assert all(pairs <= blame.MATCHED_MAX for pairs in given)
    assert {b.commit for b in lines} <= {first, second}
    kept = "\n".join(f"line {n}" for n in range(1000))
    first = write(repo, "anchored", f"{kept}\n" + "same\n" * 600)
    second = write(repo, "anchored", "same\n" * 600 + f"{kept}\nnew\n")
    owners = {b.text: b.commit for b in repo.blame(S, "anchored") if b.file == "memory"}
    assert owners["line 500"] == first and owners["new"] == second
    assert all(pairs <= blame.MATCHED_MAX for pairs in given)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 40), min_size=0, max_size=30, unique=True),
    st.lists(st.integers(0, 40), min_size=0, max_size=30, unique=True),
)
def test_lines_held_once_are_matched_as_their_longest_common_order(
    old: list[int], new: list[int]
) -> None:
    """Where every line is held once, the patience match keeps exactly as many lines as
    the longest common subsequence has, each to an equal line, in order on both sides."""
    a = [str(n).encode() for n in old]
    b = [str(n).encode() for n in new]
    kept = blame._anchored(a, b)  # pyright: ignore[reportPrivateUsage]
    assert all(b[j] == a[i] for j, i in kept.items())
    pairs = sorted(kept.items())
    assert all(p[1] < q[1] for p, q in itertools.pairwise(pairs))
    longest = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) - 1, -1, -1):
        for j in range(len(b) - 1, -1, -1):
            longest[i][j] = (
                longest[i + 1][j + 1] + 1
                if a[i] == b[j]
                else max(longest[i + 1][j], longest[i][j + 1])
            )
    assert len(kept) == longest[0][0]
