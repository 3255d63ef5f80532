"""Markers: named refs under ``refs/gitmem/`` that point at a commit of a store (such as
a holder's notice watermark), kept durably. A marker set "before a store's first
commit" points at one fixed empty root commit, since a ref must name an object."""

from __future__ import annotations

import os

from dulwich.objects import Commit, Tree
from dulwich.refs import Ref

from gitmem.store import packing
from gitmem.store.layout import MARKER_PREFIX, check_store
from gitmem.store.refs import Refs

__all__ = ["names", "point", "read"]


def _origin() -> tuple[Tree, Commit]:
    tree = Tree()
    commit = Commit()
    commit.tree = tree.id
    commit.author = commit.committer = b"gitmem <gitmem@gitmem.invalid>"
    commit.author_time = commit.commit_time = 0
    commit.author_timezone = commit.commit_timezone = 0
    commit.message = b"gitmem: before a store's first commit\n"
    return tree, commit


_EMPTY_TREE, _ORIGIN = _origin()
_ORIGIN_ID = _ORIGIN.id.decode()


def _ref(name: str) -> Ref:
    check_store(name)
    return Ref((MARKER_PREFIX + name).encode())


def read(refs: Refs, name: str) -> str | None:
    """The commit marker ``name`` points at: ``None`` if it was never set, ``""`` if it
    was set before a store's first commit."""
    found = refs.read(_ref(name))
    return "" if found == _ORIGIN_ID else found


def names(refs: Refs, prefix: str) -> list[str]:
    """The names of every marker under ``prefix``, sorted."""
    check_store(prefix)
    return [f"{prefix}/{name}" for name in refs.names(f"{MARKER_PREFIX}{prefix}/")]


def point(refs: Refs, name: str, commit: str | None) -> None:
    """Point marker ``name`` at ``commit`` (``None``: before the first commit), durably;
    must hold the write lock."""
    ref = _ref(name)
    old = refs.read(ref)
    if commit is None:
        # a ref must name an object: an empty root commit stands for "before"
        packing.write_objects(os.path.join(refs.directory, "objects"), [_EMPTY_TREE, _ORIGIN])
        commit = _ORIGIN_ID
    if old != commit:
        refs.swap(ref, old, commit)
