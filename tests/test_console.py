"""The console's JSON API through the ASGI test client: every route, every refusal, the
token, origin and host checks, compare-and-swap saves; and the ops it stands on."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import httpx2
import pytest
from click.testing import CliRunner
from conftest import capability, commit_by_hand, git
from starlette.responses import StreamingResponse
from starlette.testclient import TestClient

from gitmem import Agent, Author, Repository, StaleRevision, ops
from gitmem.adapters import console as console_module
from gitmem.adapters import console_requests, heap
from gitmem.adapters.console import STATUS, Console
from gitmem.cli import cli
from gitmem.holder import Holder
from gitmem.types import SYNC_AUTHOR

PORT = 8765
BASE = f"http://127.0.0.1:{PORT}"
TOKEN = "test-token-123"
ADA = Author("Ada Operator", "ada@example.org")
AGENT = Author.agent("agent-1")
HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'


@pytest.fixture
def console(repo: Repository) -> Console:
    """A console on ``repo`` as if bound to 127.0.0.1:8765, editing as Ada."""
    return Console(repo, token=TOKEN, port=PORT, author=ADA)


@pytest.fixture
def client(console: Console) -> Iterator[TestClient]:
    """A client that carries the token and the console's own origin."""
    with TestClient(
        console.asgi(),
        base_url=BASE,
        headers={"Authorization": f"Bearer {TOKEN}", "Origin": BASE},
    ) as test_client:
        yield test_client


@pytest.fixture
def anonymous(console: Console) -> Iterator[TestClient]:
    """A client that carries nothing."""
    with TestClient(console.asgi(), base_url=BASE) as test_client:
        yield test_client


def seed(repo: Repository) -> None:
    """profile/ops: an agent creates two memories, edits one, deletes the other; bob holds it."""
    holder = repo.bind(capability("markdown", "shared"), Agent("ops", "alice"))
    assert holder is not None
    for args in (
        {"name": "runbook", "description": "how staging is rolled", "body": "1. drain\n"},
        {"name": "scratch", "description": "notes", "body": "a\nb\n"},
    ):
        assert holder.call("create_memory", args).ok
    assert holder.call(
        "edit_memory", {"name": "runbook", "old_text": "drain", "new_text": "drain the pool"}
    ).ok
    assert holder.call("delete_memory", {"name": "scratch"}).ok
    bob = repo.bind(capability("markdown", "shared"), Agent("ops", "bob"))
    assert bob is not None
    bob.notices()


def error(response: httpx2.Response) -> tuple[int, str, str]:
    body = response.json()
    return response.status_code, body["error"]["kind"], body["error"]["message"]


# -- the token, the host, the origin --------------------------------------------------


def test_a_request_without_the_token_is_refused(anonymous: TestClient) -> None:
    """Every route of the API answers 401 without the token; the page, its script and
    its style are read without it, hold no secret and set no cookie, and a write to
    them is refused like any other."""
    for path in ("/api/stores", "/api/events", "/api/stores/x/state", "/api/review"):
        status, kind, message = error(anonymous.get(path))
        assert (status, kind) == (401, "unauthorized"), path
        assert "token" in message
    for path in ("/", "/app.js", "/app.css"):
        page = anonymous.get(path)
        assert page.status_code == 200 and "set-cookie" not in page.headers, path
        assert TOKEN not in page.text
        refused = anonymous.put(path, headers={"Origin": BASE})
        assert error(refused)[:2] == (401, "unauthorized"), path


def test_a_wrong_token_is_refused(anonymous: TestClient) -> None:
    """A token that is not this launch's is refused, however it is offered."""
    for headers, query in (
        ({"Authorization": "Bearer nope"}, ""),
        ({"Cookie": f"gitmem_console_{PORT}={TOKEN}"}, ""),  # a cookie is never read
        ({}, "?token=nope"),
        ({}, f"?token={TOKEN}x"),
    ):
        assert anonymous.get("/api/stores" + query, headers=headers).status_code == 401


def test_the_token_is_accepted_two_ways_and_never_from_a_cookie(anonymous: TestClient) -> None:
    """A Bearer header (the page's way) and ``?token=`` (the event stream's) work. No
    cookie is set or read: a browser sends a host's cookies to each of its ports, so
    another program listening on this machine would be handed the token."""
    page = anonymous.get(f"/?token={TOKEN}")
    assert page.status_code == 200 and "set-cookie" not in page.headers
    assert anonymous.get("/api/stores").status_code == 401
    fresh = TestClient(anonymous.app, base_url=BASE)
    assert fresh.get("/api/stores", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    assert fresh.get(f"/api/stores?token={TOKEN}").status_code == 200


def test_another_host_is_refused(client: TestClient) -> None:
    """A Host other than the bound one (a DNS-rebound name) is refused, token or not."""
    for host in ("evil.example:8765", f"127.0.0.1:{PORT + 1}", "127.0.0.1", ""):
        status, kind, message = error(client.get("/api/stores", headers={"Host": host}))
        assert (status, kind) == (403, "forbidden"), host
        assert f"127.0.0.1:{PORT}" in message
    assert client.get("/api/stores", headers={"Host": f"localhost:{PORT}"}).status_code == 200


def test_a_write_needs_the_consoles_own_origin(client: TestClient, repo: Repository) -> None:
    """PUT and DELETE without the same-origin Origin are refused and write nothing."""
    url = "/api/stores/notes/memories/todo"
    for origin in (None, "http://evil.example", "null", f"http://127.0.0.1:{PORT + 1}"):
        for method in ("PUT", "DELETE"):
            sent = client.build_request(
                method, url, json={"description": "d", "body": "b"}, headers={"If-Match": "0"}
            )
            del sent.headers["Origin"]
            if origin is not None:
                sent.headers["Origin"] = origin
            status, kind, message = error(client.send(sent))
            assert (status, kind) == (403, "forbidden"), (method, origin)
            assert message == "a change must come from the console's own page (Origin)"
    assert repo.stores() == []
    ok = client.put(
        url,
        json={"description": "d", "body": "b"},
        headers={"If-Match": "0", "Origin": f"http://localhost:{PORT}"},
    )
    assert ok.status_code == 201


def test_only_put_and_delete_write_and_every_other_method_is_a_change_or_a_read(
    client: TestClient, repo: Repository
) -> None:
    """HEAD reads as GET does and writes nothing; a method the console does not know is
    held to the Origin like a write, then refused with a JSON 405 or 400, never taken
    for a delete; an unknown route is a JSON 404."""
    seed(repo)
    url = "/api/stores/profile/ops/memories/runbook"
    head = repo.head("profile/ops")
    assert client.head(url, headers={"If-Match": "2"}).status_code == 200
    for method in ("PATCH", "POST", "OPTIONS", "PROPFIND"):
        sent = client.build_request(method, url, headers={"If-Match": "2"})
        del sent.headers["Origin"]
        assert error(client.send(sent))[:2] == (403, "forbidden"), method
        status, kind, _ = error(client.request(method, url, headers={"If-Match": "2"}))
        assert (status, kind) in {(405, "method-not-allowed"), (400, "invalid-argument")}
    assert repo.head("profile/ops") == head
    assert error(client.post("/api/stores"))[:2] == (405, "method-not-allowed")
    assert error(client.get("/api/nothing"))[:2] == (404, "not-found")


def test_answers_carry_a_strict_content_security_policy(client: TestClient) -> None:
    """The page and the API forbid inline script, framing and referrers."""
    for path in ("/", "/api/stores", "/app.js", "/app.css"):
        headers = client.get(path).headers
        assert "script-src 'self'" in headers["content-security-policy"], path
        assert "frame-ancestors 'none'" in headers["content-security-policy"]
        assert headers["referrer-policy"] == "no-referrer"
        assert headers["x-content-type-options"] == "nosniff"


def test_the_page_and_its_assets_ship_in_the_package(client: TestClient) -> None:
    """The page, its script and its style are served from the package, with no remote URL."""
    page = client.get("/").text
    script = client.get("/app.js")
    style = client.get("/app.css")
    assert script.headers["content-type"].startswith("text/javascript")
    assert style.headers["content-type"].startswith("text/css")
    for text in (page, script.text, style.text):
        assert not re.search(r"https?://", text)
    assert "innerHTML" not in script.text


# -- reading ------------------------------------------------------------------------


def test_stores_lists_each_store_once_with_its_instances(
    client: TestClient, repo: Repository
) -> None:
    """Each store once: strategy and limits as recorded, holders, authors, shared or not."""
    seed(repo)
    ops.create(repo, "instance/solo", AGENT, "one", "d", "b")
    rows = {row["store"]: row for row in client.get("/api/stores").json()}
    assert list(rows) == ["instance/solo", "profile/ops"]
    ops_row = rows["profile/ops"]
    assert ops_row["strategy"] == "markdown"
    assert ops_row["limits"]["maxCount"] == 0
    assert ops_row["holders"] == ["bob"]
    assert ops_row["authors"] == {"alice": 4}
    assert ops_row["instances"] == ["alice", "bob"]
    assert ops_row["shared"] is True
    assert ops_row["memories_ever"] == 2
    assert ops_row["totals"]["count"] == 1 and ops_row["peaks"]["count"] == 2
    solo = rows["instance/solo"]
    assert solo["strategy"] is None and solo["shared"] is False
    assert solo["instances"] == ["agent-1"]


def test_state_is_the_operators_memory_state(client: TestClient, repo: Repository) -> None:
    """``/state`` is ``gitmem state --json``, store ids with '/' in the path as they are."""
    seed(repo)
    assert client.get("/api/stores/profile/ops/state").json() == ops.state(repo, "profile/ops")


def test_memories_lists_every_memory_ever_held(client: TestClient, repo: Repository) -> None:
    """Deleted memories are listed too, with their size, peak and revision count."""
    seed(repo)
    rows = {row["slug"]: row for row in client.get("/api/stores/profile/ops/memories").json()}
    assert set(rows) == {"runbook", "scratch"}
    assert rows["runbook"]["live"] is True
    assert rows["runbook"]["chars"] == len("1. drain the pool\n")
    assert rows["runbook"]["peak_chars"] == len("1. drain the pool\n")
    assert rows["runbook"]["revisions"] == 2
    assert rows["scratch"]["live"] is False
    assert rows["scratch"]["chars"] == 4 and rows["scratch"]["revision"] == 2


def test_a_long_panel_is_sent_in_pages_with_its_length(
    client: TestClient, repo: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A panel longer than a page answers the same bytes, with its length and the
    console's headers, as one sent whole."""
    seed(repo)
    whole = client.get("/api/stores/profile/ops/memories")
    monkeypatch.setattr(console_module, "PAGE_BYTES", 7)
    paged = client.get("/api/stores/profile/ops/memories")
    assert len(whole.content) > 7 * 3
    assert (paged.status_code, paged.content) == (200, whole.content)
    assert paged.headers["content-length"] == str(len(whole.content))
    assert "transfer-encoding" not in paged.headers
    for name in ("content-type", "content-security-policy", "cache-control", "referrer-policy"):
        assert paged.headers[name] == whole.headers[name]

    async def pages() -> list[bytes]:
        answer = console_module._paged(whole.content)  # pyright: ignore[reportPrivateUsage]
        assert isinstance(answer, StreamingResponse)
        return [bytes(page) async for page in answer.body_iterator]

    sent = asyncio.run(pages())
    assert b"".join(sent) == whole.content and max(map(len, sent)) == 7


def test_a_stores_first_panel_hands_freed_memory_back_once(
    client: TestClient, repo: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After the first answer of a store's panel (its ledger then taken in), the console
    hands the memory freed on the way back to the system, once; not after later ones."""
    seed(repo)
    calls: list[None] = []
    real = heap.give_back

    def give_back() -> None:
        real()
        calls.append(None)

    monkeypatch.setattr(heap, "give_back", give_back)
    first = client.get("/api/stores/profile/ops/memories")
    assert first.status_code == 200 and len(calls) == 1
    for _ in range(2):
        assert client.get("/api/stores/profile/ops/memories").content == first.content
    assert len(calls) == 1
    ops.create(repo, "profile/ops", ADA, "later", "d", "text")
    assert client.get("/api/stores/profile/ops/memories").status_code == 200
    assert len(calls) == 1


def test_one_memory_has_its_revisions_with_diffs(client: TestClient, repo: Repository) -> None:
    """A memory's revisions come newest first, each with its text, diff and +/- lines."""
    seed(repo)
    found = client.get("/api/stores/profile/ops/memories/runbook").json()
    assert found["live"] is True and found["revision"] == 2
    assert found["memory"]["body"] == "1. drain the pool\n"
    newest, oldest = found["revisions"]
    assert (newest["revision"], newest["op"], newest["author"]) == (2, "edit", "alice")
    assert "-1. drain\n+1. drain the pool\n" in newest["diff"]
    assert (newest["lines_added"], newest["lines_removed"]) == (1, 1)
    assert oldest["revision"] == 1 and oldest["body"] == "1. drain\n"
    gone = client.get("/api/stores/profile/ops/memories/scratch").json()
    assert gone["live"] is False and gone["memory"] is None
    assert gone["revisions"][0]["removed"] is True
    assert gone["revisions"][0]["body"] == "a\nb\n"  # the text the delete removed


def test_a_memory_is_blamed_line_by_line(client: TestClient, repo: Repository) -> None:
    """``/memories/<slug>/blame`` gives each line with the revision, author and session
    that last changed it; ``?at=`` a commit blames that moment; a missing memory is 404."""
    seed(repo)
    url = "/api/stores/profile/ops/memories/runbook/blame"
    lines = client.get(url).json()
    assert [(b["text"], b["revision"], b["author"], b["by"]) for b in lines[3:]] == [
        ("1. drain the pool", 2, "alice", "agent")
    ]
    assert lines[0]["session"].startswith("run-")
    first = repo.revisions("profile/ops", "runbook")[0].commit
    then = client.get(url, params={"at": first[:10]}).json()
    assert [b["text"] for b in then[3:]] == ["1. drain"]
    missing = client.get("/api/stores/profile/ops/memories/ghost/blame")
    assert error(missing)[:2] == (404, "not-found")


def test_the_timeline_is_newest_first_and_filters_by_author(
    client: TestClient, repo: Repository
) -> None:
    """Every version, newest first, with +/- lines; ``?author=`` keeps one author's."""
    seed(repo)
    ops.edit(repo, "profile/ops", ADA, "runbook", body="1. drain\n2. roll\n")
    rows = client.get("/api/stores/profile/ops/timeline").json()
    assert [(r["slug"], r["op"], r["author"]) for r in rows] == [
        ("runbook", "edit", "Ada Operator"),
        ("scratch", "delete", "alice"),
        ("runbook", "edit", "alice"),
        ("scratch", "create", "alice"),
        ("runbook", "create", "alice"),
    ]
    assert (rows[0]["lines_added"], rows[0]["lines_removed"]) == (2, 1)
    assert (rows[1]["lines_added"], rows[1]["lines_removed"]) == (0, 4)
    mine = client.get("/api/stores/profile/ops/timeline", params={"author": "Ada Operator"})
    assert [r["author"] for r in mine.json()] == ["Ada Operator"]
    assert client.get("/api/stores/profile/ops/timeline?limit=2").json() == rows[:2]
    # the author's rows lie beyond the newest commits: the timeline reads further back
    for i in range(6):
        ops.edit(repo, "profile/ops", ADA, "runbook", body=f"{i}\n")
    alices = client.get("/api/stores/profile/ops/timeline?limit=3&author=alice").json()
    assert alices == rows[1:4]
    status, kind, _ = error(client.get("/api/stores/profile/ops/timeline?limit=x"))
    assert (status, kind) == (400, "invalid-argument")


def test_a_commit_gitmem_did_not_make_is_marked_in_the_timeline(
    client: TestClient, repo: Repository, tmp_path: Path
) -> None:
    """A plain git commit's author is any name its maker gave, the operator's own
    included: its timeline row says ``by: git``, as blame does, where gitmem's own
    commits say ``agent`` or ``operator``."""
    seed(repo)
    ops.edit(repo, "profile/ops", ADA, "runbook", body="by the operator\n")

    def by_hand(work: Path) -> None:
        (found,) = work.glob("**/runbook.md")
        found.write_text(found.read_text() + "by hand\n")

    commit_by_hand(repo.directory, "profile/ops", tmp_path / "work", by_hand)
    rows = client.get("/api/stores/profile/ops/timeline?limit=3").json()
    assert [(r["author"], r["by"]) for r in rows] == [
        ("Ana Operator", "git"),
        ("Ada Operator", "operator"),
        ("alice", "agent"),
    ]


@pytest.mark.parametrize(
    "path",
    [
        "/api/stores/nope/state",
        "/api/stores/nope/memories",
        "/api/stores/nope/timeline",
        "/api/stores/nope/memories/x",
    ],
)
def test_an_unknown_store_is_not_found(client: TestClient, repo: Repository, path: str) -> None:
    """A store that does not exist is 404 with the CLI's words, listing the stores."""
    seed(repo)
    status, kind, message = error(client.get(path))
    assert (status, kind) == (404, "not-found")
    assert message == "there is no store named 'nope'; the stores are: profile/ops"


def test_unknown_memory_and_route_are_not_found(client: TestClient, repo: Repository) -> None:
    """A memory never written, or a path that names no view, is 404."""
    seed(repo)
    assert error(client.get("/api/stores/profile/ops/memories/ghost"))[:2] == (404, "not-found")
    assert error(client.get("/api/stores/profile/ops/other"))[:2] == (404, "not-found")
    wrong = client.put("/api/stores/profile/ops/state", json={}, headers={"If-Match": "0"})
    assert error(wrong)[:2] == (400, "invalid-argument")
    assert error(client.get("/api/stores/profile/ops/memories/bad%20slug"))[:2] == (
        400,
        "invalid-argument",
    )


# -- writing ------------------------------------------------------------------------


def test_put_creates_a_memory_authored_as_the_operator(
    client: TestClient, repo: Repository
) -> None:
    """A PUT of a new memory with ``If-Match: 0`` is 201, one commit by the operator."""
    made = client.put(
        "/api/stores/notes/memories/todo",
        json={"description": "open tasks", "body": "- ship\n"},
        headers={"If-Match": "0"},
    )
    assert made.status_code == 201
    assert made.json()["op"] == "create" and made.json()["author"] == "Ada Operator"
    log = git(repo.directory, "log", "--format=%an <%ae>|%s", "notes").stdout
    assert log == "Ada Operator <ada@example.org>|create todo\n"


def test_put_edits_when_the_base_is_current(client: TestClient, repo: Repository) -> None:
    """A PUT based on the latest revision replaces description and body: 200, an edit."""
    seed(repo)
    saved = client.put(
        "/api/stores/profile/ops/memories/runbook",
        json={"description": "how prod is rolled", "body": "1. canary\n"},
        headers={"If-Match": "2"},
    )
    assert saved.status_code == 200
    assert (saved.json()["revision"], saved.json()["op"]) == (3, "edit")
    now = ops.show(repo, "profile/ops", "runbook")
    assert (now.description, now.body, now.author) == (
        "how prod is rolled",
        "1. canary\n",
        ADA.name,
    )


def test_a_stale_put_is_refused_with_the_newer_text(client: TestClient, repo: Repository) -> None:
    """A save based on an old revision is 412, writes nothing and carries the newer text."""
    seed(repo)
    head = repo.head("profile/ops")
    stale = client.put(
        "/api/stores/profile/ops/memories/runbook",
        json={"description": "d", "body": "mine\n"},
        headers={"If-Match": "1"},
    )
    assert stale.status_code == 412
    body = stale.json()
    assert body["error"]["kind"] == "stale"
    assert body["error"]["message"] == (
        "'runbook' is at revision 2, not 1: someone saved it since you read it; "
        "read the newer text, then save again"
    )
    assert body["current"]["revision"] == 2
    assert body["current"]["memory"]["body"] == "1. drain the pool\n"
    assert repo.head("profile/ops") == head


def test_a_put_on_a_deleted_memory_recreates_it(client: TestClient, repo: Repository) -> None:
    """A deleted memory is saved again from its last revision, numbering continuing."""
    seed(repo)
    url = "/api/stores/profile/ops/memories/scratch"
    assert (
        client.put(
            url, json={"description": "d", "body": "x"}, headers={"If-Match": "0"}
        ).status_code
        == 412
    )
    again = client.put(url, json={"description": "d", "body": "x"}, headers={"If-Match": "2"})
    assert again.status_code == 201 and again.json()["revision"] == 3


def test_delete_needs_the_current_revision(client: TestClient, repo: Repository) -> None:
    """DELETE with a stale If-Match is 412; with the current one it deletes."""
    seed(repo)
    url = "/api/stores/profile/ops/memories/runbook"
    assert client.delete(url, headers={"If-Match": "1"}).status_code == 412
    done = client.delete(url, headers={"If-Match": "2"})
    assert done.status_code == 200 and done.json()["op"] == "delete"
    assert "runbook" not in repo.snapshot("profile/ops")
    assert error(client.delete(url.replace("runbook", "ghost"), headers={"If-Match": "0"}))[:2] == (
        404,
        "not-found",
    )


def test_a_write_without_if_match_is_refused(client: TestClient, repo: Repository) -> None:
    """PUT and DELETE must name their base revision: 428, nothing written."""
    url = "/api/stores/notes/memories/todo"
    status, kind, message = error(client.put(url, json={"description": "d", "body": "b"}))
    assert (status, kind) == (428, "precondition-required")
    assert "If-Match" in message
    assert client.delete(url).status_code == 428
    assert error(
        client.put(url, json={"description": "d", "body": "b"}, headers={"If-Match": "x"})
    )[:2] == (
        400,
        "invalid-argument",
    )
    assert repo.stores() == []


@pytest.mark.parametrize(
    ("payload", "says"),
    [
        (b"not json", "not JSON"),
        (b"[" * 100_000 + b"]" * 100_000, "not JSON"),
        (b'{"description": "d", "body": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "not JSON"),
        (b"[1, 2]", "JSON object"),
        (json.dumps({"description": "d"}).encode(), "the body must be a string"),
        (json.dumps({"description": 3, "body": "b"}).encode(), "the description must be a string"),
    ],
)
def test_a_malformed_put_is_refused(client: TestClient, payload: bytes, says: str) -> None:
    """A body that is not ``{description, body}`` strings is 400, saying what is wrong."""
    response = client.put(
        "/api/stores/notes/memories/todo", content=payload, headers={"If-Match": "0"}
    )
    status, kind, message = error(response)
    assert (status, kind) == (400, "invalid-argument")
    assert says in message


def test_a_decision_nested_past_jsons_depth_is_a_400(client: TestClient) -> None:
    """A review decision whose body nests deeper than json reads is refused as not the
    object it must be, never answered with a 500."""
    deep = b'{"proposal": "notes/a", "slugs": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    for body in (deep, b"[" * 100_000 + b"]" * 100_000):
        status, kind, message = error(client.post("/api/review/approve", content=body))
        assert (status, kind) == (400, "invalid-argument")
        assert message.startswith("send a JSON object")


@pytest.mark.parametrize("value", ["²", "١٢", "-1", "1e3", "9" * 5000, " ", "0x10"])
def test_a_malformed_number_is_a_400_never_a_500(
    client: TestClient, repo: Repository, value: str
) -> None:
    """``?limit=`` and ``If-Match`` take ASCII digits only: anything else is a 400 with
    the error JSON, and writes nothing."""
    seed(repo)
    head = repo.head("profile/ops")
    timeline = client.get("/api/stores/profile/ops/timeline", params={"limit": value})
    assert error(timeline)[:2] == (400, "invalid-argument")
    # a header's bytes read as Latin-1: byte 0xB2 is '²'
    sent = value.encode("latin-1") if value <= "\xff" * len(value) else value.encode()
    for method in ("PUT", "DELETE"):
        response = client.request(
            method,
            "/api/stores/profile/ops/memories/runbook",
            json={"description": "d", "body": "b"},
            headers={"If-Match": sent},
        )
        assert error(response)[:2] == (400, "invalid-argument"), method
    assert repo.head("profile/ops") == head


def test_a_body_over_the_cap_is_refused_as_it_arrives(
    console: Console, client: TestClient, repo: Repository
) -> None:
    """A body past 4 MB is a 413 once the cap is passed: the rest is never read."""
    received = [0]
    answer: list[dict[str, object]] = []

    async def receive() -> dict[str, object]:
        received[0] += 65536
        return {"type": "http.request", "body": b"x" * 65536, "more_body": True}

    async def send(message: dict[str, object]) -> None:
        answer.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "PUT",
        "scheme": "http",
        "path": "/api/stores/notes/memories/big",
        "raw_path": b"/api/stores/notes/memories/big",
        "root_path": "",
        "query_string": b"",
        "headers": [
            (b"host", f"127.0.0.1:{PORT}".encode()),
            (b"authorization", f"Bearer {TOKEN}".encode()),
            (b"origin", BASE.encode()),
            (b"if-match", b"0"),
        ],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", PORT),
    }
    asyncio.run(console.asgi()(scope, receive, send))  # type: ignore[arg-type]
    assert answer[0]["status"] == 413
    assert received[0] <= 5 * 1024 * 1024
    declared = client.put(
        "/api/stores/notes/memories/big",
        content=b"{}",
        headers={"If-Match": "0", "Content-Length": str(64 * 1024 * 1024)},
    )
    assert error(declared)[:2] == (413, "too-large")
    assert repo.stores() == []
    # a length of more digits than a count holds is over the cap too, before any body
    received[0], answer[:] = 0, []
    scope["headers"] = [*scope["headers"], (b"content-length", b"1" + b"0" * 12)]  # type: ignore[misc]
    asyncio.run(console.asgi()(scope, receive, send))  # type: ignore[arg-type]
    assert answer[0]["status"] == 413 and received[0] == 0


def test_refusals_have_the_clis_words(client: TestClient, repo: Repository) -> None:
    """A limit breach is 422 with the text `gitmem edit` prints, and writes nothing."""
    holder = repo.bind(capability("markdown", "shared", maxLenPerMemory=10), Agent("ops", "a"))
    assert holder is not None
    assert holder.call("create_memory", {"name": "m", "description": "d", "body": "short"}).ok
    head = repo.head("profile/ops")
    response = client.put(
        "/api/stores/profile/ops/memories/m",
        json={"description": "d", "body": "far too long for ten"},
        headers={"If-Match": "1"},
    )
    status, kind, message = error(response)
    assert (status, kind) == (422, "limit-exceeded")
    cli_said = CliRunner().invoke(
        cli,
        [
            "--repo",
            repo.directory,
            "edit",
            "m",
            "--store",
            "profile/ops",
            "--body",
            "far too long for ten",
        ],
    )
    assert cli_said.stderr == f"Error: {message}\n"
    assert repo.head("profile/ops") == head
    empty = client.put(
        "/api/stores/profile/ops/memories/m",
        json={"description": "d", "body": ""},
        headers={"If-Match": "1"},
    )
    assert error(empty)[:2] == (400, "invalid-argument")


def test_hostile_html_comes_back_as_json_text(client: TestClient, repo: Repository) -> None:
    """A memory holding markup is stored and served exactly, as JSON, never as HTML."""
    made = client.put(
        "/api/stores/notes/memories/xss",
        json={"description": HOSTILE, "body": HOSTILE},
        headers={"If-Match": "0"},
    )
    assert made.status_code == 201
    found = client.get("/api/stores/notes/memories/xss")
    assert found.headers["content-type"] == "application/json"
    assert found.json()["memory"]["body"] == HOSTILE


def test_every_error_kind_has_a_status() -> None:
    """Each kind a GitmemError can state maps to an HTTP status."""
    import gitmem
    from gitmem import errors
    from gitmem.adapters import console as module

    classes = [getattr(errors, name) for name in errors.__all__]
    classes += [module.Unauthorized, module.Forbidden, module.PreconditionRequired]
    classes += [module.TooLarge, module._NotAllowed]  # pyright: ignore[reportPrivateUsage]
    for cls in classes:
        assert cls.kind in STATUS, cls
    assert STATUS[gitmem.StaleRevision.kind] == 412


# -- live updates ---------------------------------------------------------------------


def test_the_event_stream_reports_a_write_by_another_process(repo: Repository) -> None:
    """``/api/events`` sends the heads, then again when another writer moves one."""
    console = Console(repo, token=TOKEN, port=0, author=ADA)
    seed(repo)
    other = Repository.open(repo.directory)
    with console.running() as url, httpx2.Client(timeout=10) as http:
        base = url.split("/?")[0]
        events: list[dict[str, str | None]] = []
        moved = threading.Event()
        with http.stream(
            "GET", f"{base}/api/events", headers={"Authorization": f"Bearer {TOKEN}"}
        ) as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            for line in stream.iter_lines():
                if not line.startswith("data: "):
                    continue
                events.append(json.loads(line.removeprefix("data: ")))
                if len(events) == 1:
                    ops.create(other, "profile/ops", AGENT, "later", "d", "b")
                    moved.set()
                else:
                    break
    assert moved.is_set()
    assert events[0]["profile/ops"] != events[1]["profile/ops"]
    assert events[1]["profile/ops"] == repo.head("profile/ops")
    other.close()


def _closed(sock: socket.socket) -> bool:
    """Whether the console closed ``sock`` (it may reset it: the request was unread)."""
    try:
        return sock.recv(10) == b""
    except ConnectionResetError:
        return True


def test_a_refusal_ends_its_connection(repo: Repository) -> None:
    """A client without the token that sends request after request and never reads an
    answer gets one refusal and its connection closed: no answer waits in progress
    for it, holding the connection past every deadline (no token needed to try)."""
    console = Console(repo, token=TOKEN, port=0, author=ADA)
    with console.running():
        sock = socket.create_connection(("127.0.0.1", console.port), timeout=10)
        host = f"Host: 127.0.0.1:{console.port}\r\n"
        sock.sendall(f"GET /api/stores HTTP/1.1\r\n{host}\r\n".encode() * 2000)
        answered = b""
        while chunk := sock.recv(1 << 16):
            answered += chunk
        sock.close()
    assert answered.startswith(b"HTTP/1.1 401 ")
    assert answered.count(b"HTTP/1.1 ") == 1
    assert b"connection: close" in answered.lower()


def test_half_sent_requests_neither_stay_nor_crowd_out_the_operator(
    repo: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A connection that sends no whole request head is closed once the wait for it is
    over, and past the most that may wait at once the longest waiting goes first: idle
    connections (no token needed to open them) never hold every file descriptor, and
    the operator's requests, and an event stream open past the wait, are answered."""
    monkeypatch.setattr(console_requests, "HEAD_SECONDS", 1.0)
    monkeypatch.setattr(console_requests, "WAITING_MAX", 8)
    console = Console(repo, token=TOKEN, port=0, author=ADA)
    seed(repo)
    with console.running() as url, httpx2.Client(timeout=10) as http:
        base = url.split("/?")[0]
        idle: list[socket.socket] = []
        for _ in range(40):
            sock = socket.create_connection(("127.0.0.1", console.port), timeout=5)
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
            idle.append(sock)
        auth = {"Authorization": f"Bearer {TOKEN}"}
        assert http.get(f"{base}/api/stores", headers=auth).status_code == 200
        # the longest waiting were closed as more came
        assert _closed(idle[0])
        with http.stream("GET", f"{base}/api/events", headers=auth) as stream:
            lines = stream.iter_lines()
            assert next(line for line in lines if line.startswith("data: "))
            time.sleep(1.5)  # past the wait for a head: a request in hand is not cut
            ops.create(repo, "profile/ops", AGENT, "later", "d", "b")
            assert repo.head("profile/ops") in next(x for x in lines if x.startswith("data: "))
        # and the last ones, too few to crowd anyone out, once the wait is over
        assert _closed(idle[-1])
        for sock in idle:
            sock.close()


# -- the library underneath -------------------------------------------------------------


def test_based_on_refuses_a_moved_memory(repo: Repository) -> None:
    """``expected`` is a compare-and-swap on one memory, for create, edit and delete."""
    ops.create(repo, "notes", ADA, "a", "d", "one", expected=0)
    with pytest.raises(StaleRevision) as caught:
        ops.create(repo, "notes", ADA, "b", "d", "two", expected=3)
    assert (caught.value.expected, caught.value.current) == (3, 0)
    with pytest.raises(StaleRevision):
        ops.edit(repo, "notes", ADA, "a", body="new", expected=0)
    ops.edit(repo, "notes", ADA, "a", body="new", expected=1)
    with pytest.raises(StaleRevision):
        ops.delete(repo, "notes", ADA, "a", expected=1)
    assert ops.delete(repo, "notes", ADA, "a", expected=2).removed


def test_the_ledger_followed_one_change_at_a_time_equals_a_fresh_one(repo: Repository) -> None:
    """A ledger brought up to date write by write folds to the same rows as a new one."""
    followed = ops.Ledger("notes")
    for i, step in enumerate(["create a", "create b", "edit a", "delete b", "create b", "edit b"]):
        op, slug = step.split()
        if op == "create":
            ops.create(repo, "notes", ADA, slug, f"d{i}", "x" * (i + 1))
        elif op == "edit":
            ops.edit(repo, "notes", ADA, slug, body="y" * (10 - i))
        else:
            ops.delete(repo, "notes", ADA, slug)
        followed.follow(repo)
    fresh = ops.Ledger("notes")
    fresh.follow(repo)
    assert followed.rows() == fresh.rows()
    assert json.loads(followed.rows_json()) == fresh.rows()
    rows = {r["slug"]: r for r in fresh.rows()}
    assert rows["a"]["chars"] == 8 and rows["a"]["peak_chars"] == 8
    assert rows["b"]["revisions"] == 4 and rows["b"]["revision"] == 4
    assert rows["b"]["peak_chars"] == 5 and rows["b"]["live"]


def test_a_ledger_moved_over_many_changes_at_once_equals_a_fresh_one(repo: Repository) -> None:
    """One move that adds rows before, between and after the rows held, and changes
    the first and the last, puts each row where its slug sorts, as a new fold does."""
    followed = ops.Ledger("notes")
    for slug in ("d", "h", "p"):
        ops.create(repo, "notes", ADA, slug, "held", "x")
    followed.follow(repo)
    for slug in ("a", "b", "e", "q", "z"):
        ops.create(repo, "notes", ADA, slug, "new", "y" * 3)
    ops.edit(repo, "notes", ADA, "d", body="longer text")
    ops.delete(repo, "notes", ADA, "p")
    followed.follow(repo)
    fresh = ops.Ledger("notes")
    fresh.follow(repo)
    assert followed.rows_json() == fresh.rows_json()
    assert [r["slug"] for r in followed.rows()] == sorted("abdehpqz")
    assert len(followed) == 8
    rows = {r["slug"]: r for r in followed.rows()}
    assert rows["d"]["peak_chars"] == 11 and not rows["p"]["live"]


def test_a_long_ledger_moved_one_change_at_a_time_equals_a_fresh_one(
    repo: Repository,
) -> None:
    """Moves of one change each over a ledger of many rows (each changed row found by
    reading a few) put the first, a middle and the last row, and new ones before and
    after all, where a new fold puts them."""
    followed = ops.Ledger("notes")
    for i in range(20):
        ops.create(repo, "notes", ADA, f"m{i:02d}", "held", "x" * i)
    followed.follow(repo)
    for step in ("edit m00", "edit m11", "edit m19", "create a", "create z", "delete m05"):
        op, slug = step.split()
        if op == "create":
            ops.create(repo, "notes", ADA, slug, "new", "fresh text")
        elif op == "edit":
            ops.edit(repo, "notes", ADA, slug, body="edited")
        else:
            ops.delete(repo, "notes", ADA, slug)
        followed.follow(repo)
    fresh = ops.Ledger("notes")
    fresh.follow(repo)
    assert followed.rows_json() == fresh.rows_json() and len(followed) == 22
    rows = {r["slug"]: r for r in followed.rows()}
    assert rows["m19"]["revisions"] == 2 and rows["m19"]["peak_chars"] == 19
    assert not rows["m05"]["live"] and rows["a"]["chars"] == 10


def test_a_ledger_kept_in_another_form_is_folded_again(repo: Repository) -> None:
    """A kept ledger that is not the panel's JSON (an older form, or rows cut short) is
    passed over: the history is folded again. So is one kept without its form, as
    ledgers were before a fold read the history only up to the head it records (one
    could count a revision twice), however well it reads."""
    seed(repo)
    fresh = ops.Ledger("profile/ops")
    fresh.follow(repo)
    head = repo.head("profile/ops")
    kept = repo.kept("ledger", "profile/ops")
    assert head is not None and kept is not None
    _, panel, authors, agents = cast(tuple[Any, ...], kept.value)
    doubled = re.sub(rb'"revisions": (\d+)', lambda m: b'"revisions": %d' % (2 * int(m[1])), panel)
    assert doubled != panel
    for value in (
        ([("runbook",) * 9], ['{"slug": "runbook"}'], {}, {}),
        (b'[{"slug": "runbook"', {}, {}),
        (b"not json", {}, {}),
        (doubled, authors, agents),
        (1, doubled, authors, agents),
    ):
        repo.keep("ledger", "profile/ops", head, value)
        again = ops.Ledger("profile/ops")
        assert not again.resume(repo)
        again.follow(repo)
        assert again.rows_json() == fresh.rows_json()


def history_of_every_kind(repo: Repository, work: Path, *, seeded: bool = False) -> None:
    """profile/ops as ``seed`` leaves it, then an operator's edit, a memory deleted and
    made again, and a commit made by hand with plain git."""
    if not seeded:
        seed(repo)
    ops.create(repo, "profile/ops", ADA, "by-ada", "d", "é" * 7)
    ops.edit(repo, "profile/ops", ADA, "by-ada", body="short")
    ops.create(repo, "profile/ops", ADA, "scratch", "back", "again")

    def change(clone: Path) -> None:
        (clone / repo.path("profile/ops", "by-ada")).write_text(
            '---\ndescription: "by hand"\n---\nfixed by hand, longer than before\n'
        )

    commit_by_hand(repo.directory, "profile/ops", work, change)


def derived_files_removed(repo: Repository) -> None:
    """Remove every derived file of the repository: what a fresh clone has."""
    meta = Path(repo.directory) / "gitmem"
    for found in meta.iterdir():
        if found.is_dir():
            shutil.rmtree(found)
        else:
            found.unlink()
    (meta / "history").mkdir()


def panel(repo: Repository) -> tuple[bytes, dict[str, Any]]:
    """A new console's first answers on ``repo``: the Memories panel's JSON, and the
    store's overview (authors and instances come from the same fold)."""
    with TestClient(
        Console(repo, token=TOKEN, port=PORT, author=ADA).asgi(),
        base_url=BASE,
        headers={"Authorization": f"Bearer {TOKEN}"},
    ) as fresh:
        rows = fresh.get("/api/stores/profile/ops/memories")
        assert rows.status_code == 200
        stores = {s["store"]: s for s in fresh.get("/api/stores").json()}
        return rows.content, stores["profile/ops"]


def test_a_first_request_without_derived_files_answers_as_a_warm_one(
    client: TestClient, repo: Repository, tmp_path: Path
) -> None:
    """A new process's first request on a store whose derived files are absent (a fresh
    clone), and one that goes on from the ledger an earlier process kept, answer with
    the JSON of a console that was running all along."""
    seed(repo)
    client.get("/api/stores/profile/ops/memories")
    history_of_every_kind(repo, tmp_path / "work", seeded=True)
    warm = client.get("/api/stores/profile/ops/memories").content
    overview = {s["store"]: s for s in client.get("/api/stores").json()}["profile/ops"]
    rows = {r["slug"]: r for r in json.loads(warm)}
    assert rows["by-ada"]["description"] == "by hand" and rows["by-ada"]["peak_chars"] == 34
    assert rows["scratch"]["live"] and rows["scratch"]["revisions"] == 3
    assert overview["authors"] == {"Ana Operator": 1, ADA.name: 3, "alice": 4}
    derived_files_removed(repo)
    for _ in range(2):  # with no derived file, then with what the first one kept
        other = Repository.open(repo.directory)
        try:
            assert panel(other) == (warm, overview)
        finally:
            other.close()


def test_a_kept_ledger_behind_the_head_goes_on_from_there(repo: Repository) -> None:
    """A ledger kept at an earlier head takes in only what came since, and folds to the
    rows a new fold finds; a kept file that does not read whole is passed over."""
    seed(repo)
    ops.Ledger("profile/ops").follow(repo)
    kept = repo.kept("ledger", "profile/ops")
    assert kept is not None and kept.head == repo.head("profile/ops")
    ops.edit(repo, "profile/ops", ADA, "runbook", body="rolled by hand\n")
    ops.create(repo, "profile/ops", AGENT, "new", "d", "fresh")
    resumed = ops.Ledger("profile/ops")
    resumed.follow(repo)
    derived_files_removed(repo)
    fresh = ops.Ledger("profile/ops")
    fresh.follow(repo)
    assert resumed.rows_json() == fresh.rows_json()
    assert (resumed.authors(), resumed.agents()) == (fresh.authors(), fresh.agents())
    path = next((Path(repo.directory) / "gitmem" / "ledger").iterdir())
    path.write_bytes(path.read_bytes()[:-1] + b"\0")
    assert repo.kept("ledger", "profile/ops") is None
    again = ops.Ledger("profile/ops")
    again.follow(repo)
    assert again.rows_json() == fresh.rows_json()


def test_outlines_say_what_revisions_say(repo: Repository, tmp_path: Path) -> None:
    """Each outline holds its revision's slug, number, author, time, description and
    body length, and who made its commit as ``made_by`` says, hand-made commits too."""
    history_of_every_kind(repo, tmp_path / "work")
    revisions = repo.revisions("profile/ops")
    outlines = repo.outlines("profile/ops")
    assert [
        (o.slug, o.revision, o.removed, o.description, o.chars, o.commit, o.author, o.time)
        for o in outlines
    ] == [
        (r.slug, r.revision, r.removed, r.description, len(r.body), r.commit, r.author, r.time)
        for r in revisions
    ]
    assert [o.made_by for o in outlines] == [repo.made_by(r.commit) for r in revisions]
    middle = revisions[3].commit
    assert repo.outlines("profile/ops", middle) == outlines[4:]


def test_holders_reads_the_notice_watermarks(repo: Repository) -> None:
    """Each store maps to the instances whose watermark names it, store ids with '/'."""
    repo.set_marker("notices/alice/profile/ops", None)
    repo.set_marker("notices/bob/profile/ops", None)
    repo.set_marker("notices/carol/instance/carol", None)
    ops.create(repo, "profile/ops", ADA, "a", "d", "b")
    ops.create(repo, "instance/carol", ADA, "a", "d", "b")
    assert ops.holders(repo) == {"instance/carol": ["carol"], "profile/ops": ["alice", "bob"]}


def test_console_command_has_help(tmp_path: Path) -> None:
    """``gitmem console --help`` names its options and an example."""
    result = CliRunner().invoke(cli, ["console", "--help"])
    assert result.exit_code == 0
    for word in ("--host", "--port", "--open", "Example", "gitmem console"):
        assert word in result.output


def test_the_command_prints_its_url_serves_and_stops_on_interrupt(repo: Repository) -> None:
    """`gitmem console` prints http://HOST:PORT/?token=TOKEN, answers it, and a Ctrl-C
    (SIGINT) ends it cleanly, with no traceback."""
    ops.create(repo, "notes", ADA, "todo", "d", "b")
    gitmem = Path(sys.executable).parent / "gitmem"
    server = subprocess.Popen(
        [str(gitmem), "--repo", repo.directory, "console"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        match = re.fullmatch(r"http://127\.0\.0\.1:(\d+)/\?token=([A-Za-z0-9_-]{20,})", url)
        assert match, url
        with httpx2.Client(timeout=10) as http:
            page = http.get(url)
            assert page.status_code == 200 and "<title>gitmem console</title>" in page.text
            stores = http.get(url.replace("/?", "/api/stores?"))
            assert [row["store"] for row in stores.json()] == ["notes"]
        assert httpx2.get(url.split("?")[0] + "api/stores").status_code == 401
    finally:
        server.send_signal(signal.SIGINT)
        _, err = server.communicate(timeout=20)
    assert server.returncode == 0, err
    assert "Traceback" not in err


def test_the_command_refuses_a_port_in_use(repo: Repository) -> None:
    """A port that is taken is one error line and exit 1."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = CliRunner().invoke(cli, ["--repo", repo.directory, "console", "--port", str(port)])
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: cannot listen on 127.0.0.1:{port} (")
    assert result.stderr.endswith("choose another --port or --host\n")


# -- what a store's strategy lets an operator do ---------------------------------------


def test_a_notebook_store_offers_no_plain_edits_and_refuses_them(
    client: TestClient, repo: Repository
) -> None:
    """A notebook is saved whole: the console offers no create, save or delete, says
    why, and the API refuses each in those words, writing nothing."""
    holder = repo.bind(capability("notebook"), Agent("digest", "mon"))
    assert holder is not None
    assert holder.call("memory_write", {"content": "- a line\n"}).ok
    store = holder.store_id
    actions = client.get(f"/api/stores/{store}/actions").json()
    assert actions["allowed"] == []
    assert set(actions["refused"]) == {"create", "edit", "delete"}
    assert all("gitmem notebook save" in why for why in actions["refused"].values())
    (slug,) = repo.snapshot(store).slugs()
    assert client.get(f"/api/stores/{store}/memories/{slug}").json()["actions"] == actions
    assert [r["actions"] for r in client.get("/api/stores").json()] == [actions]
    head = repo.head(store)
    url = f"/api/stores/{store}/memories/{slug}"
    put = client.put(url, json={"description": "", "body": "x"}, headers={"If-Match": "1"})
    assert error(put) == (400, "invalid-argument", actions["refused"]["edit"])
    new = f"/api/stores/{store}/memories/other"
    put = client.put(new, json={"description": "d", "body": "x"}, headers={"If-Match": "0"})
    assert error(put) == (400, "invalid-argument", actions["refused"]["create"])
    gone = client.delete(url, headers={"If-Match": "1"})
    assert error(gone) == (400, "invalid-argument", actions["refused"]["delete"])
    assert repo.head(store) == head


def test_a_curated_store_offers_only_delete(client: TestClient, repo: Repository) -> None:
    """A curated store's rows are append-only: only Delete is offered, and it works."""
    holder = repo.bind(capability("curated", "shared"), Agent("orchestrator", "orch-1"))
    assert holder is not None
    row = {"name": "tz", "description": "Fact: UTC+2", "owner": "user", "body": "said so"}
    assert holder.call("add_row", row).ok
    store = holder.store_id
    actions = client.get(f"/api/stores/{store}/actions").json()
    assert actions["allowed"] == ["delete"]
    assert "append-only" in actions["refused"]["create"]
    put = client.put(
        f"/api/stores/{store}/memories/tz",
        json={"description": "d", "body": "b"},
        headers={"If-Match": "1"},
    )
    assert error(put) == (400, "invalid-argument", actions["refused"]["edit"])
    gone = client.delete(f"/api/stores/{store}/memories/tz", headers={"If-Match": "1"})
    assert gone.status_code == 200 and gone.json()["op"] == "delete"


def test_a_markdown_store_offers_every_edit(client: TestClient, repo: Repository) -> None:
    """Stores whose strategy refuses nothing offer create, edit and delete."""
    seed(repo)
    ops.create(repo, "notes", ADA, "todo", "d", "b")
    for store in ("profile/ops", "notes"):
        actions = client.get(f"/api/stores/{store}/actions").json()
        assert actions == {"allowed": ["create", "edit", "delete"], "refused": {}}


# -- a wildcard bind ---------------------------------------------------------------------


def test_a_wildcard_bind_answers_the_machines_own_names(repo: Repository) -> None:
    """Bound to 0.0.0.0, the console answers loopback, the hostname and the printed
    address, and still refuses a foreign name (a DNS-rebound one)."""
    console = Console(repo, token=TOKEN, host="0.0.0.0", port=PORT, author=ADA)
    assert "0.0.0.0" not in console.url()
    printed = console.url().split("/")[2]
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with TestClient(console.asgi(), base_url=BASE, headers=auth) as http:
        for host in (
            printed,
            f"127.0.0.1:{PORT}",
            f"localhost:{PORT}",
            f"LOCALHOST:{PORT}",
            f"[::1]:{PORT}",
            f"{socket.gethostname()}:{PORT}",
        ):
            assert http.get("/api/stores", headers={"Host": host}).status_code == 200, host
        for host in (
            "evil.example:8765",
            f"localhost.evil.example:{PORT}",
            f"127.0.0.1:{PORT + 1}",
        ):
            status, kind, message = error(http.get("/api/stores", headers={"Host": host}))
            assert (status, kind) == (403, "forbidden"), host
            assert printed in message
        # a write from the page opened at localhost comes from its own origin
        put = http.put(
            "/api/stores/notes/memories/todo",
            json={"description": "d", "body": "b"},
            headers={
                "Host": f"localhost:{PORT}",
                "Origin": f"http://localhost:{PORT}",
                "If-Match": "0",
            },
        )
        assert put.status_code == 201
        put = http.put(
            "/api/stores/notes/memories/other",
            json={"description": "d", "body": "b"},
            headers={"Host": f"localhost:{PORT}", "Origin": "http://evil.example", "If-Match": "0"},
        )
        assert put.status_code == 403


def test_the_command_on_a_wildcard_prints_an_address_that_answers(repo: Repository) -> None:
    """`gitmem console --host 0.0.0.0` prints the address to use (not 0.0.0.0), which
    answers, and says that 127.0.0.1 works from this machine."""
    gitmem = Path(sys.executable).parent / "gitmem"
    server = subprocess.Popen(
        [str(gitmem), "--repo", repo.directory, "console", "--host", "0.0.0.0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        note = server.stdout.readline().strip()
        assert "0.0.0.0" not in url, url
        port = re.fullmatch(r"http://[^/]+:(\d+)/\?token=[A-Za-z0-9_-]{20,}", url)
        assert port, url
        local = url.replace(url.split("/")[2], f"127.0.0.1:{port.group(1)}")
        assert local in note and "every address" in note
        with httpx2.Client(timeout=10) as http:
            for address in (url, local):
                page = http.get(address)
                assert page.status_code == 200, (address, page.text)
                assert "<title>gitmem console</title>" in page.text
    finally:
        server.send_signal(signal.SIGINT)
        _, err = server.communicate(timeout=20)
    assert server.returncode == 0, err


# -- the page a visit without the token gets -------------------------------------------

BROWSER = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}


def test_a_visit_without_the_token_gets_a_page_saying_how_to_get_in(
    anonymous: TestClient,
) -> None:
    """A browser visiting a page other than the console's own without the token is
    told, in HTML, to open the address `gitmem console` printed (the console's page
    says so itself); the API still answers JSON."""
    page = anonymous.get("/elsewhere", headers=BROWSER)
    assert page.status_code == 401
    assert page.headers["content-type"].startswith("text/html")
    assert "gitmem console" in page.text and "token" in page.text
    assert "<script" not in page.text
    policy = page.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "style-src 'sha256-" in policy
    assert "script-src" not in policy
    api = anonymous.get("/api/stores", headers=BROWSER)
    assert api.status_code == 401 and api.json()["error"]["kind"] == "unauthorized"


def test_a_visit_under_a_foreign_name_gets_a_page_too(client: TestClient) -> None:
    """A foreign Host is refused with a page that names the address to open."""
    page = client.get("/", headers={**BROWSER, "Host": "evil.example:8765"})
    assert page.status_code == 403 and page.headers["content-type"].startswith("text/html")
    assert f"127.0.0.1:{PORT}" in page.text


# -- who counts as an agent instance -----------------------------------------------------


def test_the_operator_and_sync_are_authors_not_instances(
    client: TestClient, repo: Repository
) -> None:
    """An operator's edit and a sync's commit show among the authors, never among the
    store's instances."""
    seed(repo)
    ops.create(repo, "profile/ops", ADA, "by-ada", "d", "b")
    ops.create(repo, "profile/ops", SYNC_AUTHOR, "by-sync", "d", "b")
    row = next(r for r in client.get("/api/stores").json() if r["store"] == "profile/ops")
    assert row["instances"] == ["alice", "bob"]
    assert set(row["authors"]) == {"alice", ADA.name, SYNC_AUTHOR.name}
    names = [i["instance"] for p in client.get("/api/agents").json() for i in p["instances"]]
    assert sorted(names) == ["alice", "bob"]


def test_an_agents_commit_records_its_profile_and_scope(repo: Repository) -> None:
    """Each commit an agent makes names its profile, instance and asked-for scope; an
    operator's does not."""
    seed(repo)
    name, email, trailers = repo.made_by(repo.head("profile/ops") or "")
    assert (name, email) == ("alice", "alice@agents.gitmem")
    assert trailers["Gitmem-Agent"] == "profile=ops instance=alice scope=shared started-as=root"
    ops.create(repo, "profile/ops", ADA, "by-ada", "d", "b")
    assert "Gitmem-Agent" not in repo.made_by(repo.head("profile/ops") or "")[2]


# -- the Agents and Modules views ---------------------------------------------------------


def team(repo: Repository) -> None:
    """ops (shared): alice writes, bob follows, a subagent inherits alice's store;
    solo (isolated): two instances, one store each; helper (inherited): a root that
    nothing spawned keeps its own; an operator keeps notes."""
    seed(repo)
    alice = repo.bind(capability("markdown", "shared"), Agent("ops", "alice"))
    assert alice is not None
    sub = repo.bind(
        capability("markdown", "inherited"),
        Agent("helper", "sub-1", "subagent", spawner=alice),
    )
    assert sub is not None and sub.store_id == "profile/ops"
    assert sub.call("create_memory", {"name": "sub", "description": "d", "body": "b"}).ok
    for instance in ("x1", "x2"):
        solo = repo.bind(capability("markdown", "isolated"), Agent("solo", instance))
        assert solo is not None
        assert solo.call("create_memory", {"name": "n", "description": "d", "body": "b"}).ok
    root = repo.bind(capability("markdown", "inherited"), Agent("helper", "h-root"))
    assert root is not None and root.store_id == "instance/h-root"
    assert root.call("create_memory", {"name": "n", "description": "d", "body": "b"}).ok
    ops.create(repo, "notes", ADA, "todo", "d", "b")


def test_agents_says_how_each_profile_holds_its_stores(
    client: TestClient, repo: Repository
) -> None:
    """Each profile: its scope, whether its instances share one store or take one each,
    and a sentence where that is not what the scope asked for."""
    team(repo)
    rows = {row["profile"]: row for row in client.get("/api/agents").json()}
    assert list(rows) == ["helper", "ops", "solo"]
    ops_row = rows["ops"]
    assert (ops_row["scope"], ops_row["holding"], ops_row["expected"]) == (
        "shared",
        "one store",
        "one store",
    )
    assert [i["instance"] for i in ops_row["instances"]] == ["alice", "bob"]
    assert ops_row["stores"] == ["profile/ops"] and ops_row["divergence"] == []
    solo = rows["solo"]
    assert (solo["scope"], solo["holding"], solo["expected"]) == (
        "isolated",
        "one each",
        "one each",
    )
    assert solo["stores"] == ["instance/x1", "instance/x2"] and solo["divergence"] == []
    helper = rows["helper"]
    assert helper["scope"] == "inherited" and helper["expected"] == "the spawner's"
    assert helper["stores"] == ["instance/h-root", "profile/ops"]
    (divergence,) = helper["divergence"]
    assert "h-root" in divergence and "keeps its own, instance/h-root" in divergence
    assert "sub-1" not in divergence


def test_agents_names_instances_that_asked_for_different_scopes(
    client: TestClient, repo: Repository
) -> None:
    """Instances of one profile launched under different scopes (one named its store)
    are a divergence, each scope with its instances."""
    seed(repo)
    holder = repo.bind(capability("markdown", "shared"), Agent("ops", "carol"))
    assert holder is not None
    elsewhere = Holder.bind_store(
        repo, "profile/other", capability("markdown", "shared"), Agent("ops", "dave")
    )
    assert elsewhere.call("create_memory", {"name": "n", "description": "d", "body": "b"}).ok
    row = next(r for r in client.get("/api/agents").json() if r["profile"] == "ops")
    assert row["scope"] == "mixed"
    assert row["divergence"] == [
        "its instances asked for different scopes (named: dave; shared: alice)"
    ]


def test_modules_lists_each_store_once_with_every_instance(
    client: TestClient, repo: Repository
) -> None:
    """Each store once, with every instance holding it: writers with their commits,
    followers marked as watching, and a store only an operator wrote holds none."""
    team(repo)
    rows = {row["store"]: row for row in client.get("/api/modules").json()}
    assert list(rows) == sorted(repo.stores())
    held = {i["instance"]: i for i in rows["profile/ops"]["instances"]}
    assert list(held) == ["alice", "bob", "sub-1"]
    assert held["alice"]["wrote"] == 4 and held["alice"]["profile"] == "ops"
    assert held["bob"] == {"instance": "bob", "profile": "ops", "wrote": 0, "watching": True}
    assert held["sub-1"]["profile"] == "helper" and held["sub-1"]["wrote"] == 1
    assert rows["profile/ops"]["shared"] is True
    assert [i["instance"] for i in rows["instance/x1"]["instances"]] == ["x1"]
    assert rows["notes"]["instances"] == [] and rows["notes"]["shared"] is False


def test_agent_names_come_back_as_json_text(client: TestClient, repo: Repository) -> None:
    """A trailer naming a hostile agent is not read as one: the views hold only names
    an agent may have."""
    from gitmem.trailers import read_agent_trailer

    hostile = {"Gitmem-Agent": "profile=<script> instance=a scope=shared started-as=root"}
    assert read_agent_trailer(hostile) is None
    assert read_agent_trailer({"Gitmem-Agent": "profile=p instance=i scope=s"}) is None


def test_a_file_store_is_listed_and_offers_no_plain_edits(
    client: TestClient, repo: Repository
) -> None:
    """A store the memory tool writes (files at paths) shows beside memory stores in
    every view, its files in the panel, and offers no create, save or delete."""
    from gitmem.types import FileChange, FileEdit

    seed(repo)
    change = FileChange((FileEdit("create", "notes/todo.md", "hi\n"),))
    repo.publish_files("files/claude", Author.agent("claude"), lambda _: change)
    rows = {row["store"]: row for row in client.get("/api/stores").json()}
    assert rows["files/claude"]["instances"] == ["claude"]
    assert rows["files/claude"]["actions"]["allowed"] == []
    panel = client.get("/api/stores/files/claude/memories").json()
    assert [(m["slug"], m["chars"], m["live"]) for m in panel] == [("notes/todo.md", 3, True)]
    modules = {row["store"]: row for row in client.get("/api/modules").json()}
    assert [i["instance"] for i in modules["files/claude"]["instances"]] == ["claude"]
    assert client.get("/api/agents").status_code == 200


def test_a_file_in_a_folder_has_its_history_page(client: TestClient, repo: Repository) -> None:
    """A file's path travels encoded as one segment of the route, so a file in a folder
    of a store whose id holds a slash opens like a memory: its text is the body."""
    from gitmem.types import FileChange, FileEdit

    for op, text in (("create", "hi\n"), ("update", "hi\nthere\n")):
        change = FileChange((FileEdit(op, "notes/todo.md", text),))
        repo.publish_files("files/claude", Author.agent("claude"), lambda _, c=change: c)
    found = client.get("/api/stores/files/claude/memories/notes%2Ftodo.md").json()
    assert (found["slug"], found["live"], found["revision"]) == ("notes/todo.md", True, 2)
    assert found["memory"] == {"description": "", "body": "hi\nthere\n", "code": "", "on_use": ""}
    assert [(r["revision"], r["body"], r["lines_added"]) for r in found["revisions"]] == [
        (2, "hi\nthere\n", 1),
        (1, "hi\n", 1),
    ]
    assert found["actions"]["allowed"] == []
    missing = client.get("/api/stores/files/claude/memories/notes%2Fnope.md")
    assert error(missing)[:2] == (404, "not-found")


def test_a_loopback_bind_answers_every_name_of_loopback(repo: Repository) -> None:
    """Bound to localhost, 127.0.0.1 or ::1, the console answers all three names."""
    for bound in ("localhost", "127.0.0.1", "::1"):
        console = Console(repo, token=TOKEN, host=bound, port=PORT)
        assert console.hosts() == {f"localhost:{PORT}", f"127.0.0.1:{PORT}", f"[::1]:{PORT}"}


def test_open_hands_the_browser_a_private_page_never_the_token(
    repo: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every user of the machine can read a command line: ``--open`` hands the browser
    a page in a folder only this user can read, which leads on to the address with the
    token, and removes it once the console stops."""
    import webbrowser

    console = Console(repo, token=TOKEN, port=0, author=ADA)
    handed: list[tuple[str, int, int, str]] = []

    def browser(uri: str) -> bool:
        path = uri.removeprefix("file://")
        with open(path, encoding="utf-8") as page:
            text = page.read()
        mode, folder = os.stat(path).st_mode, os.stat(os.path.dirname(path)).st_mode
        handed.append((uri, mode & 0o777, folder & 0o777, text))
        return True

    class Stopped:
        def run(self, sockets: list[socket.socket]) -> None:
            sockets[0].close()

    monkeypatch.setattr(webbrowser, "open", browser)
    monkeypatch.setattr(Console, "server", lambda self: Stopped())
    console.serve(lambda _: None, open_browser=True)
    [(uri, mode, folder, text)] = handed
    assert uri.startswith("file://") and TOKEN not in uri
    assert (mode, folder) == (0o600, 0o700)
    assert f"/?token={TOKEN}" in text
    assert not os.path.exists(uri.removeprefix("file://"))
