"""A panel at rest: held compressed once no request uses it, the same JSON when next
asked for."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from test_console import ADA, history_of_every_kind, seed
from test_console_first import folded

from gitmem import Repository, ops
from gitmem.ops import ledger
from gitmem.ops.ledgers import Ledgers

STORE = "profile/ops"


@pytest.fixture
def every_panel_rests(monkeypatch: pytest.MonkeyPatch) -> None:
    """A panel of any size rests (the stores here are small)."""
    monkeypatch.setattr(ledger, "_REST_FROM", 0)


def rested(held: ops.Ledger) -> bool:
    return held._rested is not None  # pyright: ignore[reportPrivateUsage]


def eventually(check: Callable[[], bool], seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def reader(
    repo: Repository, rest_after: float | None, release: Callable[[], object] | None = None
) -> Ledgers:
    """A long-lived reader whose ledger of the store is folded and held."""
    held = Ledgers(repo, threading.Lock(), release=release)
    held.rest_after = rest_after
    held.wait([STORE])
    return held


@pytest.mark.usefixtures("every_panel_rests")
def test_a_rested_panel_answers_and_follows_as_one_never_rested(
    repo: Repository, tmp_path: Path
) -> None:
    """A rested panel reads back byte for byte, and a move of the head splices into it
    exactly as into a panel held whole."""
    history_of_every_kind(repo, tmp_path / "work")
    held = folded(repo)
    before = held.panel()
    assert held.rest() and rested(held)
    assert held.rest() is False  # resting already
    assert held.panel() == before and not rested(held)
    assert held.rest()
    ops.create(repo, STORE, ADA, "later", "d", "text")
    ops.edit(repo, STORE, ADA, "runbook", body="changed")
    held.follow(repo)
    assert held.panel() == folded(repo).panel()
    assert held.rest()
    assert held.rows() == folded(repo).rows()


def test_a_small_panel_is_held_as_it_is(repo: Repository) -> None:
    seed(repo)
    held = folded(repo)
    assert held.rest() is False and not rested(held)


@pytest.mark.usefixtures("every_panel_rests")
def test_a_rested_ledger_keeps_what_it_folded(repo: Repository) -> None:
    """What a ledger keeps for a later process is its panel, rested or not."""
    seed(repo)
    held = folded(repo)
    assert held.rest()
    ops.create(repo, STORE, ADA, "later", "d", "text")
    held.follow(repo)
    assert held.rest()
    assert held.keep(repo)
    resumed = ops.Ledger(STORE)
    assert resumed.resume(repo)
    assert resumed.panel() == folded(repo).panel()


@pytest.mark.usefixtures("every_panel_rests")
def test_panels_rest_once_none_is_used(repo: Repository) -> None:
    """The panels rest ``rest_after`` seconds after the last use, a use meanwhile
    putting it off, and the memory freed is handed back (``release``)."""
    seed(repo)
    released: list[None] = []
    held = reader(repo, 1.0, release=lambda: released.append(None))
    first = held.panel(STORE)
    with held.lock:
        one = held.ledger(STORE)
    releases = len(released)
    used_until = time.monotonic() + 1.5
    while time.monotonic() < used_until:  # used more often than it would rest
        with held.lock:
            assert held.ledger(STORE) is one
            assert not rested(one)
        time.sleep(0.05)
    assert eventually(lambda: rested(one))
    assert eventually(lambda: len(released) > releases)
    assert held.panel(STORE) == first and not rested(one)
    ops.create(repo, STORE, ADA, "later", "d", "text")
    assert eventually(lambda: rested(one))
    assert held.panel(STORE) == folded(repo).panel()


@pytest.mark.usefixtures("every_panel_rests")
def test_a_panel_rests_while_another_store_is_used(repo: Repository) -> None:
    """Each store's panel rests on its own: one in use keeps no other awake, and the
    reader waits again for the one in use."""
    seed(repo)
    ops.create(repo, "instance/solo", ADA, "one", "d", "b")
    held = reader(repo, 60.0)
    held.wait(["instance/solo"])
    with held.lock:
        solo = held.ledger("instance/solo")
        busy = held.ledger(STORE)
        last_use = held._last_use  # pyright: ignore[reportPrivateUsage]
        last_use["instance/solo"] -= 61.0  # unused for longer than ``rest_after``
    held._rest()  # pyright: ignore[reportPrivateUsage]  (what the timer calls)
    assert rested(solo) and not rested(busy)
    assert held._resting is not None  # pyright: ignore[reportPrivateUsage]
    assert list(last_use) == [STORE]


@pytest.mark.usefixtures("every_panel_rests")
def test_a_closing_reader_rests_nothing(repo: Repository) -> None:
    seed(repo)
    held = reader(repo, 0.05)
    held.stopping.set()  # before the use: the timer it sets finds the reader closing
    held.panel(STORE)
    time.sleep(0.3)
    with held.lock:
        assert not rested(held.ledger(STORE))


@pytest.mark.usefixtures("every_panel_rests")
def test_a_reader_told_never_to_rest_sets_no_timer(repo: Repository) -> None:
    seed(repo)
    held = reader(repo, None)
    held.panel(STORE)
    assert held._resting is None  # pyright: ignore[reportPrivateUsage]
    with held.lock:
        assert not rested(held.ledger(STORE))
