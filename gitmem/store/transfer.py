"""Copying history between two repositories on this machine, in proportion to what is new.

A remote on a local path needs no pack protocol: the commits the target lacks are
found by walking back from the wanted heads until a commit the target holds (a
repository holds every object of every commit it holds, as git's connectivity rule
says), and of each new commit's tree only the entries that differ from its parents'
trees are visited. With gitmem's fan-out layout that is a few folders per change,
however many memories the store holds. The objects arrive as one pack, fsynced once
when the target asks for durable object files.
"""

from __future__ import annotations

from typing import cast

from dulwich.objects import Commit, ObjectID, ShaFile, Tree
from dulwich.repo import Repo

__all__ = ["copy_history"]

_DIR_MODE = 0o040000
_GITLINK_MODE = 0o160000


def copy_history(source: Repo, target: Repo, heads: list[str]) -> int:
    """Copy into ``target`` every object reachable from ``heads`` in ``source`` that
    ``target`` lacks; returns how many objects were copied."""
    have = target.object_store
    src = source.object_store
    order: list[Commit] = []
    seen: set[bytes] = set()
    stack: list[tuple[bytes, bool]] = [(h.encode(), False) for h in heads]
    while stack:
        sha, done = stack.pop()
        if done:
            order.append(cast(Commit, src[ObjectID(sha)]))
            continue
        if sha in seen or ObjectID(sha) in have:
            continue
        seen.add(sha)
        commit = cast(Commit, src[ObjectID(sha)])
        stack.append((sha, True))
        stack.extend((p, False) for p in commit.parents if p not in seen)
    objects: dict[bytes, ShaFile] = {}
    trees: dict[bytes, dict[bytes, bytes]] = {}
    for commit in order:
        objects[commit.id] = commit
        parents = [cast(Commit, src[p]).tree for p in commit.parents]
        _copy_tree(source, target, commit.tree, parents, objects, trees)
    if objects:
        have.add_objects([(obj, None) for obj in objects.values()])
    return len(objects)


def _entries(
    source: Repo, sha: bytes, trees: dict[bytes, dict[bytes, bytes]]
) -> dict[bytes, bytes]:
    found = trees.get(sha)
    if found is None:
        tree = cast(Tree, source.object_store[ObjectID(sha)])
        found = {bytes(e.path): bytes(e.sha) for e in tree.iteritems()}
        if len(trees) > 4096:
            trees.clear()
        trees[sha] = found
    return found


def _copy_tree(
    source: Repo,
    target: Repo,
    sha: bytes,
    parents: list[bytes],
    objects: dict[bytes, ShaFile],
    trees: dict[bytes, dict[bytes, bytes]],
) -> None:
    # a tree equal to a parent's is held by the target already, or arrives with that parent
    stack = [(sha, parents)]
    while stack:
        tree_sha, before = stack.pop()
        # no lookup in the target for trees and blobs: a miss costs dulwich a rescan of
        # its pack folder, and what differs from every parent is new almost always (an
        # object sent twice is harmless)
        if tree_sha in before or tree_sha in objects:
            continue
        tree = cast(Tree, source.object_store[ObjectID(tree_sha)])
        objects[tree_sha] = tree
        trees.setdefault(tree_sha, {bytes(e.path): bytes(e.sha) for e in tree.iteritems()})
        earlier = [_entries(source, b, trees) for b in before]
        for entry in tree.iteritems():
            olds: list[bytes] = [e[entry.path] for e in earlier if entry.path in e]
            if entry.sha in olds or entry.mode == _GITLINK_MODE:
                continue
            if entry.mode == _DIR_MODE:
                stack.append((entry.sha, olds))
            elif entry.sha not in objects:
                objects[entry.sha] = source.object_store[ObjectID(entry.sha)]
