"""A store's first fold of a long history, in a process of its own: what the child says
(the listing first, then how far it has gone) and keeps, a working folder holding a
module named gitmem, a closing reader, two readers of one store, and the child started
by hand. The console's answers while a child folds are in ``test_console_first``."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from test_console import history_of_every_kind, seed
from test_console_first import folded

from gitmem import Repository, ops
from gitmem.ops import folding, ledgers
from gitmem.ops.ledger import kept_listed_json, listed_json


def told_by_child(repo: Repository) -> list[Any]:
    """What a child folding ``profile/ops`` says, in order: the listing (a head and its
    rows), then each step of its progress."""
    told: list[Any] = []
    folding.fold_apart(
        repo.directory,
        "profile/ops",
        lambda *progress: told.append(progress),
        lambda head, rows: told.append((head, rows)),
    )
    return told


def test_the_child_says_its_listing_then_how_far_it_has_gone(
    repo: Repository, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The child says the head's listing first (the interim form's rows, byte for byte),
    then its progress up to every revision read, and keeps the ledger at the head, as
    a fold here would have; a folder named gitmem in the working folder is not what it
    runs."""
    history_of_every_kind(repo, tmp_path / "work")
    shadow = tmp_path / "cwd" / "gitmem"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise SystemExit('the working folder ran')\n")
    monkeypatch.chdir(shadow.parent)
    told = told_by_child(repo)
    head = repo.head("profile/ops")
    assert told[0] == (head, listed_json(repo, "profile/ops"))
    revisions = len(repo.outlines("profile/ops"))
    assert told[-1][1:] == (revisions, revisions)
    kept = repo.kept("ledger", "profile/ops")
    assert kept is not None and kept.head == head
    taken = ops.Ledger("profile/ops")
    assert taken.resume(repo)
    assert taken.rows_json() == folded(repo).rows_json()


def test_the_child_says_a_kept_listing_is_kept(repo: Repository, tmp_path: Path) -> None:
    """A child finding the head's listing kept says so rather than send it: the reader
    reads it itself, at little cost."""
    history_of_every_kind(repo, tmp_path / "work")
    repo.summaries("profile/ops")  # the listing kept, as `gitmem ls` keeps it
    told = told_by_child(repo)
    assert told[0] == (repo.head("profile/ops"), None)
    assert kept_listed_json(repo, "profile/ops") == listed_json(repo, "profile/ops")


def test_a_closing_reader_stops_its_child(
    repo: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader that closes while its child folds stops it at the child's next word."""
    seed(repo)
    held = ops.Ledgers(repo, threading.Lock())
    held.apart, held.patience = (0, 0), None
    real = folding.fold_apart

    def closing(directory: str, store: str, progress: Any, listing: Any) -> None:
        def listed(head: str | None, rows: bytes | None) -> None:
            held.stopping.set()
            listing(head, rows)

        real(directory, store, progress, listed)

    monkeypatch.setattr(folding, "fold_apart", closing)
    held.wait(["profile/ops"])
    reading = held._readings["profile/ops"]  # pyright: ignore[reportPrivateUsage]
    assert reading.error is not None and "closing" in str(reading.error)


def test_two_readers_of_one_store_each_read_it_whole(
    repo: Repository, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two readers of one store whose children fold at once both end with the rows of
    a fold here."""
    history_of_every_kind(repo, tmp_path / "work")
    monkeypatch.setattr(ledgers.Ledgers, "apart", (0, 0))
    others = [Repository.open(repo.directory) for _ in range(2)]
    try:
        readers = [ops.Ledgers(other, threading.Lock()) for other in others]
        threads = [
            threading.Thread(target=reader.wait, args=(["profile/ops"],)) for reader in readers
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        rows = [reader.ledger("profile/ops").rows_json() for reader in readers]
    finally:
        for other in others:
            other.close()
    assert rows == [folded(repo).rows_json()] * 2


def test_the_child_wants_a_repository_and_a_store() -> None:
    """The child started by hand without its two arguments says how to start it."""
    done = subprocess.run(
        [sys.executable, "-m", "gitmem.ops.fold_worker"],
        capture_output=True,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr == b"usage: python -m gitmem.ops.fold_worker GIT_DIR STORE\n"
