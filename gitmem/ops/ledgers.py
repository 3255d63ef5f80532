"""Each store's ledger as a long-lived reader holds it (the console).

**The first request.** A ledger folds every revision of its store: on a store of
50,000 revisions with nothing kept (a fresh clone), some 200,000 objects and many
seconds. So the panel never waits for that. A store with no ledger yet in this process
gets one: the ledger the repository kept, if it is at the head, answers at once;
otherwise the fold starts on a thread (with a repository object of its own) and the
request waits only while the fold is short (up to :data:`PATIENCE` commits walked and
revisions read). A longer one is answered in the interim form (see
:mod:`gitmem.ops.ledger`) under what the fold has read so far. Deleted memories and the
history's fields come with the completed form, exactly the JSON a console that was
running all along answers. What the fold worked out is kept as ever, so a later
process goes on from it.

**A long fold goes apart.** A fold beyond :attr:`Ledgers.apart` stops and goes on in
a process of its own (:mod:`gitmem.ops.folding`), which also reads the interim form's
listing: the millions of small objects the two make would otherwise leave the reader
tens of megabytes larger for good. The reader then takes in the ledger the child kept
and goes on from its head.

**A panel at rest.** A store's panel no request has used for
:attr:`Ledgers.rest_after` seconds is held compressed (:meth:`Ledger.rest`) until it is next used: at 100,000
memories its JSON is some 17 MB, and compressed about 1 MB.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gitmem.errors import GitmemError
from gitmem.ops.ledger import Ledger, kept_listed_json, listed_json

if TYPE_CHECKING:
    from gitmem.repository import Repository

__all__ = ["PATIENCE", "Ledgers"]

PATIENCE = (500, 500)
"""How long a first request waits for its store's fold before it answers in the interim
form: while the fold has walked at most this many commits and has at most this many
revisions to read (a short history is answered whole)."""


class _Stopped(GitmemError):
    """The reader that started a fold is closing."""

    kind = "unavailable"


class _Longer(Exception):
    """The fold is longer than a reader folds in its own process: it goes on apart."""


def _beyond(limit: tuple[int, int] | None, commits: int, of: int | None) -> bool:
    """Whether a fold that has walked ``commits`` and has ``of`` revisions to read goes
    beyond ``limit`` (see :data:`PATIENCE`)."""
    return limit is not None and (commits > limit[0] or (of is not None and of > limit[1]))


class _Reading:
    """A store's fold, running on a thread of its own, and how far it has gone."""

    def __init__(
        self,
        ledger: Ledger,
        head: str | None,
        patience: tuple[int, int] | None,
        stopping: threading.Event,
        release: Callable[[], object] | None = None,
        apart: tuple[int, int] | None = None,
    ) -> None:
        self.ledger = ledger
        self.head = head
        """The store's head when the fold started (a failed fold is tried again once
        the head moves)."""
        self.progress: tuple[int, int, int | None] = (0, 0, None)
        """The commits walked, the revisions read, and of how many (``None``: not yet
        known), as :data:`~gitmem.store.outline.Progress` says."""
        self.error: BaseException | None = None
        self.done = threading.Event()
        self.settled = threading.Event()
        """Set once the fold is done, or is too long for a request to wait for."""
        self.listing: tuple[str | None, bytes] | None = None
        """The interim form's rows as the process folding apart read them, with the head
        they are of (taken by the reader)."""
        self.listed = threading.Event()
        """Clear while a fold gone apart has not yet said its listing (a request waits
        for it rather than read the listing here)."""
        self.listed.set()
        self._patience = patience
        self._stopping = stopping
        self._release = release
        self._apart = apart
        if patience is None:
            self.settled.set()

    def note(self, commits: int, revisions: int, of: int | None) -> None:
        if self._stopping.is_set():
            raise _Stopped("the console is closing")
        self.progress = (commits, revisions, of)
        apart = _beyond(self._apart, commits, of)
        if apart:
            self.listed.clear()  # before a request waiting for the fold is let go
        if _beyond(self._patience, commits, of):
            self.settled.set()
        if apart:
            raise _Longer

    def run(self, open_repo: Callable[[], Repository]) -> None:
        try:
            self._fold(open_repo)
        except Exception as exc:  # said in the panel's one line, never raised in a thread
            # without its traceback, whose frames hold the fold's repository
            self.error = exc.with_traceback(None)
        finally:
            # the fold's repository, with every object it read, is freed by now: the
            # memory it took is handed back before the ledger is, not left to a request
            if self._release is not None:
                self._release()
            self.done.set()
            self.listed.set()
            self.settled.set()

    def _fold(self, open_repo: Callable[[], Repository]) -> None:
        repo = open_repo()
        try:
            try:
                self.ledger.follow(repo, self.note)
            except _Longer:
                self._fold_apart(repo)
        finally:
            repo.close()

    def _fold_apart(self, repo: Repository) -> None:
        """Fold in a process of its own (see :mod:`gitmem.ops.folding`), which reads the
        interim form's listing first, then take in the ledger it kept and go on from its
        head to the store's (a write made meanwhile); if it could keep none (a
        repository this process may only read), fold here."""
        from gitmem.ops.folding import fold_apart

        self._apart = None
        store = self.ledger.store
        # a child that fails says nothing of its listing: the reader's requests wait for
        # the failure (``run`` lets them go once it is noted), then read the listing here
        fold_apart(repo.directory, store, self.note, self._take_listing)
        ledger = Ledger(store)
        ledger.follow(repo, self.note)
        self.ledger = ledger

    def _take_listing(self, head: str | None, rows: bytes | None) -> None:
        # ``None``: the listing of the head is kept, and read here (``Ledgers._rows``)
        self.listing = (head, rows) if rows is not None else None
        self.listed.set()

    def history(self) -> dict[str, Any]:
        """What the interim form says of the fold."""
        if self.error is not None:
            return {"state": "failed", "message": _failure(self.error)}
        commits, revisions, of = self.progress
        return {"state": "reading", "commits": commits, "revisions": revisions, "of": of}


def _failure(exc: BaseException) -> str:
    if isinstance(exc, GitmemError):
        return f"the history could not be read: {exc}"
    return (
        f"the history could not be read (unexpected {type(exc).__name__}: {exc}); "
        "please report this as a bug"
    )


class Ledgers:
    """Each store's ledger as one long-lived reader of ``repo`` holds them (the
    console), ``lock`` being the lock its requests hold while they use ``repo``. A
    store's first fold runs on a thread of its own, with a repository object of its
    own, so no request is held behind it (see the module's docstring); ``stopping``
    set stops the folds still running; ``release`` is called as each fold ends."""

    patience: tuple[int, int] | None = PATIENCE
    """See :data:`PATIENCE`; ``None``: a first request never waits for the fold."""
    apart: tuple[int, int] | None = PATIENCE
    """A fold longer than this (as :data:`PATIENCE` measures) goes on in a process of
    its own (:mod:`gitmem.ops.folding`); ``None``: every fold runs here."""
    rest_after: float | None = 0.5
    """Seconds after the last use of a store's ledger that its panel rests compressed
    (:meth:`Ledger.rest`); ``None``: never."""

    def __init__(
        self,
        repo: Repository,
        lock: threading.Lock,
        stopping: threading.Event | None = None,
        release: Callable[[], object] | None = None,
    ) -> None:
        self.repo = repo
        self.lock = lock
        self.stopping = stopping or threading.Event()
        self.release = release
        """Called as a store's fold ends, its repository closed and freed, and after
        the panels rest: a holder hands the memory freed back to the system (``None``:
        nothing is done)."""
        self._ledgers: dict[str, Ledger] = {}
        self._readings: dict[str, _Reading] = {}
        self._listed: dict[str, tuple[str | None, bytes]] = {}
        self._last_use: dict[str, float] = {}
        """When each store's ledger was last used (``time.monotonic``)."""
        self._resting: threading.Timer | None = None
        """The timer that rests the panels once none is used (``None``: none is set)."""
        self.shed = False
        """Set when a store's ledger was first taken in (resumed, or its fold done): what
        was built on the way, the interim rows too, is garbage now, and a holder may hand
        the memory it held back to the system (the reader clears it)."""

    def panel(self, store: str) -> bytes:
        """The Memories panel's JSON of ``store`` (one that exists): the rows as
        :meth:`Ledger.panel` holds them, at the store's head; while
        the store's first fold runs, ``{"history": {"state": "reading", "commits",
        "revisions", "of"}, "rows": [...]}``, the rows the head's listing knows (or
        ``{"state": "failed", "message"}`` if the fold failed). Takes the lock itself:
        call it without."""
        with self.lock:
            if self._take(store):
                return self._complete(store)
            reading = self._begin(store)
            if reading is None:
                return self._complete(store)
        reading.settled.wait()
        with self.lock:
            if self._take(store):
                return self._complete(store)
            listed = self._listed_here(store)
        if not listed:
            reading.listed.wait()
        with self.lock:
            if self._take(store):
                return self._complete(store)
            history = json.dumps(self.history(store)).encode()
            return b'{"history":' + history + b',"rows":' + self._rows(store, reading) + b"}"

    def wait(self, stores: list[str], *, whole: bool = True) -> None:
        """Wait for the first folds of ``stores`` to complete (starting those not yet
        started), so that :meth:`ledger` then holds the lock only to follow the head;
        without ``whole``, only while each is short (see :data:`PATIENCE`), as a first
        request waits before :meth:`held`. Takes the lock itself: call it without."""
        for store in stores:
            with self.lock:
                if self._take(store):
                    continue
                reading = self._begin(store)
            if reading is not None:
                (reading.done if whole else reading.settled).wait()

    def settle(self, stores: list[str]) -> None:
        """``wait(stores, whole=False)``."""
        self.wait(stores, whole=False)

    def held(self, store: str) -> Ledger | None:
        """``store``'s ledger at its head once its first fold is done, else ``None``
        (the fold is started if it was not; :meth:`history` says how far it is). Call
        it holding the lock."""
        if not self._take(store) and self._begin(store) is not None:
            return None
        return self._followed(store)

    def history(self, store: str) -> dict[str, Any]:
        """How far the first fold of ``store`` has gone, as the interim form says it
        (call it holding the lock, after :meth:`held` said ``None``)."""
        return self._readings[store].history()

    def ledger(self, store: str) -> Ledger:
        """``store``'s ledger at its head (call it holding the lock; after :meth:`wait`,
        it folds no more than what came since); a fold that failed raises its error."""
        if not self._take(store):
            reading = self._begin(store)
            if reading is not None:
                reading.done.wait()
                if not self._take(store):
                    raise reading.error or _Stopped("the console is closing")
        return self._followed(store)

    def _take(self, store: str) -> bool:
        """Whether the store's ledger is held here (a fold that completed is taken)."""
        if store in self._ledgers:
            return True
        reading = self._readings.get(store)
        if reading is None or not reading.done.is_set() or reading.error is not None:
            return False
        self._ledgers[store] = reading.ledger
        del self._readings[store]
        # the interim form's rows answered only while the fold ran: at 100,000 memories
        # they are megabytes the panel never sends again
        self._listed.pop(store, None)
        self.shed = True
        return True

    def _begin(self, store: str) -> _Reading | None:
        """The store's fold, started unless it runs (or failed at the head): ``None``
        if the ledger the repository kept is at the head, and so is held now."""
        head = self.repo.head(store)
        reading = self._readings.get(store)
        if reading is not None and (reading.error is None or reading.head == head):
            return reading
        ledger = Ledger(store)
        resumed = ledger.resume(self.repo)
        if resumed and ledger.head == head:
            self._ledgers[store] = ledger
            self._readings.pop(store, None)
            self.shed = True
            return None
        reading = self._readings[store] = _Reading(
            ledger, head, self.patience, self.stopping, self.release, self.apart
        )
        name = f"gitmem-ledger {store}"
        threading.Thread(target=reading.run, args=(self._open,), name=name, daemon=True).start()
        return reading

    def _open(self) -> Repository:
        """A repository object of the fold's own: the reader's serves its requests."""
        return type(self.repo).open(self.repo.directory)

    def _complete(self, store: str) -> bytes:
        return self._followed(store).panel()

    def _followed(self, store: str) -> Ledger:
        """The ledger held of ``store``, brought to its head and noted as just used
        (call it holding the lock): its panel rests once unused for :attr:`rest_after`
        seconds."""
        ledger = self._ledgers[store]
        ledger.follow(self.repo)
        if self.rest_after is not None:
            self._last_use[store] = time.monotonic()
            if self._resting is None:
                self._rest_in(self.rest_after)
        return ledger

    def _rest_in(self, seconds: float) -> None:
        timer = self._resting = threading.Timer(seconds, self._rest)
        timer.name, timer.daemon = "gitmem-panels rest", True
        timer.start()

    def _rest(self) -> None:
        """Rest each panel unused for :attr:`rest_after` seconds; wait again for those
        used since."""
        rested = False
        with self.lock:
            self._resting = None
            if self.rest_after is None or self.stopping.is_set():
                return
            now, soonest = time.monotonic(), None
            for store, used in list(self._last_use.items()):
                left = used + self.rest_after - now
                if left > 0:
                    soonest = left if soonest is None else min(soonest, left)
                    continue
                del self._last_use[store]
                ledger = self._ledgers.get(store)
                rested = (ledger is not None and ledger.rest()) or rested
            if soonest is not None:
                self._rest_in(soonest)
        if rested and self.release is not None:
            self.release()  # the panels' JSON, freed: handed back to the system

    def _listed_here(self, store: str) -> bool:
        """Whether the interim form's rows of the head are held, or read here from the
        listing the repository keeps of it (at little cost: a fold gone apart is not
        waited for, nor does it read them again)."""
        head = self.repo.head(store)
        cached = self._listed.get(store)
        if cached is not None and cached[0] == head:
            return True
        rows = kept_listed_json(self.repo, store)
        if rows is not None:
            self._listed[store] = (head, rows)
        return rows is not None

    def _rows(self, store: str, reading: _Reading) -> bytes:
        """The interim form's rows as JSON, kept until the store's head moves (the
        page asks again every second while the history is read): those the fold gone
        apart read, if they are of the head, else read here."""
        head = self.repo.head(store)
        cached = self._listed.get(store)
        if cached is None or cached[0] != head:
            offered, reading.listing = reading.listing, None
            if offered is not None and offered[0] == head:
                rows = offered[1]
            else:
                rows = listed_json(self.repo, store)
            cached = self._listed[store] = (head, rows)
        return cached[1]
