"""The observation log: a file store in the project's repository.

    index.md                 one row per entry (see gitmem.observe.entries)
    sessions/<date>.md       the entries of one day, as blocks (past 1 MB, <date>-2.md, ...)
    active_context.md        curated: the current task state (at most 12 lines)
    decisions.md             curated: decisions and why (at most 3 KB)
    lessons.md               curated: gotchas, patterns, trade-offs (at most 3 KB)
    notes.md                 curated: architecture facts, APIs, conventions (at most 3 KB)

Every write is one commit authored by the step that made it (``observer``,
``summarizer``, ``librarian``), its trailers naming the session, the model, the prompt
and the source ids; the store's screens (secrets first) judge it before anything is
written, so a refused write leaves the log as it was.

Lessons marked ``[global]`` apply in every project: they go, clamped to 300
characters, to ``lessons.md`` of the user's own store (:func:`user_repository_path`),
which holds at most 16 KB of them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from gitmem.errors import GitmemError
from gitmem.observe.answers import CURATED
from gitmem.observe.entries import Entry, IndexRow, parse_index, split_blocks
from gitmem.repository import Repository
from gitmem.store import FileSnapshot, Storage
from gitmem.trailers import provenance_value
from gitmem.types import Author, FileChange, FileEdit

__all__ = [
    "CAPS",
    "GLOBAL_MAX",
    "LOG_STORE",
    "USER_STORE",
    "ObservationLog",
    "author",
    "clamp_curated",
    "user_repository_path",
]

LOG_STORE = "observations"
"""The observation log's store id in the project's repository."""
USER_STORE = "lessons"
"""The store of global lessons in the user's own repository."""
INDEX = "index.md"
CAPS: dict[str, tuple[int, int]] = {
    "active_context.md": (12, 3072),
    "decisions.md": (10_000, 3072),
    "lessons.md": (10_000, 3072),
    "notes.md": (10_000, 3072),
}
"""Each curated file's cap: (lines, characters)."""
GLOBAL_MAX = 300
GLOBAL_FILE_MAX = 16 * 1024
"""The most characters the user's ``lessons.md`` holds: every project adds to it, and
a lesson past it is not added."""
DAY_MAX = 1 << 20
"""The most bytes one session file holds (search passes over a larger one, see
``gitmem.observe.blocks.FILE_MAX``): a day's entries past it go on in ``DATE-2.md``,
``DATE-3.md``, ..."""
GLOBAL_MARK = "[global]"


def author(step: str) -> Author:
    """The author of a step's commits: ``observer``, ``summarizer``, ``librarian``."""
    return Author(step, f"{step}@observer.gitmem")


def user_repository_path() -> str:
    """The user's own repository of global lessons: ``GITMEM_USER_REPO``, else
    ``$XDG_DATA_HOME/gitmem/user.git`` (``~/.local/share/gitmem/user.git``)."""
    named = os.environ.get("GITMEM_USER_REPO")
    if named:
        return named
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "share"
    )
    return os.path.join(data, "gitmem", "user.git")


def clamp_curated(name: str, text: str) -> str:
    """``text`` within the cap of curated file ``name``, cut at a line boundary."""
    lines_max, chars_max = CAPS[name]
    kept: list[str] = []
    size = 0
    for line in text.strip("\n").splitlines()[:lines_max]:
        if size + len(line) + 1 > chars_max:
            break
        kept.append(line)
        size += len(line) + 1
    return "\n".join(kept) + "\n" if kept else ""


@dataclass(frozen=True)
class Trail:
    """What a step's commit says about itself in its trailers."""

    session: str
    model: str
    prompt: str
    sources: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()
    """Source ids the curated files held before and hold no more (a librarian's merge)."""

    def trailers(self) -> dict[str, str]:
        """Each value as a harness's provenance is held: one printable line, each id
        at most 200 characters, whatever a run or a model handed over."""
        found = {
            "Gitmem-Session": provenance_value(self.session) or "-",
            "Gitmem-Model": provenance_value(self.model) or "-",
            "Gitmem-Prompt": provenance_value(self.prompt) or "-",
        }
        for key, ids in (("Gitmem-Sources", self.sources), ("Gitmem-Dropped", self.dropped)):
            kept = [v for v in map(provenance_value, ids) if v]
            if kept:
                found[key] = ", ".join(kept)
        return found


class ObservationLog:
    """A project's observation log (the file store ``store`` of ``repo``)."""

    def __init__(self, repo: Storage, store: str = LOG_STORE) -> None:
        self.repo = repo
        self.store = store

    # -- reading -----------------------------------------------------------------------

    def snapshot(self) -> FileSnapshot | None:
        """The log as of its head (``None`` while it has no entry)."""
        if self.repo.head(self.store) is None:
            return None
        return self.repo.files(self.store)

    def read_file(self, path: str) -> str:
        """A file of the log ("" if it has none)."""
        snapshot = self.snapshot()
        return (snapshot.read(path) or "") if snapshot is not None else ""

    def rows(self) -> list[IndexRow]:
        """The index's rows, oldest first."""
        return list(parse_index(self.read_file(INDEX)))

    def curated(self) -> dict[str, str]:
        """The four curated files' texts, by name."""
        snapshot = self.snapshot()
        if snapshot is None:
            return dict.fromkeys(CURATED, "")
        return {name: snapshot.read(name) or "" for name in CURATED}

    def read(self, entry_id: str) -> str | None:
        """The block of entry ``entry_id``, as its session file holds it."""
        for row in reversed(self.rows()):
            if row.id == entry_id:
                for found, block in split_blocks(self.read_file(f"sessions/{row.file}")):
                    if found == entry_id:
                        return block
        return None

    # -- writing -----------------------------------------------------------------------

    def add(self, entries: Iterable[Entry], step: str, trail: Trail) -> list[Entry]:
        """Append ``entries`` to their day's session file and the index as one commit
        by ``step``; an entry whose id the index (or this call) already holds is
        dropped. Returns the entries stored."""
        stored: list[Entry] = []

        def change(snapshot: FileSnapshot) -> FileChange:
            stored.clear()
            index = snapshot.read(INDEX) or ""
            known = {row.id for row in parse_index(index)}
            days: dict[str, str] = {}
            rows: list[str] = []
            for entry in entries_list:
                if entry.id in known:
                    continue
                known.add(entry.id)
                stored.append(entry)
                block = entry.block()
                path = _day_file(snapshot, days, entry.date, len(block.encode()) + 1)
                held = days[path]
                days[path] = held + ("\n" if held else "") + block
                rows.append(entry.row(path.removeprefix("sessions/")))
            if not stored:
                return FileChange(())
            edits = [
                FileEdit("update" if snapshot.read(p) is not None else "create", p, t)
                for p, t in days.items()
            ]
            edits.append(
                FileEdit("update" if index else "create", INDEX, index + "\n".join(rows) + "\n")
            )
            return FileChange(tuple(edits), trail.trailers())

        entries_list = list(entries)
        self.repo.publish_files(self.store, author(step), change)
        return list(stored)

    def set_curated(self, files: Mapping[str, str], trail: Trail) -> list[str]:
        """Rewrite the curated files (each within its cap) as one commit by the
        librarian; returns the paths that changed."""
        changed: list[str] = []

        def change(snapshot: FileSnapshot) -> FileChange:
            edits: list[FileEdit] = []
            for name in CURATED:
                if name not in files:
                    continue
                text = clamp_curated(name, files[name])
                held = snapshot.read(name)
                if held == text or (held is None and not text):
                    continue
                edits.append(FileEdit("update" if held is not None else "create", name, text))
            changed[:] = [e.path for e in edits]
            return FileChange(tuple(edits), trail.trailers())

        self.repo.publish_files(self.store, author("librarian"), change)
        return changed


def _day_file(snapshot: FileSnapshot, days: dict[str, str], date: str, size: int) -> str:
    """The session file of ``date`` that takes ``size`` more bytes within
    :data:`DAY_MAX`: its last (``DATE.md``, then ``DATE-2.md``, ...), or the next one
    when the last is full; read into ``days``."""

    def path(n: int) -> str:
        return f"sessions/{date}.md" if n == 1 else f"sessions/{date}-{n}.md"

    n = 1
    while path(n + 1) in days or snapshot.is_file(path(n + 1)):
        n += 1
    for chosen in (path(n), path(n + 1)):
        if chosen not in days:
            days[chosen] = snapshot.read(chosen) or ""
        held = days[chosen]
        if not held or len(held.encode()) + size <= DAY_MAX:
            return chosen
    return path(n + 1)  # never reached: the next file is empty


def global_lessons(lessons: str) -> list[str]:
    """The ``[global]`` bullets of a lessons file, each clamped to 300 characters."""
    found: list[str] = []
    for line in lessons.splitlines():
        text = line.strip().removeprefix("-").strip()
        if text.startswith(GLOBAL_MARK):
            found.append(("- " + text)[:GLOBAL_MAX])
    return found


GLOBAL_SHARE_MAX = 4 * 1024
"""The most characters of the user's ``lessons.md`` the lessons of one project hold, so
no project (nor whoever wrote into its log) fills what every project shares."""
_FROM = " <!-- from "
_FROM_END = " -->"


def _project_key(project: str) -> str:
    """The tag of ``project``'s lessons in the user's store: a digest of its path."""
    import hashlib  # here rather than above: only a librarian that found a lesson needs it

    return hashlib.sha256(os.path.realpath(project).encode("utf-8", "replace")).hexdigest()[:12]


def _source(line: str) -> tuple[str, str]:
    """A line of the user's ``lessons.md`` as ``(lesson, project tag)`` (tag ``""``:
    written by hand, or before lessons were tagged)."""
    lesson, mark, tail = line.rpartition(_FROM)
    key = tail.removesuffix(_FROM_END)
    if mark and tail.endswith(_FROM_END) and len(key) == 12 and key.isalnum():
        return lesson, key
    return line, ""


def add_global_lessons(
    lessons: list[str], trail: Trail, path: str | None = None, *, project: str = ""
) -> int:
    """Append the lessons the user's store does not hold yet, within
    :data:`GLOBAL_FILE_MAX`, and, for lessons of ``project`` (its repository's path),
    within its share :data:`GLOBAL_SHARE_MAX`; returns how many."""
    if not lessons:
        return 0
    target = path or user_repository_path()
    os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
    key = _project_key(project) if project else ""
    tag = f"{_FROM}{key}{_FROM_END}" if key else ""
    added: list[str] = []
    with Repository.init(target) as repo:

        def change(snapshot: FileSnapshot) -> FileChange:
            held = snapshot.read("lessons.md")
            lines = [_source(line) for line in (held or "").splitlines()]
            have = {lesson for lesson, _ in lines}
            room = GLOBAL_FILE_MAX - len(held or "")
            if key:
                used = sum(len(lesson) + len(tag) + 1 for lesson, k in lines if k == key)
                room = min(room, GLOBAL_SHARE_MAX - used)
            added.clear()
            for line in dict.fromkeys(lessons):
                if line not in have and len(line) + len(tag) + 1 <= room:
                    added.append(line)
                    room -= len(line) + len(tag) + 1
            if not added:
                return FileChange(())
            text = (held or "") + "".join(line + tag + "\n" for line in added)
            op = "update" if held is not None else "create"
            return FileChange((FileEdit(op, "lessons.md", text),), trail.trailers())

        repo.publish_files(USER_STORE, author("librarian"), change)
    return len(added)


def read_global_lessons(path: str | None = None) -> str:
    """The user's global lessons, oldest first ("" when there are none)."""
    target = path or user_repository_path()
    if not os.path.isdir(target):
        return ""
    try:
        with Repository.open(target) as repo:
            if repo.head(USER_STORE) is None:
                return ""
            held = repo.files(USER_STORE).read("lessons.md") or ""
    except GitmemError:
        return ""
    return "".join(_source(line)[0] + "\n" for line in held.splitlines())
