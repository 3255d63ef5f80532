"""The text the read commands print, made from what they read: the one home of these
lines, for the full command line's reports (:mod:`gitmem.ops.reports`) and the lean
read path alike."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "CARETS",
    "ROWS_FORMAT",
    "Blamed",
    "blame_text",
    "block",
    "counted",
    "day",
    "excerpt",
    "hits_text",
    "listing_text",
    "log_line",
    "memory_text",
    "state_around",
    "state_rows",
    "state_text",
    "when",
]

# Caret notation, as `cat -v` shows them: ESC is ^[, CR ^M, DEL ^?. Tab and newline
# stay; C1 controls (U+0080-U+009F, which some terminals obey as ESC sequences) show
# as \u0080-\u009f, and so do the marks that reorder text on a terminal that lays out
# both directions (a right-to-left override makes `a\u202egnp.exe` read `aexe.png`).
_BIDI = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
CARETS = (
    {c: f"^{chr(c + 64)}" for c in range(32) if c not in (9, 10)}
    | {0x7F: "^?"}
    | {c: f"\\u{c:04x}" for c in (*range(0x80, 0xA0), *_BIDI)}
)
"""What a terminal shows of agents' text: its control characters and direction marks
escaped (``str.translate`` table), so that they are shown, not obeyed."""


ROWS_FORMAT = 1
"""How :func:`listing_text` and :func:`state_rows` lay rows out: the texts kept of a
listing (:mod:`gitmem.lean.rendered`) are named by it, so it changes with either."""


def when(epoch: int) -> str:
    """A commit time as the command line prints it, in UTC. A commit may claim any
    number of seconds git can hold: one past the years 1 to 9999, which no date can
    show, is printed as that number (``@99999999999999``), so one made-up time never
    keeps a history from being read."""
    import time  # built in: the lean path spares itself ``datetime``

    try:
        found = time.gmtime(epoch)
    except (OverflowError, OSError, ValueError):
        return f"@{epoch}"
    if not 1 <= found.tm_year <= 9999:
        return f"@{epoch}"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", found)


def day(epoch: int) -> str:
    """The day of a commit time (``2026-12-01``), or the whole number :func:`when`
    prints for one no date can show."""
    shown = when(epoch)
    return shown if shown.startswith("@") else shown[:10]


def log_line(commit: str, op: str, name: str, revision: int, author: str, time: int) -> str:
    """``gitmem log``: one revision (of a memory, or a file store's path), without its
    newline."""
    return f"{commit[:12]}  {op:<6} {name} r{revision}  {author}  {when(time)}"


def memory_text(description: str, body: str, code: str, on_use: str) -> str:
    """A memory's text as a person reads it: description, body, then any code."""
    text = f"description: {description}\n\n{body}"
    for title, half in (("code", code), ("onUse", on_use)):
        if half:
            text += ("" if text.endswith("\n") else "\n") + f"\n# {title}\n{half}"
    return text


def block(text: str) -> str:
    """``text`` as a printed block: ending in exactly the newline it has or one more."""
    return text if text.endswith("\n") else text + "\n"


Blamed = tuple[str, int, str, str, int, str, int, str]
"""A blamed line as ``gitmem blame`` prints it: commit, revision, author, session, time,
the memory's file (``memory``, ``code``, ``onUse``), the line's number and its text."""


def blame_text(lines: list[Blamed]) -> list[str]:
    """``gitmem blame``: each line of a memory's files with what last changed it."""
    width = max((len(author) for _, _, author, _, _, _, _, _ in lines), default=0)
    return [
        f"{commit[:12]} r{revision:<3} {author:<{width}} {session[:12] or '-':<12} "
        f"{day(time)} {file:<6} {line:>4}) {text}\n"
        for commit, revision, author, session, time, file, line, text in lines
    ]


def counted(count: int, noun: str) -> str:
    """``count`` and ``noun``, plural unless the count is one: "1 memory", "2 memories"."""
    if count == 1:
        return f"{count} {noun}"
    if noun.endswith("y"):
        return f"{count} {noun[:-1]}ies"
    return f"{count} {noun}s"


def listing_text(listing: list[tuple[str, tuple[str, int, int]]]) -> str:
    """``gitmem ls`` of a memory store: each slug, its size and its description."""
    if not listing:
        return ""
    width = max(len(slug) for slug, _ in listing)
    # one string: 10,000 lines written one by one cost more than reading them; and
    # %-formatting is the quickest way Python has to lay them out
    return "".join(
        [
            "%-*s  %6d chars  %s\n" % (width, slug, chars, description)  # noqa: UP031
            for slug, (description, chars, _) in listing
        ]
    )


def state_text(event: dict[str, Any]) -> str:
    """``gitmem state``: a store's ``memory_state`` event as an operator reads it."""
    rows = [(m["slug"], (m["description"], m["chars"], m["lines"])) for m in event["memories"]]
    before, after = state_around(event)
    return before + state_rows(rows) + after


def state_rows(listing: list[tuple[str, tuple[str, int, int]]]) -> str:
    """``gitmem state``'s lines of a store's memories: each slug, its size in characters
    and lines, and its description."""
    # one string, laid out by %-formatting, as a listing's
    return "".join(
        [
            "  %-32s %7d chars %5d lines  %s\n" % (slug, chars, lines, description)  # noqa: UP031
            for slug, (description, chars, lines) in listing
        ]
    )


def state_around(event: dict[str, Any]) -> tuple[str, str]:
    """``gitmem state``'s lines before the memories' (the store) and after them (totals,
    peaks, limits and any limit exceeded), of a ``memory_state`` event whose
    ``memories`` are not read."""
    totals, peaks = event["totals"], event["peaks"]
    out = [
        f"totals: {counted(totals['count'], 'memory')}, {counted(totals['chars'], 'char')}, "
        f"{counted(totals['lines'], 'line')}",
        f"peaks:  {counted(peaks['count'], 'memory')}, {counted(peaks['chars'], 'char')}, "
        f"{counted(peaks['lines'], 'line')}",
    ]
    shown = ", ".join(f"{k}={v}" for k, v in event["limits"].items() if v) or "none"
    out.append(f"limits: {shown}")
    for e in event["exceeded"]:
        where = f" ({e['slug']})" if e["slug"] else ""
        out.append(
            f"exceeded: {e['limit']}{where} {e['value']} > {e['maximum']}, over by "
            f"{e['over']}; writes that do not bring it down are refused"
        )
    return f"store {event['store']}\n", "".join(line + "\n" for line in out)


def excerpt(body: str, keywords: list[str], width: int = 160) -> str:
    """A short piece of ``body`` around the first of the (lowered) ``keywords`` found
    in it: a search hit's excerpt."""
    lowered = body.lower()
    found = [i for i in (lowered.find(k) for k in keywords) if i >= 0]
    start = max(0, min(found) - width // 3) if found else 0
    piece = " ".join(body[start : start + width].split())
    prefix = "…" if start > 0 else ""
    suffix = "…" if start + width < len(body) else ""
    return f"{prefix}{piece}{suffix}"


def hits_text(hits: list[tuple[str, str, str]], keywords: list[str]) -> list[str]:
    """``gitmem search``: each hit's slug, description and excerpt, best first."""
    if not hits:
        return ["no memory mentions " + ", ".join(keywords) + "\n"]
    return [f"{slug}  {description}\n    {piece}\n" for slug, description, piece in hits]
