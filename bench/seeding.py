"""Building big stores fast for the benchmarks: gitmem's layout, written in one commit.

Writing 10,000 memories through 10,000 fsynced mutations would take the benchmarks
longer than measuring them; this writes the same tree and trailers directly.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable

from dulwich.objects import Blob, Commit, ShaFile, Tree
from dulwich.refs import Ref
from dulwich.repo import Repo

from gitmem import Author, Memory, Repository, Totals
from gitmem.store import memoryfiles as files
from gitmem.store.message import Edited, Facts, format_message

AUTHOR = Author.agent("bench")
GIT_ENV = {
    **os.environ,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": AUTHOR.name,
    "GIT_AUTHOR_EMAIL": AUTHOR.email,
    "GIT_COMMITTER_NAME": AUTHOR.name,
    "GIT_COMMITTER_EMAIL": AUTHOR.email,
}
"""The git CLI peers' environment: no user or system config, the bench's author."""
DIR_MODE = 0o040000
FILE_MODE = 0o100644


def gitmem_commit(
    parent: bytes | None, buckets: dict[str, dict[str, bytes]], facts: Facts
) -> tuple[Commit, list[ShaFile]]:
    """A root tree for ``buckets`` (fan-out name → file name → blob id) and a gitmem
    commit of it, with every object it adds."""
    objects: list[ShaFile] = []
    tree = Tree()
    for name in sorted(buckets):
        sub = Tree()
        for entry, sha in buckets[name].items():
            sub.add(entry.encode(), FILE_MODE, sha)
        objects.append(sub)
        tree.add(name.encode(), DIR_MODE, sub.id)
    objects.append(tree)
    commit = Commit()
    commit.tree = tree.id
    commit.parents = [parent] if parent else []
    commit.author = commit.committer = AUTHOR.ident()
    commit.author_time = commit.commit_time = int(time.time())
    commit.author_timezone = commit.commit_timezone = 0
    commit.message = format_message(facts)
    objects.append(commit)
    return commit, objects


def write_store(path: str, store: str, memories: Iterable[Memory]) -> Repository:
    """A new gitmem repository whose ``store`` holds ``memories``, in one pack."""
    repo = Repository.init(path)
    buckets: dict[str, dict[str, bytes]] = {}
    objects: list[ShaFile] = []
    count = chars = lines = 0
    first = ""
    for memory in memories:
        first = first or memory.slug
        count, chars, lines = count + 1, chars + memory.chars, lines + memory.lines
        for name, data in files.encode(memory).items():
            blob = Blob.from_string(data)
            objects.append(blob)
            buckets.setdefault(files.bucket(memory.slug), {})[name] = blob.id
    totals = Totals(count, chars, lines)
    commit, more = gitmem_commit(
        None, buckets, Facts((Edited(first, "create", 1),), totals, totals, {})
    )
    raw = Repo(path)
    raw.object_store.add_objects([(o, None) for o in objects + more])
    raw.refs[Ref(b"refs/heads/" + store.encode())] = commit.id
    raw.close()
    return repo
