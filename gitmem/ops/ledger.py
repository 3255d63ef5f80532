"""Every memory a store ever held, as the console's Memories panel draws it: the
ledger folded from every revision (:class:`Ledger`), and the panel's *interim form*
(:func:`listed_json`), the rows of the head's listing, each live memory's slug,
description and characters, with every field the listing does not know ``null`` (never
a guess). How a long-lived reader holds each store's ledger, answering in the interim
form while a store's first fold runs, is :mod:`gitmem.ops.ledgers`'s.
"""

from __future__ import annotations

import bisect
import json
import zlib
from array import array
from collections.abc import Callable, Mapping
from functools import partial
from json.encoder import encode_basestring
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from gitmem.types import AGENT_EMAIL, FileRevision

if TYPE_CHECKING:
    from gitmem.repository import Repository
    from gitmem.store.outline import Outline, Progress

__all__ = ["Ledger", "kept_listed_json", "listed", "listed_json"]


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
_REST_FROM = 1 << 20
"""The smallest panel (bytes of JSON) that rests compressed: a smaller one saves little."""
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
        self._rested: bytes | None = None
        """The panel's JSON compressed while it rests (``_panel`` is then empty)."""
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
            self._rested = None
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
        panel, starts = self._json(), self._starts
        end = starts[at + 1] - 1 if at + 1 < len(starts) else len(panel) - 1
        return panel[starts[at] : end]

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
        rows: list[dict[str, Any]] = json.loads(self._json())
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
        old, starts = self._json(), self._starts
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
        return (_FORM, self._json(), self._authors, self._agents)

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
        self._panel, self._starts, self._rested = panel, starts, None
        self._authors = cast(dict[str, int], authors)
        self._agents = cast(dict[str, dict[str, Any]], agents)
        self.head = self._kept_at = found.head
        return True

    def rest(self) -> bool:
        """Hold the panel's JSON compressed until it is next used (a long-lived reader
        calls it once the panel has gone unasked for a while): every row repeats the
        same keys, so at 100,000 memories 17 MB rest in about 1 MB, inflated again in
        some 25 ms. Whether it was compressed now (a panel under :data:`_REST_FROM`
        is held as it is)."""
        if self._rested is not None or len(self._panel) < _REST_FROM:
            return False
        self._rested, self._panel = zlib.compress(self._panel, 1), b""
        return True

    def _json(self) -> bytes:
        """The panel's JSON, inflated first if it rests."""
        if self._rested is not None:
            self._panel, self._rested = zlib.decompress(self._rested), None
        return self._panel

    def rows(self) -> list[dict[str, Any]]:
        """``[{"slug", "description", "live", "chars", "peak_chars", "revisions",
        "revision", "author", "time"}]`` sorted by slug; a deleted memory's ``chars`` is
        the size of the text its deletion removed."""
        return cast(list[dict[str, Any]], json.loads(self._json()))

    def panel(self) -> bytes:
        """``rows()`` as JSON, as held (nothing is built to answer; a panel at rest is
        inflated, and held so until it rests again)."""
        return self._json()

    def rows_json(self) -> str:
        """``rows()`` as JSON text."""
        return self._json().decode()

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
