"""A pushed commit read the short way reads as the full reading reads it.

:meth:`PushReader.commit` reads a commit as gitmem writes one (one parent, trailers
naming one memory, only that memory's files changed) without searching the trees for
where they differ. Over generated histories, usual and hostile (two memories changed
at once, deletions, renames, stray files, folders and links in a fan-out directory,
trees with unsorted or repeated entries, trailers that lie), every commit reads exactly
as the full reading reads it: the same memories, totals and problems.
"""

from __future__ import annotations

import hashlib
import os
import random
import zlib
from collections.abc import Iterator
from typing import Any

import pytest
from dulwich.objects import Blob, Commit, ObjectID
from dulwich.repo import Repo
from helpers_githooks import md, trailers

from gitmem.lean.text import count_lines
from gitmem.store import memoryfiles as files
from gitmem.store.pushcheck import PushCommit, PushReader, Refused

DIR_MODE = 0o040000
FILE_MODE = 0o100644

Entries = dict[bytes, tuple[int, bytes]]
"""A tree's entries: name → (mode, binary id)."""


def _slugs() -> list[str]:
    """Slugs, three of which share a fan-out directory (a commit may change two
    memories of one directory)."""
    by_home: dict[str, list[str]] = {}
    for i in range(2000):
        slug = f"note-{i}"
        by_home.setdefault(files.bucket(slug), []).append(slug)
        shared = by_home[files.bucket(slug)]
        if len(shared) == 3:
            return shared + [f"other-{i}" for i in range(5)]
    raise AssertionError("no three slugs share a directory")


_SLUGS = _slugs()


class _History:
    """A store's history written object by object, so a tree may be one git would
    never write (entries out of order, or one given twice)."""

    def __init__(self, path: str, rng: random.Random) -> None:
        self.repo = Repo.init_bare(path, mkdir=True)
        self.path = path
        self.rng = rng
        self.buckets: dict[bytes, Entries] = {}
        self.root_extra: Entries = {}
        self.bodies: dict[str, str] = {}
        self.revisions: dict[str, int] = {}
        self.peaks = (0, 0, 0)
        self.head: bytes | None = None

    def blob(self, data: bytes) -> bytes:
        blob = Blob.from_string(data)
        self.repo.object_store.add_object(blob)
        return bytes.fromhex(blob.id.decode())

    def tree(self, entries: Entries, hostile: bool = False, misplaced: bool = False) -> bytes:
        def order(name: bytes) -> bytes:
            return name + b"/" if entries[name][0] == DIR_MODE else name

        names = sorted(entries, key=order)
        if misplaced and len(names) > 2:
            names.insert(self.rng.randrange(len(names)), names.pop(self.rng.randrange(len(names))))
        if hostile and names:
            if self.rng.random() < 0.5:
                names.append(names[0])  # an entry given twice
            else:
                names.reverse()  # out of git's order
        content = b"".join(b"%o %s\0%s" % (entries[n][0], n, entries[n][1]) for n in names)
        raw = b"tree %d\0" % len(content) + content
        sha = hashlib.sha1(raw).hexdigest()
        folder = os.path.join(self.path, "objects", sha[:2])
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, sha[2:]), "wb") as f:
            f.write(zlib.compress(raw))
        return bytes.fromhex(sha)

    def write(self, slug: str, body: str | None) -> None:
        """Set (``None``: remove) memory ``slug``'s .md file."""
        home = files.bucket(slug).encode()
        entries = self.buckets.setdefault(home, {})
        name = (slug + files.MD).encode()
        if body is None:
            entries.pop(name, None)
            self.bodies.pop(slug, None)
        else:
            entries[name] = (FILE_MODE, self.blob(md(f"about {slug}", body)))
            self.bodies[slug] = body
        if not entries:
            del self.buckets[home]

    def commit(
        self, message: str, hostile: bytes | None = None, parents: list[bytes] | None = None
    ) -> str:
        root: Entries = dict(self.root_extra)
        for home, entries in self.buckets.items():
            root[home] = (DIR_MODE, self.tree(entries, hostile == home))
        commit = Commit()
        misplaced = hostile == b"misplaced"  # one entry of the root out of git's order
        commit.tree = ObjectID(self.tree(root, hostile == b"", misplaced).hex().encode())
        if parents is not None:
            commit.parents = [ObjectID(p) for p in parents]
        else:
            commit.parents = [ObjectID(self.head)] if self.head else []
        commit.author = commit.committer = b"Agent <agent@example.com>"
        commit.author_time = commit.commit_time = 1_800_000_000
        commit.author_timezone = commit.commit_timezone = 0
        commit.message = message.encode()
        self.repo.object_store.add_object(commit)
        self.head = commit.id
        return commit.id.decode()

    def message(self, slug: str, op: str, lies: float = 0.15, extra: str = "") -> str:
        """Trailers for ``slug``, mostly true to the tree, now and then (``lies``) not."""
        rng = self.rng
        count = len(self.bodies)
        chars = sum(map(len, self.bodies.values()))
        lines = sum(map(count_lines, self.bodies.values()))
        revision = self.revisions.get(slug, 0) + 1
        if rng.random() < lies:
            count, chars, revision = count + 1, chars + rng.randrange(-3, 4), revision + 1
        self.revisions[slug] = revision
        self.peaks = (
            max(self.peaks[0], count),
            max(self.peaks[1], chars),
            max(self.peaks[2], lines),
        )
        text = trailers(slug, op, revision, count, chars, lines, extra)
        peaks = (
            f"Gitmem-Peak-Count: {count}\nGitmem-Peak-Chars: {chars}\nGitmem-Peak-Lines: {lines}\n"
        )
        said = f"Gitmem-Peak-Count: {self.peaks[0]}\nGitmem-Peak-Chars: {self.peaks[1]}\nGitmem-Peak-Lines: {self.peaks[2]}\n"
        return text.replace(peaks, said)


def _history(path: str, seed: int, commits: int) -> list[str]:
    """Commits of a generated history, parents first."""
    rng = random.Random(seed)
    store = _History(path, rng)
    for i in range(40):  # a root of many directories, as a store's soon is
        store.write(f"base-{i}", "a base memory\n")
    shas: list[str] = []
    for step in range(commits):
        slug = rng.choice(_SLUGS)
        body = f"revision {step}\n" + "words here\n" * rng.randrange(0, 4)
        kind = rng.random()
        op = "write"
        hostile: bytes | None = None
        if kind < 0.55 or step < 3:
            store.write(slug, body)  # the usual commit
        elif kind < 0.62:
            store.write(_SLUGS[0], body)  # two memories of one directory
            store.write(_SLUGS[1], body + "more\n")
        elif kind < 0.68:
            op = "delete"
            store.write(slug, None)
        elif kind < 0.73:
            op = "rename"
            store.write(slug, None)
            store.write(rng.choice(_SLUGS), body)
        elif kind < 0.77:
            home = files.bucket(slug).encode()
            store.write(slug, body)
            stray = rng.choice(
                [
                    (b"stray.txt", FILE_MODE),
                    ((slug + files.CODE).encode(), FILE_MODE),
                    ((slug + files.ON_USE).encode(), 0o100755),
                    ((slug + files.MD).encode(), 0o120000),
                    ((slug + files.MD).encode(), DIR_MODE),
                    (b"other-9.md", FILE_MODE),  # a slug filed under another's directory
                    (b"Bad Name.md", FILE_MODE),
                ]
            )
            target = store.blob(b"x") if stray[1] != DIR_MODE else store.tree({})
            store.buckets[home][stray[0]] = (stray[1], target)
        elif kind < 0.82:
            store.write(slug, body)
            hostile = files.bucket(slug).encode() if rng.random() < 0.7 else b""
        elif kind < 0.85:
            store.root_extra[b"zz-not-a-directory"] = (FILE_MODE, store.blob(b"y"))
            store.write(slug, body)
        elif kind < 0.88:
            home = files.bucket(slug).encode()
            store.write(slug, body)
            store.buckets[home][(slug + files.MD).encode()] = (
                FILE_MODE,
                store.blob(b"no front matter"),
            )
        elif kind < 0.91:
            pass  # the same tree as its parent
        else:
            store.write(slug, body)
        said = rng.random()
        if said < 0.75:
            message = store.message(slug, op)
        elif said < 0.88:
            message = store.message(rng.choice(_SLUGS), op)
        else:
            message = f"a hand-made commit {step}\n"
        shas.append(store.commit(message, hostile))
        if kind >= 0.82 and kind < 0.85:
            del store.root_extra[b"zz-not-a-directory"]
    store.repo.close()
    return shas


def _read(path: str, shas: list[str]) -> Iterator[tuple[object, ...]]:
    """Each commit as a reader reads them in turn: what it reads, or the refusal it
    raises (a commit on a parent that does not read: a push stops before it)."""
    reader = PushReader(path)
    try:
        for sha in shas:
            try:
                commit = reader.commit(sha, "memories")
            except Refused as refused:
                yield (sha, refused.rule, refused.commit, refused.message)
                continue
            problems = [(p.rule, p.commit, p.message) for p in commit.problems]
            yield (*commit._replace(problems=[]), problems)
    finally:
        reader.close()


@pytest.mark.parametrize("seed", range(10))
def test_a_commit_read_the_short_way_reads_as_the_full_reading(
    seed: int, tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every commit of a generated history, read in order as a push reads it, gives the
    same memories, totals and problems with the short reading as without it."""
    path = os.path.join(str(tmp_path), "store.git")
    shas = _history(path, seed, 60)
    taken: list[str] = []
    for name in ("_next", "_usual"):  # the short ways: from the parent's reading, or not
        reading = getattr(PushReader, name)

        def counted(reader: PushReader, *args: object, reading: Any = reading) -> PushCommit | None:
            found = reading(reader, *args)
            if found is not None:
                taken.append(found.sha)
            return found

        monkeypatch.setattr(PushReader, name, counted)
    short = list(_read(path, shas))
    monkeypatch.setattr(PushReader, "_next", lambda *_: None)
    monkeypatch.setattr(PushReader, "_usual", lambda *_: None)
    full = list(_read(path, shas))
    assert short == full
    assert len(taken) >= 10  # the short reading was taken, and not only for clean commits
    assert any(c[-1] for c in full if c[0] in taken)  # a lying commit among them
