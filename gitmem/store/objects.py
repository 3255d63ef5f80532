"""Reading git objects through dulwich, with caches keyed by object id.

Objects never change, so a cache keyed by id is always right; it only needs a bound.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import NamedTuple, TypeVar, cast

from dulwich.errors import ObjectFormatException
from dulwich.objects import Blob, Commit, ObjectID, ShaFile, Tree, parse_tree
from dulwich.repo import Repo

from gitmem.errors import StorageError
from gitmem.store import files
from gitmem.store.message import Facts, parse_message
from gitmem.types import Memory

DIR_MODE = 0o040000
FILE_MODE = 0o100644
_CACHE_MAX = 50_000

TreeEntries = list[tuple[str, int, bytes]]
K = TypeVar("K")
V = TypeVar("V")


@dataclass(frozen=True)
class MemoryFiles:
    """The blob ids of one memory's files."""

    md: bytes
    code: bytes | None
    on_use: bytes | None


Blobs = tuple[str, str, str]
"""The blob ids of a memory's ``.md``, code and onUse files, "-" where absent."""


class Step(NamedTuple):
    """A commit as a walk of the history sees it."""

    parents: list[str]
    facts: Facts | None
    blobs: tuple[Blobs, ...]
    """One entry per edit in ``facts``."""


REMOVED = "~"
"""Marks the ``.md`` blob id of a revision that removed its slug."""


def _blob_ids(found: MemoryFiles | None) -> Blobs:
    if found is None:
        return ("-", "-", "-")
    return (
        found.md.decode(),
        found.code.decode() if found.code else "-",
        found.on_use.decode() if found.on_use else "-",
    )


def memory_files(slug: str, entries: dict[str, bytes]) -> MemoryFiles | None:
    md = entries.get(slug + files.MD)
    if md is None:
        return None
    return MemoryFiles(md, entries.get(slug + files.CODE), entries.get(slug + files.ON_USE))


class ObjectReader:
    """Cached, thread-safe reads of commits, trees and memories."""

    def __init__(self, repo: Repo) -> None:
        self.repo = repo
        # dulwich reads packs through shared file objects: one reader at a time
        self.lock = threading.RLock()
        self._trees: dict[str, TreeEntries] = {}
        self._names: dict[str, dict[str, tuple[int, bytes]]] = {}
        self._sizes: dict[bytes, int] = {}
        self._texts: dict[bytes, str | None] = {}
        self._buckets: dict[tuple[str, str], dict[str, bytes]] = {}
        self._memories: dict[tuple[MemoryFiles, str], Memory] = {}
        self._commits: dict[str, Commit] = {}
        self._facts: dict[str, Facts | None] = {}

    def object(self, sha: str | bytes) -> ShaFile:
        key = ObjectID(sha if isinstance(sha, bytes) else sha.encode())
        store = self.repo.object_store
        with self.lock:
            try:
                try:
                    return store[key]
                except KeyError:
                    # a concurrent pack may have moved it: look at the packs afresh
                    _ = store.packs
                    return store[key]
            except KeyError:
                raise StorageError(
                    f"object {key.decode()} is missing; run `gitmem check`"
                ) from None
            except Exception as exc:  # zlib, format and I/O errors: a damaged object
                raise StorageError(
                    f"object {key.decode()} does not read ({exc}); run `gitmem check`"
                ) from exc

    def remember(self, objects: list[ShaFile]) -> None:
        """Keep objects this process just wrote, so reading them back costs nothing."""
        for obj in objects:
            sha = obj.id
            if isinstance(obj, Commit):
                _bounded(self._commits)[sha.decode()] = obj
            elif isinstance(obj, Tree):
                entries = [(e.path.decode(), e.mode, bytes(e.sha)) for e in obj.iteritems()]
                _bounded(self._trees)[sha.decode()] = entries
                _bounded(self._sizes)[bytes(sha)] = obj.raw_length()
            elif isinstance(obj, Blob):
                _bounded(self._sizes)[bytes(sha)] = obj.raw_length()

    def commit(self, sha: str) -> Commit:
        found = self._commits.get(sha)
        if found is None:
            found = cast(Commit, self.object(sha))
            _bounded(self._commits)[sha] = found
        return found

    def memory_at(self, commit: str, slug: str) -> Memory | None:
        """The memory ``slug`` as of ``commit``, read through the caches."""
        root = self.commit(commit).tree.decode()
        found = memory_files(slug, self.bucket(root, files.bucket(slug)))
        return self.memory(slug, found) if found else None

    def facts(self, sha: str) -> Facts | None:
        """What a commit's message says about it (``None`` for a commit gitmem did not make)."""
        if sha in self._facts:
            return self._facts[sha]
        found = parse_message(self.commit(sha).message)
        _bounded(self._facts)[sha] = found
        return found

    def parents(self, sha: str) -> list[str]:
        """A commit's parents, the first parent first."""
        return [p.decode() for p in self.commit(sha).parents]

    def step(self, sha: str) -> Step:
        """One step of a walk: a commit's parents, its facts, and for each slug it
        changed the blob ids of that memory's files, ``(md, code, on_use)`` with "-"
        where absent. A slug the commit removed gets its files in the first parent:
        the text it removed."""
        commit = self.commit(sha)
        parents = [p.decode() for p in commit.parents]
        facts = self.facts(sha)
        if facts is None:
            return Step(parents, None, ())
        root = commit.tree.decode()
        before = self.commit(parents[0]).tree.decode() if parents else None
        blobs: list[Blobs] = []
        if facts.paths:
            for edit in facts.edits:
                found = self.entry_at(root, edit.slug)
                if found is not None and found[0] != DIR_MODE:
                    blobs.append((found[1].decode(), "-", "-"))
                    continue
                old = self.entry_at(before, edit.slug) if before is not None else None
                # a removal: the text it removed, marked as for a memory
                blobs.append((REMOVED + (old[1].decode() if old else "-"), "-", "-"))
            return Step(parents, facts, tuple(blobs))
        for edit in facts.edits:
            bucket = files.bucket(edit.slug)
            found = memory_files(edit.slug, self.bucket(root, bucket))
            if found is None and before is not None:
                # a removal: the text it removed, marked so the index knows it for one
                md, code, on_use = _blob_ids(memory_files(edit.slug, self.bucket(before, bucket)))
                blobs.append((REMOVED + md, code, on_use))
                continue
            blobs.append(_blob_ids(found))
        return Step(parents, facts, tuple(blobs))

    def tree(self, sha: str) -> TreeEntries:
        found = self._trees.get(sha)
        if found is None:
            # the entries straight from the raw tree, in its stored order (git's), without
            # building a Tree object and sorting its entries again
            content = self.raw(sha, Tree.type_num)
            try:
                found = [
                    (name.decode(), mode, entry) for name, mode, entry in parse_tree(content, 20)
                ]
            except (ObjectFormatException, ValueError) as exc:
                raise StorageError(
                    f"tree {sha} does not parse ({exc}); run `gitmem check`"
                ) from exc
            _bounded(self._trees)[sha] = found
        return found

    def raw(self, sha: str, kind: int) -> bytes:
        """The content of the object ``sha``, which must be of type ``kind``."""
        key = ObjectID(sha.encode())
        store = self.repo.object_store
        with self.lock:
            try:
                try:
                    found, content = store.get_raw(key)
                except KeyError:
                    # a concurrent pack may have moved it: look at the packs afresh
                    _ = store.packs
                    found, content = store.get_raw(key)
            except KeyError:
                raise StorageError(f"object {sha} is missing; run `gitmem check`") from None
            except Exception as exc:  # zlib, format and I/O errors: a damaged object
                raise StorageError(
                    f"object {sha} does not read ({exc}); run `gitmem check`"
                ) from exc
        if found != kind:
            raise StorageError(f"object {sha} is not of the type expected; run `gitmem check`")
        return content

    def names(self, sha: str) -> dict[str, tuple[int, bytes]]:
        """A tree's entries by name: ``name → (mode, sha)``."""
        found = self._names.get(sha)
        if found is None:
            found = {name: (mode, entry) for name, mode, entry in self.tree(sha)}
            _bounded(self._names)[sha] = found
        return found

    def entry_at(self, root: str, path: str) -> tuple[int, bytes] | None:
        """The ``(mode, sha)`` at ``path`` (``/``-separated) under tree ``root``, or ``None``."""
        found: tuple[int, bytes] | None = (DIR_MODE, root.encode())
        for name in path.split("/"):
            if found is None or found[0] != DIR_MODE:
                return None
            found = self.names(found[1].decode()).get(name)
        return found

    def size(self, sha: bytes) -> int:
        """The size of an object's content in bytes (a blob's text, a tree's entry table)."""
        found = self._sizes.get(sha)
        if found is None:
            found = len(self.object(sha).as_raw_string())
            _bounded(self._sizes)[sha] = found
        return found

    def bucket(self, root: str, name: str) -> dict[str, bytes]:
        """The entries (file name → blob id) of one fan-out directory of a root tree."""
        key = (root, name)
        found = self._buckets.get(key)
        if found is None:
            found = {}
            for entry, mode, sha in self.tree(root):
                if entry == name and mode == DIR_MODE:
                    found = {n: s for n, _, s in self.tree(sha.decode())}
                    break
            _bounded(self._buckets)[key] = found
        return found

    def memory(self, slug: str, found: MemoryFiles) -> Memory:
        key = (found, slug)
        memory = self._memories.get(key)
        if memory is None:
            description, body = files.decode_md(slug, self.blob(found.md))
            memory = Memory(
                slug=slug,
                description=description,
                body=body,
                code=self.blob(found.code).decode() if found.code else "",
                on_use=self.blob(found.on_use).decode() if found.on_use else "",
            )
            _bounded(self._memories)[key] = memory
        return memory

    def text(self, sha: bytes) -> str | None:
        """A blob's content as UTF-8 text (``None`` if it is not), cached by id."""
        if sha in self._texts:
            return self._texts[sha]
        try:
            found: str | None = self.blob(sha).decode("utf-8")
        except UnicodeDecodeError:
            found = None
        _bounded(self._texts)[sha] = found
        return found

    def blob(self, sha: bytes) -> bytes:
        return cast(Blob, self.object(sha)).as_raw_string()

    def heading(self, sha: str) -> tuple[list[str], Facts | None]:
        """A commit's parents and facts, read from its raw text without making a commit
        object: a walk of the whole history (the history index's build) reads every
        commit once. Anything unusual takes the ordinary path, with its errors."""
        cached = self._commits.get(sha)
        if cached is None:
            try:
                with self.lock:
                    kind, raw = self.repo.object_store.get_raw(ObjectID(sha.encode()))
            except Exception:  # missing, moved by a concurrent pack, damaged
                kind, raw = -1, b""
            if kind == Commit.type_num:
                header, _, message = raw.partition(b"\n\n")
                lines = header.split(b"\n")
                parents = [line[7:].decode() for line in lines if line.startswith(b"parent ")]
                if sha not in self._facts:
                    _bounded(self._facts)[sha] = parse_message(message)
                return parents, self._facts[sha]
        return self.parents(sha), self.facts(sha)


def _bounded(cache: dict[K, V]) -> dict[K, V]:
    if len(cache) >= _CACHE_MAX:
        cache.clear()
    return cache
