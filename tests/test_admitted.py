"""What a store admits is decided by the receiving side: the push hook and sync judge
every arriving commit by the store's ``@allowlist`` and ``@guard.ts`` as of the commit
they build on, never by what the arriving commits set; a change to either takes effect
once it is published, for what arrives later. Through a real ``git push``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers_githooks import Unguarded, guarded_world, push, refusal, server_state
from helpers_secrets import SECRETS
from helpers_sync import ME, hostile_replicas, sh

from gitmem import Repository, ops
from gitmem.cli import cli
from gitmem.errors import SecretFound
from gitmem.types import Change, Memory

REF = "refs/heads/gitmem/notes"
NO_TODO = """
export function check(change: { body: string | null }): string | undefined {
  if (change.body !== null && change.body.includes("TODO")) return "no TODO in bodies";
}
"""


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path]:
    """A shared bare server with gitmem's pre-receive, and a project holding store
    ``notes`` pushed to it."""
    return guarded_world(tmp_path)


def _allow_own_secret(project: Path) -> None:
    """Two commits: the secret's fingerprint allowed, then the secret written."""
    memory = Memory("creds", "db", f"key {SECRETS[0][1]}\n")
    with Repository.open(str(project)) as repo:
        with pytest.raises(SecretFound) as caught:
            repo.mutate("notes", ME, lambda _: Change("create", "creds", memory))
        repo.allow("notes", caught.value.fingerprint, "mine", ME)
        repo.mutate("notes", ME, lambda _: Change("create", "creds", memory))


def test_a_pusher_cannot_allow_their_own_secret_in_the_same_push(
    world: tuple[Path, Path],
) -> None:
    """The allowlist the push brings does not judge the push: refused, nothing changes
    on the server; published first, it admits what a later push brings."""
    server, project = world
    _allow_own_secret(project)
    before = server_state(server)
    line = refusal(push(project, "gitmem/notes"), REF, "secret")
    assert "gitmem guard allow" in line and SECRETS[0][1].split()[-1] not in line
    assert server_state(server) == before
    done = push(project, "gitmem/notes~1:gitmem/notes")
    assert done.returncode == 0, done.stderr
    done = push(project, "gitmem/notes")
    assert done.returncode == 0, done.stderr


def test_a_pusher_cannot_clear_the_guard_and_break_it_in_the_same_push(
    world: tuple[Path, Path],
) -> None:
    server, project = world
    with Repository.open(str(project)) as repo:
        repo.set_guard("notes", NO_TODO, ME)
    assert push(project, "gitmem/notes").returncode == 0
    with Repository.open(str(project)) as repo:
        repo.set_guard("notes", None, ME)
        ops.create(repo, "notes", ME, "later", "l", "TODO: write this\n")
    before = server_state(server)
    line = refusal(push(project, "gitmem/notes"), REF, "guard")
    assert "no TODO in bodies" in line
    assert server_state(server) == before


def test_a_push_that_narrows_what_is_admitted_is_held_to_it_at_once(
    world: tuple[Path, Path],
) -> None:
    """A guard the push sets, or a fingerprint it drops from the allowlist, judges the
    push's own later commits as well: a push may narrow what the store admits, never
    widen it."""
    server, project = world
    with Repository.open(str(project)) as repo:
        repo.set_guard("notes", NO_TODO, ME)
    with Unguarded.open(str(project)) as u:
        memory = Memory("later", "l", "TODO: write this\n")
        u.publish("notes", ME, lambda _: Change("create", "later", memory))
    before = server_state(server)
    refusal(push(project, "gitmem/notes"), REF, "guard")
    assert server_state(server) == before


def test_a_push_that_drops_a_fingerprint_is_held_to_the_narrower_list(
    world: tuple[Path, Path],
) -> None:
    server, project = world
    _allow_own_secret(project)
    sh(project, "update-ref", "refs/heads/gitmem/notes", "gitmem/notes~1")
    assert push(project, "gitmem/notes").returncode == 0  # the allowlist, published
    with Repository.open(str(project)) as repo:
        repo.set_meta("notes", "@allowlist", None, ME)
    memory = Memory("creds", "db", f"key {SECRETS[0][1]}\n")
    with Unguarded.open(str(project)) as u:
        u.publish("notes", ME, lambda _: Change("create", "creds", memory))
    before = server_state(server)
    refusal(push(project, "gitmem/notes"), REF, "secret")
    assert server_state(server) == before


def test_a_new_stores_first_push_goes_by_its_own_commits(tmp_path: Path) -> None:
    """A store the server does not hold yet has no published allowlist: each commit of
    its first push is judged by its parent's, as before."""
    _, project = guarded_world(tmp_path, _allow_own_secret, pushed=False)
    done = push(project, "gitmem/notes")
    assert done.returncode == 0, done.stderr


@pytest.fixture
def replicas(tmp_path: Path) -> tuple[Path, Path, Path]:
    """An unguarded bare origin holding store ``notes``, and two clones of it, ``a``
    (the hostile pusher) and ``b`` (the replica that syncs)."""
    return hostile_replicas(tmp_path)


def _sync(b: Path) -> tuple[int, dict[str, object]]:
    """b synced: the exit status and the report of `notes`."""
    result = CliRunner().invoke(cli, ["--repo", str(b), "sync", "--json"])
    row = next(r for r in json.loads(result.output) if r["store"] == "notes")
    return result.exit_code, row


def test_sync_judges_what_it_adopts_by_this_replicas_allowlist(
    replicas: tuple[Path, Path, Path],
) -> None:
    """A remote's allowlist and the secret it admits, in one sync, are kept out; the
    allowlist alone is adopted, said in one line; the secret after it then lands."""
    _, a, b = replicas
    _allow_own_secret(a)
    sh(a, "push", "-q", "origin", "gitmem/notes")
    with Repository.open(str(b)) as repo:
        before = repo.head("notes")
    status, row = _sync(b)
    assert status == 2
    refused = row["refused"]
    assert isinstance(refused, list) and len(refused) == 1 and "rule secret" in refused[0]
    with Repository.open(str(b)) as repo:
        assert repo.head("notes") == before
    sh(a, "push", "-q", "-f", "origin", "gitmem/notes~1:gitmem/notes")
    result = CliRunner().invoke(cli, ["--repo", str(b), "sync"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[1:] == [
        "notes: the remote set the store's allowlist (@allowlist); it judges what arrives "
        "from the next sync or push on"
    ]
    sh(a, "push", "-q", "origin", "gitmem/notes")
    status, row = _sync(b)
    assert status == 0 and row["refused"] == [] and row["rules"] == []
    with Repository.open(str(b)) as repo:
        assert repo.head("notes") == sh(a, "rev-parse", "gitmem/notes").strip()


def test_sync_judges_what_it_adopts_by_this_replicas_guard(
    replicas: tuple[Path, Path, Path],
) -> None:
    _, a, b = replicas
    with Repository.open(str(b)) as repo:
        repo.set_guard("notes", NO_TODO, ME)
        repo.sync("origin")
    with Repository.open(str(a)) as repo:
        repo.sync("origin")
        repo.set_guard("notes", None, ME)
    with Unguarded.open(str(a)) as u:
        memory = Memory("later", "l", "TODO: write this\n")
        u.publish("notes", ME, lambda _: Change("create", "later", memory))
    sh(a, "push", "-q", "origin", "gitmem/notes")
    status, row = _sync(b)
    assert status == 2
    refused = row["refused"]
    assert isinstance(refused, list) and "rule guard" in refused[0]
