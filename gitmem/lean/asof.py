"""Which commit a moment names: the rule behind every ``--at`` and ``at=``, read alike
by the store's reader and the lean read path (standard library only).

A moment is a commit, by its full id or an unambiguous prefix of at least four hex
digits, that lies on the store's own history (its head or one of the head's ancestors);
or an ISO 8601 date or date and time, which stands for the newest commit on the store's
first-parent line (the commits its branch pointed at, one after another) made at or
before it. A date alone means the end of that day; a time without a zone is UTC.

Anything else, and a moment that names no commit of the store, is refused with one
line; nothing is read or written.
"""

from __future__ import annotations

import bisect

from gitmem.errors import InvalidArgument, NotFound

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import datetime
    from typing import Protocol

    class Line(Protocol):
        """What :func:`named` asks of a store's history index (as
        :class:`~gitmem.store.history.History` answers)."""

        def contains(self, head: str | None, commit: str) -> bool: ...

        def commits(
            self, head: str | None, *, line: bool = False, prefix: str = ""
        ) -> list[str]: ...

        def newest_at(
            self, head: str, limit: int, commit_time: Callable[[str], int]
        ) -> str | None: ...


__all__ = ["MIN_PREFIX", "commit_id", "named", "parse_date", "resolve"]

MIN_PREFIX = 4
"""The fewest hex digits a commit prefix may have."""
_HEX = frozenset("0123456789abcdef")
# shapes checked without ``re``, and ``datetime`` loaded only for a date: loading ``re``
# alone would cost a fresh process more than the lean read of a commit it names


def commit_id(text: str) -> bool:
    """Whether ``text`` has a commit id's shape: 4 to 40 lower-case hex digits."""
    return MIN_PREFIX <= len(text) <= 40 and _HEX.issuperset(text)


def _day(text: str) -> bool:
    """Whether ``text`` has a date's shape alone: ``DDDD-DD-DD`` (any decimal digits)."""
    return (
        len(text) == 10
        and text[4] == text[7] == "-"
        and (text[:4] + text[5:7] + text[8:]).isdecimal()
    )


def parse_date(text: str) -> datetime | None:
    """The moment an ISO 8601 date or date and time stands for (a date alone: the end
    of that day; no zone: UTC), or ``None`` if ``text`` is not one."""
    if not text or len(text) > 64 or not text[:1].isdigit():
        return None
    from datetime import UTC, datetime, time

    try:
        if _day(text):
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
    starting: Callable[[str], list[str]] | None = None,
) -> str:
    """The commit of ``store``'s history (up to ``head``) that ``moment`` names.

    ``contains`` says whether a full commit id is on the history, ``commits`` lists
    every commit of it and ``line`` those of the head's first-parent line, oldest
    first; ``commit_time`` reads one commit's time. The line is searched by halving,
    as its commits' times rise along it; ``newest``, if given, does that search
    itself (the newest commit of the line at or before a time; ``None``: none), and
    ``starting``, if given, lists the commits whose ids start with a prefix itself."""
    given = moment.strip()
    if head is None:
        raise NotFound(f"store {store!r} has no commits yet, so it has no past to read")
    if commit_id(given.lower()):

        def listed(prefix: str) -> list[str]:
            if starting is not None:
                return starting(prefix)
            return [c for c in commits() if c.startswith(prefix)]

        return _by_id(store, head, given.lower(), contains, listed)
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
    import time  # the moment in UTC, as commit times are shown

    shown = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(limit))
    raise NotFound(f"store {store!r} has no commit at or before {shown}; name a later moment")


def named(
    store: str, head: str | None, moment: str, history: Line, commit_time: Callable[[str], int]
) -> str:
    """The commit of ``store``'s history up to ``head`` that ``moment`` names, as
    :func:`resolve` finds it from the store's history index."""
    return resolve(
        store,
        head,
        moment,
        contains=lambda sha: history.contains(head, sha),
        commits=lambda: history.commits(head),
        starting=lambda prefix: history.commits(head, prefix=prefix),
        line=lambda: history.commits(head, line=True),
        commit_time=commit_time,
        newest=lambda limit: (
            history.newest_at(head, limit, commit_time) if head is not None else None
        ),
    )


def _by_id(
    store: str,
    head: str,
    prefix: str,
    contains: Callable[[str], bool],
    starting: Callable[[str], list[str]],
) -> str:
    if len(prefix) == 40:
        if prefix == head or contains(prefix):
            return prefix
        found: list[str] = []
    elif head.startswith(prefix):
        found = [head, *(c for c in starting(prefix) if c != head)]
    else:
        found = starting(prefix)
    if len(found) == 1:
        return found[0]
    if not found:
        raise NotFound(
            f"{prefix[:12]} names no commit of store {store!r}; `gitmem log` lists its history"
        )
    raise InvalidArgument(
        f"{prefix} names {len(found)} commits of store {store!r}; give more of its digits"
    )
