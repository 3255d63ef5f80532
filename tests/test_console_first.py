"""The Memories panel's first request while the store's history is read on a thread of
its own, or (a long one) in a process of its own: the interim answer's shape, that it
shows no value it does not know, that the completed answer is the one a console
running all along gives, and the fold under a write, two requests at once, a failure
(of the process too) and a closing console."""

from __future__ import annotations

import json
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import capability
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient
from test_console import (
    ADA,
    BASE,
    PORT,
    TOKEN,
    derived_files_removed,
    history_of_every_kind,
    seed,
)

from gitmem import Agent, Repository, ops
from gitmem.adapters.console import Console
from gitmem.errors import StorageError
from gitmem.ops import folding, ledgers
from gitmem.ops.ledger import Ledger, kept_listed_json, listed, listed_json
from gitmem.store.history import History
from gitmem.types import Change, Memory

URL = "/api/stores/profile/ops/memories"
KNOWN = ("slug", "description", "live", "chars")
"""What the head's listing knows of a live memory; every other field waits for the
history."""


def on_fold_thread() -> bool:
    return threading.current_thread().name.startswith("gitmem-ledger")


class Gate(threading.Event):
    """Set, it lets the folds through; ``folds`` counts those that came to it."""

    folds = 0


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[Gate]:
    """Holds every fold run on a ledger's own thread until set; a first request never
    waits for a fold."""
    opened = Gate()
    real = Ledger.follow

    def follow(self: ops.Ledger, repo: Repository, progress: Any = None) -> None:
        if on_fold_thread():
            opened.folds += 1
            assert opened.wait(30)
        real(self, repo, progress)

    monkeypatch.setattr(Ledger, "follow", follow)
    monkeypatch.setattr(ledgers.Ledgers, "patience", None)
    yield opened
    opened.set()


@pytest.fixture
def apart(monkeypatch: pytest.MonkeyPatch) -> Iterator[Gate]:
    """Every fold goes apart at its first step, and a first request waits for none; the
    reader takes in what the child kept only once the gate is set."""
    opened = Gate()
    real = folding.fold_apart

    def fold_apart(directory: str, store: str, progress: Any, listing: Any) -> None:
        opened.folds += 1
        real(directory, store, progress, listing)
        assert opened.wait(30)

    monkeypatch.setattr(folding, "fold_apart", fold_apart)
    monkeypatch.setattr(ledgers.Ledgers, "apart", (0, 0))
    monkeypatch.setattr(ledgers.Ledgers, "patience", (0, 0))
    yield opened
    opened.set()


@pytest.fixture
def console(repo: Repository) -> Iterator[Console]:
    made = Console(repo, token=TOKEN, port=PORT, author=ADA)
    yield made
    made._closing.set()  # pyright: ignore[reportPrivateUsage]


@pytest.fixture
def client(console: Console) -> Iterator[TestClient]:
    with TestClient(
        console.asgi(),
        base_url=BASE,
        headers={"Authorization": f"Bearer {TOKEN}", "Origin": BASE},
    ) as test_client:
        yield test_client


def completed(client: TestClient) -> bytes:
    """The panel asked again until it answers in the completed form."""
    for _ in range(3000):
        answer = client.get(URL)
        assert answer.status_code == 200
        if isinstance(answer.json(), list):
            return answer.content
        time.sleep(0.01)
    raise AssertionError("the history was never read")


def folded(repo: Repository, store: str = "profile/ops") -> ops.Ledger:
    """A ledger folded here and now, as the console folded every first request before."""
    fresh = ops.Ledger(store)
    fresh.follow(repo)
    return fresh


def assert_known_only(rows: list[dict[str, Any]], truth: list[dict[str, Any]]) -> None:
    """``rows`` are the live memories of ``truth`` (the completed rows), in its order
    and with its keys, each saying only what the listing knows: the rest is null."""
    live = [row for row in truth if row["live"]]
    assert [row["slug"] for row in rows] == [row["slug"] for row in live]
    for row, full in zip(rows, live, strict=True):
        assert list(row) == list(full)
        assert {k: row[k] for k in KNOWN} == {k: full[k] for k in KNOWN}
        assert all(row[k] is None for k in row if k not in KNOWN)


def test_the_interim_answer_shows_the_listing_and_how_far_the_history_is(
    client: TestClient, repo: Repository, gate: Gate, tmp_path: Path
) -> None:
    """While the history is read, the panel answers at once with each live memory's
    slug, description and size, null for what only the history knows, no deleted
    memory, and how far the reading has gone; then the completed rows, exactly."""
    history_of_every_kind(repo, tmp_path / "work")
    ops.delete(repo, "profile/ops", ADA, "scratch")
    first = client.get(URL)
    assert first.status_code == 200
    interim = first.json()
    assert set(interim) == {"history", "rows"}
    assert interim["history"] == {"state": "reading", "commits": 0, "revisions": 0, "of": None}
    truth = folded(repo).rows()
    assert any(not row["live"] for row in truth)
    assert_known_only(interim["rows"], truth)
    gate.set()
    assert completed(client) == folded(repo).rows_json().encode()


@settings(max_examples=25, derandomize=True, deadline=None)
@given(
    steps=st.lists(
        st.tuples(st.sampled_from(["create", "edit", "delete"]), st.sampled_from("abcd")),
        min_size=1,
        max_size=12,
    )
)
def test_the_listing_never_says_what_the_history_would_not(
    steps: list[tuple[str, str]],
) -> None:
    """Over any run of creates, edits, deletes and re-creations, the interim rows are
    the completed rows' live memories with only what the listing knows: every field
    it shows is the one the fold finds, and every other is null."""
    with tempfile.TemporaryDirectory() as folder, Repository.init(folder + "/m.git") as repo:
        for i, (op, slug) in enumerate(steps):
            here = slug in repo.snapshot("profile/ops")
            if op == "create" and not here:
                ops.create(repo, "profile/ops", ADA, slug, f"about {slug} {i}", "x" * i)
            elif op == "edit" and here:
                ops.edit(repo, "profile/ops", ADA, slug, body="é" * (i + 1) + "\n")
            elif op == "delete" and here:
                ops.delete(repo, "profile/ops", ADA, slug)
        if repo.head("profile/ops") is None:
            return
        assert_known_only(listed(repo, "profile/ops"), folded(repo).rows())


def test_the_interim_rows_are_written_as_json_dumps_writes_them(repo: Repository) -> None:
    """The interim rows, written a row a format, are byte for byte what ``json.dumps``
    writes of a dict each, whatever the descriptions hold."""
    odd = ['say "hi"', "back\\slash \\u0041", "é ü 中文 😀", "</script> & <b>", "\x7f\u2028\u2029"]
    for i, about in enumerate(odd[:-1]):
        ops.create(repo, "profile/ops", ADA, f"odd-{i}", about, "x" * (i + 1))
    # line separators in a description come only from before the rule, or by a push
    last = Memory(f"odd-{len(odd) - 1}", odd[-1], "x" * len(odd))
    repo.mutate("profile/ops", ADA, lambda _: Change("create", last.slug, last))
    fields = ("slug", "description", "live", "chars", "peak_chars", "revisions", "revision")
    dicts = [
        {
            **dict.fromkeys((*fields, "author", "time")),
            "slug": slug,
            "description": about,
            "live": True,
            "chars": chars,
        }
        for slug, (about, chars, _) in repo.summaries("profile/ops")
    ]
    assert [row["description"] for row in dicts] == odd
    expected = json.dumps(dicts, ensure_ascii=False).encode()
    assert listed_json(repo, "profile/ops") == expected
    assert kept_listed_json(repo, "profile/ops") == expected


def test_a_first_request_on_a_short_history_is_answered_whole(
    client: TestClient, repo: Repository
) -> None:
    """A first request waits for a fold as short as a test's: it answers the completed
    rows, byte for byte those of a ledger folded here and now."""
    seed(repo)
    assert client.get(URL).content == folded(repo).rows_json().encode()


def saved_meanwhile(client: TestClient) -> dict[str, dict[str, Any]]:
    """Save `written-meanwhile` through the console while its history is read; the next
    interim answer's rows, by slug."""
    saved = client.put(
        f"{URL}/written-meanwhile",
        json={"description": "saved during the fold", "body": "while the history is read\n"},
        headers={"If-Match": "0"},
    )
    assert saved.status_code == 201
    return {row["slug"]: row for row in client.get(URL).json()["rows"]}


def test_a_write_while_the_history_is_read(
    client: TestClient, repo: Repository, gate: Gate
) -> None:
    """A memory saved while the fold runs shows in the next interim answer (the head's
    listing), and the completed rows, once the fold goes on from its head to the new
    one, equal a fold of the whole history."""
    seed(repo)
    before = repo.head("profile/ops")
    assert client.get(URL).json()["history"]["state"] == "reading"
    rows = saved_meanwhile(client)
    assert repo.head("profile/ops") != before
    assert rows["written-meanwhile"]["description"] == "saved during the fold"
    assert rows["written-meanwhile"]["revisions"] is None
    gate.set()
    whole = json.loads(completed(client))
    assert whole == folded(repo).rows()
    assert {row["slug"]: row for row in whole}["written-meanwhile"]["revisions"] == 1
    kept = repo.kept("ledger", "profile/ops")
    assert kept is not None  # kept as ever, for the next process to go on from


def test_two_requests_at_once_share_one_fold_and_neither_waits_for_it(
    client: TestClient, repo: Repository, gate: Gate
) -> None:
    """Two panel requests at once both answer in the interim form from one fold, and
    the Agents view, which waits for that fold, holds neither of them."""
    seed(repo)
    answers: list[Any] = []

    def ask(url: str) -> None:
        answers.append((url, client.get(url).json()))

    agents = threading.Thread(target=ask, args=("/api/agents",))
    agents.start()
    panels = [threading.Thread(target=ask, args=(URL,)) for _ in range(2)]
    for thread in panels:
        thread.start()
    for thread in panels:
        thread.join(30)
    assert [a[1]["history"]["state"] for a in answers if a[0] == URL] == ["reading", "reading"]
    assert agents.is_alive()  # it waits for the history, without the panel waiting too
    gate.set()
    agents.join(30)
    assert answers[-1] == ("/api/agents", ops.agents(repo, [folded(repo)]))
    assert completed(client) == folded(repo).rows_json().encode()
    assert gate.folds == 1


def test_the_stores_page_says_which_figures_wait_for_the_history(
    client: TestClient, repo: Repository, gate: Gate
) -> None:
    """While a store's history is read, the Stores page answers at once: what only the
    history knows (authors, instances, shared, memories ever held) is null, the rest is
    as ever, and ``history`` says how far the reading is; then the overview as ever."""
    seed(repo)
    interim = {s["store"]: s for s in client.get("/api/stores").json()}["profile/ops"]
    assert interim["history"] == {"state": "reading", "commits": 0, "revisions": 0, "of": None}
    waiting = ("authors", "instances", "shared", "memories_ever")
    assert all(interim[k] is None for k in waiting)
    gate.set()
    completed(client)
    whole = {s["store"]: s for s in client.get("/api/stores").json()}["profile/ops"]
    assert list(whole) == [k for k in interim if k != "history"]
    assert {k: v for k, v in interim.items() if k not in (*waiting, "history")} == {
        k: v for k, v in whole.items() if k not in waiting
    }
    assert whole["memories_ever"] == len(folded(repo).rows()) and whole["shared"]


def test_a_fold_that_fails_is_said_in_one_line(
    client: TestClient, repo: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fold that fails leaves the panel answering its listing with the failure in one
    line (never a 500); once the store moves, the history is read again."""
    seed(repo)
    real = Ledger.follow

    def broken(self: ops.Ledger, repo: Repository, progress: Any = None) -> None:
        if on_fold_thread():
            raise StorageError("commit 0123456789ab is damaged; run `gitmem check`")
        real(self, repo, progress)

    monkeypatch.setattr(Ledger, "follow", broken)
    answer = client.get(URL)
    assert answer.status_code == 200
    history = answer.json()["history"]
    assert history == {
        "state": "failed",
        "message": "the history could not be read: commit 0123456789ab is damaged; "
        "run `gitmem check`",
    }
    assert "\n" not in history["message"]
    assert [row["slug"] for row in answer.json()["rows"]] == ["runbook"]
    monkeypatch.setattr(Ledger, "follow", real)
    assert client.get(URL).json()["history"]["state"] == "failed"  # the same head
    ops.create(repo, "profile/ops", ADA, "after", "d", "written after the failure")
    assert client.get(URL).content == folded(repo).rows_json().encode()


def test_a_fold_says_how_far_it_has_gone(repo: Repository) -> None:
    """The reading of revisions tells its progress: commits walked while it walks (the
    index not yet built), then revisions read of how many, ending at all of them."""
    seed(repo)
    ops.create(repo, "profile/ops", ADA, "more", "d", "text")
    commits = len(list(repo.iter_commits("profile/ops")))
    whole = repo.outlines("profile/ops")
    derived_files_removed(repo)
    other = Repository.open(repo.directory)  # an index not yet built: the commits walked
    try:
        told: list[tuple[int, int, int | None]] = []
        found = other.outlines("profile/ops", progress=lambda *p: told.append(p))
    finally:
        other.close()
    assert found == whole
    assert told[0] == (commits, 0, None)
    assert told[-1] == (commits, len(found), len(found))
    assert all(t[2] == len(found) for t in told[1:])


def test_a_kept_index_says_how_long_the_reading_is_before_it_is_parsed(
    repo: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the history index kept, the reading says how many revisions it has to read
    before it parses the index (a while, at 100,000): a reader that will not wait that
    long stops having parsed nothing."""
    seed(repo)
    ops.create(repo, "profile/ops", ADA, "more", "d", "text")
    revisions = len(repo.outlines("profile/ops"))  # the index built, and kept
    parsed: list[str] = []
    monkeypatch.setattr(History, "_load", lambda self: parsed.append(self))

    class Longer(Exception):
        pass

    told: list[tuple[int, int, int | None]] = []

    def note(*progress: Any) -> None:
        told.append(progress)
        raise Longer

    other = Repository.open(repo.directory)
    try:
        with pytest.raises(Longer):
            other.outlines("profile/ops", progress=note)
    finally:
        other.close()
    assert told == [(0, 0, revisions)]
    assert parsed == []


def test_a_closing_console_stops_its_folds(
    repo: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fold still running when the console closes stops at its next step."""
    seed(repo)
    lock = threading.Lock()
    held = ops.Ledgers(repo, lock)
    held.patience = None
    held.stopping.set()
    held.panel("profile/ops")
    reading = held._readings["profile/ops"]  # pyright: ignore[reportPrivateUsage]
    assert reading.done.wait(30)
    assert reading.error is not None and "closing" in str(reading.error)


# -- a long history, read in a process of its own ---------------------------------------


def test_a_long_history_is_read_apart(
    client: TestClient,
    repo: Repository,
    apart: Gate,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """While the child folds, the panel answers with the listing the child read (this
    process reads none), then with the rows of a fold here, the ledger kept."""
    history_of_every_kind(repo, tmp_path / "work")

    def read_here(*args: object) -> bytes:
        raise AssertionError("the reader read the listing itself")

    monkeypatch.setattr(ledgers, "listed_json", read_here)
    interim = client.get(URL).json()
    assert interim["history"]["state"] == "reading"
    apart.set()
    whole = completed(client)
    assert whole == folded(repo).rows_json().encode()
    assert_known_only(interim["rows"], json.loads(whole))
    assert apart.folds == 1


def test_a_write_while_the_history_is_read_apart(
    client: TestClient, repo: Repository, apart: Gate
) -> None:
    """A memory saved while the child folds shows in the next interim answer (the new
    head's listing, read here), and the reader goes on from the head the child kept to
    the new one: the rows of a fold of the whole history."""
    seed(repo)
    assert client.get(URL).json()["history"]["state"] == "reading"
    rows = saved_meanwhile(client)
    assert rows["written-meanwhile"]["description"] == "saved during the fold"
    apart.set()
    whole = json.loads(completed(client))
    assert whole == folded(repo).rows()
    assert {row["slug"]: row for row in whole}["written-meanwhile"]["revisions"] == 1


def test_a_kept_listing_is_answered_without_waiting_for_the_child(
    client: TestClient, repo: Repository, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """With the head's listing kept, the first answer reads it here, while the child
    folding apart has said nothing yet; the rows are those the child would have said."""
    seed(repo)
    ops.create(repo, "profile/ops", ADA, "more", 'a "quoted" é\\ \t', "text")
    repo.summaries("profile/ops")  # the listing kept, as `gitmem ls` keeps it
    go = tmp_path / "go"
    # a child saying nothing until told to go (or for a minute: a reader waiting for it
    # then answers its failure)
    held = (
        "import os, time\nend = time.monotonic() + 60\n"
        f"while not os.path.exists({str(go)!r}) and time.monotonic() < end: time.sleep(0.01)\n"
        "exit(1)"
    )
    monkeypatch.setattr(ledgers.Ledgers, "apart", (0, 0))
    monkeypatch.setattr(ledgers.Ledgers, "patience", (0, 0))
    monkeypatch.setattr(folding, "CHILD", ("-c", held))
    try:
        first = client.get(URL).json()
    finally:
        go.touch()
    assert first["history"]["state"] == "reading"  # the child had not ended
    assert first["rows"] == json.loads(listed_json(repo, "profile/ops"))
    assert first["rows"] == listed(repo, "profile/ops")


def test_no_kept_listing_is_known_without_reading_the_store(
    repo: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where no listing is kept (a fresh clone), the reader learns so without reading
    an object of the store, which would leave it larger for good; a kept one is read."""
    seed(repo)
    derived_files_removed(repo)
    fresh = Repository.open(repo.directory)
    try:
        with monkeypatch.context() as patched:
            patched.setattr(Repository, "snapshot", lambda *_: pytest.fail("read the store"))
            assert kept_listed_json(fresh, "profile/ops") is None
        fresh.summaries("profile/ops")
        assert kept_listed_json(fresh, "profile/ops") == listed_json(fresh, "profile/ops")
    finally:
        fresh.close()


@pytest.mark.parametrize(
    ("child", "said"),
    [
        (
            "import os, signal; os.kill(os.getpid(), signal.SIGKILL)",
            "the process reading it was stopped by SIGKILL",
        ),
        (
            "print('failed commit 0123456789ab is damaged; run `gitmem check`'); exit(1)",
            "commit 0123456789ab is damaged; run `gitmem check`",
        ),
        (
            "import sys; sys.stderr.write('Traceback (most recent call last):\\n"
            "  File x\\nMemoryError\\n\\n'); sys.exit(3)",
            "the process reading it ended with status 3: MemoryError",
        ),
    ],
)
def test_a_child_that_fails_is_said_in_one_line(
    client: TestClient,
    repo: Repository,
    monkeypatch: pytest.MonkeyPatch,
    child: str,
    said: str,
) -> None:
    """A child killed, failing or crashing leaves the panel answering the listing (read
    here) with why in one line; at the same head it stays so, and once the store moves
    the history is read again."""
    seed(repo)
    monkeypatch.setattr(ledgers.Ledgers, "apart", (0, 0))
    monkeypatch.setattr(ledgers.Ledgers, "patience", (0, 0))
    monkeypatch.setattr(folding, "CHILD", ("-c", child))
    answer = client.get(URL)
    assert answer.status_code == 200
    history = answer.json()["history"]
    assert history == {"state": "failed", "message": f"the history could not be read: {said}"}
    assert [row["slug"] for row in answer.json()["rows"]] == ["runbook"]
    monkeypatch.undo()
    assert client.get(URL).json()["history"]["state"] == "failed"  # the same head
    ops.create(repo, "profile/ops", ADA, "after", "d", "written after the failure")
    assert client.get(URL).content == folded(repo).rows_json().encode()


def test_a_write_as_a_fold_begins_is_folded_once(
    repo: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A memory saved between the moment a fold reads the store's head and the moment it
    reads the revisions is left to the next fold, not read twice, neither in the rows
    nor in the ledger kept for a later process."""
    seed(repo)
    writer = repo.bind(capability("markdown", "shared"), Agent("ops", "carol"))
    assert writer is not None
    real = Repository.outlines
    landed: list[str] = []

    def write_first(self: Repository, *args: Any, **kwargs: Any) -> Any:
        if not landed:
            landed.append("written-meanwhile")
            args_ = {"name": "written-meanwhile", "description": "d", "body": "b\n"}
            assert writer.call("create_memory", args_).ok
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Repository, "outlines", write_first)
    ledger = ops.Ledger("profile/ops")
    ledger.follow(repo)
    ledger.follow(repo)
    monkeypatch.setattr(Repository, "outlines", real)
    assert landed
    revisions = {row["slug"]: row["revisions"] for row in json.loads(ledger.rows_json())}
    assert revisions == {"runbook": 2, "scratch": 2, "written-meanwhile": 1}
    # what was kept on the way is what a later process goes on from
    assert folded(repo).rows_json() == ledger.rows_json()
