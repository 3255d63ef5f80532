"""The observation log: a file store in the project's repository.

    index.md                 one row per entry (see gitmem.observe.entries; past 8 MB, index-2.md, ...)
    sessions/<date>.md       the entries of one day, as blocks (past 1 MB, <date>-2.md, ...)
    active_context.md        curated: the current task state (at most 12 lines)
    decisions.md             curated: decisions and why (at most 3 KB)
    lessons.md               curated: gotchas, patterns, trade-offs (at most 3 KB)
    notes.md                 curated: architecture facts, APIs, conventions (at most 3 KB)

Every write is one commit authored by the step that made it (``observer``,
``summarizer``, ``librarian``), its trailers naming the session, the model, the prompt
and the source ids; the store's screens (secrets first) judge it before anything is
written, so a refused write leaves the log as it was.

Anyone who can push writes the branch, so the log reads nothing unbounded and is
stopped by no entry it cannot read: a file that is not UTF-8 text, a submodule or a
directory where a file goes is passed over (see :func:`readable`), and the observer's
log names it.

Lessons marked ``[global]`` apply in every project: they go, clamped to 300
characters, to ``lessons.md`` of the user's own store (:func:`user_repository_path`),
which holds at most 16 KB of them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from gitmem.errors import GitmemError
from gitmem.observe.answers import CURATED
from gitmem.observe.capture import log_line, observe_dir
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
READ_MAX = 1 << 20
"""The most bytes of a session or curated file the log reads: a larger one is passed
over as if it were not there."""
INDEX_MAX = 8 << 20
"""The most bytes of index files the log reads, the newest first; past it the index goes
on in ``index-2.md``, ``index-3.md``, ..."""
INDEX_FILES_READ = 16
"""The most index files the log reads, the newest first. Only the last one is ever short
of :data:`INDEX_MAX` when the log alone writes them, so it reads one or two; a teammate
may commit any number of small ones."""


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

    def read_file(self, path: str, limit: int = READ_MAX) -> str:
        """A file of the log ("" if it has none, or none to read: see :func:`readable`)."""
        snapshot = self.snapshot()
        return (readable(snapshot, path, limit) or "") if snapshot is not None else ""

    def rows(self) -> list[IndexRow]:
        """The index's rows, oldest first (those of its newest files within
        :data:`INDEX_MAX` bytes)."""
        snapshot = self.snapshot()
        return list(parse_index(index_text(snapshot))) if snapshot is not None else []

    def curated(self) -> dict[str, str]:
        """The four curated files' texts, by name ("" for one there is none to read)."""
        snapshot = self.snapshot()
        if snapshot is None:
            return dict.fromkeys(CURATED, "")
        return {name: readable(snapshot, name, READ_MAX) or "" for name in CURATED}

    def say(self, message: str) -> None:
        """One line in the observer's log of the repository."""
        log_line(observe_dir(self.repo.directory), message)

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
        passed: dict[str, str] = {}

        def change(snapshot: FileSnapshot) -> FileChange:
            stored.clear()
            passed.clear()
            known = {row.id for row in parse_index(index_text(snapshot))}
            days: dict[str, str] = {}
            rows: list[str] = []
            for entry in entries_list:
                if entry.id in known:
                    continue
                known.add(entry.id)
                stored.append(entry)
                block = entry.block()
                path = _day_file(snapshot, days, entry.date, len(block.encode()) + 1, passed)
                held = days[path]
                days[path] = held + ("\n" if held else "") + block
                rows.append(entry.row(path.removeprefix("sessions/")))
            if not stored:
                return FileChange(())
            edits = [
                FileEdit("update" if snapshot.is_file(p) else "create", p, t)
                for p, t in days.items()
            ]
            added = "\n".join(rows) + "\n"
            name, index = _index_file(snapshot, len(added.encode()), passed)
            op = "update" if index is not None else "create"
            edits.append(FileEdit(op, name, (index or "") + added))
            return FileChange(tuple(edits), trail.trailers())

        entries_list = list(entries)
        self.repo.publish_files(self.store, author(step), change)
        for message in passed.values():
            self.say(message)
        return list(stored)

    def set_curated(self, files: Mapping[str, str], trail: Trail) -> list[str]:
        """Rewrite the curated files (each within its cap) as one commit by the
        librarian; returns the paths that changed."""
        changed: list[str] = []
        passed: list[str] = []

        def change(snapshot: FileSnapshot) -> FileChange:
            edits: list[FileEdit] = []
            passed.clear()
            for name in CURATED:
                if name not in files:
                    continue
                text = clamp_curated(name, files[name])
                held = readable(snapshot, name, READ_MAX)
                if held is None and _there(snapshot, name):
                    passed.append(name)
                    continue
                if held == text or (held is None and not text):
                    continue
                edits.append(FileEdit("update" if held is not None else "create", name, text))
            changed[:] = [e.path for e in edits]
            return FileChange(tuple(edits), trail.trailers())

        self.repo.publish_files(self.store, author("librarian"), change)
        for name in passed:
            self.say(
                f"{name} of the observation log is not a UTF-8 text file of at most "
                f"{READ_MAX >> 20} MB: the librarian left it as it is"
            )
        return changed


def _there(snapshot: FileSnapshot, path: str) -> bool:
    """Whether anything (a file, a directory, a submodule) is at ``path``."""
    return snapshot.is_file(path) or snapshot.is_dir(path)


def _index_name(n: int) -> str:
    return INDEX if n == 1 else f"index-{n}.md"


def _last_in_run(there: Callable[[int], bool]) -> int:
    """The number ``n`` of a numbered file that is there while ``n + 1`` is not (``0``
    when ``1`` is not there), in lookups that grow with the logarithm of ``n``: a
    teammate may commit a million numbered names, and a write must not look at each.
    The files run from 1 with no gap when only the log writes them; with gaps, this is
    the end of some run after 1."""
    if not there(1):
        return 0
    low = 1  # there; past `high`, not there
    high = 2
    while there(high):
        low, high = high, high * 2
    while high - low > 1:
        middle = (low + high) // 2
        if there(middle):
            low = middle
        else:
            high = middle
    return low


def _index_count(snapshot: FileSnapshot) -> int:
    """How many index files there are: ``index.md``, ``index-2.md``, ... (see
    :func:`_last_in_run`)."""
    return _last_in_run(lambda n: _there(snapshot, _index_name(n)))


def index_text(snapshot: FileSnapshot) -> str:
    """The rows of the newest index files that hold :data:`INDEX_MAX` bytes in all,
    oldest first, of the newest :data:`INDEX_FILES_READ` at most; a file that is not
    UTF-8 text or not a file is passed over."""
    texts: list[str] = []
    room = INDEX_MAX
    count = _index_count(snapshot)
    for name in map(_index_name, range(count, max(0, count - INDEX_FILES_READ), -1)):
        try:
            size = snapshot.size(name)
        except GitmemError:
            continue
        if size is None:
            continue
        if size > room:
            break
        text = readable(snapshot, name, room)
        if text is not None:
            texts.append(text if text.endswith("\n") or not text else text + "\n")
            room -= size
    return "".join(reversed(texts))


def _index_file(
    snapshot: FileSnapshot, size: int, passed: dict[str, str]
) -> tuple[str, str | None]:
    """The index file that takes ``size`` more bytes within :data:`INDEX_MAX` and its
    text (``None``: a new one): the last, or the next one when the last is full or is
    not a UTF-8 text file (noted in ``passed``)."""
    count = _index_count(snapshot)
    if not count:
        return INDEX, None
    last = _index_name(count)
    held = readable(snapshot, last, INDEX_MAX)
    if held is None:
        passed[last] = (
            f"{last} of the observation log is not a UTF-8 text file of at most "
            f"{INDEX_MAX >> 20} MB: the index goes on in {_index_name(count + 1)}"
        )
    elif len(held.encode()) + size <= INDEX_MAX:
        return last, held + "\n" if held and not held.endswith("\n") else held
    return _index_name(count + 1), None


def readable(snapshot: FileSnapshot, path: str, limit: int) -> str | None:
    """The text of file ``path``; ``None`` when there is none to read: nothing there, a
    directory, an entry that is not a file (a submodule), a file that is not UTF-8 text
    or one over ``limit`` bytes (a teammate can commit any of them)."""
    try:
        if not snapshot.is_file(path) or (snapshot.size(path) or 0) > limit:
            return None
        return snapshot.read(path)
    except GitmemError:
        return None


def _day_file(
    snapshot: FileSnapshot, days: dict[str, str], date: str, size: int, passed: dict[str, str]
) -> str:
    """The session file of ``date`` that takes ``size`` more bytes within
    :data:`DAY_MAX`: its last (``DATE.md``, then ``DATE-2.md``, ...), or the next one
    when the last is full or is not a UTF-8 text file in bounds (noted in ``passed``);
    read into ``days``."""

    def path(n: int) -> str:
        return f"sessions/{date}.md" if n == 1 else f"sessions/{date}-{n}.md"

    def there(p: str) -> bool:
        return p in days or _there(snapshot, p)

    n = _last_in_run(lambda k: k == 1 or there(path(k)))
    while True:  # ends: past the last one there, a file is free
        chosen = path(n)
        n += 1
        if chosen not in days:
            held = readable(snapshot, chosen, DAY_MAX)
            if held is None and there(chosen):
                passed[chosen] = (
                    f"{chosen} of the observation log is not a UTF-8 text file of at most "
                    f"{DAY_MAX >> 20} MB: the day goes on in the next file"
                )
                continue
            days[chosen] = held or ""
        held = days[chosen]
        if not held or len(held.encode()) + size <= DAY_MAX:
            return chosen


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
