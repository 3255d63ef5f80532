"""Kills: ``kill -9`` at random instants of writers, packers and syncing replicas; after
each, every acknowledged write is present, ``git fsck --strict`` passes and the next
write (and the next sync) works."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import helpers_soak
import helpers_store
import pytest
from conftest import assert_fsck
from helpers_soak import report, size
from helpers_sync import ME, STORE, make_project, sh

from gitmem import Repository, ops

SOAK = str(Path(helpers_soak.__file__))
WRITER = str(Path(helpers_store.__file__))
WRITER_STORE = "instance/abc"

pytestmark = pytest.mark.soak


@dataclass
class Child:
    """A child process that says ``ready`` and then prints one acknowledged slug a line."""

    name: str
    proc: subprocess.Popen[bytes]

    @classmethod
    def start(cls, name: str, *args: str) -> Child:
        proc = subprocess.Popen(
            [sys.executable, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        assert proc.stdout is not None
        ready = proc.stdout.readline()
        assert ready == b"ready\n", ready + proc.stderr.read()  # type: ignore[union-attr]
        return cls(name, proc)

    def kill(self) -> list[str]:
        """SIGKILL it; the slugs it acknowledged (a last line without newline was not)."""
        self.proc.send_signal(signal.SIGKILL)
        out, err = self.proc.communicate(timeout=60)
        assert self.proc.returncode == -signal.SIGKILL, err.decode()
        return out.decode().split("\n")[:-1]


def _fsck(directory: str) -> None:
    """``git fsck --strict`` on a bare repository or on a clone's ``.git``."""
    dot_git = Path(directory, ".git")
    assert_fsck(dot_git if dot_git.is_dir() else directory)


@dataclass
class Soak:
    tmp: Path
    rng: random.Random
    kills: int = 0
    acknowledged: dict[str, dict[str, str]] = field(default_factory=dict[str, dict[str, str]])
    """Per repository directory: slug → body of every acknowledged write."""

    def killed(self, repo_dir: str, child: Child) -> None:
        for slug in child.kill():
            i = int(slug.rsplit("-", 1)[1])
            self.acknowledged.setdefault(repo_dir, {})[slug] = helpers_store.body_of(child.name, i)
        self.kills += 1

    def check(self, directory: str, store: str) -> Repository:
        """fsck, every acknowledged write present, and the next write lands."""
        _fsck(directory)
        fresh = Repository.open(directory)
        snapshot = fresh.snapshot(store)
        for slug, body in self.acknowledged.get(directory, {}).items():
            memory = snapshot.get(slug)
            assert memory is not None and memory.body == body, f"kill {self.kills}: {slug} lost"
        slug = f"after-{self.kills}"
        ops.create(fresh, store, ME, slug, "after a kill", "still writable\n")
        assert fresh.snapshot(store).get(slug) is not None
        self.acknowledged.setdefault(directory, {})[slug] = "still writable\n"
        return fresh

    def instant(self, longest: float) -> None:
        time.sleep(self.rng.uniform(0, longest))


def _writer(soak: Soak, directory: str) -> None:
    """A writer that packs every seventh write, killed at a random instant."""
    name = f"w{soak.kills}"
    child = Child.start(name, WRITER, "forever", directory, WRITER_STORE, name)
    soak.instant(0.4)
    soak.killed(directory, child)
    soak.check(directory, WRITER_STORE).close()


def _packer(soak: Soak, directory: str) -> None:
    """A process packing in a loop beside a writer; both killed at random instants."""
    name = f"w{soak.kills}"
    writer = Child.start(name, WRITER, "forever", directory, WRITER_STORE, name)
    packer = Child.start("packer", SOAK, "pack", directory)
    soak.instant(0.4)
    first, second = (packer, writer) if soak.rng.random() < 0.5 else (writer, packer)
    for child in (first, second):
        if child is writer:
            soak.killed(directory, child)
        else:
            assert child.kill() == []  # a packer acknowledges nothing
            soak.kills += 1
        soak.instant(0.1)
    soak.check(directory, WRITER_STORE).close()


def _syncer(soak: Soak, clone: str, origin: str) -> None:
    """A replica that writes and syncs through the bare origin, killed at a random
    instant; then the replica syncs again."""
    name = f"s{soak.kills}"
    child = Child.start(name, SOAK, "sync", clone, name)
    soak.instant(0.8)
    soak.killed(clone, child)
    assert_fsck(origin)
    with soak.check(clone, STORE) as fresh:
        fresh.sync("origin")
    assert_fsck(origin)


def _replicas(tmp: Path) -> tuple[str, str, str]:
    project = make_project(tmp / "project")
    with Repository.init(str(project)) as repo:
        ops.create(repo, STORE, ME, "seed", "seeded", "seed\n")
    sh(tmp, "clone", "-q", "--bare", "project", "origin.git")
    for name in ("a", "b"):
        sh(tmp, "clone", "-q", "origin.git", name)
        with Repository.open(str(tmp / name)) as repo:
            repo.sync()
    return str(tmp / "origin.git"), str(tmp / "a"), str(tmp / "b")


def test_kill_9_across_writers_packing_and_sync(tmp_path: Path) -> None:
    """K kills spread over writers, packers and syncing replicas: nothing acknowledged is
    lost, every repository stays valid, and afterwards the replicas converge."""
    target = size(9, 200)
    soak = Soak(tmp_path, random.Random(1616))
    standalone = str(tmp_path / "mem.git")
    Repository.init(standalone).close()
    origin, a, b = _replicas(tmp_path)
    kinds = {"writer": 0, "packer": 0, "sync": 0}
    started = time.monotonic()
    rounds = 0
    while soak.kills < target:
        kind = ("writer", "packer", "sync")[rounds % 3]
        rounds += 1
        before = soak.kills
        if kind == "writer":
            _writer(soak, standalone)
        elif kind == "packer":
            _packer(soak, standalone)
        else:
            _syncer(soak, a if rounds % 2 == 0 else b, origin)
        kinds[kind] += soak.kills - before
    # every replica's writes reach the other through the origin
    for clone in (a, b, a):
        with Repository.open(clone) as repo:
            repo.sync("origin")
    everything = {**soak.acknowledged.get(a, {}), **soak.acknowledged.get(b, {})}
    for clone in (a, b):
        with Repository.open(clone) as repo:
            snapshot = repo.snapshot(STORE)
        for slug, body in everything.items():
            memory = snapshot.get(slug)
            assert memory is not None and memory.body == body, f"{slug} missing from {clone}"
    for directory in (standalone, origin, a, b):
        _fsck(directory)
    written = sum(len(v) for v in soak.acknowledged.values())
    report(
        f"kills: {soak.kills} kill -9 ({kinds['writer']} writers, {kinds['packer']} in "
        f"packing rounds, {kinds['sync']} syncing replicas); {written} acknowledged writes, "
        f"0 lost; fsck --strict clean after every kill; replicas converged; "
        f"{time.monotonic() - started:.1f} s"
    )


def test_a_ref_lock_a_killed_pusher_left_at_the_remote_does_not_block_sync(
    tmp_path: Path,
) -> None:
    """The origin's ref lock from a pusher killed mid-push is removed by the next push."""
    origin, a, _ = _replicas(tmp_path)
    lock = Path(origin, "refs", "heads", "gitmem", STORE + ".lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_bytes(b"0" * 40 + b"\n")
    old = time.time() - 60
    os.utime(lock, (old, old))
    with Repository.open(a) as repo:
        ops.create(repo, STORE, ME, "after", "after a dead pusher", "x\n")
        (report_,) = repo.sync("origin")
        assert report_.pushed
        assert sh(origin, "rev-parse", f"refs/heads/gitmem/{STORE}").strip() == repo.head(STORE)
    assert not lock.exists()
    assert_fsck(origin)
