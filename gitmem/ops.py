"""What an operator does to a repository: find it, pick a store, edit memories, show,
log, search, run a program, check health; and the stable JSON shapes the CLI prints.

Every edit goes through :mod:`gitmem.edits` under the limits the store records (the
``Gitmem-Capability`` trailer of its head), authored as the operator (by default the
user's git identity)::

    from gitmem import Repository, ops

    repo = Repository.open(".gitmem")
    me = ops.operator_author()
    ops.create(repo, "notes", me, "deploy-runbook", "how staging is rolled", "1. ...")
    ops.edit(repo, "notes", me, "deploy-runbook", old_text="1.", new_text="First,")
    ops.delete(repo, "notes", me, "deploy-runbook")
"""

from __future__ import annotations

import bisect
import json
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from gitmem.errors import (
    GitmemError,
    InvalidArgument,
    InvalidAuthor,
    LimitExceeded,
    NotFound,
    Unchanged,
)
from gitmem.store.layout import in_use, project_dir
from gitmem.types import Author, FileRevision, Memory, Revision, check_slug, count_lines

if TYPE_CHECKING:
    # imported where used: a command that reads memories loads no binding, limits,
    # holder, sandbox or sync (tests/test_cold.py holds this)
    from gitmem import edits
    from gitmem.capability import Capability
    from gitmem.edits import Rules
    from gitmem.holder.telemetry import Event
    from gitmem.limits import Limits
    from gitmem.repository import Repository
    from gitmem.sandbox import ProgramResult, View
    from gitmem.search import Hit
    from gitmem.strategies import Strategy, curated
    from gitmem.sync import StoreSync

__all__ = [
    "OUTSIDE",
    "REPOSITORY_DIR",
    "Ledger",
    "Record",
    "Run",
    "check",
    "create",
    "delete",
    "edit",
    "file_log",
    "file_rows",
    "find_repository",
    "holders",
    "init_target",
    "is_file_store",
    "line_changes",
    "log",
    "memory_history",
    "notebook_save",
    "notebook_text",
    "notebook_timeline",
    "operator_author",
    "parse_author",
    "pick_store",
    "record",
    "rows_add",
    "rows_append",
    "rows_birth",
    "rows_conflicts",
    "rows_link",
    "rows_list",
    "rows_reclassify",
    "rows_relevant",
    "rows_show",
    "rows_unlink",
    "run",
    "save",
    "search",
    "show",
    "show_file",
    "state",
    "store_overview",
    "store_rows",
    "sync",
    "sync_line",
    "timeline",
]

REPOSITORY_DIR = ".gitmem"

_Picked = TypeVar("_Picked", Revision, FileRevision)
"""A memory's or a file's revision: what show and log pick and diff alike."""


# -- finding things ------------------------------------------------------------------


def find_repository(start: str) -> str:
    """The repository for ``start``, found as git finds ``.git``: walking up from
    ``start``, the nearest folder holding a ``.gitmem`` repository or a git project whose
    repository holds gitmem stores (in one folder, ``.gitmem`` first). A project that
    holds no stores is passed over for an enclosing ``.gitmem``; if there is none, the
    nearest project is the answer (so the error says to run ``gitmem init`` in it), else
    ``start/.gitmem``."""
    here = os.path.abspath(start)
    project: str | None = None
    while True:
        candidate = os.path.join(here, REPOSITORY_DIR)
        if os.path.isdir(candidate):
            return candidate
        if os.path.exists(os.path.join(here, ".git")):
            if in_use(here):
                return here
            project = project or here
        parent = os.path.dirname(here)
        if parent == here:
            return project or os.path.join(os.path.abspath(start), REPOSITORY_DIR)
        here = parent


def init_target(start: str) -> str:
    """Where ``gitmem init`` without a path makes the repository: an existing ``.gitmem``
    here, else the git project ``start`` is in (its stores go in the project's own
    repository), else ``start/.gitmem``."""
    here = os.path.abspath(start)
    if os.path.isdir(os.path.join(here, REPOSITORY_DIR)):
        return os.path.join(here, REPOSITORY_DIR)
    while True:
        if os.path.exists(os.path.join(here, ".git")) and project_dir(here) is not None:
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return os.path.join(os.path.abspath(start), REPOSITORY_DIR)
        here = parent


def sync(repo: Repository, remote: str = "origin", store: str | None = None) -> list[StoreSync]:
    """``repo.sync``: fetch, reconcile, push; one report per store."""
    return repo.sync(remote, store)


def sync_line(report: StoreSync) -> str:
    """A store's sync as one line: what happened, the conflicts and any limit exceeded."""
    from gitmem.sync import CONFLICT

    done: list[str] = []
    if report.fetched and not report.merged:
        done.append(f"fetched {len(report.changed)} changed memories")
    if report.merged:
        done.append(f"merged ({len(report.changed)} memories changed here)")
    if report.pushed:
        done.append("pushed")
    if not done:
        done.append("up to date")
    line = f"{report.store}: {', '.join(done)}"
    if report.head:
        line += f" at {report.head[:12]}"
    if report.conflicts:
        line += f"; {len(report.conflicts)} conflict(s): " + ", ".join(
            f"{c} (theirs kept as {c}{CONFLICT}...)" for c in report.conflicts
        )
    if report.exceeded:
        line += "; over limits: " + "; ".join(e.describe() for e in report.exceeded)
    return line


def pick_store(repo: Repository, store: str | None, *, may_create: bool = False) -> str:
    """The store a command works on: ``store`` if given, else the repository's only one.

    ``may_create`` lets a named store that does not exist yet through (a create starts it).
    """
    stores = repo.stores()
    if store is not None:
        if store in stores or may_create:
            return store
        if not stores:
            raise NotFound(f"there is no store named {store!r}; the repository has no stores yet")
        raise NotFound(f"there is no store named {store!r}; the stores are: {', '.join(stores)}")
    if len(stores) == 1:
        return stores[0]
    if not stores:
        raise NotFound(
            "the repository has no stores yet; create one with "
            "`gitmem create --store NAME SLUG --description TEXT`"
        )
    raise InvalidArgument(
        f"the repository has {len(stores)} stores; choose one with --store: {', '.join(stores)}"
    )


def operator_author() -> Author:
    """The user's git identity (``user.name``/``user.email``), else the login name."""
    import getpass
    import socket  # here: a command that writes nothing needs neither

    from gitmem.store import git_identity

    try:
        login = getpass.getuser()
    except (OSError, KeyError):
        login = "operator"
    known_name, known_email = git_identity()
    name = known_name or login
    email = known_email or f"{login}@{socket.gethostname() or 'localhost'}"
    try:
        return Author(name, email)
    except InvalidAuthor:
        return Author(login, f"{login}@localhost")


def parse_author(value: str | None) -> Author:
    """``"Name <email>"`` or a bare name (with the operator's email); ``None``: the operator."""
    if value is None:
        return operator_author()
    match = re.fullmatch(r"\s*(.*?)\s*<([^<>]*)>\s*", value)
    if match:
        return Author(match.group(1), match.group(2))
    return Author(value.strip(), operator_author().email)


# -- what a store records --------------------------------------------------------------


class Record(NamedTuple):
    """The strategy and limits the binding that last wrote a store recorded."""

    strategy: Strategy
    limits: Limits

    def capability(self) -> Capability:
        """A capability under the recorded strategy and limits (an operator's binding
        names its store itself, so the scope plays no part)."""
        from gitmem.capability import Capability

        return Capability(self.strategy.name, "shared", self.limits)


def record(repo: Repository, store: str) -> Record | None:
    """What the store's head records, or ``None`` for a store only operators have
    written (or one written under a strategy this process has not registered)."""
    from gitmem import strategies
    from gitmem.trailers import read_capability_trailer

    found = read_capability_trailer(repo.snapshot(store).trailers)
    if found is None:
        return None
    strategy = strategies.get(found[0])
    return Record(strategy, found[1]) if strategy is not None else None


class _OperatorVoice:
    """The write rules' refusals as an operator at the command line is told them."""

    def missing(self, slug: str) -> str:
        return f"there is no memory named {slug!r}; `gitmem ls` lists them"

    def exists(self, slug: str) -> str:
        return f"a memory named {slug!r} already exists"

    def text_missing(self, slug: str) -> str:
        return (
            f"the text to replace does not occur in {slug!r}; "
            f"copy it exactly from `gitmem show {slug}`"
        )

    def text_repeated(self, slug: str, times: int) -> str:
        return (
            f"the text to replace occurs {times} times in {slug!r}; "
            "include more surrounding text so it occurs exactly once"
        )

    def would_empty(self, slug: str) -> str:
        return f"the edit would leave {slug!r} empty; delete it instead with `gitmem delete {slug}`"


def _rules(repo: Repository, store: str, op: str = "", slug: str = "") -> Rules:
    """The rules an operator's ``op`` of ``slug`` obeys: the recorded binding's,
    recorded again so the next edit finds them; none for a store no binding wrote. A
    strategy may refuse the plain op (a notebook is saved whole), naming what to use."""
    from gitmem.edits import Rules
    from gitmem.trailers import capability_trailer

    found = record(repo, store)
    if found is None:
        return Rules(_OperatorVoice())
    refusal = found.strategy.operator_refusal(op, slug) if op else None
    if refusal is not None:
        raise InvalidArgument(refusal)
    return Rules(
        _OperatorVoice(),
        found.limits,
        found.strategy.aggregate_limits,
        found.strategy.index_line,
        capability_trailer(found.strategy.name, found.limits),
    )


# -- edits ---------------------------------------------------------------------------


def create(
    repo: Repository,
    store: str,
    author: Author,
    slug: str,
    description: str,
    body: str,
    code: str = "",
    on_use: str = "",
    *,
    expected: int | None = None,
) -> Revision:
    """Create memory ``slug``; refused if it exists (or, with ``expected``, if its latest
    revision is not ``expected``: see :func:`gitmem.edits.based_on`)."""
    from gitmem import edits

    memory = Memory(check_slug(slug), description, body, code, on_use)
    build = edits.create(_rules(repo, store, "create", slug), memory)
    return repo.mutate(store, author, _based_on(build, slug, expected))


def _based_on(build: edits.Build, slug: str, expected: int | None) -> edits.Build:
    from gitmem import edits

    return build if expected is None else edits.based_on(build, slug, expected)


def edit(
    repo: Repository,
    store: str,
    author: Author,
    slug: str,
    *,
    old_text: str | None = None,
    new_text: str | None = None,
    description: str | None = None,
    body: str | None = None,
    expected: int | None = None,
) -> Revision:
    """Change memory ``slug``: replace ``old_text`` (found exactly once) by ``new_text``,
    or the whole ``body``, and/or the ``description``. An empty result is refused; so is
    any edit when ``expected`` is given and ``slug``'s latest revision is another."""
    from gitmem import edits

    check_slug(slug)
    if (old_text is None) != (new_text is None):
        raise InvalidArgument("give both the text to replace and its replacement (--old and --new)")
    if old_text is not None and body is not None:
        raise InvalidArgument("give either a replacement (--old/--new) or a whole body, not both")
    if old_text is None and body is None and description is None:
        raise InvalidArgument("nothing to change; give --old/--new, --body or --description")
    rules = _rules(repo, store, "edit", slug)
    if old_text is not None and new_text is not None:
        build = edits.replace_once(rules, slug, old_text, new_text, description=description)
    else:
        build = edits.revise(rules, slug, op="edit", description=description, body=body)
    return repo.mutate(store, author, _based_on(build, slug, expected))


def delete(
    repo: Repository, store: str, author: Author, slug: str, *, expected: int | None = None
) -> Revision:
    """Delete memory ``slug`` (its history stays); with ``expected``, only if its latest
    revision is still that one."""
    from gitmem import edits

    build = edits.delete(_rules(repo, store, "delete", slug), slug)
    return repo.mutate(store, author, _based_on(build, slug, expected))


def save(
    repo: Repository,
    store: str,
    author: Author,
    slug: str,
    description: str,
    body: str,
    *,
    expected: int,
) -> Revision:
    """Write ``slug``'s whole description and body as an editor saves a file: an edit of
    the live memory, or a create when there is none (never written, or deleted), in
    either case only if its latest revision is still ``expected`` (0: never written)."""
    check_slug(slug)
    if slug in repo.snapshot(store):
        return edit(
            repo, store, author, slug, description=description, body=body, expected=expected
        )
    return create(repo, store, author, slug, description, body, expected=expected)


# -- the notebook (seed 001) ------------------------------------------------------------

OPERATOR_SAVE_BYTES = 256 * 1024
"""The most an operator's save of a notebook may hold (seed 001: 256 KB)."""


def _notebook_rules(repo: Repository, store: str) -> Rules:
    from gitmem.edits import Rules
    from gitmem.strategies import notebook
    from gitmem.trailers import capability_trailer

    found = record(repo, store)
    if found is not None and found.strategy.name != notebook.Notebook.name:
        raise InvalidArgument(
            f"store {store!r} keeps {found.strategy.name} memories, not a notebook; "
            "edit it with `gitmem edit`"
        )
    if found is None:
        return Rules(_OperatorVoice())
    # the agent's 12,000-character cap is the agent's: an operator's save has its own
    limits = replace(found.limits, max_len_per_memory=0)
    return Rules(
        _OperatorVoice(),
        limits,
        found.strategy.aggregate_limits,
        found.strategy.index_line,
        capability_trailer(found.strategy.name, found.limits),
    )


def notebook_text(repo: Repository, store: str) -> tuple[str, int]:
    """A notebook's live text and its version (0: never written; it reads as empty)."""
    from gitmem.strategies import notebook

    snapshot = repo.snapshot(store)
    memory = snapshot.get(notebook.SLUG)
    return (memory.body if memory else ""), snapshot.revision(notebook.SLUG)


def notebook_save(
    repo: Repository, store: str, author: Author, content: str, expected: int | None = None
) -> Revision | None:
    """Save a notebook's text as the operator (op ``save``): the version it replaces
    stays in the history, authored as it was. ``expected`` is the version the text was
    based on: if a newer one is held (an agent wrote since), nothing is written and
    ``StaleRevision`` says so, so an agent's version is never silently discarded. A text
    byte-identical to the live one writes nothing and returns ``None``."""
    from gitmem import edits
    from gitmem.strategies import notebook

    size = len(content.encode("utf-8", "surrogatepass"))
    if size > OPERATOR_SAVE_BYTES:
        raise LimitExceeded(
            f"refused: the saved text would be {size:,} bytes, over the operator's cap "
            f"(256 KB, {OPERATOR_SAVE_BYTES:,} bytes). Shorten it.",
            limit="operator save",
            attempted=size,
            maximum=OPERATOR_SAVE_BYTES,
        )
    rules = _notebook_rules(repo, store)
    write = edits.overwrite(rules, notebook.notebook_memory(content), op="save")
    try:
        return repo.mutate(store, author, _based_on(write, notebook.SLUG, expected))
    except Unchanged:
        return None


def text_changes(before: str, after: str) -> tuple[int, int]:
    """Lines ``after`` adds to and removes from ``before``."""
    import difflib

    lines = difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
    return diff_stat("\n".join(lines))


def notebook_timeline(repo: Repository, store: str, slug: str = "memory") -> list[dict[str, Any]]:
    """Every version of a notebook (or of one memory), newest first: ``{"version",
    "op", "author", "time", "commit", "chars", "added", "removed", "live"}``; lines
    added and removed are counted against the version before."""
    rows: list[dict[str, Any]] = []
    before = ""
    history = repo.revisions(store, check_slug(slug))
    for r in history:
        after = "" if r.removed else r.body
        added, removed = text_changes(before, after)
        rows.append(
            {
                "version": r.revision,
                "op": r.op,
                "author": r.author,
                "time": r.time,
                "commit": r.commit,
                "chars": len(after),
                "added": added,
                "removed": removed,
                "live": False,
            }
        )
        before = after
    if rows and not history[-1].removed:
        rows[-1]["live"] = True
    return rows[::-1]


# -- curated rows (seed 002) -----------------------------------------------------------


def _curated_rules(repo: Repository, store: str) -> Rules:
    from gitmem.strategies import curated

    found = record(repo, store)
    if found is not None and found.strategy.name != curated.Curated.name:
        raise InvalidArgument(
            f"store {store!r} keeps {found.strategy.name} memories, not curated rows"
        )
    return _rules(repo, store)


def rows_add(
    repo: Repository,
    store: str,
    author: Author,
    name: str,
    description: str,
    owner: str,
    body: str,
    *,
    role: str = "knowledge",
    project: str | None = None,
    replace: bool = False,
) -> Revision:
    """Add a row (``replace``: correct an existing one, marked so in its commit)."""
    from gitmem.strategies import curated

    owner, key = curated.check_owner(owner, project)
    row = curated.Row(check_slug(name), description, owner, key, role, "live", body)
    return repo.mutate(
        store, author, curated.add(_curated_rules(repo, store), row, correct=replace)
    )


def rows_append(
    repo: Repository, store: str, author: Author, name: str, text: str, project: str | None = None
) -> Revision:
    """Grow a log or a live thread."""
    from gitmem.strategies import curated

    return repo.mutate(
        store, author, curated.append(_curated_rules(repo, store), name, text, project)
    )


def rows_link(
    repo: Repository, store: str, author: Author, source: str, kind: str, target: str
) -> list[Revision]:
    """Link two rows in one commit (both rows' revisions)."""
    from gitmem.strategies import curated

    return repo.publish(
        store, author, curated.link(_curated_rules(repo, store), source, kind, target)
    )


def rows_unlink(
    repo: Repository, store: str, author: Author, source: str, kind: str, target: str
) -> list[Revision]:
    """Remove a link in one commit; the edge stays in the history."""
    from gitmem.strategies import curated

    return repo.publish(
        store, author, curated.unlink(_curated_rules(repo, store), source, kind, target)
    )


def rows_reclassify(
    repo: Repository,
    store: str,
    author: Author,
    name: str,
    *,
    status: str | None = None,
    role: str | None = None,
) -> Revision:
    """Set a row's status and/or role."""
    from gitmem.strategies import curated

    build = curated.reclassify(_curated_rules(repo, store), name, status=status, role=role)
    return repo.mutate(store, author, build)


def _row_index(repo: Repository, store: str) -> curated.RowIndex:
    from gitmem.strategies import curated

    return curated.RowIndex().follow(repo, store)


def rows_show(repo: Repository, store: str, name: str) -> curated.Row:
    """One row, whatever its lifecycle."""
    from gitmem.strategies import curated

    memory = repo.snapshot(store).get(check_slug(name))
    if memory is None:
        raise NotFound(f"there is no row named {name!r} in {store}; `gitmem rows ls` lists them")
    return curated.parse_row(memory)


def rows_list(
    repo: Repository, store: str, *, owner: str | None = None, live: bool = False
) -> list[curated.Row]:
    """Every row (``owner``: only ``user``, ``host`` or ``project <key>``; ``live``: only
    live rows nothing supersedes), by name."""
    rows = _row_index(repo, store).rows.values()
    return sorted(
        (r for r in rows if (owner is None or r.whose == owner) and (r.live or not live)),
        key=lambda r: r.name,
    )


def rows_relevant(repo: Repository, store: str, project: str, *, knowledge: bool = False) -> str:
    """What ``get_relevant`` answers for ``project``."""
    from gitmem.strategies import curated

    index = _row_index(repo, store)
    key = curated.check_project(project)
    return curated.relevant_text(
        key, index.pending(key), index.knowledge(key) if knowledge else None
    )


def rows_birth(repo: Repository, store: str) -> str:
    """The birth block a session of this store opens with, recording nothing."""
    return _row_index(repo, store).birth_block()


def rows_conflicts(
    repo: Repository, store: str, owner: str | None = None
) -> list[tuple[curated.Row, curated.Row, list[str]]]:
    """Live pairs of one owner that share wording: candidates, never a verdict."""
    from gitmem.strategies import curated

    return curated.conflicts(_row_index(repo, store).rows.values(), owner)


def row_json(row: curated.Row) -> dict[str, Any]:
    """A row's JSON: ``{"name", "description", "kind", "owner", "project", "role",
    "status", "superseded", "links", "content"}``."""
    return {
        "name": row.name,
        "description": row.description,
        "kind": row.kind,
        "owner": row.owner,
        "project": row.project or None,
        "role": row.role,
        "status": row.status,
        "superseded": row.superseded,
        "links": {k: list(v) for k, v in row.links.items()},
        "content": row.content,
    }


# -- reading -------------------------------------------------------------------------


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


def file_log(
    repo: Repository, store: str, path: str | None = None, *, patch: bool = False
) -> list[tuple[FileRevision, str]]:
    """The revisions of a file store (or one path), newest first, each with its diff
    (``""`` unless ``patch``)."""
    history = repo.file_revisions(store, path)
    return _logged(history, lambda r: r.path, lambda r: r.text, patch)


def store_rows(repo: Repository) -> list[dict[str, Any]]:
    """Each store with its head and totals: ``{"store", "head", "count", "chars", "lines"}``;
    a file store's row adds ``"layout": "files"`` (its count is of files)."""
    rows: list[dict[str, Any]] = []
    for store in repo.stores():
        snap = repo.snapshot(store)
        row = {"store": store, "head": snap.commit, **snap.totals.as_dict()}
        if is_file_store(repo, store):
            row["layout"] = "files"
        rows.append(row)
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


def _pick(history: list[_Picked], rev: int | None, name: str, missing: str, gone: str) -> _Picked:
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


def show_json(store: str, found: Revision) -> dict[str, Any]:
    """``show``'s JSON: ``{"store", "slug", "revision", "op", "description", "body",
    "code", "on_use"}``."""
    return {
        "store": store,
        "slug": found.slug,
        "revision": found.revision,
        "op": found.op,
        "description": found.description,
        "body": found.body,
        "code": found.code,
        "on_use": found.on_use,
    }


def render(rev: Revision) -> str:
    """A revision's text as a person reads it: description, body, then any code."""
    text = f"description: {rev.description}\n\n{rev.body}"
    for title, half in (("code", rev.code), ("onUse", rev.on_use)):
        if half:
            text += ("" if text.endswith("\n") else "\n") + f"\n# {title}\n{half}"
    return text


def diff(before: Revision | None, after: Revision) -> str:
    """The text change ``after`` made (a removal carries the text it removed)."""
    return _revision_diff(after.slug, before, after, render)


def _revision_diff(
    name: str, before: _Picked | None, after: _Picked, text: Callable[[_Picked], str]
) -> str:
    old = text(after) if after.removed else text(before) if before is not None else ""
    new = "" if after.removed else text(after)
    return _unified(
        old,
        new,
        f"{name} r{before.revision}" if before is not None else "/dev/null",
        "/dev/null" if after.removed else f"{name} r{after.revision}",
    )


def _unified(old: str, new: str, fromfile: str, tofile: str) -> str:
    """A unified diff that marks a last line without newline as ``diff`` does."""
    import difflib

    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), fromfile, tofile
    )
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )


def log(
    repo: Repository, store: str, slug: str | None = None, *, patch: bool = False
) -> list[tuple[Revision, str]]:
    """The revisions of a store (or one memory), newest first, each with its diff
    (``""`` unless ``patch``)."""
    return _logged(repo.revisions(store, slug), lambda r: r.slug, render, patch)


def _logged(
    history: list[_Picked],
    name: Callable[[_Picked], str],
    text: Callable[[_Picked], str],
    patch: bool,
) -> list[tuple[_Picked, str]]:
    """``history`` newest first, each revision with its diff against the one before of
    the same name (``""`` unless ``patch``)."""
    rows: list[tuple[_Picked, str]] = []
    last: dict[str, _Picked] = {}
    for r in history:
        rows.append((r, _revision_diff(name(r), last.get(name(r)), r, text) if patch else ""))
        last[name(r)] = r
    return rows[::-1]


def diff_stat(diff_text: str) -> tuple[int, int]:
    """Lines a unified diff adds and removes (its file header is not counted; a body
    line may itself start with "--" or "++")."""
    added = removed = 0
    in_hunk = False
    for line in diff_text.splitlines():
        if line.startswith("@@"):
            in_hunk = True
        elif not in_hunk:
            continue
        elif line.startswith("+"):
            added += 1
        elif line.startswith("-"):
            removed += 1
    return added, removed


def log_json(rows: list[tuple[Revision, str]], *, patch: bool) -> list[Event]:
    """``log``'s JSON: ``memory_revision`` events newest first, with ``"diff"`` under ``-p``."""
    events: list[Event] = []
    for r, d in rows:
        event = r.event()
        if patch:
            event["diff"] = d
        events.append(event)
    return events


def state(repo: Repository, store: str) -> Event:
    """The store's ``memory_state`` as an operator sees it (scope ``operator``), with the
    limits it records (all off for a store no binding wrote)."""
    from gitmem.holder.telemetry import state_event
    from gitmem.limits import Limits

    _memories_only(repo, store, "report")
    found = record(repo, store)
    if found is None:
        return state_event(repo.snapshot(store), "operator", True, Limits())
    return state_event(
        repo.snapshot(store),
        "operator",
        True,
        found.limits,
        found.strategy.aggregate_limits,
        found.strategy.index_line,
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


def hit_json(hit: Hit, keywords: list[str]) -> dict[str, Any]:
    """A search hit's JSON: ``{"slug", "description", "keywords", "occurrences", "excerpt"}``."""
    return {
        "slug": hit.memory.slug,
        "description": hit.memory.description,
        "keywords": hit.distinct,
        "occurrences": hit.frequency,
        "excerpt": hit.excerpt([k.lower() for k in keywords]),
    }


# -- what the console shows ------------------------------------------------------------


def line_changes(before: Revision | None, after: Revision) -> tuple[int, int]:
    """How many lines ``after`` added and removed against ``before`` (as ``diff`` counts)."""
    return diff_stat(diff(before, after))


class _Held:
    """One memory a store has ever held, as the ledger folds its revisions (its
    attributes, in this order, are the console's JSON row)."""

    def __init__(self, slug: str) -> None:
        self.slug = slug
        self.description = ""
        self.live = False
        self.chars = 0
        self.peak_chars = 0
        self.revisions = 0
        self.revision = 0
        self.author = ""
        self.time = 0


class Ledger:
    """Every memory a store ever held (deleted ones too), with its size and peak: what
    the console's treemap draws. It follows the store's head one change at a time, and
    keeps each memory's row as JSON, so a long-lived reader pays for each revision once
    and for each changed memory once per move."""

    def __init__(self, store: str) -> None:
        self.store = store
        self.head: str | None = None
        self._held: dict[str, _Held] = {}
        self._slugs: list[str] = []
        self._json: dict[str, str] = {}
        self._authors: dict[str, int] = {}

    def follow(self, repo: Repository) -> None:
        """Bring the ledger up to the store's head."""
        head = repo.head(self.store)
        if head == self.head:
            return
        news = repo.revisions_since(self.store, self.head, head) if self.head else []
        if not news or head is None:
            # a first look, or a branch rewritten under us: fold it all again
            self._held, self._slugs, self._json, self._authors = {}, [], {}, {}
            news = repo.revisions(self.store) if head is not None else []
        touched: set[str] = set()
        for r in news:
            held = self._held.get(r.slug)
            if held is None:
                held = self._held[r.slug] = _Held(r.slug)
                bisect.insort(self._slugs, r.slug)
            held.description = r.description
            held.live = not r.removed
            held.chars = len(r.body)
            held.peak_chars = max(held.peak_chars, held.chars)
            held.revisions += 1
            held.revision = max(held.revision, r.revision)
            held.author, held.time = r.author, r.time
            self._authors[r.author] = self._authors.get(r.author, 0) + 1
            touched.add(r.slug)
        for slug in touched:
            self._json[slug] = json.dumps(vars(self._held[slug]), ensure_ascii=False)
        self.head = head

    def rows(self) -> list[dict[str, Any]]:
        """``[{"slug", "description", "live", "chars", "peak_chars", "revisions",
        "revision", "author", "time"}]`` sorted by slug; a deleted memory's ``chars`` is
        the size of the text its deletion removed."""
        return [dict(vars(self._held[slug])) for slug in self._slugs]

    def rows_json(self) -> str:
        """``rows()`` as JSON text, joined from the rows kept since they last changed."""
        return "[" + ",".join(self._json[slug] for slug in self._slugs) + "]"

    def authors(self) -> dict[str, int]:
        """Each commit author's name with how many revisions they made."""
        return dict(sorted(self._authors.items()))


def holders(repo: Repository) -> dict[str, list[str]]:
    """Each store with the instances whose notice watermark names it (``notices/<instance>/
    <store>`` markers), sorted."""
    stores = sorted(repo.stores(), key=len, reverse=True)
    found: dict[str, list[str]] = {store: [] for store in repo.stores()}
    for name in repo.markers("notices"):
        rest = name.removeprefix("notices/")
        for store in stores:
            if rest.endswith("/" + store):
                found[store].append(rest[: -len(store) - 1])
                break
    return found


def store_overview(repo: Repository, ledger: Ledger, held_by: list[str]) -> dict[str, Any]:
    """A store as the console's Stores page shows it: ``{"store", "head", "strategy",
    "limits", "totals", "peaks", "holders", "authors", "instances", "shared",
    "memories_ever"}``; ``instances`` is every watermark holder and commit author, and
    ``shared`` says whether more than one of them holds the store."""
    from gitmem.limits import Limits

    ledger.follow(repo)
    snap = repo.snapshot(ledger.store)
    found = record(repo, ledger.store)
    authors = ledger.authors()
    instances = sorted(set(held_by) | set(authors))
    return {
        "store": ledger.store,
        "head": snap.commit,
        "strategy": found.strategy.name if found else None,
        "limits": (found.limits if found else Limits()).as_params(),
        "totals": snap.totals.as_dict(),
        "peaks": snap.peaks.as_dict(),
        "holders": held_by,
        "authors": authors,
        "instances": instances,
        "shared": len(instances) > 1,
        "memories_ever": len(ledger.rows()),
    }


def memory_history(repo: Repository, store: str, slug: str) -> dict[str, Any]:
    """One memory with its revisions newest first, each with its text, its diff against
    the one before and the lines it added and removed: ``{"store", "slug", "live",
    "revision", "memory": {"description", "body", "code", "on_use"} | None,
    "revisions": [memory_revision + {"removed", "diff", "lines_added", "lines_removed"}]}``."""
    rows = log(repo, store, slug, patch=True)
    if not rows:
        raise NotFound(f"there is no memory named {slug!r} in {store}; `gitmem ls` lists them")
    latest = rows[0][0]
    revisions: list[dict[str, Any]] = []
    for r, d in rows:
        event = r.event()
        added, gone = diff_stat(d)
        event.update(removed=r.removed, diff=d, lines_added=added, lines_removed=gone)
        revisions.append(event)
    memory = None
    if not latest.removed:
        memory = {
            "description": latest.description,
            "body": latest.body,
            "code": latest.code,
            "on_use": latest.on_use,
        }
    return {
        "store": store,
        "slug": slug,
        "live": not latest.removed,
        "revision": latest.revision,
        "memory": memory,
        "revisions": revisions,
    }


def timeline(
    repo: Repository, store: str, author: str | None = None, limit: int = 500
) -> list[dict[str, Any]]:
    """Every version the store went through, newest first, optionally only ``author``'s,
    at most ``limit`` (0: all): ``[{"commit", "slug", "revision", "op", "removed",
    "author", "time", "description", "lines_added", "lines_removed"}]``.

    Only the newest commits are read, going further back while ``author``'s rows are
    fewer than ``limit``, so a long history costs what is shown."""
    head = repo.head(store)
    commits = list(repo.iter_commits(store))
    window = limit or len(commits)
    while True:
        base = commits[window] if window < len(commits) else None
        history = repo.revisions_since(store, base, head)
        rows = _timeline_rows(repo, store, history, author, limit)
        if base is None or (limit and len(rows) >= limit):
            return rows
        window *= 4


def _timeline_rows(
    repo: Repository, store: str, history: list[Revision], author: str | None, limit: int
) -> list[dict[str, Any]]:
    before: list[Revision | None] = []
    last: dict[str, Revision] = {}
    for r in history:
        before.append(last.get(r.slug))
        last[r.slug] = r
    rows: list[dict[str, Any]] = []
    for r, prior in zip(reversed(history), reversed(before), strict=True):
        if author is not None and r.author != author:
            continue
        if prior is None and r.revision > 1:
            # the revision before lies beyond the commits read: the slug's own history
            older = [o for o in repo.revisions(store, r.slug) if o.revision < r.revision]
            prior = older[-1] if older else None
        added, gone = line_changes(prior, r)
        rows.append(
            {
                "commit": r.commit,
                "slug": r.slug,
                "revision": r.revision,
                "op": r.op,
                "removed": r.removed,
                "author": r.author,
                "time": r.time,
                "description": r.description,
                "lines_added": added,
                "lines_removed": gone,
            }
        )
        if limit and len(rows) >= limit:
            break
    return rows


# -- running a program -----------------------------------------------------------------


class Run(NamedTuple):
    """What ``run`` gives back: the program's result and every view opened."""

    result: ProgramResult
    views: list[View]

    def as_json(self) -> dict[str, Any]:
        """``{"ok", "output", "error", "views": [{"title", "text"}]}``."""
        return {
            "ok": self.result.ok,
            "output": self.result.output,
            "error": self.result.error,
            "views": [{"title": v.title, "text": v.text} for v in self.views],
        }


def run(
    repo: Repository, store: str, author: Author, source: str, strategy: str | None = None
) -> Run:
    """Run an agent program against ``store`` as the operator, under the store's
    recorded strategy and limits (or ``strategy``, unbounded, for a store that records
    none), then its turn's onUse scripts; the holder's sandboxes are closed after."""
    from gitmem import strategies
    from gitmem.binding import Agent, Binding
    from gitmem.limits import Limits

    found = record(repo, store)
    if strategy is not None:
        named = strategies.get(strategy)
        if named is None:
            raise InvalidArgument(
                f"{strategy!r} is not a strategy; name one of {', '.join(strategies.names())}"
            )
        if found is None or found.strategy is not named:
            found = Record(named, found.limits if found else Limits())
    if found is None:
        raise InvalidArgument(
            f"store {store!r} records no strategy (no binding has written it); "
            f"name one with --strategy ({', '.join(strategies.names())})"
        )
    instance = re.sub(r"[^A-Za-z0-9._-]", "-", author.name).strip(".-") or "operator"
    agent = Agent("operator", instance[:100])
    from gitmem.holder import Holder

    holder = Holder(repo, found.capability(), agent, Binding(store, True), author=author)
    try:
        result = holder.run_program(source)
        holder.end_turn()
        return Run(result, holder.take_views())
    finally:
        holder.close()


# -- health --------------------------------------------------------------------------


def code_problems(repo: Repository) -> list[str]:
    """Every stored code half, in every store's head, that does not compile."""
    from gitmem.sandbox import Sandbox

    problems: list[str] = []
    with Sandbox() as sandbox:
        for store in repo.stores():
            if is_file_store(repo, store):
                continue
            for memory in _readable_memories(repo, store):
                for half, source in (("code", memory.code), ("onUse script", memory.on_use)):
                    diagnostic = sandbox.compile(source) if source else None
                    if diagnostic:
                        problems.append(
                            f"{store}: the {half} of {memory.slug} does not compile: {diagnostic}"
                        )
    return problems


def _readable_memories(repo: Repository, store: str) -> Iterator[Memory]:
    """The memories of a store's head that read; the object check reports the rest."""
    try:
        snapshot = repo.snapshot(store)
        slugs = snapshot.slugs()
    except GitmemError:
        return
    for slug in slugs:
        try:
            memory = snapshot.get(slug)
        except GitmemError:
            continue
        if memory is not None:
            yield memory


def row_problems(repo: Repository) -> list[str]:
    """Every memory of a curated store whose header does not read as a row's."""
    from gitmem.strategies import curated

    problems: list[str] = []
    for store in repo.stores():
        try:
            found = record(repo, store)
        except GitmemError:
            continue
        if found is None or found.strategy.name != curated.Curated.name:
            continue
        for memory in _readable_memories(repo, store):
            try:
                curated.parse_row(memory)
            except curated.NotARow as exc:
                problems.append(f"{store}: {exc}")
    return problems


def check(repo: Repository, progress: Callable[[int], None] | None = None) -> list[str]:
    """Every problem found in the repository (objects, memory files, rows, code); empty
    if healthy."""
    return repo.check(progress) + row_problems(repo) + code_problems(repo)
