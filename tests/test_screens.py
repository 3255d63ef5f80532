"""The screen chain: one list of checks that every write path runs the same way."""

from __future__ import annotations

import pytest

from gitmem import Author, InvalidArgument, Memory, Repository
from gitmem.screens import chain
from gitmem.store.screen import SECRETS, Screen, Write
from gitmem.types import Change, FileChange, FileEdit

ALICE = Author.agent("alice")
STORE = "notes"


def _refuse(write: Write) -> None:
    raise InvalidArgument(f"refused by the test screen in {write.store}")


def test_a_repository_screens_secrets_then_guard_code(repo: Repository) -> None:
    """The repository's chain runs the secret detectors first, then guard code; the
    push hooks build the same chain (without a sandbox: secrets only)."""
    assert [s.rule for s in repo.screens] == ["secret", "guard"]
    assert repo.screens[0] is SECRETS
    assert chain(None) == [SECRETS]


def test_an_added_screen_refuses_memory_and_file_writes(repo: Repository) -> None:
    """A screen appended to the list refuses a publish and a file-store write alike,
    and neither writes anything."""
    repo.screens.append(Screen("test", _refuse))
    with pytest.raises(InvalidArgument, match="refused by the test screen in notes"):
        repo.mutate(STORE, ALICE, lambda _: Change("create", "a", Memory("a", "d", "b")))
    with pytest.raises(InvalidArgument, match="refused by the test screen in files"):
        repo.publish_files("files", ALICE, lambda _: FileChange((FileEdit("create", "x.md", "t"),)))
    assert repo.head(STORE) is None
    assert repo.head("files") is None
