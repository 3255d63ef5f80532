"""The memory panel: what a run is told of the observation log when it starts.

The panel is built in this order, within a character budget (default 8,000):

1. Active context, Decisions, Lessons, Notes: the curated files, each clamped to 1,500
   characters (then the user's global lessons, newest first, likewise);
2. Recent entries: one ``- [type] title (id) · date — keywords`` line for each of the
   most recent index rows, newest first.

A section that does not fit the budget is dropped whole, and a curated file larger than
the panel reads (:data:`CURATED_READ_MAX`) is passed over unread; the index is read as
the log reads it (its newest files, within :data:`~gitmem.observe.logbook.INDEX_MAX`).
The panel is empty when the project has no memory yet, and in a model run the pipeline
itself started.
"""

from __future__ import annotations

import re

from gitmem.observe.config import read_config
from gitmem.observe.entries import parse_index, printable, unheaded
from gitmem.observe.logbook import ObservationLog, index_text, read_global_lessons
from gitmem.observe.model import observer_run
from gitmem.store import FileSnapshot, Storage

__all__ = ["BUDGET", "CURATED_READ_MAX", "SECTION_MAX", "panel", "start_panel"]

BUDGET = 8000
SECTION_MAX = 1500
RECENT = 20
"""Index rows the recent-entries section shows at most."""
_TAIL = RECENT * 400
CURATED_READ_MAX = 64 * 1024
"""The most bytes of a curated file the panel reads (the librarian writes at most 3 KB
of text); a larger one is passed over."""
_CURATED = (
    ("Active context", "active_context.md"),
    ("Decisions", "decisions.md"),
    ("Lessons", "lessons.md"),
    ("Notes", "notes.md"),
)
_OPEN = "<system-reminder>\n# Project memory\n"
_CLOSE = "</system-reminder>\n"
_TRAILER = "Search the observation log with mem_search and read an entry with mem_read.\n"


_FRAME = re.compile("system-reminder", re.IGNORECASE)


def _unframed(text: str) -> str:
    """``text`` that cannot close the panel's frame, in any case."""
    return _FRAME.sub("system reminder", text)


def _clamped(text: str, limit: int = SECTION_MAX) -> str:
    """``text`` within ``limit`` characters, cut at a line boundary; it cannot close
    the panel's frame, open a section of its own or repeat the panel's closing line
    (what a model wrote may quote a tool's hostile output)."""
    text = unheaded(_unframed(printable(text)).strip("\n"), (_TRAILER[:26],))
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", 0, limit + 1)
    return text[:cut] if cut > 0 else text[:limit]


def _read(snapshot: FileSnapshot | None, path: str, most: int) -> str:
    """The text of ``path``, or "" when there is none or it holds more than ``most``
    bytes (the panel's files are small; a larger one did not come from the steps)."""
    if snapshot is None:
        return ""
    size = snapshot.size(path)
    if size is None or size > most:
        return ""
    return snapshot.read(path) or ""


def recent_lines(index: str, count: int = RECENT) -> list[str]:
    """The recent-entries lines of the newest ``count`` rows of ``index``."""
    tail = index[-_TAIL:]
    if len(index) > _TAIL:
        tail = tail[tail.find("\n") + 1 :]
    rows = list(parse_index(tail))[-count:]
    lines: list[str] = []
    for row in reversed(rows):
        line = f"- [{row.kind}] {row.title} ({row.id}) · {row.date[:10]}"
        line += f" — {row.keywords}" if row.keywords else ""
        lines.append(_unframed(printable(line)))
    return lines


def panel(log: ObservationLog, budget: int = BUDGET, *, user_repo: str | None = None) -> str:
    """The panel for a run starting now ("" with no memory, or in a pipeline's run)."""
    if observer_run():
        return ""
    snapshot = log.snapshot()
    sections: list[str] = []
    curated = {path: _read(snapshot, path, CURATED_READ_MAX) for _, path in _CURATED}
    for title, path in _CURATED:
        text = _clamped(curated[path])
        if text:
            sections.append(f"## {title}\n{text}\n")
    held = set(curated["lessons.md"].splitlines())
    # newest first: the oldest lines must not hold the section for good
    global_lessons = _clamped(
        "\n".join(
            ln for ln in reversed(read_global_lessons(user_repo).splitlines()) if ln not in held
        )
    )
    if global_lessons:
        sections.append(f"## Global lessons\n{global_lessons}\n")
    recent = recent_lines(index_text(snapshot) if snapshot is not None else "")
    if recent:
        sections.append("## Recent\n" + "\n".join(recent) + "\n")
    if not sections:
        return ""
    used = len(_OPEN) + len(_CLOSE)
    kept: list[str] = []
    for section in sections:
        size = len(section) + (1 if kept else 0)
        if used + size > budget:
            continue  # dropped whole: half a section reads as the whole of it
        kept.append(section)
        used += size
    if not kept:
        return ""
    return _OPEN + "\n".join(kept) + _CLOSE


def start_panel(repo: Storage) -> str:
    """The panel of ``repo``'s observation log as its configuration sizes it ("" when
    observing is off or there is no memory), with a line naming the search tools."""
    config = read_config(repo)
    if not config.enabled:
        return ""
    text = panel(ObservationLog(repo), config.budget)
    if not text:
        return ""
    return text + _TRAILER
