"""A gitmem repository: a bare git repository whose branches are memory stores.

All dulwich contact lives in ``gitmem.store``; no dulwich type or exception leaves it.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Self

from dulwich.config import StackedConfig
from dulwich.errors import NotGitRepository
from dulwich.file import FileLocked
from dulwich.objects import Blob, Commit, ObjectID, ShaFile, Tree
from dulwich.refs import Ref
from dulwich.repo import Repo

from gitmem.errors import (
    AlreadyExists,
    InvalidArgument,
    NotARepository,
    NotFound,
    PathOccupied,
    StorageError,
)
from gitmem.store import files
from gitmem.store.check import check as check_repository
from gitmem.store.history import Entry, History
from gitmem.store.locking import (
    WriteLock,
    flocked,
    fsync_dir,
    remove_stale,
    storage_error,
)
from gitmem.store.message import KEYS, Edited, Facts, format_message
from gitmem.store.objects import DIR_MODE, FILE_MODE, MemoryFiles, ObjectReader, memory_files
from gitmem.types import (
    Author,
    Change,
    Edit,
    Memory,
    Revision,
    Totals,
    check_op,
    check_slug,
    check_text,
)

__all__ = ["Repository", "Snapshot", "check_store", "git_identity"]

STORE_MAX = 200
_STORE_RE = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*(/[A-Za-z0-9_-][A-Za-z0-9._-]*)*")
# as `git gc --auto`: pack once about 6,700 loose objects have piled up, judged by
# sampling the objects/17 fan-out directory (6700 / 256 ≈ 27)
_GC_SAMPLE_LIMIT = 27
_MAX_ATTEMPTS = 200
_TRAILER_KEY_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,63}")
# the ops that write a memory, so their edits must carry one (a delete must not)
_WRITES = frozenset({"create", "write", "update", "edit"})


def check_store(store: object) -> str:
    """Return ``store`` if it is a usable store id, else raise ``InvalidArgument``."""
    if (
        not isinstance(store, str)
        or len(store) > STORE_MAX
        or not _STORE_RE.fullmatch(store)
        or ".." in store
        or any(part.endswith(".lock") or part.endswith(".") for part in store.split("/"))
    ):
        raise InvalidArgument(
            f"store id {store!r} is not usable; use 1-{STORE_MAX} characters of letters, "
            "digits, '-', '_' and '.', in parts separated by '/' (e.g. profile/researcher)"
        )
    return store


class Snapshot:
    """A store as of one commit (``commit`` is ``None`` for a store not yet written)."""

    def __init__(
        self, reader: ObjectReader, history: History, store: str, commit: str | None
    ) -> None:
        self.store = store
        self.commit = commit
        self._reader = reader
        self._history = history
        facts = reader.facts(commit) if commit else None
        self.totals = facts.totals if facts else Totals()
        self.peaks = facts.peaks if facts else Totals()
        self.trailers: Mapping[str, str] = facts.extra if facts else {}
        self.root: str | None = reader.commit(commit).tree.decode() if commit else None
        self._all: dict[str, MemoryFiles] | None = None

    def __contains__(self, slug: object) -> bool:
        return isinstance(slug, str) and self._files(slug) is not None

    def __len__(self) -> int:
        return len(self._listing())

    def slugs(self) -> list[str]:
        """Every slug in the store, sorted."""
        return sorted(self._listing())

    def get(self, slug: str) -> Memory | None:
        """The memory ``slug``, or ``None``."""
        found = self._files(slug)
        return self._reader.memory(slug, found) if found else None

    def memories(self) -> list[Memory]:
        """Every memory, sorted by slug."""
        listing = self._listing()
        return [self._reader.memory(slug, listing[slug]) for slug in sorted(listing)]

    def revision(self, slug: str) -> int:
        """The highest revision number ``slug`` reached in this commit's history (0 if
        never written): its last revision on a linear history; after a merge, the larger
        side's, where the numbering continues. Exact for any commit of the store; cheap
        for its head and the head's first-parent ancestors."""
        return self._history.last_revision(self.commit, slug)

    def _files(self, slug: str) -> MemoryFiles | None:
        if self._all is not None:
            return self._all.get(slug)
        if self.root is None:
            return None
        return memory_files(slug, self._reader.bucket(self.root, files.bucket(slug)))

    def _listing(self) -> dict[str, MemoryFiles]:
        if self._all is None:
            listing: dict[str, MemoryFiles] = {}
            if self.root is not None:
                for name, mode, _ in self._reader.tree(self.root):
                    if mode != DIR_MODE:
                        continue
                    entries = self._reader.bucket(self.root, name)
                    for entry in entries:
                        split = files.split_name(entry)
                        found = memory_files(split[0], entries) if split else None
                        if split and split[1] == files.MD and found:
                            listing[split[0]] = found
            self._all = listing
        return self._all


class Repository:
    """A gitmem repository on disk."""

    def __init__(self, path: str, repo: Repo) -> None:
        self.directory = path
        self._repo = repo
        self._meta = os.path.join(path, "gitmem")
        self._lock = WriteLock(os.path.join(self._meta, "write.lock"))
        self._reader = ObjectReader(repo)
        self._read_lock = self._reader.lock
        self._histories: dict[str, History] = {}

    # -- opening -------------------------------------------------------------------

    @classmethod
    def init(cls, path: str) -> Self:
        """Create a gitmem repository at ``path`` (an existing one is opened as is)."""
        path = os.path.abspath(path)
        if os.path.isdir(os.path.join(path, "gitmem")) and os.path.isfile(
            os.path.join(path, "HEAD")
        ):
            return cls.open(path)
        if os.path.exists(path) and (not os.path.isdir(path) or os.listdir(path)):
            raise PathOccupied(
                f"{path} already holds something that is not a gitmem repository; "
                "choose an empty or new folder"
            )
        try:
            os.makedirs(path, exist_ok=True)
            repo = Repo.init_bare(path)
            config = repo.get_config()
            config.set((b"gc",), b"auto", b"0")  # gitmem packs by itself, under its own lock
            config.set((b"gitmem",), b"version", b"1")
            config.write_to_path()
            repo.close()
            os.makedirs(os.path.join(path, "gitmem", "history"), exist_ok=True)
            os.makedirs(os.path.join(path, "refs", "gitmem"), exist_ok=True)
            for d in ("gitmem", "refs", ""):
                fsync_dir(os.path.join(path, d))
            fsync_dir(os.path.dirname(path))
        except OSError as exc:
            raise storage_error(exc, f"creating a repository at {path}") from exc
        return cls.open(path)

    @classmethod
    def open(cls, path: str) -> Self:
        """Open the gitmem repository at ``path``."""
        path = os.path.abspath(path)
        try:
            repo = Repo(path)
        except (NotGitRepository, OSError):
            raise NotARepository(
                f"no gitmem repository at {path}; create one with `gitmem init`"
            ) from None
        if not repo.bare or not os.path.isdir(os.path.join(path, "gitmem")):
            repo.close()
            raise NotARepository(
                f"{path} is a git repository but not a gitmem one; "
                "create one with `gitmem init` in an empty folder"
            )
        os.makedirs(os.path.join(path, "gitmem", "history"), exist_ok=True)
        # objects reach the disk before a ref names them (set here rather than as
        # core.fsyncObjectFiles, which git itself warns about on every command)
        repo.object_store.fsync_object_files = True
        return cls(path, repo)

    def close(self) -> None:
        self._repo.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- reading -------------------------------------------------------------------

    def stores(self) -> list[str]:
        """Every store id, sorted."""
        with self._read_lock:
            keys = self._repo.refs.keys(base=Ref(b"refs/heads/"))
        return sorted(k.decode() for k in keys)

    def head(self, store: str) -> str | None:
        """The commit a store's branch points at, or ``None`` if it has none yet."""
        ref = _ref(check_store(store))
        with self._read_lock:
            try:
                return self._repo.refs[ref].decode()
            except KeyError:
                return None

    def snapshot(self, store: str, commit: str | None = None) -> Snapshot:
        """The store as of ``commit`` (default: its head)."""
        at = commit if commit is not None else self.head(store)
        return Snapshot(self._reader, self._history(store), store, at)

    def path(self, store: str, slug: str) -> str:
        """Where ``slug``'s ``.md`` file lives in the store's tree."""
        check_store(store)
        return files.memory_path(check_slug(slug))

    def revisions(self, store: str, slug: str | None = None) -> list[Revision]:
        """Every revision of the store (or of one slug), deleted ones too, from every
        commit reachable from the head through all parents, parents before children
        (see ``gitmem.store.history`` for the order); oldest first on a linear history."""
        if slug is not None:
            check_slug(slug)
        head = self.head(store)
        return [self._revision(store, e) for e in self._history(store).entries(head, slug)]

    def revisions_since(self, store: str, base: str | None, head: str | None) -> list[Revision]:
        """The revisions reachable from ``head`` and not from ``base``, in the order of
        ``revisions``; none if ``base`` is not an ancestor of ``head``."""
        entries = self._history(store).since(base, head)
        return [self._revision(store, e) for e in entries or []]

    # -- writing -------------------------------------------------------------------

    def mutate(self, store: str, author: Author, fn: Callable[[Snapshot], Change]) -> Revision:
        """Publish the change ``fn`` makes to the store's head, as one commit; returns
        the revision of the change's subject (``publish`` returns every slug's)."""
        return self.publish(store, author, fn)[0]

    def publish(
        self, store: str, author: Author, fn: Callable[[Snapshot], Change]
    ) -> list[Revision]:
        """Publish the change ``fn`` makes to the store's head, as one commit; returns
        one revision per slug it changed, the subject first.

        ``fn`` is a function of the head: it validates and may raise, and it is re-run
        against the new head whenever another writer publishes first, so a change that
        is no longer valid is refused rather than forced. A refusal writes nothing.
        """
        check_store(store)
        for _ in range(_MAX_ATTEMPTS):
            head = self.head(store)
            snapshot = self.snapshot(store, head)
            change = fn(snapshot)
            edits = _check_change(change)
            olds = [snapshot.get(edit.slug) for edit in edits]
            for edit, old in zip(edits, olds, strict=True):
                if edit.memory is None and old is None:
                    raise NotFound(f"there is no memory named {edit.slug!r} to {edit.op}")
                if edit.op == "create" and old is not None:
                    raise AlreadyExists(f"a memory named {edit.slug!r} already exists")
            revisions, commit, objects = self._build(snapshot, change, edits, olds, author)
            try:
                with self._lock.held():
                    if self.head(store) != head:
                        continue
                    self._write_objects([*objects, commit])
                    published = self._publish(_ref(store), head, commit.id.decode())
            except OSError as exc:
                raise storage_error(exc, f"writing {change.op} {change.slug}") from exc
            if published:
                self._maybe_pack()
                return revisions
        raise StorageError(
            f"the store {store!r} changed {_MAX_ATTEMPTS} times while publishing; try again"
        )

    def fork(self, source: str, target: str) -> str:
        """Start store ``target`` at ``source``'s head; returns that commit."""
        head = self.head(source)
        if head is None:
            raise NotFound(f"store {source!r} does not exist; `gitmem stores` lists them")
        check_store(target)
        try:
            with self._lock.held():
                if not self._publish(_ref(target), None, head):
                    raise AlreadyExists(f"store {target!r} already exists; choose another id")
        except OSError as exc:
            raise storage_error(exc, f"forking {source} to {target}") from exc
        return head

    def marker(self, name: str) -> str | None:
        """The commit a named marker (such as a holder's notice watermark) points at:
        ``None`` if it was never set, ``""`` if it was set before a store's first commit."""
        found = self._marker(name)
        return "" if found == _ORIGIN.id.decode() else found

    def _marker(self, name: str) -> str | None:
        with self._read_lock:
            try:
                return self._repo.refs[_marker_ref(name)].decode()
            except KeyError:
                return None

    def markers(self, prefix: str) -> list[str]:
        """The names of every marker under ``prefix`` (such as ``notices``), sorted."""
        check_store(prefix)
        with self._read_lock:
            keys = self._repo.refs.keys(base=Ref(b"refs/gitmem/" + prefix.encode() + b"/"))
        return sorted(f"{prefix}/{k.decode()}" for k in keys)

    def set_marker(self, name: str, commit: str | None) -> None:
        """Point a named marker at ``commit`` (``None``: before the first commit), durably."""
        ref = _marker_ref(name)
        try:
            with self._lock.held():
                old = self._marker(name)
                if commit is None:
                    # a ref must name an object: an empty root commit stands for "before"
                    self._write_objects([_EMPTY_TREE, _ORIGIN])
                    commit = _ORIGIN.id.decode()
                if old != commit:
                    self._publish(ref, old, commit)
        except OSError as exc:
            raise storage_error(exc, f"recording marker {name}") from exc

    # -- building a commit -----------------------------------------------------------

    def _build(
        self,
        snapshot: Snapshot,
        change: Change,
        edits: tuple[Edit, ...],
        olds: list[Memory | None],
        author: Author,
    ) -> tuple[list[Revision], Commit, list[ShaFile]]:
        objects: list[ShaFile] = []
        buckets: dict[str, dict[str, bytes]] = {}
        for edit in edits:
            name = files.bucket(edit.slug)
            entries = buckets.get(name)
            if entries is None:
                entries = dict(self._reader.bucket(snapshot.root, name)) if snapshot.root else {}
                buckets[name] = entries
            for suffix in (files.MD, files.CODE, files.ON_USE):
                entries.pop(edit.slug + suffix, None)
            if edit.memory is not None:
                for filename, data in files.encode(edit.memory).items():
                    blob = Blob.from_string(data)
                    objects.append(blob)
                    entries[filename] = blob.id
        root = Tree()
        if snapshot.root:
            for name, mode, sha in self._reader.tree(snapshot.root):
                if name not in buckets:
                    root.add(name.encode(), mode, ObjectID(sha))
        for name, entries in buckets.items():
            if entries:
                sub = Tree()
                for filename, sha in entries.items():
                    sub.add(filename.encode(), FILE_MODE, ObjectID(sha))
                objects.append(sub)
                root.add(name.encode(), DIR_MODE, sub.id)
        objects.append(root)

        count, chars, lines = snapshot.totals.count, snapshot.totals.chars, snapshot.totals.lines
        for edit, old in zip(edits, olds, strict=True):
            new = edit.memory
            count += (new is not None) - (old is not None)
            chars += (new.chars if new else 0) - (old.chars if old else 0)
            lines += (new.lines if new else 0) - (old.lines if old else 0)
        totals = Totals(count, chars, lines)
        facts = Facts(
            edits=tuple(Edited(e.slug, e.op, snapshot.revision(e.slug) + 1) for e in edits),
            totals=totals,
            peaks=snapshot.peaks.peak(totals),
            extra=change.trailers,
        )
        commit = Commit()
        commit.tree = root.id
        commit.parents = [ObjectID(snapshot.commit.encode())] if snapshot.commit else []
        commit.author = commit.committer = author.ident()
        commit.author_time = commit.commit_time = int(time.time())
        commit.author_timezone = commit.commit_timezone = 0
        commit.message = format_message(facts)
        sha = commit.id.decode()
        revisions: list[Revision] = []
        for edit, old, edited in zip(edits, olds, facts.edits, strict=True):
            shown = edit.memory or old
            assert shown is not None
            revisions.append(
                _revision(
                    snapshot.store,
                    sha,
                    edited,
                    facts,
                    shown,
                    author.name,
                    commit.author_time,
                    edit.memory is None,
                )
            )
        return revisions, commit, objects

    # -- durable publication ---------------------------------------------------------

    def _write_objects(self, objects: list[ShaFile]) -> None:
        store = self._repo.object_store
        objects_dir = os.path.join(self.directory, "objects")
        dirs: set[str] = set()
        new_dir = False
        with self._read_lock:
            for obj in objects:
                fanout = os.path.join(objects_dir, obj.id.decode()[:2])
                new_dir = new_dir or not os.path.isdir(fanout)
                for _ in range(2):
                    try:
                        store.add_object(obj)
                        break
                    except FileLocked as exc:
                        remove_stale(os.fsdecode(exc.lockfilename))
                else:
                    raise StorageError(
                        f"object {obj.id.decode()} stays locked by another program; "
                        "stop it and try again"
                    )
                dirs.add(fanout)
        for d in dirs:
            fsync_dir(d)
        if new_dir:
            fsync_dir(objects_dir)

    def _publish(self, ref: Ref, old: str | None, new: str) -> bool:
        """Compare-and-swap ``ref`` from ``old`` to ``new`` (must hold the write lock)."""
        refs = self._repo.refs
        for _ in range(2):
            try:
                with self._read_lock:
                    if old is None:
                        ok = refs.add_if_new(ref, ObjectID(new.encode()))
                    else:
                        ok = refs.set_if_equals(ref, ObjectID(old.encode()), ObjectID(new.encode()))
                break
            except FileLocked as exc:
                remove_stale(os.fsdecode(exc.lockfilename))
        else:
            return False
        if ok:
            parts = ref.decode().split("/")
            # a new ref may have created its folders: make each of them durable too
            lowest = 1 if old is None else len(parts) - 1
            try:
                for depth in range(len(parts) - 1, lowest - 1, -1):
                    fsync_dir(os.path.join(self.directory, *parts[:depth]))
            except OSError:
                # the ref has moved and readers see the write: it is published, and
                # refusing it now would invite a retry that publishes it twice
                pass
        return ok

    def _maybe_pack(self) -> None:
        """Pack loose objects once enough have piled up, as ``git gc --auto`` would."""
        sample = os.path.join(self.directory, "objects", "17")
        try:
            if len(os.listdir(sample)) <= _GC_SAMPLE_LIMIT:
                return
        except FileNotFoundError:
            return
        self.pack()

    def pack(self) -> int:
        """Pack every loose object; returns how many. Skips if another process is at it."""
        with flocked(os.path.join(self._meta, "pack.lock"), blocking=False) as mine:
            if not mine:
                return 0
            try:
                with self._read_lock:
                    count = self._repo.object_store.pack_loose_objects()
                fsync_dir(os.path.join(self.directory, "objects", "pack"))
            except OSError as exc:
                raise storage_error(exc, "packing loose objects") from exc
            return count

    def _history(self, store: str) -> History:
        history = self._histories.get(store)
        if history is None:
            path = History.file_for(os.path.join(self._meta, "history"), store)
            history = self._histories.setdefault(store, History(path, self._reader))
        return history

    def _revision(self, store: str, entry: Entry) -> Revision:
        commit = self._reader.commit(entry.commit)
        facts = self._reader.facts(entry.commit)
        assert facts is not None
        md, code, on_use = (None if b == "-" else b.encode() for b in entry.blobs)
        if md is None:
            raise StorageError(
                f"commit {entry.commit[:12]} says it changed {entry.slug!r}, but the "
                "memory is not in its tree; run `gitmem check`"
            )
        memory = self._reader.memory(entry.slug, MemoryFiles(md, code, on_use))
        author = commit.author.decode("utf-8", "replace").rsplit(" <", 1)[0]
        edited = Edited(entry.slug, entry.op, entry.revision)
        return _revision(
            store, entry.commit, edited, facts, memory, author, commit.author_time, entry.removed
        )

    def check(self, progress: Callable[[int], None] | None = None) -> list[str]:
        """Every problem in the repository's objects and memory files; empty if healthy."""
        return check_repository(self.directory, progress)

    def iter_commits(self, store: str) -> Iterator[str]:
        """Every commit reachable from a store's head through all parents, each once,
        newest first: the reverse of the history index's order, so a commit comes before
        its parents, and a merge is followed by what its later parents brought in, then
        by its first parent's line. On a linear history: the first-parent chain."""
        yield from reversed(self._history(store).commits(self.head(store)))


def _revision(
    store: str,
    commit: str,
    edited: Edited,
    facts: Facts,
    memory: Memory,
    author: str,
    time: int,
    removed: bool,
) -> Revision:
    return Revision(
        store=store,
        slug=edited.slug,
        revision=edited.revision,
        op=edited.op,
        description=memory.description,
        body=memory.body,
        code=memory.code,
        on_use=memory.on_use,
        author=author,
        commit=commit,
        time=time,
        totals=facts.totals,
        peaks=facts.peaks,
        removed=removed,
    )


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


def git_identity() -> tuple[str | None, str | None]:
    """The user's ``user.name`` and ``user.email`` from their git configuration."""
    try:
        config = StackedConfig.default()
    except (OSError, ValueError):
        return None, None
    found: list[str | None] = []
    for key in (b"name", b"email"):
        try:
            found.append(config.get((b"user",), key).decode("utf-8", "replace").strip() or None)
        except KeyError:
            found.append(None)
    return found[0], found[1]


def _ref(store: str) -> Ref:
    return Ref(b"refs/heads/" + store.encode())


def _marker_ref(name: str) -> Ref:
    check_store(name)
    return Ref(b"refs/gitmem/" + name.encode())


def _check_change(change: Change) -> tuple[Edit, ...]:
    """The change's edits, if every one obeys the input rules; else raise."""
    edits = change.edits
    seen: set[str] = set()
    for edit in edits:
        slug = check_slug(edit.slug)
        op = check_op(edit.op)
        if slug in seen:
            raise InvalidArgument(f"a change names {slug!r} twice; name each memory once")
        seen.add(slug)
        memory = edit.memory
        if op == "delete" and memory is not None:
            raise InvalidArgument(f"a delete of {slug!r} carries no memory")
        if op in _WRITES and memory is None:
            raise InvalidArgument(f"a {op} of {slug!r} carries the memory it writes")
        if memory is not None:
            if memory.slug != slug:
                raise InvalidArgument(f"change for {slug!r} carries memory {memory.slug!r}")
            check_text(memory.description, "description")
            check_text(memory.body, "body")
            check_text(memory.code, "code")
            check_text(memory.on_use, "onUse script")
    for key in change.trailers:
        if not _TRAILER_KEY_RE.fullmatch(key) or key in KEYS:
            raise InvalidArgument(
                f"trailer key {key[:70]!r} is not usable; use letters, digits and '-', "
                "and none of gitmem's own Gitmem-Slug, Gitmem-Op, ... keys"
            )
    return edits
