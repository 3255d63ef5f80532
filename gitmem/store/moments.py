"""A moment of a store's history: the commit a reader names with ``--at`` or ``at=``.

A moment is a commit, by its full id or an unambiguous prefix of at least four hex
digits, that lies on the store's own history (its head or one of the head's ancestors);
or an ISO 8601 date or date and time, which stands for the newest commit on the store's
first-parent line (the commits its branch pointed at, one after another) made at or
before it. A date alone means the end of that day; a time without a zone is UTC.

Anything else, and a moment that names no commit of the store, is refused with one
line; nothing is read or written.

:class:`Past` is the part of a repository that reads its stores' past (a base of
``Storage``): it names a moment's commit, and makes a *reading of the past*, the
repository with a store pinned at a commit: every read of the store answers as of it,
and every write refuses, changing nothing.
"""

from __future__ import annotations

import bisect
import copy
import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, time
from typing import TYPE_CHECKING, Self

from gitmem.errors import InvalidArgument, NotFound, ReadOnly
from gitmem.store import blame
from gitmem.store.layout import check_store
from gitmem.types import check_slug

if TYPE_CHECKING:
    from dulwich.refs import Ref

    from gitmem.store.blame import Origin
    from gitmem.store.history import History
    from gitmem.store.objects import ObjectReader
    from gitmem.store.refs import Refs

__all__ = ["MIN_PREFIX", "Past", "parse_date", "past_write", "resolve"]

MIN_PREFIX = 4
"""The fewest hex digits a commit prefix may have."""
_HEX = re.compile(r"[0-9a-f]{4,40}")
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def parse_date(text: str) -> datetime | None:
    """The moment an ISO 8601 date or date and time stands for (a date alone: the end
    of that day; no zone: UTC), or ``None`` if ``text`` is not one."""
    if not text or len(text) > 64 or not text[:1].isdigit():
        return None
    try:
        if _DAY.fullmatch(text):
            day = datetime.fromisoformat(text).date()
            return datetime.combine(day, time.max, UTC)
        found = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    return found if found.tzinfo is not None else found.replace(tzinfo=UTC)


def resolve(
    store: str,
    head: str | None,
    moment: str,
    *,
    contains: Callable[[str], bool],
    commits: Callable[[], list[str]],
    line: Callable[[], list[str]],
    commit_time: Callable[[str], int],
    newest: Callable[[int], str | None] | None = None,
) -> str:
    """The commit of ``store``'s history (up to ``head``) that ``moment`` names.

    ``contains`` says whether a full commit id is on the history, ``commits`` lists
    every commit of it and ``line`` those of the head's first-parent line, oldest
    first; ``commit_time`` reads one commit's time. The line is searched by halving,
    as its commits' times rise along it; ``newest``, if given, does that search
    itself (the newest commit of the line at or before a time; ``None``: none)."""
    given = moment.strip()
    if head is None:
        raise NotFound(f"store {store!r} has no commits yet, so it has no past to read")
    if _HEX.fullmatch(given.lower()):
        return _by_id(store, head, given.lower(), contains, commits)
    when = parse_date(given)
    if when is None:
        raise InvalidArgument(
            f"{given[:80]!r} is neither a commit id (at least {MIN_PREFIX} hex digits) nor an "
            "ISO 8601 date such as 2026-05-01 or 2026-05-01T14:30:00Z"
        )
    limit = int(when.timestamp())
    if commit_time(head) <= limit:
        return head
    if newest is None:
        commits_of_line = line()
        at = bisect.bisect_right(commits_of_line, limit, key=commit_time)
        found = commits_of_line[at - 1] if at else None
    else:
        found = newest(limit)
    if found is not None:
        return found
    raise NotFound(
        f"store {store!r} has no commit at or before {when.strftime('%Y-%m-%d %H:%M:%S UTC')}; "
        "name a later moment"
    )


def _by_id(
    store: str,
    head: str,
    prefix: str,
    contains: Callable[[str], bool],
    commits: Callable[[], list[str]],
) -> str:
    if len(prefix) == 40:
        if prefix == head or contains(prefix):
            return prefix
        found: list[str] = []
    elif head.startswith(prefix):
        found = [head, *(c for c in commits() if c.startswith(prefix) and c != head)]
    else:
        found = [c for c in commits() if c.startswith(prefix)]
    if len(found) == 1:
        return found[0]
    if not found:
        raise NotFound(
            f"{prefix[:12]} names no commit of store {store!r}; `gitmem log` lists its history"
        )
    raise InvalidArgument(
        f"{prefix} names {len(found)} commits of store {store!r}; give more of its digits"
    )


def past_write(store: str, commit: str) -> ReadOnly:
    """The refusal of a write through a reading of ``store`` as of ``commit``."""
    return ReadOnly(
        f"this reads store {store!r} as it stood at commit {commit[:12]}, a moment in its "
        "past, which cannot change: nothing was written; bind at the store's head to write"
    )


class Past:
    """The part of a repository that reads its stores' past (a base of ``Storage``)."""

    _refs: Refs
    _reader: ObjectReader
    # a reading of the past: store → the commit it reads as its head; and whether this
    # object owns the repository's files (a reading of the past closes nothing)
    _pins: dict[str, str]
    _owner: bool

    def _ref(self, store: str) -> Ref:
        """A store's branch (``Storage`` gives it)."""
        raise NotImplementedError

    def _history(self, store: str) -> History:
        """A store's history index (``Storage`` gives it)."""
        raise NotImplementedError

    def head(self, store: str) -> str | None:
        """A store's head, or the commit a reading of the past pins (``Storage`` gives
        it)."""
        raise NotImplementedError

    def _expect(self, store: str, head: str | None, *, files: bool, doing: str) -> None:
        """Refuse a store of the other kind (``Storage`` gives it)."""
        raise NotImplementedError

    def commit_at(self, store: str, at: str) -> str:
        """The commit of the store's history that ``at`` names: a commit id (full, or at
        least four leading hex digits) on the history, or an ISO 8601 date or date and
        time (the newest commit at or before it). See :mod:`gitmem.store.moments`."""
        head = self._refs.read(self._ref(check_store(store)))
        history = self._history(store)
        return resolve(
            store,
            head,
            at,
            contains=lambda sha: history.contains(head, sha),
            commits=lambda: history.commits(head),
            line=lambda: history.commits(head, line=True),
            commit_time=self._commit_time,
            newest=lambda limit: (
                history.newest_at(head, limit, self._commit_time) if head is not None else None
            ),
        )

    def _commit_time(self, sha: str) -> int:
        """A commit's (committer's) time, read from its raw header without making a
        commit object; anything unusual takes the ordinary path, with its errors."""
        from gitmem.store.objects import COMMIT

        header = self._reader.raw(sha, COMMIT).partition(b"\n\n")[0]
        for line in header.split(b"\n"):
            if line.startswith(b"committer "):
                when = line.rpartition(b"> ")[2].split(b" ", 1)[0]
                if when.isdigit():
                    return int(when)
                break
        return self._reader.commit(sha).commit_time

    def as_of(self, store: str, at: str) -> Self:
        """This repository reading ``store`` as it stood at the moment ``at`` names (see
        :meth:`commit_at`): every read of the store answers as of that commit, and
        every write refuses, changing nothing. The repository it was made from stays
        open and unchanged."""
        commit = self.commit_at(store, at)
        view = copy.copy(self)
        view._pins = {**self._pins, store: commit}
        view._owner = False
        return view

    def pinned(self, store: str) -> str | None:
        """The commit this is a reading of ``store`` at (see :meth:`as_of`), or ``None``
        when it reads the store's head."""
        return self._pins.get(store)

    def parents(self, commit: str) -> list[str]:
        """The parents of ``commit``, the first first."""
        return list(self._reader.parents(commit))

    def descends(self, store: str, commit: str, ancestor: str) -> bool:
        """Whether ``ancestor`` is ``commit`` or one of its ancestors (both of the store)."""
        return self._history(check_store(store)).contains(commit, ancestor)

    def origins(self, store: str, slug: str, commit: str | None = None) -> list[Origin]:
        """Where each line of ``slug``'s files came from as of ``commit`` (default: the
        head), as ``git blame`` finds it (see :mod:`gitmem.store.blame`)."""
        check_slug(slug)
        head = commit if commit is not None else self.head(store)
        self._expect(store, head, files=False, doing="blame its files with `git blame`")
        if head is None:
            return []
        return blame.line_origins(self._reader, self._history(store), head, slug)

    def made_by(self, commit: str) -> tuple[str, str, Mapping[str, str]]:
        """Who made ``commit`` (author name and email) and the extra trailers its
        message records (none for a commit gitmem did not make)."""
        found = self._reader.commit(commit)
        name, _, email = found.author.decode("utf-8", "replace").partition(" <")
        facts = self._reader.facts(commit)
        return name, email.removesuffix(">"), facts.extra if facts is not None else {}

    def _refuse_past(self, store: str | None = None) -> None:
        """A reading of the past writes nothing."""
        if self._pins:
            pinned = store if store in self._pins else next(iter(self._pins))
            raise past_write(pinned, self._pins[pinned])
