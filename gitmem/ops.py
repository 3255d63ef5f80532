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
import difflib
import getpass
import json
import os
import re
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from gitmem import edits, strategies
from gitmem.binding import Agent, Binding
from gitmem.capability import Capability
from gitmem.edits import Rules
from gitmem.errors import GitmemError, InvalidArgument, InvalidAuthor, NotFound
from gitmem.holder import Holder
from gitmem.holder.telemetry import Event, state_event
from gitmem.limits import Limits
from gitmem.repository import Repository
from gitmem.sandbox import ProgramResult, Sandbox, View
from gitmem.store import git_identity
from gitmem.strategies import Strategy
from gitmem.strategies.keyword_search import Hit, SearchIndex, check_keywords
from gitmem.trailers import capability_trailer, read_capability_trailer
from gitmem.types import Author, Memory, Revision, check_slug

__all__ = [
    "REPOSITORY_DIR",
    "Ledger",
    "Record",
    "Run",
    "check",
    "create",
    "delete",
    "edit",
    "find_repository",
    "holders",
    "line_changes",
    "log",
    "memory_history",
    "operator_author",
    "parse_author",
    "pick_store",
    "record",
    "run",
    "save",
    "search",
    "show",
    "state",
    "store_overview",
    "store_rows",
    "timeline",
]

REPOSITORY_DIR = ".gitmem"


# -- finding things ------------------------------------------------------------------


def find_repository(start: str) -> str:
    """The ``.gitmem`` folder in ``start`` or its nearest ancestor, else ``start/.gitmem``."""
    here = os.path.abspath(start)
    while True:
        candidate = os.path.join(here, REPOSITORY_DIR)
        if os.path.isdir(candidate):
            return candidate
        parent = os.path.dirname(here)
        if parent == here:
            return os.path.join(os.path.abspath(start), REPOSITORY_DIR)
        here = parent


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


@dataclass(frozen=True)
class Record:
    """The strategy and limits the binding that last wrote a store recorded."""

    strategy: Strategy
    limits: Limits

    def capability(self) -> Capability:
        """A capability under the recorded strategy and limits (an operator's binding
        names its store itself, so the scope plays no part)."""
        return Capability(self.strategy.name, "shared", self.limits)


def record(repo: Repository, store: str) -> Record | None:
    """What the store's head records, or ``None`` for a store only operators have
    written (or one written under a strategy this process has not registered)."""
    found = read_capability_trailer(repo.snapshot(store).trailers)
    if found is None:
        return None
    strategy = strategies.get(found[0])
    return Record(strategy, found[1]) if strategy is not None else None


@dataclass(frozen=True)
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


def _rules(repo: Repository, store: str) -> Rules:
    """The rules an operator's edit obeys: the recorded binding's, recorded again so
    the next edit finds them; none for a store no binding wrote."""
    found = record(repo, store) if store in repo.stores() else None
    if found is None:
        return Rules(_OperatorVoice())
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
    memory = Memory(check_slug(slug), description, body, code, on_use)
    return repo.mutate(
        store, author, _based_on(edits.create(_rules(repo, store), memory), slug, expected)
    )


def _based_on(build: edits.Build, slug: str, expected: int | None) -> edits.Build:
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
    check_slug(slug)
    if (old_text is None) != (new_text is None):
        raise InvalidArgument("give both the text to replace and its replacement (--old and --new)")
    if old_text is not None and body is not None:
        raise InvalidArgument("give either a replacement (--old/--new) or a whole body, not both")
    if old_text is None and body is None and description is None:
        raise InvalidArgument("nothing to change; give --old/--new, --body or --description")
    rules = _rules(repo, store)
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
    build = edits.delete(_rules(repo, store), slug)
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


# -- reading -------------------------------------------------------------------------


def store_rows(repo: Repository) -> list[dict[str, Any]]:
    """Each store with its head and totals: ``{"store", "head", "count", "chars", "lines"}``."""
    rows: list[dict[str, Any]] = []
    for store in repo.stores():
        snap = repo.snapshot(store)
        rows.append({"store": store, "head": snap.commit, **snap.totals.as_dict()})
    return rows


def memory_rows(repo: Repository, store: str) -> list[dict[str, Any]]:
    """Each memory of a store: ``{"slug", "description", "chars", "lines"}``."""
    return [
        {"slug": m.slug, "description": m.description, "chars": m.chars, "lines": m.lines}
        for m in repo.snapshot(store).memories()
    ]


def show(repo: Repository, store: str, slug: str, rev: int | None = None) -> Revision:
    """The revision ``rev`` of ``slug`` (default: the live one; a deleted memory's last
    text needs its revision named)."""
    history = repo.revisions(store, slug)
    if not history:
        raise NotFound(f"there is no memory named {slug!r} in {store}; `gitmem ls` lists them")
    if rev is None:
        found = history[-1]
        if found.removed:
            raise NotFound(
                f"{slug!r} was deleted at revision {found.revision}; "
                f"see its last text with `gitmem show {slug} --rev {found.revision}`"
            )
        return found
    for candidate in history:
        if candidate.revision == rev:
            return candidate
    raise NotFound(f"{slug!r} has revisions 1 to {history[-1].revision}, not {rev}")


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
    old = render(after) if after.removed else render(before) if before is not None else ""
    new = "" if after.removed else render(after)
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"{after.slug} r{before.revision}" if before is not None else "/dev/null",
        tofile="/dev/null" if after.removed else f"{after.slug} r{after.revision}",
    )
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )


def log(
    repo: Repository, store: str, slug: str | None = None, *, patch: bool = False
) -> list[tuple[Revision, str]]:
    """The revisions of a store (or one memory), newest first, each with its diff
    (``""`` unless ``patch``)."""
    rows: list[tuple[Revision, str]] = []
    last: dict[str, Revision] = {}
    for r in repo.revisions(store, slug):
        rows.append((r, diff(last.get(r.slug), r) if patch else ""))
        last[r.slug] = r
    return rows[::-1]


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
    found = record(repo, store)
    limits = found.limits if found else Limits()
    return state_event(repo.snapshot(store), "operator", True, limits)


def search(repo: Repository, store: str, keywords: list[str], limit: int = 0) -> list[Hit]:
    """Rank the store's memories as ``search_memories`` does (``limit`` 0: the store's
    maxResults, or every hit where it records none)."""
    keywords = check_keywords(keywords)
    if not limit:
        found = record(repo, store)
        limit = found.limits.max_results if found else 0
    index = SearchIndex()
    index.follow(repo, store)
    return index.search(keywords, limit)


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
    return _counted(diff(before, after))


def _counted(unified: str) -> tuple[int, int]:
    added = removed = 0
    # the first two lines name the files; a body line may itself start with "--"
    for line in unified.splitlines()[2:]:
        if line.startswith("+"):
            added += 1
        elif line.startswith("-"):
            removed += 1
    return added, removed


@dataclass
class _Held:
    """One memory a store has ever held, as the ledger folds its revisions."""

    slug: str
    description: str = ""
    live: bool = False
    chars: int = 0
    peak_chars: int = 0
    revisions: int = 0
    revision: int = 0
    author: str = ""
    time: int = 0


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
        added, gone = _counted(d)
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


@dataclass(frozen=True)
class Run:
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
    found = record(repo, store) if store in repo.stores() else None
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
    problems: list[str] = []
    with Sandbox() as sandbox:
        for store in repo.stores():
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


def check(repo: Repository, progress: Callable[[int], None] | None = None) -> list[str]:
    """Every problem found in the repository (objects, memory files, code); empty if healthy."""
    return repo.check(progress) + code_problems(repo)
