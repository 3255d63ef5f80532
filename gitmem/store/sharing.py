"""Sharing a repository's stores through remotes: where a remote is, what a fetch
brings (recorded as ``git fetch`` records it), a push that is never forced, and the stores
a remote holds that this replica does not yet."""

from __future__ import annotations

import os
import threading
from collections.abc import Generator, Mapping
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING

from dulwich.objects import ObjectID
from dulwich.refs import Ref
from dulwich.repo import Repo

from gitmem.store.layout import PROPOSAL_PREFIX, usable_store
from gitmem.store.locking import WriteLock, storage_error
from gitmem.store.objects import ObjectReader
from gitmem.store.refs import BranchBeside, Refs
from gitmem.store.trees import Trees

if TYPE_CHECKING:
    # imported where used: the remote brings dulwich's network client
    from gitmem.store.pushcheck import PushReader
    from gitmem.store.remote import Pushed, Remote

__all__ = ["Sharing"]


class Sharing:
    """The part of a repository that speaks to remotes (a base of ``Storage``)."""

    directory: str
    project: bool
    _repo: Repo
    _prefix: str
    _lock: WriteLock
    _read_lock: threading.RLock
    _refs: Refs
    _reader: ObjectReader

    def stores(self) -> list[str]:
        """The stores this replica holds (``Storage`` gives it)."""
        raise NotImplementedError

    def _ref(self, store: str) -> Ref:
        """A store's branch (``Storage`` gives it)."""
        raise NotImplementedError

    def remote_stores(self) -> dict[str, list[str]]:
        """The stores a remote holds, as last fetched (``refs/remotes/<remote>/...``), that
        this replica does not hold yet: store id -> the remotes holding it (a fresh
        clone's, before its first ``gitmem sync``)."""
        inner = self._prefix[len("refs/heads/") :]
        local = set(self.stores())
        found: dict[str, list[str]] = {}
        for name in self._refs.names("refs/remotes/"):
            remote, _, rest = name.partition("/")
            store = rest[len(inner) :] if rest.startswith(inner) else ""
            if store and store != "HEAD" and store not in local:
                found.setdefault(store, []).append(remote)
        return found

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
            heads = remote.fetch(self._prefix, self._reader.trees)
        heads = {store: head for store, head in heads.items() if usable_store(store)}
        from gitmem.store.remote import settle_fetched

        settle_fetched(self.directory, remote)
        # a branch at what is no commit was not copied: no ref here names what is missing
        have = self._repo.object_store
        self._track(remote, {s: h for s, h in heads.items() if ObjectID(h.encode()) in have})
        return heads

    def push(self, remote: Remote, store: str, old: str | None, new: str) -> Pushed:
        """Move the remote's branch of ``store`` from ``old`` to ``new`` (never forced)."""
        with self._read_lock:
            pushed = remote.push(self._ref(store).decode(), old, new, self._reader.trees)
        if pushed.ok:
            self._track(remote, {store: new})
        return pushed

    def _track(self, remote: Remote, heads: Mapping[str, str]) -> None:
        """Record where a named remote's store branches are (``refs/remotes/<name>/``)."""
        from gitmem.store.remote import tracking_refs

        if not (tracked := tracking_refs(remote, self._prefix, heads)):
            return
        try:
            with self._lock.held():
                for ref, commit in tracked.items():
                    # a remote's store beside one of ours (``team/x`` and ``team``) goes
                    # unrecorded: that store is refused, and the others are recorded
                    with suppress(BranchBeside):
                        self._refs.track(ref, commit)
        except OSError as exc:
            raise storage_error(exc, f"recording what {remote.url} holds") from exc

    def share_proposals(self, remote: Remote) -> list[str]:
        """Take the proposals that moved on at the remote and send the ones that moved
        on here; returns their names. Never forced: a proposal that moved on both
        sides stays as each replica has it until one moves on from the other's."""
        from gitmem.store.remote import settle_fetched

        with self._read_lock:
            theirs = remote.fetch(PROPOSAL_PREFIX)
        # a proposal whose history a fetch left out is not taken
        theirs = {n: h for n, h in theirs.items() if h not in remote.kept_out}
        settle_fetched(self.directory, remote)
        ours = {
            name: self._refs.read(Ref((PROPOSAL_PREFIX + name).encode()))
            for name in self._refs.names(PROPOSAL_PREFIX)
        }
        moved: list[str] = []
        for name in sorted(ours.keys() | theirs.keys()):
            mine, other = ours.get(name), theirs.get(name)
            if mine == other:
                continue
            ref = PROPOSAL_PREFIX + name
            if mine is not None and (other is None or self._descends(mine, other)):
                with self._read_lock:
                    sent = remote.push(ref, other, mine).ok
                if sent:
                    moved.append(name)
            elif other is not None and (mine is None or self._descends(other, mine)):
                try:
                    with self._lock.held():
                        if self._refs.swap(Ref(ref.encode()), mine, other):
                            moved.append(name)
                except OSError as exc:
                    raise storage_error(exc, f"taking proposal {name} from {remote.url}") from exc
        return moved

    def _descends(self, commit: str, ancestor: str) -> bool:
        """Whether ``ancestor`` is ``commit`` or one of its ancestors."""
        from dulwich.graph import can_fast_forward
        from dulwich.objects import ObjectID

        with self._read_lock:
            return can_fast_forward(
                self._repo, ObjectID(ancestor.encode()), ObjectID(commit.encode())
            )

    def incoming(self) -> PushReader:
        """This repository read as a hook reads a push: how sync checks the commits a
        fetch brought before it adopts them (the caller closes it)."""
        from gitmem.store.pushcheck import PushReader

        return PushReader(self._repo.controldir(), trees=self._reader.trees)

    @contextmanager
    def trees_shared(self) -> Generator[None]:
        """While this lasts, the fetch, the check of what it brought, the merge and the
        push share the trees each reads (see :mod:`gitmem.store.trees`): a sync reads
        and parses each tree once."""
        kept = self._reader.trees
        self._reader.trees = Trees()
        try:
            yield
        finally:
            self._reader.trees = kept
