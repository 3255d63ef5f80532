"""A gitmem repository: a bare git repository whose branches are memory stores.

All dulwich contact lives in ``gitmem.store``; no dulwich type or exception leaves it.
"""

from __future__ import annotations

import atexit
import bisect
import contextlib
import os
import re
import time
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import suppress
from itertools import compress
from typing import TYPE_CHECKING, Generic, NamedTuple, Self, TypeVar

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
from gitmem.store import files, layout, packing
from gitmem.store.check import check as check_repository
from gitmem.store.filestore import FileSnapshot, build_tree
from gitmem.store.history import Entry, History, Row
from gitmem.store.locking import (
    WriteLock,
    flocked,
    fsync_dir,
    fsync_together,
    remove_stale,
    storage_error,
)
from gitmem.store.message import KEYS, Edited, Facts, as_read, format_message
from gitmem.store.objects import (
    DIR_MODE,
    EMPTY_TREE,
    FILE_MODE,
    REMOVED,
    Blobs,
    MemoryFiles,
    NewObjects,
    ObjectReader,
    RawTree,
    Record,
    blob_ids,
    memory_files,
)
from gitmem.store.summaries import Listing, Summaries, Summary
from gitmem.store.view import StoreView
from gitmem.types import (
    Author,
    Change,
    Edit,
    FileChange,
    FileEdit,
    FileRevision,
    Memory,
    Revision,
    Totals,
    check_op,
    check_path,
    check_slug,
    check_text,
    count_lines,
)

if TYPE_CHECKING:
    # imported where used: the remote brings dulwich's network client, and the secret
    # detectors scan writes; a read needs neither
    from gitmem.secrets import Allowlist
    from gitmem.store.remote import Pushed, Remote

__all__ = [
    "ALLOWLIST",
    "GUARD",
    "FileSnapshot",
    "Repository",
    "Snapshot",
    "check_store",
    "git_identity",
]

ALLOWLIST = "@allowlist"
"""The root-tree file of a memory store that lists the secrets it admits (see
:mod:`gitmem.secrets`); ``@`` keeps it clear of every slug and fan-out directory."""
GUARD = "@guard.ts"
"""The root-tree file of a memory store holding its guard, a TypeScript module."""
META = {ALLOWLIST: "Gitmem-Allowlist", GUARD: "Gitmem-Guard"}

T = TypeVar("T")

STORE_MAX = 200
_STORE_RE = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*(/[A-Za-z0-9_-][A-Za-z0-9._-]*)*")
# as `git gc --auto`: pack once about 6,700 loose objects have piled up, judged by
# sampling the objects/17 fan-out directory (6700 / 256 ≈ 27)
_GC_SAMPLE_LIMIT = 27
_MAX_ATTEMPTS = 200
# how many memories a listing reads and files one by one before it reads every kept
# summary and sorts instead
_READ_DIRECTLY = 32
_TRAILER_KEY_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,63}")
_HEX_RE = re.compile(rb"[0-9a-f]{40}")
# the ops that write a memory, so their edits must carry one (a delete must not)
_WRITES = frozenset({"create", "write", "update", "edit"})
_SUFFIXES = (files.MD, files.CODE, files.ON_USE)
# every repository not yet closed, closed at exit if the program did not: dulwich's
# finalizers, run once the interpreter is shutting down, print a traceback apiece
_open: weakref.WeakSet[Repository] = weakref.WeakSet()


@atexit.register
def _close_open() -> None:
    for repo in list(_open):
        with suppress(Exception):
            repo.close()


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


class Snapshot(StoreView):
    """A store as of one commit (``commit`` is ``None`` for a store not yet written)."""

    def __init__(
        self, reader: ObjectReader, history: History, store: str, commit: str | None
    ) -> None:
        super().__init__(reader, history, store, commit)
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

    def _count(self) -> Totals:
        found = self.memories()
        return Totals(len(found), sum(m.chars for m in found), sum(m.lines for m in found))

    def summaries(self, kept: Summaries) -> list[tuple[str, Summary]]:
        """Every memory's slug and summary (description, characters, lines), sorted by
        slug; the ``.md`` blobs ``kept`` knows are not read, the others are added to it.
        A listing ``kept`` holds of this very tree is taken whole; of an earlier tree,
        its rows in fan-out folders this tree still has unchanged are taken, and only
        the other folders are read."""
        if self.root is None:
            return []
        whole = kept.listing(self.store, self.root)
        if whole is not None:
            return whole
        root = self.root
        buckets = {n: sha.decode() for n, mode, sha in self._reader.tree(root) if mode == DIR_MODE}
        read = set(buckets)
        out: Listing = []
        folders: list[str] = []
        blobs: list[str] = []
        prior: dict[str, Summary] = {}  # the last listing's rows in the folders read again
        last = kept.last_listing(self.store)
        if last is not None:
            read = {n for n in buckets if last.buckets.get(n) != buckets[n]}
            gone = read | (last.buckets.keys() - buckets.keys())
            keep = [folder not in gone for folder in last.folders]
            out = list(compress(last.rows, keep))
            folders = list(compress(last.folders, keep))
            blobs = list(compress(last.blobs, keep))
            prior = {
                f"{md} {row[0]}": row[1]
                for row, md, kept_row in zip(last.rows, last.blobs, keep, strict=True)
                if not kept_row
            }
        listing, placed = self._folders(root, read)
        if not placed and len(read) < len(buckets):
            # a slug filed outside its own fan-out folder (no gitmem write or checked
            # push makes one) may also be in a folder that did not change: read them all
            listing, placed = self._folders(root, set(buckets))
            out, folders, blobs = [], [], []
        keys = {slug: f"{files_.md.decode()} {slug}" for slug, (_, files_) in listing.items()}
        unknown = sum(1 for key in keys.values() if key not in prior)
        # a few memories are read sooner than every summary ever kept is
        known = kept.known() if unknown > _READ_DIRECTLY else {}
        found: dict[str, Summary] = {}
        new: list[tuple[tuple[str, Summary], str, str]] = []
        for slug, (folder, files_) in listing.items():
            key = keys[slug]
            summary = prior.get(key) or known.get(key) or found.get(key)
            if summary is None:
                memory = self._reader.memory(slug, files_)
                summary = found[key] = (memory.description, memory.chars, memory.lines)
            new.append(((slug, summary), folder, files_.md.decode()))
        if len(new) <= _READ_DIRECTLY:  # into the sorted rows, each where its slug goes
            for row, folder, md in new:
                at = bisect.bisect_left(out, (row[0],))
                out.insert(at, row)
                folders.insert(at, folder)
                blobs.insert(at, md)
        else:  # slugs are distinct: the order is the slugs'
            merged = sorted([*zip(out, folders, blobs, strict=True), *new])
            out = [row for row, _, _ in merged]
            folders = [folder for _, folder, _ in merged]
            blobs = [md for _, _, md in merged]
        kept.add(found)
        # a listing of a tree with a slug out of place is kept without its folders, so
        # that the next listing reads every folder again
        kept.keep_listing(self.store, root, buckets if placed else {}, out, folders, blobs)
        return out

    def revision(self, slug: str) -> int:
        """The highest revision number ``slug`` reached in this commit's history (0 if
        never written): its last revision on a linear history; after a merge, the larger
        side's, where the numbering continues. Exact for any commit of the store; cheap
        for its head and the head's first-parent ancestors."""
        return self._history.last_revision(self.commit, slug)

    def changed_since(self, other: Snapshot | None) -> set[str]:
        """The slugs whose files differ between ``other`` (``None``: an empty store) and
        this snapshot: fan-out folders whose trees are equal are skipped, so the cost
        follows the change, not the store."""
        before = other.root if other is not None else None
        if before == self.root:
            return set()
        mine = {name: sha for name, _, sha in self._reader.tree(self.root)} if self.root else {}
        theirs = {name: sha for name, _, sha in self._reader.tree(before)} if before else {}
        found: set[str] = set()
        for name in mine.keys() | theirs.keys():
            if mine.get(name) == theirs.get(name):
                continue
            now = self._reader.bucket(self.root, name) if self.root else {}
            then = self._reader.bucket(before, name) if before else {}
            for entry in now.keys() | then.keys():
                if now.get(entry) != then.get(entry):
                    split = files.split_name(entry)
                    if split:
                        found.add(split[0])
        return found

    def meta(self, name: str) -> str | None:
        """The text of the store's root file ``name`` (:data:`ALLOWLIST`, :data:`GUARD`),
        or ``None`` if the store holds none."""
        if self.root is None:
            return None
        entry = self._reader.entry(self.root, name)
        if entry is None or entry[0] == DIR_MODE:
            return None
        return self._reader.text(entry[1])

    def allowlist(self) -> Allowlist:
        """The secrets this store admits (see ``read_allowlist``)."""
        from gitmem.secrets import read_allowlist  # writes only: a read scans nothing

        return read_allowlist(self.meta(ALLOWLIST))

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
                    if mode == DIR_MODE:
                        listing.update(self._folder(name))
            self._all = listing
        return self._all

    def _folder(self, name: str) -> dict[str, MemoryFiles]:
        """The memories in the root's fan-out folder ``name``."""
        entries = self._reader.bucket(self.root, name) if self.root is not None else {}
        found: dict[str, MemoryFiles] = {}
        for entry in entries:
            split = files.split_name(entry)
            memory = memory_files(split[0], entries) if split else None
            if split and split[1] == files.MD and memory:
                found[split[0]] = memory
        return found

    def _folders(
        self, root: str, names: set[str]
    ) -> tuple[dict[str, tuple[str, MemoryFiles]], bool]:
        """The memories in the fan-out folders ``names`` of ``root``, each with its
        folder (read in the root's order, as ``_listing`` reads them), and whether each
        is in its own folder."""
        listing: dict[str, tuple[str, MemoryFiles]] = {}
        placed = True
        for name, mode, _ in self._reader.tree(root):
            if mode == DIR_MODE and name in names:
                folder = self._folder(name)
                placed = placed and all(files.bucket(slug) == name for slug in folder)
                listing.update((slug, (name, blobs)) for slug, blobs in folder.items())
        return listing, placed


class Repository:
    """A gitmem repository on disk."""

    def __init__(self, path: str, repo: Repo, *, project: bool = False) -> None:
        self.directory = path
        """The git directory that holds the objects and refs (a project's ``.git``)."""
        self.project = project
        """Whether the stores live in a project's own repository (``refs/heads/gitmem/``)."""
        self._prefix = layout.PROJECT_PREFIX if project else layout.STANDALONE_PREFIX
        self._repo = repo
        self._meta = os.path.join(path, "gitmem")
        self._objects = os.path.join(path, "objects")
        self._lock = WriteLock(os.path.join(self._meta, "write.lock"))
        self._reader = ObjectReader(repo)
        self._read_lock = self._reader.lock
        self._histories: dict[str, History] = {}
        self._summaries = Summaries(os.path.join(self._meta, "summaries"))
        _open.add(self)

    # -- opening -------------------------------------------------------------------

    @classmethod
    def init(cls, path: str, *, bare: bool = False) -> Self:
        """Create a gitmem repository at ``path`` (an existing one is opened as is).

        A git work tree (or its ``.git`` directory) gets its stores in the project's own
        repository, unless ``bare``; an empty or new folder becomes a standalone bare
        repository.
        """
        path = os.path.abspath(path)
        if os.path.isdir(os.path.join(path, "gitmem")) and os.path.isfile(
            os.path.join(path, "HEAD")
        ):
            return cls.open(path)
        project = None if bare else layout.project_dir(path)
        if project is not None:
            try:
                layout.start_project(project)
            except OSError as exc:
                raise storage_error(exc, f"starting gitmem in the project at {path}") from exc
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
        """Open the gitmem repository at ``path``: a standalone bare repository, or a
        project's work tree, ``.git`` directory or bare repository holding stores."""
        path = os.path.abspath(path)
        try:
            repo = Repo(path)
        except (NotGitRepository, OSError):
            raise NotARepository(
                f"no gitmem repository at {path}; create one with `gitmem init`"
            ) from None
        common = os.path.abspath(repo.commondir())
        standalone = layout.is_standalone(repo)
        if standalone and (not repo.bare or not os.path.isdir(os.path.join(common, "gitmem"))):
            standalone = False
        if not standalone and not layout.holds_stores(repo, common):
            repo.close()
            if layout.project_dir(path) is not None:
                raise NotARepository(
                    f"the git project at {path} keeps no gitmem stores yet; "
                    "run `gitmem init` in it (or `gitmem sync` in a clone of a project that has some)"
                )
            raise NotARepository(
                f"{path} is a git repository but not a gitmem one; "
                "create one with `gitmem init` in an empty folder"
            )
        try:
            os.makedirs(os.path.join(common, "gitmem", "history"), exist_ok=True)
        except OSError as exc:
            repo.close()
            raise storage_error(exc, f"opening the repository at {path}") from exc
        # objects reach the disk before a ref names them (set here rather than as
        # core.fsyncObjectFiles, which git itself warns about on every command)
        repo.object_store.fsync_object_files = True
        return cls(common, repo, project=not standalone)

    def close(self) -> None:
        _open.discard(self)
        self._repo.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- reading -------------------------------------------------------------------

    def stores(self) -> list[str]:
        """Every store id, sorted."""
        with self._read_lock:
            keys = self._repo.refs.keys(base=Ref(self._prefix.encode()))
        return sorted(k.decode() for k in keys)

    def head(self, store: str) -> str | None:
        """The commit a store's branch points at, or ``None`` if it has none yet."""
        return self._read_ref(self._ref(check_store(store)))

    def _read_ref(self, ref: Ref) -> str | None:
        # the common case, a loose ref, read directly: a ref moves by an atomic rename,
        # so a read sees the old commit or the new one (symbolic and packed refs, or
        # anything odd, go through dulwich)
        try:
            fd = os.open(os.path.join(self.directory, os.fsdecode(ref)), os.O_RDONLY)
            try:
                data = os.read(fd, 42)
            finally:
                os.close(fd)
            if len(data) == 41 and data[40:] == b"\n" and _HEX_RE.fullmatch(data[:40]):
                return data[:40].decode()
        except OSError:
            pass
        with self._read_lock:
            try:
                return self._repo.refs[ref].decode()
            except KeyError:
                return None

    def snapshot(self, store: str, commit: str | None = None) -> Snapshot:
        """The store as of ``commit`` (default: its head)."""
        at = commit if commit is not None else self.head(store)
        return Snapshot(self._reader, self._history(store), store, at)

    def summaries(self, store: str, commit: str | None = None) -> list[tuple[str, Summary]]:
        """Every memory of the store as of ``commit`` (default: its head): slug and
        (description, characters, lines), sorted by slug, without reading the blobs
        an earlier listing read (see :mod:`gitmem.store.summaries`)."""
        return self.snapshot(store, commit).summaries(self._summaries)

    def path(self, store: str, slug: str) -> str:
        """Where ``slug``'s ``.md`` file lives in the store's tree."""
        check_store(store)
        return files.memory_path(check_slug(slug))

    def revisions(
        self, store: str, slug: str | None = None, commit: str | None = None
    ) -> list[Revision]:
        """Every revision of the store (or of one slug), deleted ones too, from every
        commit reachable from the head (or from ``commit``, one of the store's) through
        all parents, parents before children (see ``gitmem.store.history`` for the
        order); oldest first on a linear history."""
        if slug is not None:
            check_slug(slug)
        head = commit if commit is not None else self.head(store)
        if _is_file_store(self._reader, head):
            raise InvalidArgument(
                f"store {store!r} is a file store; its history is `file_revisions`"
            )
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

        def attempt(head: str | None) -> _Attempt[list[Revision]]:
            snapshot = self.snapshot(store, head)
            if _is_file_store(self._reader, head):
                raise InvalidArgument(
                    f"store {store!r} is a file store; write its files, not memories"
                )
            change = fn(snapshot)
            edits = _check_change(change)
            self._screen(snapshot, edits, author)
            olds = [snapshot.get(edit.slug) for edit in edits]
            for edit, old in zip(edits, olds, strict=True):
                if edit.memory is None and old is None:
                    raise NotFound(f"there is no memory named {edit.slug!r} to {edit.op}")
                if edit.op == "create" and old is not None:
                    raise AlreadyExists(f"a memory named {edit.slug!r} already exists")
            return self._build(snapshot, change, edits, olds, author)

        return self._commit(store, attempt)

    def _commit(self, store: str, attempt: Callable[[str | None], _Attempt[T]]) -> T:
        """Publish what ``attempt`` builds on the store's head by compare-and-swap,
        building it again on the new head whenever another writer publishes first."""
        ref = self._ref(store)
        for _ in range(_MAX_ATTEMPTS):
            head = self._read_ref(ref)
            built = attempt(head)
            new = built.new
            if new is None:
                return built.result
            try:
                with self._lock.held():
                    published = self._publish_new(ref, head, new)
            except OSError as exc:
                raise storage_error(exc, f"writing {built.what}") from exc
            if published:
                self._reader.remember(new, built.facts)
                if built.rows:
                    self._history(store).record(head, built.rows)
                self._maybe_pack()
                return built.result
        raise StorageError(
            f"the store {store!r} changed {_MAX_ATTEMPTS} times while publishing; try again"
        )

    def _screen(self, snapshot: Snapshot, edits: Sequence[Edit], author: Author) -> None:
        """The guards every memory write passes, on the head it applies to: no secret in
        any part of a memory it writes, unless the store's allowlist admits it. The
        public repository adds the store's guard code."""
        from gitmem.secrets import check_texts, memory_fields

        allow = snapshot.allowlist()
        for edit in edits:
            memory = edit.memory
            if memory is not None:
                check_texts(memory_fields(memory), allow)

    def set_meta(self, store: str, name: str, text: str | None, author: Author) -> str | None:
        """Write (``None``: remove) the store's root file ``name`` (:data:`ALLOWLIST` or
        :data:`GUARD`) as one commit that changes no memory; returns the commit, or
        ``None`` when the file already held exactly that."""
        check_store(store)
        if name not in META:
            raise InvalidArgument(f"{name!r} is not a store file; use {' or '.join(META)}")
        if text is not None:
            check_text(text, name)

        def attempt(head: str | None) -> _Attempt[str | None]:
            snapshot = self.snapshot(store, head)
            if _is_file_store(self._reader, head):
                raise InvalidArgument(f"store {store!r} is a file store; guards are for memories")
            if snapshot.meta(name) == text:
                return _Attempt(None, None, "")
            new = NewObjects()
            base = self._reader.raw_tree(snapshot.root) if snapshot.root else EMPTY_TREE
            entry = None if text is None else (FILE_MODE, new.add_blob(text.encode(), text))
            root = new.add_tree(base.replaced({name: entry}))
            verb = "remove" if text is None else "set"
            facts = Facts((), snapshot.totals, snapshot.peaks, {META[name]: verb})
            subject = f"{verb} {name}"
            message = subject.encode() + format_message(facts)[len(b"merge") :]
            sha = self._add_commit(new, root, snapshot.commit, author, int(time.time()), message)
            return _Attempt(sha, new, subject)

        return self._commit(store, attempt)

    # -- file stores -----------------------------------------------------------------

    def layout(self, store: str) -> str | None:
        """What a store holds: ``"files"`` for a file store, ``"memories"`` for a memory
        store, ``None`` for a store with no commit yet (its first write decides)."""
        head = self.head(store)
        if head is None:
            return None
        return "files" if _is_file_store(self._reader, head) else "memories"

    def files(self, store: str, commit: str | None = None) -> FileSnapshot:
        """A file store as of ``commit`` (default: its head); ``InvalidArgument`` for a
        memory store."""
        at = commit if commit is not None else self.head(store)
        if at is not None and not _is_file_store(self._reader, at):
            raise InvalidArgument(
                f"store {store!r} holds memories, not files; choose a file store "
                "or a store id that does not exist yet"
            )
        return FileSnapshot(self._reader, self._history(store), store, at)

    def publish_files(
        self, store: str, author: Author, fn: Callable[[FileSnapshot], FileChange]
    ) -> list[FileRevision]:
        """Publish the change ``fn`` makes to a file store's head as one commit; returns
        one revision per path it changed, the subject first (none, and no commit, for a
        change of no path).

        As with ``publish``, ``fn`` is a function of the head, re-run on the new head
        after a lost race; a refusal writes nothing.
        """
        check_store(store)

        def attempt(head: str | None) -> _Attempt[list[FileRevision]]:
            snapshot = self.files(store, head)
            change = fn(snapshot)
            edits = _check_file_change(change)
            if not edits:
                return _Attempt([], None, "")
            from gitmem.secrets import check_texts

            check_texts(((f"file {e.path}", e.text) for e in edits if e.text), None)
            olds: list[str | None] = []
            for edit in edits:
                old = snapshot.read(edit.path)
                if edit.text is None and old is None:
                    raise NotFound(f"there is no file {edit.path!r} to {edit.op}")
                if edit.op == "create" and (old is not None or snapshot.is_dir(edit.path)):
                    raise AlreadyExists(f"{edit.path!r} already exists")
                olds.append(old)
            return self._build_files(snapshot, change, edits, olds, author)

        return self._commit(store, attempt)

    def file_revisions(self, store: str, path: str | None = None) -> list[FileRevision]:
        """Every revision of a file store (or of one path), removals too, in the order of
        ``revisions``."""
        if path is not None:
            check_path(path)
        head = self.head(store)
        if head is not None and not _is_file_store(self._reader, head):
            raise InvalidArgument(f"store {store!r} holds memories, not files")
        return [self._file_revision(store, e) for e in self._history(store).entries(head, path)]

    def _file_revision(self, store: str, entry: Entry) -> FileRevision:
        commit = self._reader.commit(entry.commit)
        facts = self._reader.facts(entry.commit)
        assert facts is not None
        blob = entry.blobs[0]
        if blob == "-":
            raise StorageError(
                f"commit {entry.commit[:12]} says it changed {entry.slug!r}, but the "
                "file is not in its tree; run `gitmem check`"
            )
        text = self._reader.blob(blob.encode()).decode("utf-8", "replace")
        return FileRevision(
            store=store,
            path=entry.slug,
            revision=entry.revision,
            op=entry.op,
            text=text,
            author=commit.author.decode("utf-8", "replace").rsplit(" <", 1)[0],
            commit=entry.commit,
            time=commit.author_time,
            totals=facts.totals,
            peaks=facts.peaks,
            removed=entry.removed,
        )

    def _build_files(
        self,
        snapshot: FileSnapshot,
        change: FileChange,
        edits: tuple[FileEdit, ...],
        olds: list[str | None],
        author: Author,
    ) -> _Attempt[list[FileRevision]]:
        new = NewObjects()
        blobs: dict[str, bytes | None] = {}
        for edit in edits:
            text = edit.text
            blobs[edit.path] = None if text is None else new.add_blob(text.encode(), text)
        root = build_tree(self._reader, snapshot.root, blobs, new)
        count, chars, lines = snapshot.totals.count, snapshot.totals.chars, snapshot.totals.lines
        for edit, old in zip(edits, olds, strict=True):
            text = edit.text
            count += (text is not None) - (old is not None)
            chars += (len(text) if text is not None else 0) - (len(old) if old is not None else 0)
            lines += count_lines(text or "") - count_lines(old or "")
        totals = Totals(count, chars, lines)
        facts = Facts(
            edits=tuple(Edited(e.path, e.op, snapshot.revision(e.path) + 1) for e in edits),
            totals=totals,
            peaks=snapshot.peaks.peak(totals),
            extra=change.trailers,
            paths=True,
        )
        message = format_message(facts)
        when = int(time.time())
        sha = self._add_commit(new, root, snapshot.commit, author, when, message)
        revisions: list[FileRevision] = []
        rows: list[Row] = []
        for edit, old, edited in zip(edits, olds, facts.edits, strict=True):
            blob = blobs[edit.path]
            if blob is None:
                gone = self._reader.entry_at(snapshot.root, edit.path) if snapshot.root else None
                blob_id = REMOVED + (gone[1].decode() if gone else "-")
            else:
                blob_id = blob.decode()
            rows.append((sha, str(edited.revision), edited.op, edited.slug, blob_id, "-", "-"))
            revisions.append(
                FileRevision(
                    store=snapshot.store,
                    path=edit.path,
                    revision=edited.revision,
                    op=edit.op,
                    text=edit.text if edit.text is not None else old or "",
                    author=author.name,
                    commit=sha,
                    time=when,
                    totals=totals,
                    peaks=facts.peaks,
                    removed=edit.text is None,
                )
            )
        subject = f"{change.edits[0].op} {change.edits[0].path}"
        return _Attempt(revisions, new, subject, as_read(facts), rows)

    @staticmethod
    def _add_commit(
        new: NewObjects, root: bytes, parent: str | None, author: Author, when: int, message: bytes
    ) -> str:
        return new.add_commit(root, [parent] if parent else [], author.ident(), when, message)

    def fork(self, source: str, target: str) -> str:
        """Start store ``target`` at ``source``'s head; returns that commit."""
        head = self.head(source)
        if head is None:
            raise NotFound(f"store {source!r} does not exist; `gitmem stores` lists them")
        check_store(target)
        try:
            with self._lock.held():
                if not self._publish(self._ref(target), None, head):
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

    # -- replicas: fetch, merge, push (the rules of reconciling are gitmem.sync's) -------

    def remote(self, name: str) -> Remote:
        """The remote ``name`` (as the repository's config names it) or a URL or path."""
        from gitmem.store.remote import resolve

        top = os.path.dirname(self.directory) if self.project else self.directory
        with self._read_lock:
            return resolve(self._repo, name, top)

    def fetch(self, remote: Remote) -> dict[str, str]:
        """Fetch the remote's store branches; returns their heads (store id → commit). A
        named remote's heads are recorded as ``refs/remotes/<name>/...``, as ``git fetch``
        records them, so they stay reachable."""
        with self._read_lock:
            heads = remote.fetch(self._prefix)
        try:
            # the fetched pack is fsynced (by packing's writer from a local path, by
            # dulwich over a transport); its name in the folder must be too before a ref
            # (the tracking ref, a fast-forward) names what it holds
            fsync_dir(os.path.join(self.directory, "objects", "pack"))
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise storage_error(exc, f"fetching from {remote.url}") from exc
        if remote.name is not None:
            tracking = f"refs/remotes/{remote.name}/{self._prefix[len('refs/heads/') :]}"
            try:
                with self._lock.held():
                    for store, commit in heads.items():
                        if _usable_store(store):
                            self._set_ref(Ref((tracking + store).encode()), commit)
            except OSError as exc:
                raise storage_error(exc, f"recording what {remote.url} holds") from exc
        return {store: head for store, head in heads.items() if _usable_store(store)}

    def push(self, remote: Remote, store: str, old: str | None, new: str) -> Pushed:
        """Move the remote's branch of ``store`` from ``old`` to ``new`` (never forced)."""
        with self._read_lock:
            pushed = remote.push(self._ref(store).decode(), old, new)
        if pushed.ok and remote.name is not None:
            tracking = f"refs/remotes/{remote.name}/{self._prefix[len('refs/heads/') :]}"
            try:
                with self._lock.held():
                    self._set_ref(Ref((tracking + store).encode()), new)
            except OSError as exc:
                raise storage_error(exc, f"recording what {remote.url} holds") from exc
        return pushed

    def _set_ref(self, ref: Ref, commit: str) -> None:
        """Point a remote-tracking ref at ``commit`` (must hold the write lock), as ``git
        fetch`` does: through its ``.lock`` file renamed over it, without fsync. It only
        records where the remote was: a crash that loses it costs the next fetch, and
        what it names is in a durable pack already."""
        with self._read_lock:
            try:
                current: str | None = self._repo.refs[ref].decode()
            except KeyError:
                current = None
        if current == commit:
            return
        path = os.path.join(self.directory, os.fsdecode(ref))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        lock = path + ".lock"
        for _ in range(2):
            try:
                fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                break
            except FileExistsError:
                remove_stale(lock)  # no gitmem writer is mid-way: a dead one's leftover
        else:
            return  # another program is setting it: where the remote was, either way
        try:
            with os.fdopen(fd, "w") as f:
                f.write(commit + "\n")
            os.replace(lock, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(lock)
            raise

    def merge_base(self, store: str, ours: str, theirs: str) -> str | None:
        """A best common ancestor of the store's head ``ours`` and ``theirs`` (``theirs``
        itself when it is an ancestor of ``ours``; ``None`` if they share no history).

        Exact, whatever the commit times say: the walk goes back from ``theirs`` only
        until it meets ``ours``'s history, which the history index answers."""
        history = self._history(check_store(store))
        if history.contains(ours, theirs):
            return theirs
        met = self._beyond(history, ours, theirs)[1]
        best = [c for c in met if not any(o != c and history.contains(o, c) for o in met)]
        return sorted(best)[0] if best else None

    def _beyond(self, history: History, ours: str, theirs: str) -> tuple[list[str], set[str]]:
        """The commits reachable from ``theirs`` and not from ``ours`` (``ours`` indexed
        in ``history``), and the commits of ``ours``'s history where that walk stopped."""
        met: set[str] = set()
        seen: set[str] = set()
        beyond: list[str] = []
        stack = [theirs]
        while stack:
            commit = stack.pop()
            if commit in seen:
                continue
            seen.add(commit)
            if history.contains(ours, commit):
                met.add(commit)
                continue
            beyond.append(commit)
            stack.extend(self._reader.parents(commit))
        return beyond, met

    def revisions_between(self, store: str, ours: str, theirs: str) -> dict[str, int]:
        """The highest revision each slug reached in commits of ``theirs`` that are not
        in ``ours`` (a walk of only those commits, stopping at ``ours``'s history)."""
        found: dict[str, int] = {}
        for sha in self._beyond(self._history(check_store(store)), ours, theirs)[0]:
            facts = self._reader.facts(sha)
            for edited in facts.edits if facts else ():
                found[edited.slug] = max(found.get(edited.slug, 0), edited.revision)
        return found

    def advance(self, store: str, old: str | None, new: str) -> bool:
        """Move a store's branch from ``old`` to ``new`` (a commit that descends from it)
        by compare-and-swap; ``False`` if another writer moved it first."""
        try:
            with self._lock.held():
                return self._publish(self._ref(check_store(store)), old, new)
        except OSError as exc:
            raise storage_error(exc, f"updating {store}") from exc

    def merge(
        self,
        store: str,
        author: Author,
        ours: str,
        theirs: str,
        edits: Sequence[Edit],
        trailers: Mapping[str, str],
    ) -> str | None:
        """Publish one merge commit of ``ours`` (the branch's head, first parent) and
        ``theirs``: ``ours``'s tree with ``edits`` applied, a trailer trio per slug it
        changes (numbered after the larger side), the merged totals and peaks at least
        both sides'. Returns the commit, or ``None`` if the branch moved off ``ours``."""
        check_store(store)
        snapshot = self.snapshot(store, ours)
        other = self.snapshot(store, theirs)
        self._screen(snapshot, edits, author)
        olds = [snapshot.get(edit.slug) for edit in edits]
        beyond = self.revisions_between(store, ours, theirs) if edits else {}
        root, objects = self._merge_tree(snapshot, other, edits)
        totals = _totals(snapshot.totals, edits, olds)
        facts = Facts(
            edits=tuple(
                Edited(e.slug, e.op, max(snapshot.revision(e.slug), beyond.get(e.slug, 0)) + 1)
                for e in edits
            ),
            totals=totals,
            peaks=snapshot.peaks.peak(other.peaks).peak(totals),
            extra=trailers,
        )
        new = NewObjects()
        for obj in objects:
            if isinstance(obj, Blob):
                new.add_blob(obj.as_raw_string())
            else:
                new.add_tree(RawTree.parse(obj.as_raw_string()))
        sha = new.add_commit(
            root, [ours, theirs], author.ident(), int(time.time()), format_message(facts)
        )
        try:
            with self._lock.held():
                # published as a commit is: the ref re-read under its lock file, the pack
                # and that lock file made durable in one flush
                if not self._publish_new(self._ref(store), ours, new):
                    return None
        except OSError as exc:
            raise storage_error(exc, f"merging {store}") from exc
        self._reader.remember(new, facts)
        self._maybe_pack()
        return sha

    def _merge_tree(
        self, ours: Snapshot, theirs: Snapshot, edits: Sequence[Edit]
    ) -> tuple[ObjectID, list[ShaFile]]:
        """The root tree of ``ours`` with a merge's ``edits`` applied, and its new
        objects. A memory taken as ``theirs`` holds it keeps their blobs, and a fan-out
        folder that comes out as either side has it is that side's tree: neither is
        encoded, hashed or written again (most of a merge takes one side's memories)."""
        objects: list[ShaFile] = []
        buckets: dict[str, dict[str, bytes]] = {}
        suffixes = (files.MD, files.CODE, files.ON_USE)
        for edit in edits:
            name = files.bucket(edit.slug)
            entries = buckets.get(name)
            if entries is None:
                entries = dict(self._reader.bucket(ours.root, name)) if ours.root else {}
                buckets[name] = entries
            for suffix in suffixes:
                entries.pop(edit.slug + suffix, None)
            if edit.memory is None:
                continue
            if theirs.root and theirs.get(edit.slug) == edit.memory:
                held = self._reader.bucket(theirs.root, name)
                for filename in (edit.slug + suffix for suffix in suffixes):
                    if filename in held:
                        entries[filename] = held[filename]
                continue
            for filename, data in files.encode(edit.memory).items():
                blob = Blob.from_string(data)
                objects.append(blob)
                entries[filename] = blob.id
        root = Tree()
        if ours.root:
            for name, mode, sha in self._reader.tree(ours.root):
                if name not in buckets:
                    root.add(name.encode(), mode, ObjectID(sha))
        for name, entries in buckets.items():
            if not entries:
                continue
            for side in (ours, theirs):
                if side.root and entries == self._reader.bucket(side.root, name):
                    held = self._reader.names(side.root)[name][1]
                    root.add(name.encode(), DIR_MODE, ObjectID(held))
                    break
            else:
                sub = Tree()
                for filename, sha in entries.items():
                    sub.add(filename.encode(), FILE_MODE, ObjectID(sha))
                objects.append(sub)
                root.add(name.encode(), DIR_MODE, sub.id)
        if ours.root and root.id.decode() == ours.root:
            return root.id, objects
        objects.append(root)
        return root.id, objects

    # -- building a commit -----------------------------------------------------------

    def _build(
        self,
        snapshot: Snapshot,
        change: Change,
        edits: tuple[Edit, ...],
        olds: list[Memory | None],
        author: Author,
    ) -> _Attempt[list[Revision]]:
        new = NewObjects()
        root, blobs = self._new_tree(snapshot, edits, new)
        totals = _totals(snapshot.totals, edits, olds)
        facts = Facts(
            edits=tuple(Edited(e.slug, e.op, snapshot.revision(e.slug) + 1) for e in edits),
            totals=totals,
            peaks=snapshot.peaks.peak(totals),
            extra=change.trailers,
        )
        message = format_message(facts)
        when = int(time.time())
        sha = self._add_commit(new, root, snapshot.commit, author, when, message)
        revisions: list[Revision] = []
        rows: list[Row] = []
        for edit, old, edited, ids in zip(edits, olds, facts.edits, blobs, strict=True):
            shown = edit.memory or old
            assert shown is not None
            rows.append((sha, str(edited.revision), edited.op, edited.slug, *ids))
            revisions.append(
                _revision(
                    snapshot.store,
                    sha,
                    edited,
                    facts,
                    shown,
                    author.name,
                    when,
                    edit.memory is None,
                )
            )
        return _Attempt(revisions, new, f"{change.op} {change.slug}", as_read(facts), rows)

    def _new_tree(
        self, snapshot: Snapshot, edits: Sequence[Edit], new: NewObjects
    ) -> tuple[bytes, list[Blobs]]:
        """The root tree of ``snapshot`` with ``edits`` applied, every new object added
        to ``new``, and for each edit the blob ids the history index keeps (for a
        removal, the files it removed). Only the changed fan-out trees and the root are
        encoded again, each from its stored entries (see ``RawTree``)."""
        reader = self._reader
        root = snapshot.root
        base_root = reader.raw_tree(root) if root else EMPTY_TREE
        buckets: dict[str, tuple[RawTree, dict[str, tuple[int, bytes] | None]]] = {}
        blobs: list[Blobs] = []
        for edit in edits:
            slug = edit.slug
            name = files.bucket(slug)
            if name not in buckets:
                entry = base_root.get(name)
                tree = (
                    reader.raw_tree(entry[1].decode()) if entry and entry[0] == DIR_MODE else None
                )
                buckets[name] = (tree or EMPTY_TREE, {})
            base, changes = buckets[name]
            before = [base.get(slug + suffix) for suffix in _SUFFIXES]
            for suffix, found in zip(_SUFFIXES, before, strict=True):
                if found is not None:
                    changes[slug + suffix] = None
            memory = edit.memory
            if memory is None:
                ids = [f[1].decode() if f else "-" for f in before]
                blobs.append((REMOVED + ids[0], ids[1], ids[2]))
                continue
            written: dict[str, bytes] = {}
            for filename, data in files.encode(memory).items():
                written[filename] = new.add_blob(data)
                changes[filename] = (FILE_MODE, written[filename])
            kept = MemoryFiles(
                written[slug + files.MD],
                written.get(slug + files.CODE),
                written.get(slug + files.ON_USE),
            )
            new.memories.append((kept, memory))
            blobs.append(blob_ids(kept))
        root_changes: dict[str, tuple[int, bytes] | None] = {}
        for name, (base, changes) in buckets.items():
            tree = base.replaced(changes)
            root_changes[name] = (DIR_MODE, new.add_tree(tree)) if tree.chunks else None
        return new.add_tree(base_root.replaced(root_changes)), blobs

    # -- durable publication ---------------------------------------------------------

    def _write_objects(self, objects: list[ShaFile], *, sync_folder: bool = True) -> str:
        """Put new objects on disk durably, as one pack (must hold the write lock);
        returns the pack folder, which ``sync_folder=False`` leaves to the caller to fsync
        before a ref names what it holds."""
        objects_dir = os.path.join(self.directory, "objects")
        return packing.write_objects(objects_dir, objects, sync_folder=sync_folder)

    def _publish_new(self, ref: Ref, old: str | None, new: NewObjects) -> bool:
        """Write a commit's objects durably as one pack and move ``ref`` from ``old`` to
        the commit by compare-and-swap (must hold the write lock)."""
        path = os.path.join(self.directory, os.fsdecode(ref))
        if old is None or not os.path.isdir(os.path.dirname(path)):
            # a new branch, or one only packed-refs holds: the slow road, through dulwich
            if self._read_ref(ref) != old:
                return False  # moved already: no pack written for nothing
            packing.write_pack(self._objects, new.records, len(new.records), level=None)
            return self._publish(ref, old, new.commit)
        return self._swap(ref, old, new.commit, new.records)

    def _swap(self, ref: Ref, old: str, new: str, records: list[Record]) -> bool:
        """Compare-and-swap the existing branch ``ref`` from ``old`` to ``new`` with the
        new objects ``records`` (must hold the write lock), each step durable before the
        next, in three flushes of the filesystem's journal:

        1. the ref's lock file (``<ref>.lock``, git's) is created, the ref re-read under
           it, ``new`` written to it; the pack and its index are written to temporary
           files; the three are fsynced together;
        2. pack and index are renamed into place (the pack first) and the pack folder
           is fsynced: their names are durable before any ref names what they hold;
        3. the lock file is renamed over the ref and the ref's folder fsynced.
        """
        path = os.path.join(self.directory, os.fsdecode(ref))
        lock = path + ".lock"
        fd = -1
        for _ in range(2):
            try:
                fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                break
            except FileExistsError:
                # we hold the write lock: a lock file left by a killed writer
                remove_stale(lock)
        if fd < 0:
            return False
        staged: packing.Staged | None = None
        try:
            if self._read_ref(ref) != old:
                os.close(fd)
                fd = -1
                os.unlink(lock)
                return False
            os.write(fd, new.encode() + b"\n")
            pack_dir = packing.pack_folder(self._objects)
            staged = packing.stage(pack_dir, records, len(records))
            fsync_together(*staged.fds, fd)
            os.close(fd)
            fd = -1
            staged.install()
            fsync_dir(pack_dir)
            os.rename(lock, path)
        except BaseException:
            if fd >= 0:
                os.close(fd)
            if staged is not None:
                staged.discard()
            with suppress(FileNotFoundError):
                os.unlink(lock)
            raise
        with suppress(OSError):
            # the ref has moved and readers see the write: it is published, and refusing
            # it now would invite a retry that publishes it twice
            fsync_dir(os.path.dirname(path))
        return True

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
        """Combine packs once enough have piled up, or pack loose objects (which other
        tools write) once enough of those have, as ``git gc --auto`` would."""
        objects = os.path.join(self.directory, "objects")
        if packing.pack_count(objects) <= packing.PACK_LIMIT:
            try:
                if len(os.listdir(os.path.join(objects, "17"))) <= _GC_SAMPLE_LIMIT:
                    return
            except FileNotFoundError:
                return
        self._pack(everything=False)

    def pack(self) -> int:
        """Combine every pack and loose object into one pack; returns how many objects
        it wrote. Skips (returning 0) if another process is at it."""
        return self._pack(everything=True)

    def _pack(self, *, everything: bool) -> int:
        # writers need not wait: they only add packs, and a pack is deleted only once
        # the one that replaces it is durable
        with flocked(os.path.join(self._meta, "pack.lock"), blocking=False) as mine:
            if not mine:
                return 0
            try:
                count = packing.consolidate(
                    os.path.join(self.directory, "objects"), everything=everything
                )
            except OSError as exc:
                raise storage_error(exc, "packing objects") from exc
        with self._read_lock:
            _ = self._repo.object_store.packs  # forget the packs that went
        return count

    def _ref(self, store: str) -> Ref:
        return Ref((self._prefix + store).encode())

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
        return check_repository(self.directory, progress, self._prefix)

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


def _totals(before: Totals, edits: Sequence[Edit], olds: Sequence[Memory | None]) -> Totals:
    count, chars, lines = before.count, before.chars, before.lines
    for edit, old in zip(edits, olds, strict=True):
        new = edit.memory
        count += (new is not None) - (old is not None)
        chars += (new.chars if new else 0) - (old.chars if old else 0)
        lines += (new.lines if new else 0) - (old.lines if old else 0)
    return Totals(count, chars, lines)


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


def _marker_ref(name: str) -> Ref:
    check_store(name)
    return Ref(b"refs/gitmem/" + name.encode())


class _Attempt(NamedTuple, Generic[T]):
    """What one attempt at a mutation built: the result to return, the commit and its
    objects to publish (``new`` ``None``: nothing to publish), and what the reader and
    the history index keep of it once published."""

    result: T
    new: NewObjects | None
    what: str
    facts: Facts | None = None
    """The commit's facts, as a reader parses them from its message."""
    rows: list[Row] | None = None
    """The commit's rows in the history index, blob ids included."""


def _is_file_store(reader: ObjectReader, head: str | None) -> bool:
    if head is None:
        return False
    # a commit gitmem did not make keeps the layout of the gitmem commit before it
    facts = reader.standing(head)
    return facts is not None and facts.paths


def _check_file_change(change: FileChange) -> tuple[FileEdit, ...]:
    """The change's edits, if every one obeys the input rules; else raise."""
    seen: set[str] = set()
    for edit in change.edits:
        path = check_path(edit.path)
        op = check_op(edit.op)
        if path in seen:
            raise InvalidArgument(f"a change names {path!r} twice; name each file once")
        seen.add(path)
        if op == "delete" and edit.text is not None:
            raise InvalidArgument(f"a delete of {path!r} carries no text")
        if op in _WRITES and edit.text is None:
            raise InvalidArgument(f"a {op} of {path!r} carries the text it writes")
        if edit.text is not None:
            check_text(edit.text, f"text of {path}")
    _check_trailers(change.trailers)
    return change.edits


def _check_trailers(trailers: Mapping[str, str]) -> None:
    for key in trailers:
        if not _TRAILER_KEY_RE.fullmatch(key) or key in KEYS:
            raise InvalidArgument(
                f"trailer key {key[:70]!r} is not usable; use letters, digits and '-', "
                "and none of gitmem's own Gitmem-Slug, Gitmem-Op, ... keys"
            )


def _usable_store(store: str) -> bool:
    try:
        check_store(store)
    except InvalidArgument:
        return False
    return True


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
    _check_trailers(change.trailers)
    return edits
