"""The public ``Repository``: the git store, plus binding agents to its stores."""

from __future__ import annotations

import functools
import weakref
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from gitmem.errors import InvalidArgument, NotFound
from gitmem.lean.layout import FILE_NAMES
from gitmem.screens import chain
from gitmem.store.snapshot import ALLOWLIST, GUARD
from gitmem.store.storage import Storage
from gitmem.types import Author, BlameLine, Revision

if TYPE_CHECKING:
    # imported where used: opening a repository loads neither the binding rules, the
    # holder, sync, the secret detectors nor the sandbox that runs guards
    from gitmem.binding import Agent
    from gitmem.capability import Capability
    from gitmem.guard import Guards
    from gitmem.holder import Holder, Hub
    from gitmem.review import Decision, Proposal
    from gitmem.secrets import Allowlist
    from gitmem.sync import StoreSync
    from gitmem.trailers import Provenance

__all__ = ["Repository"]


class Repository(Storage):
    """A gitmem repository: stores of memories as branches of a bare git repository, or
    of a project's own repository (``refs/heads/gitmem/<store>``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # every write passes the whole chain: secrets, then the store's guard code. The
        # chain reaches this object weakly: a repository no longer used is freed at once,
        # with the objects it read (a fold's: hundreds of megabytes), not at the next
        # collection of cycles, which an idle process may never run
        this: Repository = weakref.proxy(self)
        self.screens = chain(lambda: this.guards)

    def made_as(self, commit: str) -> str:
        """Who made ``commit``, as blame says it: ``agent`` (its trailers name one),
        ``operator`` (gitmem made it for a person) or ``git`` (gitmem did not make it:
        its author is whatever name its maker gave)."""
        facts = self._reader.facts(commit)
        return _made_as(facts.extra if facts is not None else None)

    def blame(self, store: str, slug: str, at: str | None = None) -> list[BlameLine]:
        """Each line of ``slug``'s files (its description and body, then its code
        halves) as of ``at`` (a commit of the store, full or short; default: its head),
        with the revision, commit, author and session that last changed it, as
        ``git blame`` finds it on the same file: followed across renames and merges,
        commits gitmem did not make counted as their git author's."""
        from gitmem.trailers import SESSION_TRAILER

        commit = self.commit_at(store, at) if at is not None else None
        if commit is None and at is None and self.head(store) is None:
            raise NotFound(f"there is no memory named {slug!r} in {store}; `gitmem ls` lists them")
        found = self.origins(store, slug, commit)
        if not found:
            where = f" as of {at}" if at is not None else ""
            raise NotFound(
                f"there is no memory named {slug!r} in {store}{where}; `gitmem ls` lists them"
            )
        lines: list[BlameLine] = []
        for origin in found:
            trailers = origin.trailers
            by = _made_as(trailers)
            lines.append(
                BlameLine(
                    file=FILE_NAMES[origin.suffix],
                    line=origin.line,
                    text=origin.text,
                    slug=origin.slug,
                    revision=origin.revision,
                    commit=origin.commit,
                    author=origin.author,
                    by=by,
                    session=(trailers or {}).get(SESSION_TRAILER, ""),
                    time=origin.time,
                )
            )
        return lines

    def sync(self, remote: str = "origin", store: str | None = None) -> list[StoreSync]:
        """Fetch the remote's stores, reconcile each that diverged, push the result (never
        forced); one report per store. See :mod:`gitmem.sync`."""
        from gitmem.sync import sync

        return sync(self, remote, store)

    def review(self, store: str | None = None) -> list[Proposal]:
        """Every pending proposal (to ``store`` only, if given), with what it would
        change. See :mod:`gitmem.review`."""
        from gitmem.review import review

        return review(self, store)

    def approve(
        self, proposal: str, slugs: Sequence[str] = (), *, author: Author, head: str | None = None
    ) -> Decision:
        """Merge proposal ``STORE/HOLDER`` (only ``slugs`` of it, if named) into its store
        as one commit, held to the store's limits, secrets and guard; with ``head`` (the
        proposal's head as reviewed), only if the proposal has not moved on since."""
        from gitmem.review import approve

        return approve(self, proposal, slugs, author, head)

    def reject(
        self, proposal: str, slugs: Sequence[str] = (), *, author: Author, head: str | None = None
    ) -> Decision:
        """Reject proposal ``STORE/HOLDER`` (only ``slugs`` of it, if named): one commit on
        the proposal; the store is not touched. ``head`` as for :meth:`approve`."""
        from gitmem.review import reject

        return reject(self, proposal, slugs, author, head)

    def restore(self, store_id: str, slug: str, revision: int, author: Author) -> Revision:
        """Make revision ``revision`` of ``slug`` its live text again, as one new commit
        held to the store's limits, secrets and guard (see :mod:`gitmem.undo`)."""
        from gitmem.undo import restore

        return restore(self, store_id, slug, revision, author)

    def revert(self, store_id: str, commits: str, author: Author) -> list[Revision]:
        """Take back what one commit (a merge: against its first parent) or a range
        ``FROM..TO`` did to the store's memories, as one new commit; refused, naming
        them, if later changes to those memories would be lost (see :mod:`gitmem.undo`)."""
        from gitmem.undo import revert

        return revert(self, store_id, commits, author)

    @functools.cached_property
    def guards(self) -> Guards:
        """The sandbox that runs this repository's store guards (started when needed)."""
        from gitmem.guard import Guards

        return Guards()

    def guard(self, store_id: str) -> str | None:
        """The store's guard source, or ``None``."""
        return self.snapshot(store_id).meta(GUARD)

    def set_guard(self, store_id: str, source: str | None, author: Author) -> str | None:
        """Keep ``source`` (a TypeScript module exporting ``check(change)``) as the store's
        guard, or remove it (``None``); one commit. The guard must compile."""
        if source is not None:
            if not source.strip():
                raise InvalidArgument("the guard is empty; give a module exporting check(change)")
            diagnostic = self.guards.compile(source)
            if diagnostic is not None:
                raise InvalidArgument(f"the guard does not compile: {diagnostic}")
        return self.set_meta(store_id, GUARD, source, author)

    def allowed(self, store_id: str) -> Allowlist:
        """The secrets the store admits (its allowlist)."""
        return self.snapshot(store_id).allowlist()

    def allow(self, store_id: str, fingerprint: str, note: str, author: Author) -> str | None:
        """Add a reviewed false positive (its fingerprint, as a refusal names it) to the
        store's allowlist, with ``note`` saying why; one commit (``None`` if present)."""
        from gitmem.secrets import Allowlist

        text = self.snapshot(store_id).meta(ALLOWLIST) or ""
        line = f"{fingerprint}  # {' '.join(note.split())}" if note.strip() else fingerprint
        Allowlist.parse(line)
        if fingerprint in Allowlist.parse(text).fingerprints:
            return None
        joined = (text if not text or text.endswith("\n") else text + "\n") + line + "\n"
        return self.set_meta(store_id, ALLOWLIST, joined, author)

    def close(self) -> None:
        """Stop the guard sandbox, then close the repository."""
        if "guards" in self.__dict__:
            self.guards.close()
        super().close()

    @functools.cached_property
    def hub(self) -> Hub:
        """The telemetry hub of the holders bound through this repository object."""
        from gitmem.holder import Hub

        return Hub()

    def bind(
        self,
        capability: Capability,
        agent: Agent,
        compaction: str = "summary",
        *,
        at: str | None = None,
        provenance: Provenance | None = None,
    ) -> Holder | None:
        """Bind ``agent`` to the store its scope names (``None`` if memories are off).

        With ``at`` (a commit of the store's history, or an ISO 8601 date: see
        :meth:`commit_at`) the holder reads the store as it stood then, is offered
        only the calls that read, and refuses every write, saying why.

        ``provenance``: the session and client the harness knows of; every write the
        holder makes records it (without one, a run id of the holder's own).
        Binding writes nothing: state appears when a write needs it.
        """
        from gitmem.binding import Binding, check_launch, resolve

        check_launch(capability, agent, compaction, spawner=agent.spawner)
        if not capability.enabled:
            return None
        from gitmem.holder import Holder

        binding = resolve(capability.scope, agent)
        if at is None:
            return Holder(self, capability, agent, binding, hub=self.hub, provenance=provenance)
        past = self.as_of(binding.store_id, at)
        return Holder(
            past,
            capability,
            agent,
            Binding(binding.store_id, False),
            hub=self.hub,
            provenance=provenance,
        )


def _made_as(trailers: Mapping[str, str] | None) -> str:
    """``agent``, ``operator`` or ``git``, from the extra trailers of a commit gitmem made
    (``None``: one it did not make)."""
    from gitmem.trailers import AGENT_TRAILER

    if trailers is None:
        return "git"
    return "agent" if AGENT_TRAILER in trailers else "operator"
