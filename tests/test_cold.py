"""The cold process: what a command's imports load (never a timing; bench/cold.py times)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import gitmem
from gitmem import Author, Memory, Repository, cli
from gitmem.adapters import claude_code, schemas
from gitmem.lean.listing import Kept
from gitmem.lean.objects import Objects
from gitmem.store import memoryfiles as files
from gitmem.store import snapshot
from gitmem.store.objects import MemoryFiles
from gitmem.store.summaries import Summaries
from gitmem.types import Change, Edit

AUTHOR = Author.agent("alice")

HEAVY = ("gitmem.sandbox", "gitmem.holder", "gitmem.adapters", "gitmem.sync", "dulwich.client")


def _loaded(code: str) -> list[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys\nprint(sorted(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return ast.literal_eval(out.splitlines()[-1])


@pytest.mark.parametrize("code", ["import gitmem.cli", "import gitmem", "import gitmem.store"])
def test_reading_loads_no_holder_sandbox_adapter_or_sync(code: str) -> None:
    """The CLI, the package and the store import none of what only agents and sync use."""
    loaded = _loaded(code)
    assert "gitmem" in loaded
    heavy = [m for m in loaded if m.startswith(HEAVY)]
    assert heavy == []


# What a reading command (ls, show, log) does not use: the strategies, the write rules
# and the secret detectors are imported by the functions that write or search.
WRITE_ONLY = ("gitmem.strategies", "gitmem.edits", "gitmem.secrets")


def test_reading_commands_load_no_strategy_or_write_rules() -> None:
    """``gitmem.cli`` and ``gitmem.ops`` load no strategy, write rule or secret detector."""
    loaded = _loaded("import gitmem.cli\nimport gitmem.ops\nimport gitmem.repository")
    assert "gitmem.ops" in loaded
    assert [m for m in loaded if m.startswith(WRITE_ONLY)] == []


def test_reading_commands_make_no_dataclass_but_the_value_types() -> None:
    """Each dataclass costs a fresh process about 0.8 ms to make (Python compiles its
    generated methods): the modules a command loads keep their own records as named
    tuples or plain classes, and only ``gitmem.types``' public values are dataclasses."""
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import dataclasses, sys\n"
            "import gitmem.cli, gitmem.ops, gitmem.repository, gitmem.search\n"
            "print(sorted(f'{n}.{k}' for n, m in list(sys.modules.items())"
            " if n.startswith('gitmem') for k, v in vars(m).items()"
            " if dataclasses.is_dataclass(v) and getattr(v, '__module__', '') == n))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    made = ast.literal_eval(out.splitlines()[-1])
    assert "gitmem.types.Memory" in made
    assert [name for name in made if not name.startswith("gitmem.types.")] == []


# What a reading command does not use either: the binding rules, the limits and the
# trailer that records them (an operator's write, `state` or `run` imports them).
BINDING_ONLY = ("gitmem.binding", "gitmem.capability", "gitmem.limits", "gitmem.trailers")


def test_reading_commands_load_no_binding_rules_or_limits() -> None:
    """The CLI, ``ops`` and the public ``Repository`` load no binding rule or limit."""
    loaded = _loaded("import gitmem.cli\nimport gitmem.ops\nimport gitmem.repository")
    assert [m for m in loaded if m.startswith(BINDING_ONLY)] == []


def test_a_search_loads_the_index_and_no_strategy(tmp_path: Path) -> None:
    """``gitmem search`` ranks through ``gitmem.search``, below the strategies: a fresh
    process that searches loads no strategy, binding rule, holder or sandbox."""
    path = str(tmp_path / "mem.git")
    with Repository.init(path) as repo:
        repo.mutate(S, AUTHOR, lambda _: Change("create", "a", Memory("a", "d", "alpha beta\n")))
    loaded = _loaded(
        "from gitmem import ops\n"
        "from gitmem.repository import Repository\n"
        f"r = Repository.open({path!r})\n"
        f"assert [h.memory.slug for h in ops.search(r, {S!r}, ['alpha'], 5)] == ['a']\n"
        "r.close()\n"
    )
    assert "gitmem.search.index" in loaded
    assert [m for m in loaded if m.startswith((*HEAVY, *WRITE_ONLY, *BINDING_ONLY))] == []


def _many(repo: Repository, count: int) -> None:
    """``count`` memories created in one commit."""
    made = [Edit("create", f"m{i:04d}", Memory(f"m{i:04d}", "d" * 40, "x\n")) for i in range(count)]
    repo.mutate(
        S, AUTHOR, lambda _: Change("create", made[0].slug, made[0].memory, also=tuple(made[1:]))
    )


def test_a_closed_pipe_ends_a_command_quietly(tmp_path: Path) -> None:
    """``gitmem log | head -1``: the reader going away is no error to report."""
    path = str(tmp_path / "mem.git")
    with Repository.init(path) as repo:
        _many(repo, 3000)  # more than a pipe holds: the writer meets the closed end
    gitmem_bin = Path(sys.executable).parent / "gitmem"
    reader = subprocess.Popen(
        [str(gitmem_bin), "--repo", path, "log", "-s", S],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert reader.stdout is not None and reader.stderr is not None
    first = reader.stdout.readline()
    reader.stdout.close()
    err = reader.stderr.read()
    assert reader.wait() == 1
    assert first.split()[1] == b"create"
    assert err == b""


def test_secret_patterns_are_compiled_at_first_scan() -> None:
    """Importing the store compiles no secret pattern; the first scan compiles them."""
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "from gitmem import secrets\n"
            "before = secrets._re.cache_info().currsize\n"
            "found = list(secrets.scan('token = ghp_' + 'a1B2' * 9))\n"
            "print(before, secrets._re.cache_info().currsize > 0, len(found))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert out == ["0", "True", "1"]


def test_the_lazy_default_is_the_notebooks_slug() -> None:
    """``ops.notebook_timeline`` names the notebook's slug without importing it."""
    import inspect

    from gitmem import ops
    from gitmem.strategies import notebook

    assert inspect.signature(ops.notebook_timeline).parameters["slug"].default == notebook.SLUG


def test_a_repository_opens_without_them(tmp_path: object) -> None:
    """Opening a repository and reading a store's history loads none of them either."""
    loaded = _loaded(
        "from gitmem import Repository\n"
        "from gitmem.types import Author\n"
        f"r = Repository.init({str(tmp_path)!r})\n"
        "print(r.stores())\n"
    )
    assert "gitmem.repository" in loaded
    assert [m for m in loaded if m.startswith(HEAVY)] == []


def test_the_package_names_resolve_when_used() -> None:
    """Every name of ``__all__`` resolves, to the object its module defines."""
    from gitmem.holder import Holder
    from gitmem.sandbox import Sandbox

    for name in gitmem.__all__:
        assert getattr(gitmem, name) is not None, name
    assert gitmem.Holder is Holder
    assert gitmem.Sandbox is Sandbox
    assert set(gitmem.__all__) <= set(dir(gitmem))
    with pytest.raises(AttributeError):
        _ = gitmem.NoSuchName  # type: ignore[attr-defined]


def test_the_cli_choices_match_the_adapters() -> None:
    """The choices the CLI names without importing the adapters or the binding rules
    are theirs."""
    from gitmem import binding

    assert cli.TOOL_FORMATS == schemas.FORMATS
    assert tuple(claude_code.EVENTS) == cli.HOOK_EVENTS
    assert cli.COMPACTIONS == binding.COMPACTIONS
    assert cli.STARTS == binding.STARTS


# -- listing a store: summaries kept by blob id --------------------------------------

S = "profile/s"


def _listing(repo: Repository) -> list[tuple[str, tuple[str, int, int]]]:
    return [(m.slug, (m.description, m.chars, m.lines)) for m in repo.snapshot(S).memories()]


def _count_reads(repo: Repository, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    read: list[str] = []
    reader = repo._reader  # pyright: ignore[reportPrivateUsage]
    original = reader.memory

    def memory(slug: str, found: MemoryFiles, *, keep: bool = True) -> Memory:
        read.append(slug)
        return original(slug, found, keep=keep)

    monkeypatch.setattr(reader, "memory", memory)
    return read


def test_a_listing_reads_each_blob_once_across_processes(
    repo: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first listing reads every memory; a fresh repository object then reads only
    the memory that changed, and both answer what reading every memory answers."""
    for i in range(5):
        repo.mutate(
            S, AUTHOR, lambda _, i=i: Change("create", f"m{i}", Memory(f"m{i}", f"d{i}", "x\n" * i))
        )
    assert repo.summaries(S) == _listing(repo)
    repo.mutate(S, AUTHOR, lambda _: Change("edit", "m2", Memory("m2", "new", "longer\nbody\n")))
    fresh = Repository.open(repo.directory)
    read = _count_reads(fresh, monkeypatch)
    assert fresh.summaries(S) == _listing(repo)
    assert read == ["m2"]


def test_a_stores_state_reads_the_kept_listing_not_every_memory(
    repo: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``gitmem state`` lists what reading every memory lists, from the kept listing: a
    fresh repository object whose store is listed already reads no memory."""
    from gitmem import ops

    for i in range(3):
        repo.mutate(
            S, AUTHOR, lambda _, i=i: Change("create", f"m{i}", Memory(f"m{i}", f"d{i}", "x\n" * i))
        )
    want = [
        {"slug": slug, "description": d, "chars": c, "lines": n}
        for slug, (d, c, n) in _listing(repo)
    ]
    repo.summaries(S)
    fresh = Repository.open(repo.directory)
    read = _count_reads(fresh, monkeypatch)
    assert ops.state(fresh, S)["memories"] == want
    assert read == []
    fresh.close()


def test_a_stores_state_loads_no_holder_sandbox_adapter_or_sync(tmp_path: Path) -> None:
    """The ``memory_state`` event is built below the holder: a fresh process that reports
    a store's state loads none of what only agents and sync use."""
    path = str(tmp_path / "mem.git")
    with Repository.init(path) as repo:
        repo.mutate(S, AUTHOR, lambda _: Change("create", "a", Memory("a", "d", "alpha\n")))
    loaded = _loaded(
        "from gitmem import ops\n"
        "from gitmem.repository import Repository\n"
        f"r = Repository.open({path!r})\n"
        f"assert ops.state(r, {S!r})['memories'][0]['slug'] == 'a'\n"
        "r.close()\n"
    )
    assert "gitmem.state" in loaded
    assert [m for m in loaded if m.startswith(HEAVY)] == []


def test_a_damaged_summaries_file_is_passed_over(repo: Repository) -> None:
    """Torn or garbled records are not used: their memories are read again."""
    for i in range(3):
        repo.mutate(
            S, AUTHOR, lambda _, i=i: Change("create", f"m{i}", Memory(f"m{i}", f"d{i}", "y\n"))
        )
    repo.summaries(S)
    path = Path(repo.directory, "gitmem", "summaries")
    data = path.read_bytes()
    for damaged in (data[:-3], data.replace(b"d1", b"X1"), b"junk" + data[5:], b"\x00" * 50):
        path.write_bytes(damaged)
        assert Repository.open(repo.directory).summaries(S) == _listing(repo)


def _listing_files(repo: Repository) -> list[Path]:
    return sorted(Path(repo.directory, "gitmem", "listing").iterdir())


def _count_walks(repo: Repository, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """The (root tree, fan-out folder) pairs a listing reads (through ``bucket``, or
    the builder of a whole listing: each folder a row of it was read from)."""
    walked: list[tuple[str, str]] = []
    reader = repo._reader  # pyright: ignore[reportPrivateUsage]
    original = reader.bucket
    whole = snapshot.build

    def bucket(root: str, name: str, *, keep: bool = True) -> dict[str, bytes]:
        walked.append((root, name))
        return original(root, name, keep=keep)

    def build(
        objects: Objects,
        tree: str,
        known: Callable[[], dict[str, tuple[str, int, int]]],
    ) -> tuple[Kept, dict[str, tuple[str, int, int]]] | None:
        found = whole(objects, tree, known)
        if found is not None:
            walked.extend((tree, name) for name in dict.fromkeys(found[0][3]))
        return found

    monkeypatch.setattr(reader, "bucket", bucket)
    monkeypatch.setattr(snapshot, "build", build)
    return walked


def test_an_unchanged_store_is_listed_from_one_file(
    repo: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second listing of the same tree, in a fresh repository object, walks no tree
    and reads no memory; after a write the next listing walks the new tree once."""
    for i in range(4):
        repo.mutate(
            S, AUTHOR, lambda _, i=i: Change("create", f"m{i}", Memory(f"m{i}", f"d{i}", "z\n"))
        )
    first = repo.summaries(S)
    assert first == _listing(repo)
    assert len(_listing_files(repo)) == 1

    fresh = Repository.open(repo.directory)
    walked = _count_walks(fresh, monkeypatch)
    read = _count_reads(fresh, monkeypatch)
    assert fresh.summaries(S) == first
    assert walked == [] and read == []

    repo.mutate(S, AUTHOR, lambda _: Change("delete", "m1", None))
    repo.mutate(S, AUTHOR, lambda _: Change("create", "m9", Memory("m9", "late", "w\n")))
    again = Repository.open(repo.directory)
    walked = _count_walks(again, monkeypatch)
    assert again.summaries(S) == _listing(repo)
    assert [m for m, _ in again.summaries(S)] == ["m0", "m2", "m3", "m9"]
    assert walked and {root for root, _ in walked} == {repo.snapshot(S).root}
    fresh.close()
    again.close()


def test_a_changed_store_reads_only_the_folders_that_changed(
    repo: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After writes, the next listing (a fresh process's) reads only the fan-out folders
    whose tree changed, and lists what a full walk lists: edits, deletions, new
    memories, a folder emptied and one begun."""
    made = [Edit("create", f"n{i:03d}", Memory(f"n{i:03d}", f"d{i}", "a\n")) for i in range(300)]
    repo.mutate(
        S, AUTHOR, lambda _: Change("create", "first", Memory("first", "f", "b"), also=tuple(made))
    )
    repo.summaries(S)
    repo.mutate(
        S, AUTHOR, lambda _: Change("edit", "n007", Memory("n007", "now", "longer\nbody\n"))
    )
    repo.mutate(S, AUTHOR, lambda _: Change("delete", "n123", None))
    repo.mutate(S, AUTHOR, lambda _: Change("create", "zz-new", Memory("zz-new", "late", "c")))
    changed = {files.bucket(slug) for slug in ("n007", "n123", "zz-new")}
    with Repository.open(repo.directory) as fresh:
        walked = _count_walks(fresh, monkeypatch)
        read = _count_reads(fresh, monkeypatch)
        listed = fresh.summaries(S)
        assert {name for _, name in walked} == changed
        assert sorted(read) == ["n007", "zz-new"]
    assert listed == _listing(repo)
    assert [m for m, _ in listed if m in ("n007", "n123", "zz-new")] == ["n007", "zz-new"]


def test_a_slug_out_of_its_folder_is_listed_by_a_full_walk(
    repo: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tree no gitmem write makes (a memory filed in another fan-out folder, pushed
    past the hooks): its listing reads every folder, now and after the next write."""
    from dulwich.objects import Commit, Tree
    from dulwich.repo import Repo

    for slug in ("a", "b", "c"):
        repo.mutate(S, AUTHOR, lambda _, s=slug: Change("create", s, Memory(s, s, "x\n")))
    repo.summaries(S)
    head = repo.head(S)
    assert head is not None
    git = Repo(repo.directory)
    root = git[git[head.encode()].tree]
    assert isinstance(root, Tree)
    wrong = next(n for n in (b"00", b"ff", b"7f") if n.decode() != files.bucket("a"))
    real = root[files.bucket("a").encode()][1]
    moved = Tree()
    for item in git[real].items():  # type: ignore[union-attr]
        moved.add(item.path, item.mode, item.sha)
    root.add(wrong, 0o040000, moved.id)
    commit = Commit()
    commit.tree, commit.parents = root.id, [head.encode()]
    commit.author = commit.committer = b"t <t@example.com>"
    commit.author_time = commit.commit_time = 1_700_000_000
    commit.author_timezone = commit.commit_timezone = 0
    commit.message = b"moved by hand\n"
    for obj in (moved, root, commit):
        git.object_store.add_object(obj)
    git.refs[f"refs/heads/{S}".encode()] = commit.id
    git.close()
    with Repository.open(repo.directory) as fresh:
        walked = _count_walks(fresh, monkeypatch)
        assert [m for m, _ in fresh.summaries(S)] == ["a", "b", "c"]
        assert len({name for _, name in walked}) == 4  # every folder, the new one too
    repo.mutate(S, AUTHOR, lambda _: Change("create", "d", Memory("d", "d", "y\n")))
    with Repository.open(repo.directory) as again:
        walked = _count_walks(again, monkeypatch)
        assert [m for m, _ in again.summaries(S)] == ["a", "b", "c", "d"]
        assert len({name for _, name in walked}) == len(
            {files.bucket(s) for s in "abcd"} | {wrong.decode()}
        )


def test_an_older_commit_is_listed_as_it_was(repo: Repository) -> None:
    """A listing kept for the head is not used for another commit's tree."""
    repo.mutate(S, AUTHOR, lambda _: Change("create", "a", Memory("a", "one", "x\n")))
    old = repo.head(S)
    repo.mutate(S, AUTHOR, lambda _: Change("create", "b", Memory("b", "two", "y\n")))
    assert [m for m, _ in repo.summaries(S)] == ["a", "b"]
    assert [m for m, _ in repo.summaries(S, old)] == ["a"]
    with Repository.open(repo.directory) as fresh:
        assert [m for m, _ in fresh.summaries(S)] == ["a", "b"]


def test_a_damaged_listing_is_passed_over_and_written_again(
    repo: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A torn, garbled, foreign or mislabelled listing file is not used: the tree is
    walked again and a good file takes its place."""
    for i in range(3):
        repo.mutate(
            S, AUTHOR, lambda _, i=i: Change("create", f"m{i}", Memory(f"m{i}", f"d{i}", "v\n"))
        )
    expected = _listing(repo)
    repo.summaries(S)
    (path,) = _listing_files(repo)
    good = path.read_bytes()
    root = repo.snapshot(S).root
    assert root is not None
    other_tree = good.replace(root.encode(), b"0" * 40, 1)
    for damaged in (
        good[:-2],
        good.replace(b"d1", b"X1"),
        b"junk" + good[4:],
        b"",
        b"\x00" * 64,
        other_tree,
        good.replace(b"-py", b"-py9", 1),
    ):
        path.write_bytes(damaged)
        fresh = Repository.open(repo.directory)
        walked = _count_walks(fresh, monkeypatch)
        assert fresh.summaries(S) == expected
        assert walked, damaged[:60]
        kept = Summaries(str(Path(repo.directory, "gitmem", "summaries")))
        assert kept.listing(S, root) == expected
        fresh.close()


def test_a_listing_that_cannot_be_kept_still_answers(repo: Repository) -> None:
    """Derived data only: where the listing cannot be written, the listing is still right."""
    repo.mutate(S, AUTHOR, lambda _: Change("create", "a", Memory("a", "one", "x\n")))
    Path(repo.directory, "gitmem", "listing").write_text("not a folder")
    assert [m for m, _ in repo.summaries(S)] == ["a"]
    with Repository.open(repo.directory) as fresh:
        assert [m for m, _ in fresh.summaries(S)] == ["a"]


# -- the sandbox's list of `node:` names, kept on disk --------------------------------


def _builtins_in_fresh_process(binary: Path, cache_home: Path) -> tuple[int, list[str]]:
    """(how many times a fresh process read ``binary``, the names it found there)."""
    code = (
        "import json\n"
        "from gitmem.sandbox import launch\n"
        f"b = {str(binary)!r}\n"
        "names = launch._binary_builtins(b, launch._stamp(b))\n"
        "print(json.dumps([launch.scans, sorted(names)]))\n"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_home)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    ).stdout
    scans, names = json.loads(out.splitlines()[-1])
    return scans, names


def test_the_binary_scan_is_kept_across_processes(tmp_path: Path) -> None:
    """A second process reads the list from the cache; a binary whose size or mtime
    changed is read again; a damaged cache file is read again, never trusted."""
    binary = tmp_path / "deno"
    binary.write_bytes(b"\x00node:fs\x00junk node:zlibimport\x00node:alpha/beta\x00")
    cache_home = tmp_path / "cache"
    expected = ["alpha/beta", "fs", "zlib", "zlibimport"]
    assert _builtins_in_fresh_process(binary, cache_home) == (1, expected)
    cache = cache_home / "gitmem" / "deno-node-builtins.json"
    assert cache.is_file()
    assert _builtins_in_fresh_process(binary, cache_home) == (0, expected)

    binary.write_bytes(binary.read_bytes() + b"node:gamma\x00")
    assert _builtins_in_fresh_process(binary, cache_home) == (
        1,
        [*expected[:2], "gamma", *expected[2:]],
    )
    assert _builtins_in_fresh_process(binary, cache_home)[0] == 0

    stat = binary.stat()
    os.utime(binary, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    assert _builtins_in_fresh_process(binary, cache_home)[0] == 1
    assert _builtins_in_fresh_process(binary, cache_home)[0] == 0

    good = cache.read_text()
    record = json.loads(good)
    record["names"].append("evil")
    for damaged in (good[:-5], "[]", "\x00" * 20, json.dumps(record)):
        cache.write_text(damaged)
        scans, names = _builtins_in_fresh_process(binary, cache_home)
        assert scans == 1
        assert "evil" not in names and "gamma" in names
        assert json.loads(cache.read_text()) == json.loads(good)


# -- the end of a command: no interpreter teardown -------------------------------------


def _gitmem(*args: str, stdout: int | None = subprocess.PIPE) -> subprocess.CompletedProcess[bytes]:
    gitmem_bin = Path(sys.executable).parent / "gitmem"
    return subprocess.run([str(gitmem_bin), *args], stdout=stdout, stderr=subprocess.PIPE)


def test_a_command_ends_with_its_status_and_whole_output(tmp_path: Path) -> None:
    """Ending without the interpreter's teardown keeps what ``sys.exit`` gives: the
    status (0, or 1 for a refusal or a usage error), every byte of output, also into a
    file, and the error line."""
    path = str(tmp_path / "mem.git")
    with Repository.init(path) as repo:
        _many(repo, 2000)
        expected = [slug for slug, _ in repo.summaries(S)]
    out = tmp_path / "ls.txt"
    with open(out, "wb") as f:
        done = _gitmem("--repo", path, "ls", "-s", S, stdout=f.fileno())
    assert done.returncode == 0 and done.stderr == b""
    assert [line.split()[0] for line in out.read_text().splitlines()] == expected
    refused = _gitmem("--repo", path, "show", "-s", S, "nope")
    assert refused.returncode == 1 and refused.stdout == b""
    assert refused.stderr.decode().startswith("Error: there is no memory named 'nope'")
    usage = _gitmem("--repo", path, "no-such-command")
    assert usage.returncode == 1 and b"No such command" in usage.stderr


def test_the_exit_hooks_still_run() -> None:
    """An exit hook (the sandbox pool stops its processes in one) runs before the end."""
    code = (
        "import atexit, sys\n"
        "from gitmem import cli\n"
        "atexit.register(lambda: sys.stderr.write('hook ran\\n'))\n"
        "sys.argv = ['gitmem', '--help']\n"
        "cli.main()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True)
    assert done.returncode == 0
    assert b"Usage: gitmem" in done.stdout
    assert done.stderr == b"hook ran\n"


def test_the_console_script_loads_with_the_collector_off_then_runs_with_it_on() -> None:
    """``gitmem.__main__`` freezes what the command line's imports made (no collection
    traverses it again) and runs the command with the collector on: a server command
    lives long enough to need it."""
    code = (
        "import atexit, gc, sys\n"
        "atexit.register(lambda: sys.stderr.write(f'{gc.isenabled()} {gc.get_freeze_count()}'))\n"
        "sys.argv = ['gitmem', '--help']\n"
        "from gitmem.__main__ import main\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0
    assert "Usage: gitmem" in done.stdout
    enabled, frozen = done.stderr.split()
    assert enabled == "True"
    assert int(frozen) > 10_000  # click's, dulwich's and gitmem's objects
    usage = subprocess.run(
        [sys.executable, "-m", "gitmem", "--help"], capture_output=True, text=True
    )
    assert usage.returncode == 0 and "Usage: gitmem" in usage.stdout
