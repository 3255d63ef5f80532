"""The git hooks, through a real ``git push`` (the git CLI is the client, test-only):
pre-receive on a shared bare repository, pre-push in a project."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers_githooks import Unguarded, craft, md, push, refusal, refusals, server_state, trailers
from helpers_secrets import SECRETS
from helpers_sync import ME, make_project, sh

from gitmem import Repository, ops
from gitmem.cli import cli
from gitmem.errors import RemoteError
from gitmem.githooks import HOOKS, source
from gitmem.limits import Limits
from gitmem.store import memoryfiles as files
from gitmem.store.message import MESSAGE_SLACK
from gitmem.trailers import capability_trailer
from gitmem.types import Change, Memory

REF = "refs/heads/gitmem/notes"


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path]:
    """A shared bare server with gitmem's pre-receive, and a project holding store
    ``notes`` (one memory) pushed to it along with ``main``."""
    sh(tmp_path, "init", "-q", "--bare", "server.git")
    server = tmp_path / "server.git"
    result = CliRunner().invoke(cli, ["hooks", "install", "--server", str(server)])
    assert result.exit_code == 0, result.output
    assert result.output == f"installed {server}/hooks/pre-receive\n"
    project = make_project(tmp_path / "project")
    sh(project, "remote", "add", "origin", str(server))
    with Repository.init(str(project)) as repo:
        ops.create(repo, "notes", ME, "todo", "open tasks", "- ship\n")
    done = push(project, "main", "gitmem/notes")
    assert done.returncode == 0, done.stderr
    return server, project


def test_hooks_ship_inside_the_package() -> None:
    """Both hooks are package data (a wheel install has them) and equal the top level's."""
    top = Path(__file__).resolve().parent.parent / "hooks"
    for hook in HOOKS:
        assert source(hook) == (top / hook).read_text()
        assert "gitmem.githooks" in source(hook)


def test_valid_pushes_land(world: tuple[Path, Path]) -> None:
    """A fast-forward of a store written by gitmem lands; so does the project's main."""
    server, project = world
    with Repository.open(str(project)) as repo:
        ops.create(repo, "notes", ME, "runbook", "how staging is rolled", "1. drain\n")
        ops.edit(repo, "notes", ME, "todo", old_text="ship", new_text="ship it")
        head = repo.head("notes")
    (project / "code.py").write_text("print('hi')\n")
    sh(project, "add", "code.py")
    sh(project, "commit", "-q", "-m", "code")
    result = push(project, "main", "gitmem/notes")
    assert result.returncode == 0, result.stderr
    assert sh(server, "rev-parse", REF).strip() == head
    assert sh(server, "rev-parse", "main").strip() == sh(project, "rev-parse", "main").strip()


def _secret(project: Path) -> None:
    with Unguarded.open(str(project)) as u:
        memory = Memory("creds", "db", f"key {SECRETS[0][1]}\n")
        u.publish("notes", ME, lambda _: Change("create", "creds", memory))


def _bind(project: Path, limits: Limits) -> None:
    """A script creates memory `small`, its commit recording a markdown binding's limits."""
    with Unguarded.open(str(project)) as u:
        small = Memory("small", "s", "fits\n")
        u.publish(
            "notes",
            ME,
            lambda _: Change("create", "small", small, capability_trailer("markdown", limits)),
        )


def _limit(project: Path) -> None:
    # the binding recorded maxLenPerMemory=20 on the last commit; a script then writes 40
    _bind(project, Limits(max_len_per_memory=20))
    sh(project, "push", "-q", "origin", "gitmem/notes")
    with Unguarded.open(str(project)) as u:
        big = Memory("big", "b", "x" * 40)
        u.publish("notes", ME, lambda _: Change("create", "big", big))


def _parse(project: Path) -> None:
    path = files.memory_path("todo")
    craft(
        str(project / ".git"), REF, {path: b"no front matter"}, trailers("todo", "edit", 2, 1, 7, 1)
    )


def _slug(project: Path) -> None:
    craft(
        str(project / ".git"),
        REF,
        {"ab/bad slug!.md": md("x", "y")},
        trailers("todo", "edit", 2, 1, 7, 1),
    )


def _trailers(project: Path) -> None:
    path = files.memory_path("todo")
    # the body is 12 characters, the trailers say 99
    craft(
        str(project / ".git"),
        REF,
        {path: md("open tasks", "- ship now\n")},
        trailers("todo", "edit", 2, 1, 99, 1),
    )


def _history(project: Path) -> None:
    with Repository.open(str(project)) as repo:
        head = repo.head("notes")
        assert head is not None
    path = files.memory_path("other")
    # a sibling of the published head: pushing it (forced) would drop `todo`'s history
    craft(
        str(project / ".git"),
        REF,
        {path: md("o", "other\n")},
        trailers("other", "create", 1, 1, 6, 1),
        parents=[],
    )


BREAKERS: dict[str, Callable[[Path], None]] = {
    "secret": _secret,
    "limit": _limit,
    "parse": _parse,
    "slug": _slug,
    "trailers": _trailers,
    "history": _history,
}


@pytest.mark.parametrize("rule", sorted(BREAKERS))
def test_each_rule_refuses_with_its_line_and_changes_nothing(
    world: tuple[Path, Path], rule: str
) -> None:
    """A push breaking one rule is refused with one line naming the commit and rule;
    the server's refs and objects are as they were; main still pushes."""
    server, project = world
    BREAKERS[rule](project)
    before = server_state(server)
    result = push(project, "+gitmem/notes")
    line = refusal(result, REF, rule)
    assert refusals(result) == [line]
    assert "AKIA" not in line  # a secret is never echoed
    assert server_state(server) == before
    (project / "more.txt").write_text("more\n")
    sh(project, "add", "more.txt")
    sh(project, "commit", "-q", "-m", "more")
    assert push(project, "main").returncode == 0


def test_the_index_limit_is_held_over_the_whole_set(world: tuple[Path, Path]) -> None:
    """maxLenIndex counts a line for every memory, not only the pushed one: a new memory
    whose own line is short is refused when the set's index passes the limit, and a
    change that does not lengthen a line still lands."""
    server, project = world
    # the index: "- `todo` — open tasks" (21) and "- `small` — s" (13), plus a newline
    _bind(project, Limits(max_len_index=40))
    with Unguarded.open(str(project)) as u:
        u.publish("notes", ME, lambda _: Change("edit", "small", Memory("small", "s", "longer\n")))
    assert push(project, "gitmem/notes").returncode == 0
    with Unguarded.open(str(project)) as u:
        # its line, "- `third` — t" (13), fits alone; the index would be 35 + 1 + 13
        u.publish("notes", ME, lambda _: Change("create", "third", Memory("third", "t", "x\n")))
    before = server_state(server)
    line = refusal(push(project, "gitmem/notes"), REF, "limit")
    assert "maxLenIndex" in line and "would be 49" in line, line
    assert server_state(server) == before


def test_guard_refuses_a_push(world: tuple[Path, Path]) -> None:
    """The store's guard (pushed with the store) judges pushed commits too."""
    server, project = world
    with Repository.open(str(project)) as repo:
        repo.set_guard("notes", NO_TODO, ME)
    assert push(project, "gitmem/notes").returncode == 0
    with Unguarded.open(str(project)) as u:
        memory = Memory("later", "l", "TODO: write this\n")
        u.publish("notes", ME, lambda _: Change("create", "later", memory))
    before = server_state(server)
    line = refusal(push(project, "gitmem/notes"), REF, "guard")
    assert "no TODO in bodies" in line
    assert server_state(server) == before


NO_TODO = """
export function check(change: { body: string | null }): string | undefined {
  if (change.body !== null && change.body.includes("TODO")) return "no TODO in bodies";
}
"""


def test_every_corpus_secret_is_refused_by_the_server(world: tuple[Path, Path]) -> None:
    """One push of one store per corpus secret: every ref refused, one line each."""
    server, project = world
    with Unguarded.open(str(project)) as u:
        for i, (_, text) in enumerate(SECRETS):
            memory = Memory("note", "a note", text)
            u.publish(f"s{i}", ME, lambda _, m=memory: Change("create", "note", m))
    before = server_state(server)
    result = push(project, *(f"gitmem/s{i}" for i in range(len(SECRETS))))
    assert result.returncode != 0
    refused = [line for line in result.stderr.splitlines() if "breaks rule secret" in line]
    assert len(refused) == len(SECRETS)
    for (kind, text), line in zip(SECRETS, sorted(refused, key=_store_number), strict=True):
        assert f"({kind})" in line
        assert text.split()[-1] not in line
    assert server_state(server) == before


def _store_number(line: str) -> int:
    found = re.search(r"refs/heads/gitmem/s(\d+):", line)
    assert found is not None
    return int(found.group(1))


def test_pre_push_refuses_before_anything_leaves(world: tuple[Path, Path]) -> None:
    """`gitmem hooks install` in a project: the same checks, locally, same line."""
    server, project = world
    result = CliRunner().invoke(cli, ["--repo", str(project), "hooks", "install"])
    assert result.exit_code == 0, result.output
    hook = project / ".git" / "hooks" / "pre-push"
    assert os.access(hook, os.X_OK)
    _secret(project)
    before = server_state(server)
    pushed = push(project, "gitmem/notes")
    line = refusal(pushed, REF, "secret")
    assert "remote: refused" not in pushed.stderr  # refused here, not by the server
    assert line in pushed.stderr
    assert server_state(server) == before
    # the project's own branches pass the local hook untouched
    (project / "x.txt").write_text("x\n")
    sh(project, "add", "x.txt")
    sh(project, "commit", "-q", "-m", "x")
    assert push(project, "main").returncode == 0


def test_install_refuses_what_it_did_not_write(tmp_path: Path) -> None:
    """A foreign hook is never overwritten; a path that is no bare repository is refused."""
    sh(tmp_path, "init", "-q", "--bare", "server.git")
    server = tmp_path / "server.git"
    (server / "hooks" / "pre-receive").write_text("#!/bin/sh\nexit 0\n")
    result = CliRunner().invoke(cli, ["hooks", "install", "--server", str(server)])
    assert result.exit_code == 1
    assert "already holds a hook gitmem did not write" in result.output
    assert (server / "hooks" / "pre-receive").read_text() == "#!/bin/sh\nexit 0\n"
    result = CliRunner().invoke(cli, ["hooks", "install", "--server", str(tmp_path / "none")])
    assert result.exit_code == 1
    assert "is not a bare git repository" in result.output


def test_sync_to_a_local_remote_runs_its_pre_receive(world: tuple[Path, Path]) -> None:
    """`gitmem sync` writes a local-path remote directly, so it runs that remote's
    pre-receive as git would: a refused store commit reaches neither its refs nor its
    objects, and the refusal names the commit and the rule."""
    server, project = world
    _secret(project)
    before = server_state(server)
    with Repository.open(str(project)) as repo, pytest.raises(RemoteError) as refused:
        repo.sync("origin")
    assert re.search(
        r"refused refs/heads/gitmem/notes: commit [0-9a-f]{12} breaks rule secret",
        str(refused.value),
    )
    assert server_state(server) == before
    # a store commit the hook accepts goes through the same path and lands
    sh(project, "update-ref", REF, sh(server, "rev-parse", REF).strip())
    with Repository.open(str(project)) as repo:
        ops.create(repo, "notes", ME, "runbook", "how staging is rolled", "1. drain\n")
        head = repo.head("notes")
        repo.sync("origin")
    assert sh(server, "rev-parse", REF).strip() == head


def test_a_push_kept_as_a_pack_is_read(world: tuple[Path, Path]) -> None:
    """A push over git's unpack limit waits in quarantine as a pack, not loose objects;
    the hook reads it there (a valid push lands, a secret in it is still refused)."""
    server, project = world
    sh(server, "config", "receive.unpackLimit", "1")
    with Repository.open(str(project)) as repo:
        ops.create(repo, "notes", ME, "runbook", "how staging is rolled", "1. drain\n")
        head = repo.head("notes")
    result = push(project, "gitmem/notes")
    assert result.returncode == 0, result.stderr
    assert sh(server, "rev-parse", REF).strip() == head
    _secret(project)
    before = server_state(server)
    refusal(push(project, "gitmem/notes"), REF, "secret")
    assert server_state(server) == before


def test_a_long_push_is_read_whole_and_a_secret_deep_in_it_refused(
    world: tuple[Path, Path],
) -> None:
    """A push of many commits (read front to back from its pack, bases the server
    holds included) lands; one with a secret among them is refused at that commit."""
    server, project = world
    sh(server, "config", "receive.unpackLimit", "1")
    with Repository.open(str(project)) as repo:
        for i in range(24):
            ops.create(repo, "notes", ME, f"m{i}", f"memory {i}", f"body {i}\n")
        head = repo.head("notes")
    result = push(project, "gitmem/notes")
    assert result.returncode == 0, result.stderr
    assert sh(server, "rev-parse", REF).strip() == head
    bad = ""
    with Unguarded.open(str(project)) as u:
        for i in range(24):
            text = f"key {SECRETS[0][1]}\n" if i == 12 else f"more {i}\n"
            memory = Memory(f"m{i}", f"memory {i}", text)
            u.publish("notes", ME, lambda _, m=memory: Change("write", m.slug, m))
            if i == 12:
                bad = u.head("notes")
    before = server_state(server)
    line = refusal(push(project, "gitmem/notes"), REF, "secret")
    assert line.startswith(f"refused {REF}: commit {bad[:12]} ")
    assert server_state(server) == before


_TOKEN = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"


def test_a_secret_as_a_memory_name_is_refused_by_the_server(world: tuple[Path, Path]) -> None:
    """A credential as a slug reaches no remote: the hook refuses it in one line that
    does not repeat it."""
    server, project = world
    with Unguarded.open(str(project)) as u:
        memory = Memory(_TOKEN, "d", "b\n")
        u.publish("notes", ME, lambda _: Change("create", _TOKEN, memory))
    before = server_state(server)
    line = refusal(push(project, "gitmem/notes"), REF, "secret")
    assert "(GitHub token)" in line and _TOKEN not in line
    assert server_state(server) == before


def test_a_secret_in_a_pushed_commit_message_is_refused(world: tuple[Path, Path]) -> None:
    """The whole message of a pushed commit is scanned, its free text included."""
    server, project = world
    path = files.memory_path("todo")
    message = trailers("todo", "edit", 2, 1, 10, 1) + f"\nthe deploy token is {_TOKEN}\n"
    craft(str(project / ".git"), REF, {path: md("open tasks", "- ship it\n")}, message)
    before = server_state(server)
    line = refusal(push(project, "gitmem/notes"), REF, "secret")
    assert "commit message" in line and _TOKEN not in line
    assert server_state(server) == before


def test_a_hook_from_an_earlier_version_is_reported_and_replaced(tmp_path: Path) -> None:
    """A hook script that imports gitmem's former hook module is named by `gitmem check`
    with the command that mends it, and `gitmem hooks install` replaces it."""
    server = tmp_path / "server.git"
    Repository.init(str(server), bare=True).close()
    old = source("pre-receive").replace("from gitmem.githooks import", "from gitmem.hooks import")
    (server / "hooks").mkdir(exist_ok=True)
    (server / "hooks" / "pre-receive").write_text(old)
    result = CliRunner().invoke(cli, ["--repo", str(server), "check"])
    assert result.exit_code == 1
    assert (
        f"{server / 'hooks' / 'pre-receive'} imports gitmem.hooks, which this gitmem no longer "
        f"has; re-run `gitmem hooks install --server {server}`"
    ) in result.output
    result = CliRunner().invoke(cli, ["hooks", "install", "--server", str(server)])
    assert result.exit_code == 0, result.output
    assert "from gitmem.githooks import main" in (server / "hooks" / "pre-receive").read_text()
    result = CliRunner().invoke(cli, ["--repo", str(server), "check"])
    assert result.exit_code == 0, result.output


# -- commits gitmem did not make -----------------------------------------------------


def by_hand(
    project: Path,
    write: dict[str, str],
    link: str | None = None,
    message: str = "correct the notes by hand",
) -> str:
    """A plain ``git commit`` on the store's branch, made in a worktree of it: the files
    ``write`` names (path → text), and a symbolic link named ``link``; the new head."""
    work = project.parent / "by-hand"
    if not work.exists():
        sh(project, "worktree", "add", "-q", str(work), "gitmem/notes")
    for path, text in write.items():
        (work / path).parent.mkdir(exist_ok=True)
        (work / path).write_text(text)
    if link is not None:
        (work / link).symlink_to("/etc/passwd")
    sh(work, "add", "-A")
    (project.parent / "message").write_text(message)
    sh(work, "commit", "-q", "-F", str(project.parent / "message"))
    return sh(work, "rev-parse", "HEAD").strip()


def md_text(description: str, body: str) -> str:
    return md(description, body).decode()


def test_a_commit_by_hand_that_keeps_every_rule_lands(world: tuple[Path, Path]) -> None:
    """A plain git commit with no gitmem trailers is accepted by both hooks when it
    keeps the rules; gitmem's next write on top of it lands too."""
    server, project = world
    assert CliRunner().invoke(cli, ["--repo", str(project), "hooks", "install"]).exit_code == 0
    _bind(project, Limits(max_len_per_memory=40))
    head = by_hand(
        project,
        {
            files.memory_path("todo"): md_text("open tasks", "- ship\n- test\n"),
            files.memory_path("fresh"): md_text("made by hand", "fits the limit\n"),
        },
    )
    result = push(project, "gitmem/notes")
    assert result.returncode == 0, result.stderr
    assert sh(server, "rev-parse", REF).strip() == head
    with Repository.open(str(project)) as repo:
        assert repo.snapshot("notes").slugs() == ["fresh", "small", "todo"]
        ops.create(repo, "notes", ME, "after", "a later write", "ok\n")
        later = repo.head("notes")
    result = push(project, "gitmem/notes")
    assert result.returncode == 0, result.stderr
    assert sh(server, "rev-parse", REF).strip() == later


def test_a_commit_whose_message_is_past_the_bound_is_refused(world: tuple[Path, Path]) -> None:
    """A commit whose message is longer than a store commit's may be (every read of the
    store reads its head's message) is refused by the server, named."""
    server, project = world
    before = server_state(server)
    text = "by hand\n\n" + "x" * MESSAGE_SLACK
    head = by_hand(
        project, {files.memory_path("todo"): md_text("open tasks", "- ship\n- test\n")}, None, text
    )
    lines = _lines_of(push(project, "gitmem/notes"), head)
    assert set(lines) == {"message"}
    assert f"past the {MESSAGE_SLACK // 1024} KiB" in lines["message"]
    assert server_state(server) == before


_BROKEN_BY_HAND = {"tree", "parse", "slug", "secret", "limit", "guard"}


def _break_every_rule(project: Path) -> str:
    """A commit by hand breaking each content rule at once (the limit recorded is
    maxLenPerMemory=50; the guard refuses a TODO; four memories hold a secret)."""
    _bind(project, Limits(max_len_per_memory=50))
    with Repository.open(str(project)) as repo:
        repo.set_guard("notes", NO_TODO, ME)
    assert push(project, "gitmem/notes").returncode == 0
    secret = SECRETS[0][1]
    return by_hand(
        project,
        {
            files.memory_path("raw"): "no front matter",
            "16/misfiled.md": md_text("in the wrong folder", "x\n"),  # misfiled is in 61/
            files.memory_path("big"): md_text("too long", "x" * 80),
            files.memory_path("later"): md_text("a plan", "TODO: write\n"),
            **{files.memory_path(f"creds{i}"): md_text("db", f"k {secret}\n") for i in range(4)},
        },
        link="escape",
    )


def _lines_of(result: subprocess.CompletedProcess[str], head: str) -> dict[str, str]:
    """The refusal lines, by rule: each names the ref and the commit, once."""
    lines = refusals(result)
    found: dict[str, str] = {}
    for line in lines:
        match = re.fullmatch(rf"refused {REF}: commit {head[:12]} breaks rule ([a-z]+): .+", line)
        assert match is not None, result.stderr
        assert match.group(1) not in found, result.stderr
        found[match.group(1)] = line
    return found


def test_a_commit_by_hand_is_refused_with_every_rule_it_breaks(
    world: tuple[Path, Path],
) -> None:
    """The server refuses it with one line per rule broken (not only the first, and
    not for its missing trailers); four secrets make one bounded line."""
    server, project = world
    head = _break_every_rule(project)
    before = server_state(server)
    lines = _lines_of(push(project, "gitmem/notes"), head)
    assert set(lines) == _BROKEN_BY_HAND
    assert "'escape' is a symbolic link" in lines["tree"]
    assert "raw.md has no front matter" in lines["parse"]
    assert "`misfiled` is filed under 16/" in lines["slug"]
    assert "`big`" in lines["limit"] and "maxLenPerMemory (50)" in lines["limit"]
    assert "no TODO in bodies" in lines["guard"]
    # four secrets: three reasons shown whole (each with its allowlist fingerprint)
    assert lines["secret"].count("holds a secret") == 3 and "(and 1 more)" in lines["secret"]
    assert lines["secret"].count("gitmem guard allow ") == 3 and "…" not in lines["secret"]
    assert SECRETS[0][1] not in "".join(lines.values())
    assert server_state(server) == before


def test_pre_push_lists_every_rule_a_commit_by_hand_breaks(world: tuple[Path, Path]) -> None:
    """The local hook refuses the same commit with the same lines, before it leaves."""
    server, project = world
    assert CliRunner().invoke(cli, ["--repo", str(project), "hooks", "install"]).exit_code == 0
    head = _break_every_rule(project)
    before = server_state(server)
    result = push(project, "gitmem/notes")
    assert "remote: refused" not in result.stderr
    assert set(_lines_of(result, head)) == _BROKEN_BY_HAND
    assert server_state(server) == before


def _after_a_check(tmp_path: Path, then: str) -> list[str]:
    """What a fresh process prints, running ``then`` after the pre-push check of a
    store of three plain memories (no capability recorded)."""
    project = make_project(tmp_path / "project")
    with Repository.init(str(project)) as repo:
        for i in range(3):
            memory = Memory(f"m{i}", "a note", f"revision {i}\n")
            repo.mutate("notes", ME, lambda _, m=memory: Change("write", m.slug, m))
    head = sh(project, "rev-parse", REF).strip()
    code = (
        "import sys\n"
        "from gitmem.githooks import pre_push\n"
        f"assert pre_push({str(project / '.git')!r}, '', "
        f"['{REF} {head} {REF} {'0' * 40}']) == []\n"
    ) + then
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.splitlines()


def test_a_plain_stores_push_loads_no_limits_and_makes_no_dataclass(
    tmp_path: Path,
) -> None:
    """A hook is a process of its own for every push: checking a store that records no
    capability loads neither the limits nor the capability trailer's reader nor json,
    nor the values' module (``gitmem.types``) and ``dataclasses`` under it: the modules
    it loads keep their records as named tuples (a dataclass costs a fresh process
    about 0.8 ms to make, ``dataclasses`` several)."""
    out = _after_a_check(
        tmp_path,
        "print(sorted(m for m in ('gitmem.limits', 'gitmem.trailers', 'json',"
        " 'gitmem.strategies', 'dulwich.repo', 'gitmem.types', 'dataclasses')"
        " if m in sys.modules))\n"
        "import dataclasses\n"
        "print(sorted(f'{n}.{k}' for n, m in list(sys.modules.items())"
        " if n.startswith('gitmem') for k, v in vars(m).items()"
        " if dataclasses.is_dataclass(v) and getattr(v, '__module__', '') == n))\n",
    )
    assert out[0] == "[]"
    assert ast.literal_eval(out[1]) == []


def test_a_hook_loads_neither_typing_nor_dulwich_nor_threads(tmp_path: Path) -> None:
    """A check reads a push's objects with dulwich's native parts alone, never its
    package (whose start loads ``typing``), and ends without loading ``threading``."""
    out = _after_a_check(
        tmp_path,
        "print(sorted(m for m in ('typing', 'dulwich', 'threading') if m in sys.modules))\n"
        "print('dulwich._objects' in sys.modules)\n",
    )
    assert out == ["[]", "True"]


def test_a_line_begun_afresh_beside_the_store_is_refused(world: tuple[Path, Path]) -> None:
    """A store stands on the commits gitmem made on its first-parent line: its kind and
    its recorded limits. A merge whose first parent is a line begun afresh (an orphan
    commit of the same tree) and whose second is the published head would leave them
    behind, and the next push could break every limit: it is refused (rule history),
    and nothing changes. A plain merge whose first parent descends from the store's own
    commits lands, whichever parent the published head is."""
    server, project = world
    with Repository.open(str(project)) as repo:
        ops.create(repo, "notes", ME, "runbook", "how staging is rolled", "1. drain\n")
    assert push(project, "gitmem/notes").returncode == 0
    head = sh(project, "rev-parse", "gitmem/notes").strip()
    tree = sh(project, "rev-parse", f"{head}^{{tree}}").strip()
    before = server_state(server)
    orphan = sh(project, "commit-tree", tree, "-m", "afresh").strip()
    merge = sh(project, "commit-tree", tree, "-p", orphan, "-p", head, "-m", "merge").strip()
    done = push(project, f"{merge}:{REF}")
    assert refusals(done) == [
        f"refused {REF}: commit {orphan[:12]} breaks rule history: its first parent "
        "descends from no commit gitmem made, so the store would stand on a line begun "
        "afresh and leave its recorded kind and limits behind; merge with the store's head "
        "as the first parent"
    ]
    assert server_state(server) == before
    older = sh(project, "rev-parse", f"{head}^").strip()
    side = sh(project, "commit-tree", f"{older}^{{tree}}", "-p", older, "-m", "by hand").strip()
    plain = sh(project, "commit-tree", tree, "-p", side, "-p", head, "-m", "merge").strip()
    landed = push(project, f"{plain}:{REF}")
    assert landed.returncode == 0, landed.stderr


def test_a_branch_named_like_a_store_in_another_case_is_refused(
    world: tuple[Path, Path],
) -> None:
    """On a filesystem that ignores case (a shared folder on macOS or Windows),
    ``refs/heads/GitMem/notes`` is the file of store ``notes``'s branch, so a push to it
    would move the store unchecked: such a name is refused wherever the server runs."""
    server, project = world
    before = server_state(server)
    for ref in ("refs/heads/GitMem/notes", "refs/heads/GITMEM"):
        done = push(project, f"main:{ref}")
        assert done.returncode != 0
        assert f"refused {ref}: its name differs from a store branch's" in done.stderr
    assert server_state(server) == before
