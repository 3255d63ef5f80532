"""Storage: a bare git repository whose branches are memory stores (or file stores).

``Storage`` coordinates; each concept is a module of its own, as in dulwich: refs and
their compare-and-swap (:mod:`~gitmem.store.refs`), reading a store at a commit
(:mod:`~gitmem.store.snapshot`, :mod:`~gitmem.store.filestore`), building a commit
(:mod:`~gitmem.store.commit`), merging (:mod:`~gitmem.store.merge`), markers
(:mod:`~gitmem.store.markers`), packing (:mod:`~gitmem.store.packing`) and the screens
every write passes (:mod:`~gitmem.store.screen`). All dulwich contact lives in
``gitmem.store``; no dulwich type or exception leaves it.
"""

from __future__ import annotations

import atexit
import os
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import suppress
from typing import TYPE_CHECKING, Self, TypeVar

from dulwich.config import StackedConfig
from dulwich.refs import Ref
from dulwich.repo import Repo

from gitmem.errors import (
    AlreadyExists,
    InvalidArgument,
    NotFound,
    StorageError,
)
from gitmem.lean.objects import Objects, Unreadable
from gitmem.lean.survey import SHARED_FROM, md_blobs, texts
from gitmem.store import commit as build
from gitmem.store import layout, markers, memoryfiles, merge, packing
from gitmem.store.check import check as check_repository
from gitmem.store.commit import Attempt
from gitmem.store.filestore import FileSnapshot
from gitmem.store.history import History
from gitmem.store.kept import Keeping
from gitmem.store.layout import check_store, wrong_kind
from gitmem.store.lease import Leases
from gitmem.store.locking import WriteLock, storage_error
from gitmem.store.merge import Merging
from gitmem.store.message import FILES, kind_of
from gitmem.store.moments import Past
from gitmem.store.objects import NewObjects, ObjectReader
from gitmem.store.outline import Outlines
from gitmem.store.proposals import Proposals
from gitmem.store.refs import Refs
from gitmem.store.screen import SECRETS, Screen
from gitmem.store.settings import Configured
from gitmem.store.sharing import Sharing
from gitmem.store.snapshot import ALLOWLIST, GUARD, META, Snapshot
from gitmem.store.summaries import Summaries, Summary
from gitmem.types import (
    Author,
    Change,
    FileChange,
    FileRevision,
    Revision,
    check_path,
    check_slug,
    check_text,
)

if TYPE_CHECKING:
    # imported where used: the remote brings dulwich's network client
    pass

__all__ = [
    "ALLOWLIST",
    "GUARD",
    "FileSnapshot",
    "Snapshot",
    "Storage",
    "check_store",
    "git_identity",
]

T = TypeVar("T")

_MAX_ATTEMPTS = 200
# every repository not yet closed, closed at exit if the program did not: dulwich's
# finalizers, run once the interpreter is shutting down, print a traceback apiece
_open: weakref.WeakSet[Storage] = weakref.WeakSet()


@atexit.register
def _close_open() -> None:
    for repo in list(_open):
        with suppress(Exception):
            repo.close()


class Storage(Past, Sharing, Proposals, Merging, Configured, Keeping, Outlines):
    """A gitmem repository on disk: its stores, read and written."""

    def __init__(
        self,
        path: str,
        repo: Repo,
        *,
        project: bool = False,
        screens: Iterable[Screen] = (SECRETS,),
    ) -> None:
        self.directory = path
        """The git directory that holds the objects and refs (a project's ``.git``)."""
        self.project = project
        """Whether the stores live in a project's own repository (``refs/heads/gitmem/``)."""
        self.screens = list(screens)
        """The checks every write passes, in order (see :mod:`gitmem.store.screen`)."""
        self._prefix = layout.PROJECT_PREFIX if project else layout.STANDALONE_PREFIX
        self._repo = repo
        self._meta = os.path.join(path, "gitmem")
        self._objects = os.path.join(path, "objects")
        self._lock = WriteLock(os.path.join(self._meta, "write.lock"))
        self._reader = ObjectReader(repo)
        self._read_lock = self._reader.lock
        self._refs = Refs(path, repo, self._read_lock)
        self._histories: dict[str, History] = {}
        self._summaries = Summaries(os.path.join(self._meta, "summaries"))
        # a reading of the past (see as_of): store → the commit it reads as its head
        self._pins: dict[str, str] = {}
        self._owner = True
        self.leases = Leases(self._reader, self._refs, self._lock)
        """The repository's leases (see :mod:`gitmem.store.lease`)."""
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
        layout.create(path, bare=bare)
        return cls.open(path)

    @classmethod
    def open(cls, path: str) -> Self:
        """Open the gitmem repository at ``path``: a standalone bare repository, or a
        project's work tree, ``.git`` directory or bare repository holding stores."""
        common, repo, project = layout.open_git(os.path.abspath(path))
        return cls(common, repo, project=project)

    def close(self) -> None:
        """Close the repository (a reading of the past closes nothing: the repository
        it was made from owns the files)."""
        if not self._owner:
            return
        _open.discard(self)
        self._reader.forget_packs()
        self._repo.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- reading -------------------------------------------------------------------

    def stores(self) -> list[str]:
        """Every store id, sorted."""
        return self._refs.names(self._prefix)

    def head(self, store: str) -> str | None:
        """The commit a store's branch points at, or ``None`` if it has none yet (in a
        reading of the past, the commit it reads the store at)."""
        pinned = self._pins.get(check_store(store))
        if pinned is not None:
            return pinned
        return self._refs.read(self._ref(store))

    def snapshot(self, store: str, commit: str | None = None) -> Snapshot:
        """The store as of ``commit`` (default: its head)."""
        at = commit if commit is not None else self.head(store)
        return Snapshot(self._reader, self._history(store), store, at)

    def summaries(
        self, store: str, commit: str | None = None, *, keep: bool = True
    ) -> list[tuple[str, Summary]]:
        """Every memory of the store as of ``commit`` (default: its head): slug and
        (description, characters, lines), sorted by slug, not reading the blobs a listing
        read (see :mod:`gitmem.store.summaries`); without ``keep``, writing nothing."""
        snapshot = self.snapshot(store, commit)
        return snapshot.summaries(self._summaries, remember=store not in self._pins, write=keep)

    def search_texts(
        self, store: str, commit: str | None
    ) -> tuple[dict[str, str], dict[str, str]] | None:
        """Every memory of the store as of ``commit`` as the search index holds it
        (``slug NUL description NUL body``, lowered), by slug, its blobs read in one
        sweep (see :func:`gitmem.lean.survey.texts`), and the ids of those ``.md``
        blobs, by slug; the listing and summaries that
        sweep makes are kept as ``summaries`` keeps them (a reading of the past keeps
        no listing), so the next listing reads no blob again. ``None`` when a memory
        or an object does not read that way (the caller reads the memories through the
        store, which says what is wrong)."""
        at = self.snapshot(store, commit)
        if at.root is None:
            return {}, {}
        try:
            shared = _large(self._reader, at.commit)
            found = texts(Objects(self._objects), at.root, self._summaries.stored, shared=shared)
        except (Unreadable, KeyError, OSError):
            return None
        if found is None:
            return None
        found_texts, listing, read = found
        self._summaries.add(read)
        if store not in self._pins:
            self._summaries.keep_listing(store, *listing)
        return found_texts, md_blobs(listing)

    def path(self, store: str, slug: str) -> str:
        """Where ``slug``'s ``.md`` file lives in the store's tree."""
        check_store(store)
        return memoryfiles.memory_path(check_slug(slug))

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
        self._expect(store, head, files=False, doing="its history is `file_revisions`")
        entries = self._history(store).entries(head, slug)
        measured = self._measured(store, files=False)
        return [build.memory_revision(self._reader, store, e, measured) for e in entries]

    def revisions_since(self, store: str, base: str | None, head: str | None) -> list[Revision]:
        """The revisions reachable from ``head`` and not from ``base``, in the order of
        ``revisions``; none if ``base`` is not an ancestor of ``head``."""
        entries = self._history(store).since(base, head) or []
        measured = self._measured(store, files=False)
        return [build.memory_revision(self._reader, store, e, measured) for e in entries]

    def iter_commits(self, store: str) -> Iterator[str]:
        """Every commit reachable from a store's head through all parents, each once,
        newest first: the reverse of the history index's order, so a commit comes before
        its parents, and a merge is followed by what its later parents brought in, then
        by its first parent's line. On a linear history: the first-parent chain."""
        yield from reversed(self._history(store).commits(self.head(store)))

    def check(self, progress: Callable[[int], None] | None = None) -> list[str]:
        """Every problem in the repository's objects and memory files; empty if healthy."""
        return check_repository(self.directory, progress, self._prefix)

    # -- writing a memory store ------------------------------------------------------

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

        def attempt(head: str | None) -> Attempt[list[Revision]]:
            snapshot = self.snapshot(store, head)
            self._expect(store, head, files=False, doing="write its files, not memories")
            return build.memory_write(self._reader, snapshot, fn(snapshot), author, self.screens)

        return self._commit(store, attempt)

    def set_meta(self, store: str, name: str, text: str | None, author: Author) -> str | None:
        """Write (``None``: remove) the store's root file ``name`` (:data:`ALLOWLIST` or
        :data:`GUARD`) as one commit that changes no memory; returns the commit, or
        ``None`` when the file already held exactly that."""
        check_store(store)
        if name not in META:
            raise InvalidArgument(f"{name!r} is not a store file; use {' or '.join(META)}")
        if text is not None:
            check_text(text, name)

        def attempt(head: str | None) -> Attempt[str | None]:
            snapshot = self.snapshot(store, head)
            self._expect(store, head, files=False, doing="guards are for memories")
            return build.meta_write(self._reader, snapshot, name, META[name], text, author)

        return self._commit(store, attempt)

    def record(self, store: str, subject: str, trailers: Mapping[str, str], author: Author) -> str:
        """Publish one commit of a memory store that changes no memory and records
        ``trailers`` (an operator's deliberate record); returns the commit."""
        check_store(store)

        def attempt(head: str | None) -> Attempt[str]:
            self._expect(store, head, files=False, doing="records are for memory stores")
            return build.record_write(
                self._reader, self.snapshot(store, head), subject, trailers, author
            )

        return self._commit(store, attempt)

    # -- file stores -----------------------------------------------------------------

    def layout(self, store: str) -> str | None:
        """What a store holds: ``"files"`` for a file store, ``"memories"`` for a memory
        store, ``None`` for a store with no commit yet (its first write decides)."""
        head = self.head(store)
        if head is None:
            return None
        return kind_of(self._reader.standing(head))

    def files(self, store: str, commit: str | None = None) -> FileSnapshot:
        """A file store as of ``commit`` (default: its head); ``InvalidArgument`` for a
        memory store."""
        at = commit if commit is not None else self.head(store)
        self._expect(
            store, at, files=True, doing="choose a file store or a store id that does not exist yet"
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

        def attempt(head: str | None) -> Attempt[list[FileRevision]]:
            snapshot = self.files(store, head)
            return build.file_write(self._reader, snapshot, fn(snapshot), author, self.screens)

        return self._commit(store, attempt)

    def file_revisions(
        self, store: str, path: str | None = None, *, at: str | None = None
    ) -> list[FileRevision]:
        """Every revision of a file store (or of one path), removals too, in the order of
        ``revisions``, as of its head (or of commit ``at``, as ``outlines`` takes it)."""
        if path is not None:
            check_path(path)
        head = self.head(store) if at is None else at
        self._expect(store, head, files=True, doing="")
        entries = self._history(store).entries(head, path)
        measured = self._measured(store, files=True)
        return [build.file_revision(self._reader, store, e, measured) for e in entries]

    # -- branches and markers ----------------------------------------------------------

    def fork(self, source: str, target: str) -> str:
        """Start store ``target`` at ``source``'s head; returns that commit."""
        head = self.head(source)
        if head is None:
            raise NotFound(f"store {source!r} does not exist; `gitmem stores` lists them")
        if not self._swap(check_store(target), None, head, f"forking {source} to {target}"):
            raise AlreadyExists(f"store {target!r} already exists; choose another id")
        return head

    def advance(self, store: str, old: str | None, new: str) -> bool:
        """Move a store's branch from ``old`` to ``new`` (a commit that descends from it)
        by compare-and-swap; ``False`` if another writer moved it first."""
        return self._swap(check_store(store), old, new, f"updating {store}")

    def marker(self, name: str) -> str | None:
        """The commit a named marker (such as a holder's notice watermark) points at:
        ``None`` if it was never set, ``""`` if it was set before a store's first commit."""
        return markers.read(self._refs, name)

    def markers(self, prefix: str) -> list[str]:
        """The names of every marker under ``prefix`` (such as ``notices``), sorted."""
        return markers.names(self._refs, prefix)

    def set_marker(self, name: str, commit: str | None) -> None:
        """Point a named marker at ``commit`` (``None``: before the first commit), durably."""
        self._refuse_past()
        try:
            with self._lock.held():
                markers.point(self._refs, name, commit)
        except OSError as exc:
            raise storage_error(exc, f"recording marker {name}") from exc

    # -- replicas: fetch, merge, push (the rules of reconciling are gitmem.sync's) -------

    def merge_base(self, store: str, ours: str, theirs: str) -> str | None:
        """A best common ancestor of the store's head ``ours`` and ``theirs`` (``theirs``
        itself when it is an ancestor of ``ours``; ``None`` if they share no history)."""
        return merge.merge_base(self._reader, self._history(check_store(store)), ours, theirs)

    def revisions_between(self, store: str, ours: str, theirs: str) -> dict[str, int]:
        """How many revisions each slug has in commits of ``theirs`` that are not in
        ``ours``."""
        history = self._history(check_store(store))
        return merge.revisions_between(self._reader, history, ours, theirs)

    # -- publishing --------------------------------------------------------------------

    def _commit(self, store: str, attempt: Callable[[str | None], Attempt[T]]) -> T:
        """Publish what ``attempt`` builds on the store's head by compare-and-swap,
        building it again on the new head whenever another writer publishes first."""
        self._refuse_past(store)
        ref = self._ref(store)
        for _ in range(_MAX_ATTEMPTS):
            head = self._refs.read(ref)
            built = attempt(head)
            new = built.new
            if new is None:
                return built.result
            if self._swap(store, head, new.commit, f"writing {built.what}", new):
                self._reader.remember(new, built.facts)
                if built.rows:
                    self._history(store).record(head, built.rows)
                self._maybe_pack()
                return built.result
        raise StorageError(
            f"the store {store!r} changed {_MAX_ATTEMPTS} times while publishing; try again"
        )

    def _swap(
        self, store: str, old: str | None, new: str, doing: str, objects: NewObjects | None = None
    ) -> bool:
        """Move a store's branch by compare-and-swap under the write lock, with the new
        ``objects`` of the commit it moves to."""
        self._refuse_past(store)
        records = objects.records if objects is not None else ()
        try:
            with self._lock.held():
                return self._refs.swap(self._ref(store), old, new, records)
        except OSError as exc:
            raise storage_error(exc, doing) from exc

    # -- packing -----------------------------------------------------------------------

    def pack(self) -> int:
        """Combine every pack and loose object into one pack; returns how many objects
        it wrote. Skips (returning 0) if another process is at it."""
        return self._pack(everything=True)

    def _maybe_pack(self) -> None:
        if packing.needs_packing(self._objects):
            self._pack(everything=False)

    def _pack(self, *, everything: bool) -> int:
        lock = os.path.join(self._meta, "pack.lock")
        count = packing.pack_under(lock, self._objects, everything=everything)
        if count is None:
            return 0
        with self._read_lock:
            _ = self._repo.object_store.packs  # forget the packs that went
        self._reader.forget_packs()
        return count

    # -- helpers -----------------------------------------------------------------------

    def _ref(self, store: str) -> Ref:
        return Ref((self._prefix + store).encode())

    def _history(self, store: str) -> History:
        history = self._histories.get(store)
        if history is None:
            path = History.file_for(os.path.join(self._meta, "history"), store)
            history = self._histories.setdefault(store, History(path, self._reader))
        return history

    def _measured(self, store: str, *, files: bool) -> build.Measured:
        # a commit gitmem did not make records no totals: its view counts them
        view = self.files if files else self.snapshot
        return lambda commit: (view(store, commit).totals, view(store, commit).peaks)

    def _is_file_store(self, head: str | None) -> bool:
        # a commit gitmem did not make keeps the layout of the gitmem commit before it
        return head is not None and kind_of(self._reader.standing(head)) == FILES

    def _expect(self, store: str, head: str | None, *, files: bool, doing: str) -> None:
        """Refuse a memory store's head where a file store is needed, or the reverse."""
        if head is not None and self._is_file_store(head) != files:
            raise wrong_kind(store, files=files, doing=doing)


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


def _large(reader: ObjectReader, commit: str | None) -> bool:
    """Whether the store at ``commit`` is large enough that a sweep of every memory is
    shared with a forked child (in a process running no other thread), as a command
    line's first listing shares it: as its commit counts its memories (one gitmem did
    not make counts none: read by one process)."""
    facts = reader.facts(commit) if commit is not None else None
    return facts is not None and facts.totals.count >= SHARED_FROM
