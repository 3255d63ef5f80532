"""What each operator command reports, as a person reads it and as JSON.

Each function here is named after the command it answers and gives back one report:
``text()`` is what the command prints (ending in a newline, or empty), ``to_dict()``
what ``--json`` prints. The shapes are described in ``docs/cli-json.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from gitmem.lean.lines import (
    blame_text,
    block,
    counted,
    hits_text,
    listing_text,
    log_line,
    state_text,
    when,
)
from gitmem.ops.diffs import diff_stat, render
from gitmem.ops.reading import (
    OUTSIDE,
    file_history,
    file_log,
    file_rows,
    is_file_store,
    show_file,
    store_rows,
)
from gitmem.ops.reading import history as memory_history
from gitmem.ops.reading import log as memory_log
from gitmem.ops.reading import search as search_store
from gitmem.ops.reading import show as show_memory
from gitmem.ops.reading import state as store_state
from gitmem.types import FileRevision, Revision

if TYPE_CHECKING:
    from gitmem.holder.tools import ToolResult
    from gitmem.repository import Repository
    from gitmem.sandbox import ProgramResult, View
    from gitmem.search import Hit
    from gitmem.sync import StoreSync

__all__ = [
    "Report",
    "Run",
    "Synced",
    "Verdict",
    "Written",
    "blame",
    "called",
    "check",
    "counted",
    "fork",
    "log",
    "ls",
    "notebook_show",
    "notebook_timeline",
    "path",
    "revisions",
    "saved",
    "search",
    "show",
    "state",
    "stores",
    "sync",
    "sync_line",
    "when",
]

_UNITS = {"memories": "memory", "files": "file"}


class Report(Protocol):
    """What a command prints: as text, or as JSON."""

    def pieces(self) -> Iterable[str]:
        """The text, in the pieces it is written in: a reader that goes away (`gitmem
        log | head`) ends the command at the next piece."""
        ...

    def to_dict(self) -> object: ...


class Verdict(Report, Protocol):
    """A report that may end its command with status 1."""

    def refusal(self) -> str | None:
        """Why the command fails, or ``None`` if it does not."""
        ...


def _lines(lines: list[str]) -> list[str]:
    return [line + "\n" for line in lines]


class _Fixed:
    """A report whose text and JSON are known when it is made."""

    __slots__ = ("data", "shown")

    def __init__(self, shown: Sequence[str], data: object) -> None:
        self.shown = shown
        self.data = data

    def pieces(self) -> Iterable[str]:
        return self.shown

    def to_dict(self) -> object:
        return self.data


# -- the stores ------------------------------------------------------------------------


def stores(repo: Repository) -> Report:
    """``gitmem stores``: each store with its head and totals."""
    rows = store_rows(repo)
    return _Fixed(
        _lines(
            [
                f"{r['store']}\ton {r['remote']} only; `gitmem sync` fetches it"
                if "remote" in r
                else f"{r['store']}\t{counted(r['count'], _UNITS[r.get('layout', 'memories')])}, "
                f"{counted(r['chars'], 'char')}, {counted(r['lines'], 'line')}"
                for r in rows
            ]
        ),
        rows,
    )


def fork(repo: Repository, source: str, target: str) -> Report:
    """``gitmem fork``: start ``target`` as a copy of ``source``."""
    commit = repo.fork(source, target)
    return _Fixed(
        [f"forked {source} to {target} at {commit[:12]}\n"],
        {"source": source, "target": target, "commit": commit},
    )


def path(repo: Repository, store: str, slug: str) -> Report:
    """``gitmem path``: where a memory's file lives in its store's tree."""
    where = repo.path(store, slug)
    return _Fixed([where + "\n"], {"store": store, "slug": slug, "path": where})


class _Health:
    __slots__ = ("problems",)

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems

    def pieces(self) -> Iterable[str]:
        return _lines(self.problems) if self.problems else ["healthy\n"]

    def to_dict(self) -> object:
        return {"healthy": not self.problems, "problems": self.problems}

    def refusal(self) -> str | None:
        return f"{counted(len(self.problems), 'problem')} found" if self.problems else None


def check(repo: Repository, progress: Callable[[int], None] | None = None) -> Verdict:
    """``gitmem check``: every problem found; its ``refusal()`` is the error line."""
    from gitmem.ops.health import check as problems

    return _Health(problems(repo, progress))


# -- a store's memories (or files) ---------------------------------------------------


class _Memories:
    __slots__ = ("listing",)

    def __init__(self, listing: list[tuple[str, tuple[str, int, int]]]) -> None:
        self.listing = listing

    def pieces(self) -> Iterable[str]:
        text = listing_text(self.listing)
        return [text] if text else []

    def to_dict(self) -> object:
        return [
            {"slug": slug, "description": description, "chars": chars, "lines": lines}
            for slug, (description, chars, lines) in self.listing
        ]


def ls(repo: Repository, store: str) -> Report:
    """``gitmem ls``: each memory's slug, size and description (a file store: its files)."""
    if is_file_store(repo, store):
        rows = file_rows(repo, store)
        width = max((len(f["path"]) for f in rows), default=0)
        return _Fixed(
            _lines(
                [
                    f"{f['path']:<{width}}  {f['chars']:>6} chars  {f['lines']:>5} lines"
                    for f in rows
                ]
            ),
            rows,
        )
    return _Memories(list(repo.summaries(store)))


class _ShownMemory:
    __slots__ = ("found", "slug", "store")

    def __init__(self, store: str, slug: str, found: Revision) -> None:
        self.store = store
        self.slug = slug
        self.found = found

    def pieces(self) -> Iterable[str]:
        found = self.found
        note = " (deleted here; the text it removed)" if found.removed else ""
        if found.op == OUTSIDE:
            note = (
                ", then changed outside gitmem (the live text; `git log` shows who changed it)"
                if found.revision
                else " (written outside gitmem; gitmem has no revision of it)"
            )
        return [f"# {self.slug}  revision {found.revision}{note}\n", block(render(found))]

    def to_dict(self) -> object:
        found = self.found
        return {
            "store": self.store,
            "slug": found.slug,
            "revision": found.revision,
            "op": found.op,
            "description": found.description,
            "body": found.body,
            "code": found.code,
            "on_use": found.on_use,
        }


class _ShownFile:
    __slots__ = ("found", "path", "store")

    def __init__(self, store: str, path: str, found: FileRevision) -> None:
        self.store = store
        self.path = path
        self.found = found

    def pieces(self) -> Iterable[str]:
        gone = " (removed here; the text it removed)" if self.found.removed else ""
        return [f"# {self.path}  revision {self.found.revision}{gone}\n", block(self.found.text)]

    def to_dict(self) -> object:
        found = self.found
        return {
            "store": self.store,
            "path": found.path,
            "revision": found.revision,
            "op": found.op,
            "text": found.text,
        }


def show(repo: Repository, store: str, slug: str, rev: int | None = None) -> Report:
    """``gitmem show``: a memory's revision (in a file store, a path's)."""
    if is_file_store(repo, store):
        return _ShownFile(store, slug, show_file(repo, store, slug, rev))
    return _ShownMemory(store, slug, show_memory(repo, store, slug, rev))


class _MemoryLog:
    __slots__ = ("patch", "rows", "stat")

    def __init__(self, rows: list[tuple[Revision, str]], patch: bool, stat: bool) -> None:
        self.rows = rows
        self.patch = patch
        self.stat = stat

    def pieces(self) -> Iterable[str]:
        out: list[str] = []
        for r, d in self.rows:
            counts = "  +{} -{}".format(*diff_stat(d)) if self.stat else ""
            out.append(
                log_line(r.commit, r.op, r.slug, r.revision, r.author, r.time) + f"{counts}\n"
            )
            if self.patch:
                out.append(d)
        return out

    def to_dict(self) -> object:
        events: list[dict[str, Any]] = []
        for r, d in self.rows:
            event: dict[str, Any] = dict(r.to_dict())
            if self.patch:
                event["diff"] = d
            if self.stat:
                event["added"], event["removed"] = diff_stat(d)
            events.append(event)
        return events


class _FileLog:
    __slots__ = ("patch", "rows")

    def __init__(self, rows: list[tuple[FileRevision, str]], patch: bool) -> None:
        self.rows = rows
        self.patch = patch

    def pieces(self) -> Iterable[str]:
        out: list[str] = []
        for r, d in self.rows:
            out.append(log_line(r.commit, r.op, r.path, r.revision, r.author, r.time) + "\n")
            if self.patch:
                out.append(d)
        return out

    def to_dict(self) -> object:
        return [{**r.to_dict(), **({"diff": d} if self.patch else {})} for r, d in self.rows]


def log(
    repo: Repository,
    store: str,
    slug: str | None = None,
    *,
    patch: bool = False,
    stat: bool = False,
) -> Report:
    """``gitmem log``: the revisions of a store (or one memory, or one path), newest
    first, with their diffs under ``patch`` and their line counts under ``stat``."""
    if is_file_store(repo, store):
        return _FileLog(file_log(repo, store, slug, patch=patch), patch)
    return _MemoryLog(memory_log(repo, store, slug, patch=patch or stat), patch, stat)


def blame(repo: Repository, store: str, slug: str, at: str | None = None) -> Report:
    """``gitmem blame``: each line of a memory's files with the revision that last
    changed it (commit, revision, author, session, date), as of ``at``."""
    lines = repo.blame(store, slug, at)
    shown = blame_text(
        [(b.commit, b.revision, b.author, b.session, b.time, b.file, b.line, b.text) for b in lines]
    )
    return _Fixed(shown, [b.to_dict() for b in lines])


def revisions(repo: Repository, store: str, slug: str | None = None) -> Report:
    """``gitmem revisions``: every revision with its text, oldest first."""
    if is_file_store(repo, store):
        files = file_history(repo, store, slug)
        return _Fixed(
            [
                f"== {r.path} r{r.revision} {r.op} by {r.author} at {when(r.time)} "
                f"({r.commit[:12]})\n" + block(r.text)
                for r in files
            ],
            [r.to_dict() for r in files],
        )
    history = memory_history(repo, store, slug)
    return _Fixed(
        [
            f"== {r.slug} r{r.revision} {r.op} by {r.author} at {when(r.time)} "
            f"({r.commit[:12]})\n" + block(render(r))
            for r in history
        ],
        [r.to_dict() for r in history],
    )


class _State:
    __slots__ = ("event",)

    def __init__(self, event: dict[str, Any]) -> None:
        self.event = event

    def pieces(self) -> Iterable[str]:
        return [state_text(self.event)]  # one write, as a listing's

    def to_dict(self) -> object:
        return self.event


def state(repo: Repository, store: str) -> Report:
    """``gitmem state``: the store's ``memory_state`` as an operator sees it."""
    return _State(dict(store_state(repo, store)))


class _Hits:
    __slots__ = ("hits", "keywords")

    def __init__(self, hits: list[Hit], keywords: list[str]) -> None:
        self.hits = hits
        self.keywords = keywords

    def pieces(self) -> Iterable[str]:
        lowered = [k.lower() for k in self.keywords]
        return hits_text(
            [(h.memory.slug, h.memory.description, h.excerpt(lowered)) for h in self.hits],
            self.keywords,
        )

    def to_dict(self) -> object:
        lowered = [k.lower() for k in self.keywords]
        return [
            {
                "slug": h.memory.slug,
                "description": h.memory.description,
                "keywords": h.distinct,
                "occurrences": h.frequency,
                "excerpt": h.excerpt(lowered),
            }
            for h in self.hits
        ]


def search(repo: Repository, store: str, keywords: list[str], limit: int = 0) -> Report:
    """``gitmem search``: the store's memories ranked as ``search_memories`` ranks them."""
    return _Hits(search_store(repo, store, keywords, limit), keywords)


# -- writes ----------------------------------------------------------------------------


_PAST = {
    "create": "created",
    "edit": "edited",
    "delete": "deleted",
    "restore": "restored",
    "revert": "reverted",
}


class Written:
    """The revisions one write made (a link makes two), as the CLI reports them."""

    __slots__ = ("many", "revisions")

    def __init__(self, revisions: list[Revision], many: bool = False) -> None:
        self.revisions = revisions
        self.many = many  # the JSON is a list (a link's two rows), not one revision

    @classmethod
    def one(cls, revision: Revision) -> Written:
        """The report of a write that made ``revision``."""
        return cls([revision])

    def pieces(self) -> Iterable[str]:
        return [
            f"{_PAST.get(r.op, r.op)} {r.slug} (revision {r.revision}, commit "
            f"{r.commit[:12]}) in {r.store}\n"
            for r in self.revisions
        ]

    def to_dict(self) -> object:
        events = [r.to_dict() for r in self.revisions]
        return events if self.many else events[0]


def saved(revision: Revision | None) -> Report:
    """``gitmem notebook save``: the revision it made, or word that nothing changed."""
    if revision is None:
        return _Fixed(["unchanged: the notebook already holds exactly this text\n"], None)
    return Written.one(revision)


def notebook_show(store: str, text: str, version: int) -> Report:
    """``gitmem notebook show``: the live text, exactly as it is held."""
    return _Fixed(
        [text], {"store": store, "path": "memory.md", "version": version, "content": text}
    )


def notebook_timeline(rows: list[dict[str, Any]]) -> Report:
    """``gitmem notebook timeline``: every version, newest first."""
    return _Fixed(
        _lines(
            [
                f"v{r['version']:<4} {when(r['time'])}  {r['author']:<20} "
                f"+{r['added']} -{r['removed']}  {r['op']}{'  (live)' if r['live'] else ''}"
                for r in rows
            ]
        ),
        rows,
    )


# -- sharing and programs --------------------------------------------------------------


def _copy(slug: str, changed: list[str], mark: str) -> str:
    """The name a sync gave the other replica's side of ``slug``'s conflict: the changed
    slug that is ``slug`` (perhaps shortened) with the conflict mark."""
    copies = [(name.partition(mark)[0], name) for name in changed if mark in name]
    for stem, name in copies:
        if stem == slug:
            return name
    for stem, name in copies:  # a long slug is shortened to make room for the mark
        if stem and slug.startswith(stem):
            return name
    return f"{slug}{mark}..."


def sync_line(report: StoreSync) -> str:
    """A store's sync as one line: what happened, the conflicts and any limit exceeded."""
    from gitmem.sync import CONFLICT

    done: list[str] = []
    if report.fetched and not report.merged:
        done.append(f"fetched {counted(len(report.changed), 'changed memory')}")
    if report.merged:
        done.append(f"merged ({counted(len(report.changed), 'memory')} changed here)")
    if report.pushed:
        done.append("pushed")
    if not done:
        done.append("kept this replica's head" if report.refused else "up to date")
    line = f"{report.store}: {', '.join(done)}"
    if report.head:
        line += f" at {report.head[:12]}"
    if report.conflicts:
        line += f"; {counted(len(report.conflicts), 'conflict')}: " + ", ".join(
            f"{c} (theirs kept as {_copy(c, report.changed, CONFLICT)})" for c in report.conflicts
        )
    if report.exceeded:
        line += "; over limits: " + "; ".join(e.describe() for e in report.exceeded)
    notes = [f"{report.store}: refused {why}" for why in report.refused]
    notes += [f"{report.store}: adopted {why}" for why in report.widened]
    notes += [f"{report.store}: {why}" for why in report.rules]
    return "\n".join([line, *notes])


class Synced(_Fixed):
    """``gitmem sync``'s report; ``kept_out`` names each store that kept out commits of
    the remote's, since they break its rules (its lines say which and why)."""

    __slots__ = ("kept_out",)

    def __init__(self, shown: Sequence[str], data: object, kept_out: list[str]) -> None:
        super().__init__(shown, data)
        self.kept_out = kept_out


def sync(repo: Repository, remote: str = "origin", store: str | None = None) -> Synced:
    """``gitmem sync``: one line (one JSON object) per store shared."""
    from gitmem.ops.sharing import sync as share

    done = share(repo, remote, store)
    lines = [sync_line(r) for r in done] or [f"no stores here or at {remote}"]
    kept_out = [r.store for r in done if r.refused]
    return Synced(_lines(lines), [r.to_dict() for r in done], kept_out)


class Run:
    """What ``run`` gives back: the program's result and every view opened."""

    __slots__ = ("result", "views")

    def __init__(self, result: ProgramResult, views: list[View]) -> None:
        self.result = result
        self.views = views

    def pieces(self) -> Iterable[str]:
        """The program's output, then each view in the frame the model sees it in, so
        that nothing the program printed can pass for a view."""
        from gitmem.holder.framing import frame_view

        return [self.result.output, *(f"{frame_view(v.title, v.text)}\n" for v in self.views)]

    def to_dict(self) -> dict[str, Any]:
        """``{"ok", "output", "error", "views": [{"title", "text"}], "commit"}``: the
        commit is the store's as the program found it (``gitmem run --at`` reads it)."""
        return {
            "ok": self.result.ok,
            "output": self.result.output,
            "error": self.result.error,
            "views": [{"title": v.title, "text": v.text} for v in self.views],
            "commit": self.result.commit,
        }

    def refusal(self) -> str | None:
        """The error line when the program failed."""
        if self.result.ok:
            return None
        # a thrown Error reads "Error: ..."; the error line says "Error:" once
        return (self.result.error or "the program failed").removeprefix("Error: ")


class _Called:
    __slots__ = ("result",)

    def __init__(self, result: ToolResult) -> None:
        self.result = result

    def pieces(self) -> Iterable[str]:
        return [self.result.text + "\n"]

    def to_dict(self) -> object:
        return {"ok": self.result.ok, "kind": self.result.kind, "text": self.result.text}

    def refusal(self) -> str | None:
        return None if self.result.ok else self.result.kind


def called(result: ToolResult) -> Verdict:
    """``gitmem call``: the tool's result text; its ``refusal()`` names a refusal's kind."""
    return _Called(result)
