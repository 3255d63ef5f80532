"""Sharing stores with a remote: fetch, reconcile, push."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gitmem.repository import Repository
    from gitmem.sync import StoreSync

__all__ = ["sync"]


def sync(repo: Repository, remote: str = "origin", store: str | None = None) -> list[StoreSync]:
    """``repo.sync``: fetch, reconcile, push; one report per store."""
    return repo.sync(remote, store)
