"""Building big stores fast for the benchmarks: gitmem's layout, written in one commit
(``write_store``) or as a long history of one commit per revision (``write_history``).

Writing 10,000 memories through 10,000 fsynced mutations would take the benchmarks
longer than measuring them; this writes the same trees and trailers directly.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Iterable

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


def write_store(
    path: str, store: str, memories: Iterable[Memory], *, named: bool = False
) -> Repository:
    """A new gitmem repository whose ``store`` holds ``memories``, in one pack; its one
    commit names every memory it creates if ``named`` (as a sync's checks ask of a store
    it receives), else only the first."""
    repo = Repository.init(path)
    buckets: dict[str, dict[str, bytes]] = {}
    objects: list[ShaFile] = []
    count = chars = lines = 0
    edits: list[Edited] = []
    for memory in memories:
        if named or not edits:
            edits.append(Edited(memory.slug, "create", 1))
        count, chars, lines = count + 1, chars + memory.chars, lines + memory.lines
        for name, data in files.encode(memory).items():
            blob = Blob.from_string(data)
            objects.append(blob)
            buckets.setdefault(files.bucket(memory.slug), {})[name] = blob.id
    totals = Totals(count, chars, lines)
    commit, more = gitmem_commit(None, buckets, Facts(tuple(edits), totals, totals, {}))
    raw = Repo(path)
    raw.object_store.add_objects([(o, None) for o in objects + more])
    raw.refs[Ref(b"refs/heads/" + store.encode())] = commit.id
    raw.close()
    return repo


def write_history(
    path: str, store: str, memories: int, revisions: int, body: Callable[[int, int], str]
) -> None:
    """A new gitmem repository whose ``store`` went through ``revisions`` commits, one
    revision each: ``memories`` creates, then edits of memory ``n % memories`` (its text
    ``body(i, n // memories)``), every 23rd of them a delete (the next edit re-creates
    it). Fed to ``git fast-import`` in gitmem's layout (the same trees and trailers),
    then packed with every object whole, as gitmem packs them."""
    Repository.init(path).close()
    live: dict[str, Memory] = {}
    revision: dict[str, int] = {}
    count = chars = lines = 0
    peaks = Totals()
    now = int(time.time()) - revisions
    ident = AUTHOR.ident()
    importer = subprocess.Popen(
        ["git", f"--git-dir={path}", "fast-import", "--quiet"], stdin=subprocess.PIPE
    )
    assert importer.stdin is not None
    out = importer.stdin
    for n in range(revisions):
        i = n % memories
        slug = f"m{i:05d}"
        old = live.get(slug)
        if n >= memories and old is not None and n % 23 == 0:
            op, new = "delete", None
            del live[slug]
        else:
            op = "create" if old is None else "edit"
            new = live[slug] = Memory(slug, f"memory number {i}", body(i, n // memories))
        count += (new is not None) - (old is not None)
        chars += (new.chars if new else 0) - (old.chars if old else 0)
        lines += (new.lines if new else 0) - (old.lines if old else 0)
        totals = Totals(count, chars, lines)
        peaks = peaks.peak(totals)
        revision[slug] = revision.get(slug, 0) + 1
        message = format_message(Facts((Edited(slug, op, revision[slug]),), totals, peaks, {}))
        where = files.memory_path(slug).encode()
        out.write(b"commit refs/heads/" + store.encode() + b"\n")
        stamp = f" {now + n} +0000\n".encode()
        out.write(b"author " + ident + stamp + b"committer " + ident + stamp)
        out.write(b"data %d\n%s\n" % (len(message), message))
        if new is None:
            out.write(b"D " + where + b"\n")
        else:
            data = files.encode(new)[slug + files.MD]
            out.write(b"M 100644 inline " + where + b"\ndata %d\n%s\n" % (len(data), data))
    out.close()
    if importer.wait() != 0:
        raise SystemExit("git fast-import failed")
    # gitmem's own packing stores objects whole; so does this repack (no delta chains)
    subprocess.run(
        ["git", f"--git-dir={path}", "repack", "-a", "-d", "-f", "-q", "--window=0", "--depth=0"],
        check=True,
    )
