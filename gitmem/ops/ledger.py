"""Every memory a store ever held, as the console's Memories panel draws it: the
ledger folded from every revision (:class:`Ledger`), and each store's ledger as a
long-lived reader holds it (:class:`Ledgers`), whose first reading of a long history
runs on a thread (or a process) of its own while the panel answers at once from the
head's listing.

**The first request.** A ledger folds every revision of its store: on a store of
50,000 revisions with nothing kept (a fresh clone), some 200,000 objects and many
seconds. So the panel never waits for that. A store with no ledger yet in this process
gets one: the ledger the repository kept, if it is at the head, answers at once;
otherwise the fold starts on a thread (with a repository object of its own) and the
request waits only while the fold is short (up to :data:`PATIENCE` commits walked and
revisions read). A longer one is answered in the *interim form*: the rows of the
head's listing, each live memory's slug, description and characters, with every field
the listing does not know ``null`` (never a guess), under what the fold has read so
far. Deleted memories and the history's fields come with the completed form, exactly
the JSON a console that was running all along answers. What the fold worked out is
kept as ever, so a later process goes on from it.

**A long fold goes apart.** A fold beyond :attr:`Ledgers.apart` stops and goes on in
a process of its own (:mod:`gitmem.ops.folding`), which also reads the interim form's
listing: the millions of small objects the two make would otherwise leave the reader
tens of megabytes larger for good. The reader then takes in the ledger the child kept
and goes on from its head.
"""

from __future__ import annotations

import bisect
import json
import threading
from array import array
from collections.abc import Callable, Mapping
from functools import partial
from json.encoder import encode_basestring
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from gitmem.errors import GitmemError
from gitmem.types import AGENT_EMAIL, FileRevision

if TYPE_CHECKING:
    from gitmem.repository import Repository
    from gitmem.store.outline import Outline, Progress

__all__ = ["PATIENCE", "Ledger", "Ledgers"]


_FIELDS = (
    "slug", "description", "live", "chars", "peak_chars", "revisions", "revision", "author",
    "time",
)  # fmt: skip
"""The fields of one memory's row, in the order of the console's JSON row (a row in the
making is a list of their values, in this order)."""
_SLUG, _DESCRIPTION, _LIVE, _CHARS, _PEAK, _REVISIONS, _REVISION, _AUTHOR, _TIME = range(9)


def _row_json(row: list[Any]) -> bytes:
    return json.dumps(dict(zip(_FIELDS, row, strict=True)), ensure_ascii=False).encode()


_BETWEEN = b'},{"slug": '
"""What stands between two rows of the panel's JSON, and nowhere else: inside a JSON
string every quote is escaped."""


def _starts(panel: bytes) -> array[int] | None:
    """Where each row of ``panel`` (the rows' JSON) starts; ``None`` if it is not such."""
    if panel == b"[]":
        return array("Q")
    if not (panel.startswith(b'[{"slug": ') and panel.endswith(b"}]")):
        return None
    starts = array("Q", [1])
    at = panel.find(_BETWEEN)
    while at >= 0:
        starts.append(at + 2)
        at = panel.find(_BETWEEN, at + 2)
    return starts


class _Change(NamedTuple):
    """What the ledger reads of one revision, of a memory or of a file store's file."""

    slug: str
    description: str
    chars: int
    removed: bool
    revision: int
    author: str
    time: int
    commit: str
    made_by: tuple[str, str, Mapping[str, str]] | None
    """Who made the commit, as ``Repository.made_by`` says (``None``: ask it)."""

    @classmethod
    def of(cls, o: Outline) -> _Change:
        return cls(
            o.slug, o.description, o.chars, o.removed, o.revision, o.author, o.time, o.commit,
            o.made_by,
        )  # fmt: skip

    @classmethod
    def of_file(cls, f: FileRevision) -> _Change:
        return cls(
            f.path, "", len(f.text), f.removed, f.revision, f.author, f.time, f.commit, None
        )  # fmt: skip


_KIND, _FORM = "ledger", 2
"""The name the ledger is kept under, beside the repository's other derived files, and
the form of what is kept (a ledger kept in form 1 could count a revision twice)."""
_KEEP_AFTER = 256
"""How many revisions a ledger folds in before it is kept again (a fold of the whole
history is kept at once): a later process goes on from the kept head, and a store
moving one revision at a time is not rewritten whole at each move."""


class Ledger:
    """Every memory a store ever held (deleted ones too), with its size and peak: what
    the console's treemap draws. It follows the store's head one change at a time. It
    holds the rows only as the panel's JSON, one text with where each row starts (at
    100,000 memories an object per memory would be several times its size); a move
    reads back the rows it changes and splices their new JSON in. What it folded is
    kept in the repository with its head, so a new process goes on from there rather
    than folding every revision again."""

    def __init__(self, store: str) -> None:
        self.store = store
        self.head: str | None = None
        self._panel = b"[]"
        self._starts = array("Q")
        self._authors: dict[str, int] = {}
        self._agents: dict[str, dict[str, Any]] = {}
        self._resumed = False
        self._unkept = 0
        self._kept_at: str | None = None
        """The head the ledger as held was last kept at (or resumed from)."""

    def __len__(self) -> int:
        """How many memories the store ever held."""
        return len(self._starts)

    def follow(self, repo: Repository, progress: Progress | None = None) -> None:
        """Bring the ledger up to the store's head (``progress`` is told how far the
        reading of revisions has gone, as :meth:`Repository.outlines` tells it)."""
        head = repo.head(self.store)
        if head == self.head:
            return
        if not self._resumed:
            self.resume(repo)
            if head == self.head:
                return
        files = head is not None and repo.layout(self.store) == "files"
        # read up to the head recorded below: a write landing meanwhile waits for the next
        outlines = partial(repo.outlines, self.store, at=head, progress=progress)
        news: list[_Change] = []
        if self.head and not files:
            news = [_Change.of(o) for o in outlines(self.head)]
        whole = not news or head is None
        if whole:
            # a first look, a file store (small, written by the memory tool), or a branch
            # rewritten under us: fold it all again
            self._panel, self._starts, self._authors, self._agents = b"[]", array("Q"), {}, {}
            if files:
                news = [_Change.of_file(f) for f in repo.file_revisions(self.store, at=head)]
            elif head is not None:
                news = [_Change.of(o) for o in outlines()]
        self._fold(repo, news)
        self.head = head
        self._unkept += len(news)
        if whole or self._unkept >= _KEEP_AFTER:
            self.keep(repo)

    def keep(self, repo: Repository) -> bool:
        """Keep what the ledger folded, at its head, for a later process to go on from
        (unless it is kept there already); whether it is kept (a repository this process
        may not write to keeps nothing: derived data)."""
        if self.head is None:
            return False
        if self._kept_at != self.head:
            self._unkept = 0
            if repo.keep(_KIND, self.store, self.head, self._kept()):
                self._kept_at = self.head
        return self._kept_at == self.head

    def _fold(self, repo: Repository, news: list[_Change]) -> None:
        changed: dict[str, tuple[int, bool, list[Any]]] = {}
        seen: set[str] = set()
        held = len(self._starts)
        # a row is found by reading a few rows; a move of many reads them all once
        find = self._find if len(news) * held.bit_length() < held else self._finder()
        for r in news:
            place = changed.get(r.slug)
            if place is None:
                at, found = find(r.slug)
                row = found or [r.slug, "", False, 0, 0, 0, 0, "", 0]
                changed[r.slug] = (at, found is not None, row)
            else:
                row = place[2]
            row[_DESCRIPTION] = r.description
            row[_LIVE] = not r.removed
            row[_CHARS] = r.chars
            row[_PEAK] = max(row[_PEAK], r.chars)
            row[_REVISIONS] += 1
            row[_REVISION] = max(row[_REVISION], r.revision)
            row[_AUTHOR], row[_TIME] = r.author, r.time
            self._authors[r.author] = self._authors.get(r.author, 0) + 1
            # the revisions a fold takes in are those of commits it has not met
            if r.commit not in seen:
                seen.add(r.commit)
                self._met(r.made_by or repo.made_by(r.commit))
        self._splice(changed)

    def _row(self, at: int) -> bytes:
        """The JSON of row ``at`` as held."""
        starts = self._starts
        end = starts[at + 1] - 1 if at + 1 < len(starts) else len(self._panel) - 1
        return self._panel[starts[at] : end]

    def _find(self, slug: str) -> tuple[int, list[Any] | None]:
        """Where ``slug``'s row is (or would go), and its values if it is held."""
        lo, hi = 0, len(self._starts)
        while lo < hi:
            mid = (lo + hi) // 2
            row: dict[str, Any] = json.loads(self._row(mid))
            if row["slug"] == slug:
                return mid, [row[field] for field in _FIELDS]
            if row["slug"] < slug:
                lo = mid + 1
            else:
                hi = mid
        return lo, None

    def _finder(self) -> Callable[[str], tuple[int, list[Any] | None]]:
        """:meth:`_find` over every row, read once."""
        rows: list[dict[str, Any]] = json.loads(self._panel)
        slugs = [row["slug"] for row in rows]

        def find(slug: str) -> tuple[int, list[Any] | None]:
            at = bisect.bisect_left(slugs, slug)
            if at < len(slugs) and slugs[at] == slug:
                return at, [rows[at][field] for field in _FIELDS]
            return at, None

        return find

    def _splice(self, changed: dict[str, tuple[int, bool, list[Any]]]) -> None:
        """Put the rows of ``changed`` in the panel, in slug order, each (``{slug: (at,
        held, row)}``) either replacing row ``at`` (``held``) or going in before it."""
        if not changed:
            return
        old, starts = self._panel, self._starts
        pieces: list[bytes] = []
        offsets = array("Q")
        size, taken = 1, 0  # the bytes written after "[", the old rows copied or replaced
        for slug in sorted(changed):
            at, held, row = changed[slug]
            if at > taken:
                begin = starts[taken]
                end = starts[at] - 1 if at < len(starts) else len(old) - 1
                pieces.append(old[begin:end])
                offsets.extend(s - begin + size for s in starts[taken:at])
                size += end - begin + 1
            text = _row_json(row)
            pieces.append(text)
            offsets.append(size)
            size += len(text) + 1
            taken = at + held
        if taken < len(starts):
            begin = starts[taken]
            pieces.append(old[begin:-1])
            offsets.extend(s - begin + size for s in starts[taken:])
        self._panel = b"[" + b",".join(pieces) + b"]"
        self._starts = offsets

    def _kept(self) -> tuple[object, ...]:
        """What the repository keeps: the form, the panel's JSON, authors, agents."""
        return (_FORM, self._panel, self._authors, self._agents)

    def resume(self, repo: Repository) -> bool:
        """Take the ledger the repository last kept for the store, if one reads whole
        (once: a ledger resumes before its first fold); whether it took one."""
        if self._resumed:
            return self.head is not None
        self._resumed = True
        found = repo.kept(_KIND, self.store)
        if found is None:
            return False
        try:
            form, panel, authors, agents = cast(tuple[Any, Any, Any, Any], found.value)
        except (TypeError, ValueError):
            return False  # not a ledger as this version keeps it: fold the history again
        if form != _FORM or not (
            isinstance(panel, bytes) and isinstance(authors, dict) and isinstance(agents, dict)
        ):
            return False
        starts = _starts(panel)
        if starts is None:
            return False
        self._panel, self._starts = panel, starts
        self._authors = cast(dict[str, int], authors)
        self._agents = cast(dict[str, dict[str, Any]], agents)
        self.head = self._kept_at = found.head
        return True

    def rows(self) -> list[dict[str, Any]]:
        """``[{"slug", "description", "live", "chars", "peak_chars", "revisions",
        "revision", "author", "time"}]`` sorted by slug; a deleted memory's ``chars`` is
        the size of the text its deletion removed."""
        return cast(list[dict[str, Any]], json.loads(self._panel))

    def panel(self) -> bytes:
        """``rows()`` as JSON, as held (nothing is built to answer)."""
        return self._panel

    def rows_json(self) -> str:
        """``rows()`` as JSON text."""
        return self._panel.decode()

    def authors(self) -> dict[str, int]:
        """Each commit author's name with how many revisions they made."""
        return dict(sorted(self._authors.items()))

    def agents(self) -> dict[str, dict[str, Any]]:
        """Each agent instance that wrote the store (an operator and ``gitmem sync``
        are not agents): ``{instance: {"profile", "scope", "started_as", "commits"}}``,
        the profile and scope as its latest commit records them (``None`` where no
        commit of its records them)."""
        return {name: dict(found) for name, found in sorted(self._agents.items())}

    def _met(self, made_by: tuple[str, str, Mapping[str, str]]) -> None:
        """Note the agent that made a commit (``made_by`` says who), if an agent did: it
        records an agent (the ``Gitmem-Agent`` trailer), or it is authored as one."""
        from gitmem.trailers import read_agent_trailer

        name, email, trailers = made_by
        said = read_agent_trailer(trailers)
        if said is None and not email.endswith(AGENT_EMAIL):
            return
        instance = said["instance"] if said is not None else name
        found = self._agents.setdefault(
            instance, {"profile": None, "scope": None, "started_as": None, "commits": 0}
        )
        found["commits"] += 1
        if said is not None:
            found.update(
                profile=said["profile"], scope=said["scope"], started_as=said["started-as"]
            )


def listed(repo: Repository, store: str, at: str | None = None) -> list[dict[str, Any]]:
    """The panel's rows as the listing of the head (or of commit ``at``) knows them:
    each live memory's slug, description and characters, and every other field
    ``None`` (a file store's: none); :func:`listed_json` read back."""
    return cast(list[dict[str, Any]], json.loads(listed_json(repo, store, at)))


def listed_json(repo: Repository, store: str, at: str | None = None) -> bytes:
    """:func:`listed` as the interim form's JSON."""
    return _listed_json([] if repo.layout(store) == "files" else repo.summaries(store, at))


def kept_listed_json(repo: Repository, store: str) -> bytes | None:
    """:func:`listed_json` of the head, if the repository keeps the listing of its tree
    (then it is read from that file alone, at little cost: some 0.1 s at 100,000
    memories); ``None`` if it keeps none."""
    rows = repo.kept_summaries(store)
    if rows is None:
        return None
    return _listed_json([] if repo.layout(store) == "files" else rows)


_UNKNOWN = "".join(f', "{field}": null' for field in _FIELDS[_PEAK:]) + "}"
"""The end of an interim row: every field only the history knows, ``null``."""


def _listed_json(rows: list[tuple[str, tuple[str, int, int]]]) -> bytes:
    """The interim rows of a listing's as ``json.dumps`` writes a dict each (with its
    encoder of strings), a format a row: dicts made and dumped take several times as long."""
    quoted = encode_basestring
    text = ", ".join(
        [
            f'{{"slug": {quoted(slug)}, "description": {quoted(about)}, "live": true, '
            f'"chars": {chars}{_UNKNOWN}'
            for slug, (about, chars, _) in rows
        ]
    )
    return f"[{text}]".encode()


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
        """Called as a store's fold ends, its repository closed and freed: a holder
        hands the memory the fold took back to the system (``None``: nothing is done)."""
        self._ledgers: dict[str, Ledger] = {}
        self._readings: dict[str, _Reading] = {}
        self._listed: dict[str, tuple[str | None, bytes]] = {}
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
        ledger = self._ledgers[store]
        ledger.follow(self.repo)
        return ledger

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
        ledger = self._ledgers[store]
        ledger.follow(self.repo)
        return ledger

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
        ledger = self._ledgers[store]
        ledger.follow(self.repo)
        return ledger.panel()

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
