"""Reading a store: list, show and log its memories (or a file store's files), its
state against its limits, and a search of it."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gitmem.errors import InvalidArgument, NotFound
from gitmem.ops.diffs import Files, Picked, memory_files, revision_diff
from gitmem.ops.record import record
from gitmem.types import FileRevision, Revision, count_lines

if TYPE_CHECKING:
    from gitmem.repository import Repository
    from gitmem.search import Hit
    from gitmem.state import Event

__all__ = [
    "OUTSIDE",
    "file_history",
    "file_log",
    "file_rows",
    "history",
    "is_file_store",
    "log",
    "memory_rows",
    "search",
    "show",
    "show_file",
    "state",
    "store_rows",
]


def is_file_store(repo: Repository, store: str) -> bool:
    """Whether ``store`` is a file store (plain files at paths, as the memory tool
    writes them) rather than a store of memories."""
    return repo.layout(store) == "files"


def _memories_only(repo: Repository, store: str, command: str) -> None:
    if is_file_store(repo, store):
        raise InvalidArgument(
            f"store {store!r} is a file store, which has no memories to {command}; "
            "read it with `gitmem ls`, `gitmem log` and `gitmem show PATH`"
        )


def file_rows(repo: Repository, store: str) -> list[dict[str, Any]]:
    """Each file of a file store: ``{"path", "chars", "lines"}``."""
    snapshot = repo.files(store)
    rows: list[dict[str, Any]] = []
    for path in snapshot.files():
        text = snapshot.read(path) or ""
        rows.append({"path": path, "chars": len(text), "lines": count_lines(text)})
    return rows


def show_file(repo: Repository, store: str, path: str, rev: int | None = None) -> FileRevision:
    """The revision ``rev`` of a file store's ``path`` (default: the live one; a removed
    file's last text needs its revision named)."""
    history = repo.file_revisions(store, path)
    return _pick(history, rev, path, f"there is no file {path!r} in {store}", "removed")


def file_history(repo: Repository, store: str, path: str | None = None) -> list[FileRevision]:
    """The revisions of a file store (or of one path, which must have some), oldest first."""
    found = repo.file_revisions(store, path)
    if path is not None and not found:
        raise NotFound(f"there is no file {path!r} in {store}; `gitmem ls` lists them")
    return found


def history(repo: Repository, store: str, slug: str | None = None) -> list[Revision]:
    """The revisions of a store (or of one memory, which must have some), oldest first."""
    found = repo.revisions(store, slug)
    if slug is not None and not found:
        raise NotFound(f"there is no memory named {slug!r} in {store}; `gitmem ls` lists them")
    return found


def file_log(
    repo: Repository, store: str, path: str | None = None, *, patch: bool = False
) -> list[tuple[FileRevision, str]]:
    """The revisions of a file store (or one path), newest first, each with its diff
    (``""`` unless ``patch``)."""
    return _logged(
        file_history(repo, store, path), lambda r: r.path, lambda r: (("", r.text),), patch
    )


def store_rows(repo: Repository) -> list[dict[str, Any]]:
    """Each store with its head and totals: ``{"store", "head", "count", "chars", "lines"}``;
    a file store's row adds ``"layout": "files"`` (its count is of files); a store only a
    remote holds yet (fetched, not synced) comes last, with ``"remote"`` naming it."""
    rows: list[dict[str, Any]] = []
    for store in repo.stores():
        snap = repo.snapshot(store)
        row = {"store": store, "head": snap.commit, **snap.totals.to_dict()}
        if is_file_store(repo, store):
            row["layout"] = "files"
        rows.append(row)
    for store, remotes in sorted(repo.remote_stores().items()):
        rows.append(
            {"store": store, "head": None, "count": 0, "chars": 0, "lines": 0, "remote": remotes[0]}
        )
    return rows


def memory_rows(repo: Repository, store: str) -> list[dict[str, Any]]:
    """Each memory of a store: ``{"slug", "description", "chars", "lines"}``."""
    _memories_only(repo, store, "list")
    return [
        {"slug": slug, "description": description, "chars": chars, "lines": lines}
        for slug, (description, chars, lines) in repo.summaries(store)
    ]


OUTSIDE = "outside"
"""The op ``show`` gives the live text of a memory that a commit gitmem did not make (a
person's ``git commit``) changed or added after gitmem's last revision of it; its
revision is that last revision's number (0 if gitmem never wrote it)."""


def show(repo: Repository, store: str, slug: str, rev: int | None = None) -> Revision:
    """The revision ``rev`` of ``slug`` (default: the live one; a deleted memory's last
    text needs its revision named). The live one is what the store holds now: if a
    commit gitmem did not make changed it since gitmem's last revision, its text, with
    the op :data:`OUTSIDE`."""
    if rev is not None:
        history = repo.revisions(store, slug)
    else:
        # the history and the tree of one head: a write between two reads of the head
        # would make gitmem's own text look changed outside it
        snapshot = repo.snapshot(store)
        history = repo.revisions(store, slug, snapshot.commit) if snapshot.commit else []
        live = snapshot.get(slug)
        last = history[-1] if history else None
        if live is not None and (last is None or last.removed or last.memory() != live):
            return Revision(
                store=store,
                slug=slug,
                revision=last.revision if last else 0,
                op=OUTSIDE,
                description=live.description,
                body=live.body,
                code=live.code,
                on_use=live.on_use,
                author="",
                commit=snapshot.commit or "",
                time=0,
                totals=snapshot.totals,
                peaks=snapshot.peaks,
            )
        if live is None and last is not None and not last.removed:
            raise NotFound(
                f"{slug!r} was removed outside gitmem after revision {last.revision}; "
                f"see its last text with `gitmem show {slug} --rev {last.revision}`"
            )
    missing = f"there is no memory named {slug!r} in {store}"
    return _pick(history, rev, slug, missing, "deleted")


def _pick(history: list[Picked], rev: int | None, name: str, missing: str, gone: str) -> Picked:
    """Revision ``rev`` of ``history`` (default: the live one; the last text of one
    that is gone needs its revision named)."""
    if not history:
        raise NotFound(f"{missing}; `gitmem ls` lists them")
    if rev is None:
        found = history[-1]
        if found.removed:
            raise NotFound(
                f"{name!r} was {gone} at revision {found.revision}; "
                f"see its last text with `gitmem show {name} --rev {found.revision}`"
            )
        return found
    for candidate in history:
        if candidate.revision == rev:
            return candidate
    raise NotFound(f"{name!r} has revisions 1 to {history[-1].revision}, not {rev}")


def log(
    repo: Repository, store: str, slug: str | None = None, *, patch: bool = False
) -> list[tuple[Revision, str]]:
    """The revisions of a store (or one memory), newest first, each with its diff
    (``""`` unless ``patch``)."""
    return _logged(history(repo, store, slug), lambda r: r.slug, memory_files, patch)


def _logged(
    history: list[Picked],
    name: Callable[[Picked], str],
    files: Callable[[Picked], Files],
    patch: bool,
) -> list[tuple[Picked, str]]:
    """``history`` newest first, each revision with its diff against the one before of
    the same name (``""`` unless ``patch``)."""
    rows: list[tuple[Picked, str]] = []
    last: dict[str, Picked] = {}
    for r in history:
        rows.append((r, revision_diff(name(r), last.get(name(r)), r, files) if patch else ""))
        last[name(r)] = r
    return rows[::-1]


def state(repo: Repository, store: str) -> Event:
    """The store's ``memory_state`` as an operator sees it (scope ``operator``), with the
    limits it records (all off for a store no binding wrote)."""
    from gitmem.limits import Limits
    from gitmem.state import state_event

    _memories_only(repo, store, "report")
    found = record(repo, store)
    snapshot = repo.snapshot(store)
    listing = repo.summaries(store, snapshot.commit)
    if found is None:
        return state_event(snapshot, "operator", True, Limits(), listing=listing)
    return state_event(
        snapshot,
        "operator",
        True,
        found.limits,
        found.strategy.aggregate_limits,
        found.strategy.index_line,
        listing,
    )


def search(repo: Repository, store: str, keywords: list[str], limit: int = 0) -> list[Hit]:
    """Rank the store's memories as ``search_memories`` does (``limit`` 0: the store's
    maxResults, or every hit where it records none)."""
    from gitmem.search import check_keywords, stored_index

    keywords = check_keywords(keywords)
    _memories_only(repo, store, "search")
    if not limit:
        found = record(repo, store)
        limit = found.limits.max_results if found else 0
    return stored_index(repo, store).search(keywords, limit)
