"""What the console shows: each store's overview and the edits its strategy allows, one
memory's history, a store's timeline, and the agents and modules views: each profile
with how its instances hold their stores, and each store with every instance holding
it. Every memory a store ever held (the ledger the treemap draws) is
:mod:`gitmem.ops.ledger`'s."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gitmem.errors import NotFound
from gitmem.ops.diffs import diff_stat, line_changes
from gitmem.ops.reading import file_log, is_file_store, log, state
from gitmem.ops.record import record
from gitmem.types import Revision

if TYPE_CHECKING:
    from gitmem.ops.ledger import Ledger
    from gitmem.repository import Repository

__all__ = [
    "ACTIONS",
    "agents",
    "allowed_actions",
    "holders",
    "memory_history",
    "modules",
    "store_overview",
    "timeline",
]

ACTIONS = ("create", "edit", "delete")
"""The plain edits an operator may make on the console: create a memory, save one
(``edit``), delete one."""


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


def allowed_actions(repo: Repository, store: str) -> dict[str, Any]:
    """Which of :data:`ACTIONS` the store's strategy lets an operator make:
    ``{"allowed": [...], "refused": {action: why}}``; a file store allows none."""
    if store in repo.stores() and is_file_store(repo, store):
        why = "a file store is written by the memory tool; read it with `gitmem show PATH`"
        return {"allowed": [], "refused": dict.fromkeys(ACTIONS, why)}
    found = record(repo, store) if store in repo.stores() else None
    refused: dict[str, str] = {}
    for action in ACTIONS:
        why = found.strategy.operator_refusal(action, "") if found is not None else None
        if why is not None:
            refused[action] = why
    return {"allowed": [a for a in ACTIONS if a not in refused], "refused": refused}


def store_overview(
    repo: Repository,
    ledger: Ledger | None,
    held_by: list[str],
    store: str = "",
    history: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A store as the console's Stores page shows it: ``{"store", "head", "strategy",
    "limits", "totals", "peaks", "holders", "authors", "instances", "shared",
    "memories_ever", "actions"}``; ``instances`` is every watermark holder and every agent
    that wrote it (an operator and ``gitmem sync`` are authors, not instances), and
    ``shared`` says whether more than one of them holds the store.

    With no ``ledger`` (``store``'s history is still being read), what only the history
    knows (``authors``, ``instances``, ``shared``, ``memories_ever``) is ``None``, and
    ``history`` (how far the reading has gone, see ``Ledgers``) is added."""
    from gitmem.limits import Limits

    if ledger is not None:
        ledger.follow(repo)
        store = ledger.store
    snap = repo.snapshot(store)
    found = record(repo, store)
    instances = sorted(set(held_by) | set(ledger.agents())) if ledger is not None else None
    overview: dict[str, Any] = {
        "store": store,
        "head": snap.commit,
        "strategy": found.strategy.name if found else None,
        "limits": (found.limits if found else Limits()).as_params(),
        "totals": snap.totals.to_dict(),
        "peaks": snap.peaks.to_dict(),
        "holders": held_by,
        "authors": ledger.authors() if ledger is not None else None,
        "instances": instances,
        "shared": len(instances) > 1 if instances is not None else None,
        "memories_ever": len(ledger) if ledger is not None else None,
        "actions": allowed_actions(repo, store),
    }
    if ledger is None:
        overview["history"] = history
    return overview


_HOLDING = {
    "isolated": "one each",
    "shared": "one store",
    "inherited": "the spawner's",
    "read-only": "the spawner's",
}
"""What each scope asks of a profile's instances: a store each, one store for the
profile, or (for a subagent) its spawner's store."""


def _instances(repo: Repository, ledgers: list[Ledger]) -> dict[str, dict[str, Any]]:
    """Every agent instance the repository records, with the stores it holds: each
    that wrote a store (its commits say so) or keeps a notice watermark on one."""
    found: dict[str, dict[str, Any]] = {}

    def entry(instance: str) -> dict[str, Any]:
        return found.setdefault(
            instance,
            {
                "instance": instance,
                "profile": None,
                "scope": None,
                "started_as": None,
                "stores": {},
            },
        )

    for ledger in ledgers:
        ledger.follow(repo)
        for instance, seen in ledger.agents().items():
            one = entry(instance)
            one["stores"][ledger.store] = {"wrote": seen["commits"], "watching": False}
            if seen["profile"] is not None:
                one.update(
                    profile=seen["profile"], scope=seen["scope"], started_as=seen["started_as"]
                )
    for store, watchers in holders(repo).items():
        for instance in watchers:
            one = entry(instance)
            one["stores"].setdefault(store, {"wrote": 0, "watching": False})["watching"] = True
    for one in found.values():
        # a holder that only read records no profile: a profile's own store names it
        if one["profile"] is None:
            named = [s.removeprefix("profile/") for s in one["stores"] if s.startswith("profile/")]
            one["profile"] = named[0] if len(named) == 1 else None
    return found


def modules(repo: Repository, ledgers: list[Ledger]) -> list[dict[str, Any]]:
    """Each store once with every instance holding it: ``[{"store", "strategy",
    "shared", "instances": [{"instance", "profile", "wrote", "watching"}]}]``, where
    ``wrote`` counts the instance's commits and ``watching`` says it keeps a notice
    watermark there."""
    everyone = _instances(repo, ledgers)
    rows: list[dict[str, Any]] = []
    for ledger in sorted(ledgers, key=lambda one: one.store):
        found = record(repo, ledger.store)
        held = [
            {"instance": name, "profile": one["profile"], **one["stores"][ledger.store]}
            for name, one in sorted(everyone.items())
            if ledger.store in one["stores"]
        ]
        rows.append(
            {
                "store": ledger.store,
                "strategy": found.strategy.name if found else None,
                "shared": len(held) > 1,
                "instances": held,
            }
        )
    return rows


def agents(repo: Repository, ledgers: list[Ledger]) -> list[dict[str, Any]]:
    """Each profile with its instances, as the repository resolved their scopes:
    ``[{"profile", "scope", "expected", "holding", "stores", "instances":
    [{"instance", "scope", "started_as", "stores"}], "divergence": [text]}]``.

    ``holding`` is what the instances do: ``one store`` (they share one), ``one each``,
    ``one instance`` or ``mixed``; ``expected`` is what the scope asked for, and each
    ``divergence`` line names an instance or store where the two differ. Instances
    whose profile nothing records are grouped under the profile ``None``."""
    everyone = _instances(repo, ledgers)
    profiles: dict[str | None, list[dict[str, Any]]] = {}
    for one in everyone.values():
        profiles.setdefault(one["profile"], []).append(one)
    rows: list[dict[str, Any]] = []
    for profile in sorted(profiles, key=lambda p: (p is None, p or "")):
        members = sorted(profiles[profile], key=lambda one: one["instance"])
        stores = sorted({store for one in members for store in one["stores"]})
        scopes = sorted({one["scope"] for one in members if one["scope"] is not None})
        scope = scopes[0] if len(scopes) == 1 else ("mixed" if scopes else None)
        rows.append(
            {
                "profile": profile,
                "scope": scope,
                "expected": _HOLDING.get(scope or ""),
                "holding": _holding(members, stores),
                "stores": stores,
                "instances": [
                    {
                        "instance": one["instance"],
                        "scope": one["scope"],
                        "started_as": one["started_as"],
                        "stores": sorted(one["stores"]),
                    }
                    for one in members
                ],
                "divergence": _divergence(profile, scope, scopes, members, stores),
            }
        )
    return rows


def _holding(members: list[dict[str, Any]], stores: list[str]) -> str:
    if len(members) == 1:
        return "one instance"
    if len(stores) == 1:
        return "one store"
    owners = [sum(store in one["stores"] for one in members) for store in stores]
    if all(len(one["stores"]) == 1 for one in members) and all(n == 1 for n in owners):
        return "one each"
    return "mixed"


def _divergence(
    profile: str | None,
    scope: str | None,
    scopes: list[str],
    members: list[dict[str, Any]],
    stores: list[str],
) -> list[str]:
    """Where the profile's instances hold something other than what its scope asked."""
    if len(scopes) > 1:
        asked = "; ".join(
            f"{s}: {', '.join(one['instance'] for one in members if one['scope'] == s)}"
            for s in scopes
        )
        return [f"its instances asked for different scopes ({asked})"]
    found: list[str] = []
    if scope == "isolated":
        for store in stores:
            sharing = [one["instance"] for one in members if store in one["stores"]]
            if len(sharing) > 1:
                found.append(
                    f"isolated asks for a store each, but {', '.join(sharing)} share {store}"
                )
    elif scope == "shared":
        if len(stores) > 1:
            found.append(
                f"shared asks for one store, but its instances hold {len(stores)}: "
                + ", ".join(stores)
            )
        own = f"profile/{profile}"
        for store in stores:
            if store != own:
                found.append(f"shared binds {own}, but {store} is held too")
    elif scope in ("inherited", "read-only"):
        for one in members:
            mine = f"instance/{one['instance']}"
            if mine in one["stores"]:
                started = one["started_as"] or "an agent"
                writable = ", and writable" if scope == "read-only" else ""
                found.append(
                    f"{scope} asks for the spawner's store, but {one['instance']} (started as "
                    f"{started}) keeps its own, {mine}{writable}: nothing with memories "
                    "spawned it"
                )
    return found


def store_state(repo: Repository, store: str) -> dict[str, Any]:
    """The figures the console's panel heads with: a memory store's ``memory_state``,
    or for a file store its totals and peaks over files (a file store records no
    limits: the memory tool's client holds it to its own)."""
    if not is_file_store(repo, store):
        return dict(state(repo, store))
    files = repo.files(store)
    return {
        "type": "file_state",
        "store": store,
        "totals": files.totals.to_dict(),
        "peaks": files.peaks.to_dict(),
        "limits": {},
    }


def memory_history(repo: Repository, store: str, slug: str) -> dict[str, Any]:
    """One memory with its revisions newest first, each with its text, its diff against
    the one before and the lines it added and removed: ``{"store", "slug", "live",
    "revision", "memory": {"description", "body", "code", "on_use"} | None,
    "revisions": [memory_revision + {"removed", "diff", "lines_added", "lines_removed"}],
    "actions": allowed_actions(...)}``."""
    if is_file_store(repo, store):
        return _file_history(repo, store, slug)
    rows = log(repo, store, slug, patch=True)
    if not rows:
        raise NotFound(f"there is no memory named {slug!r} in {store}; `gitmem ls` lists them")
    latest = rows[0][0]
    revisions: list[dict[str, Any]] = []
    for r, d in rows:
        revisions.append(_with_diff(r.to_dict(), r.removed, d))
    memory = None
    if not latest.removed:
        memory = {
            "description": latest.description,
            "body": latest.body,
            "code": latest.code,
            "on_use": latest.on_use,
        }
    return _history_page(repo, store, slug, latest.removed, latest.revision, memory, revisions)


def _file_history(repo: Repository, store: str, path: str) -> dict[str, Any]:
    """A file's history in ``memory_history``'s shape: the file's text is the body, and
    a file has no description or code."""
    rows = file_log(repo, store, path, patch=True)
    if not rows:
        raise NotFound(f"there is no file {path!r} in {store}; `gitmem ls` lists them")
    latest = rows[0][0]
    revisions: list[dict[str, Any]] = []
    for r, d in rows:
        shaped = {**r.to_dict(), "slug": r.path, "description": "", "body": r.text}
        revisions.append(_with_diff({**shaped, "code": "", "on_use": ""}, r.removed, d))
    memory = None
    if not latest.removed:
        memory = {"description": "", "body": latest.text, "code": "", "on_use": ""}
    return _history_page(repo, store, path, latest.removed, latest.revision, memory, revisions)


def _with_diff(event: dict[str, Any], removed: bool, diff: str) -> dict[str, Any]:
    added, gone = diff_stat(diff)
    event.update(removed=removed, diff=diff, lines_added=added, lines_removed=gone)
    return event


def _history_page(
    repo: Repository,
    store: str,
    name: str,
    removed: bool,
    revision: int,
    memory: dict[str, str] | None,
    revisions: list[dict[str, Any]],
) -> dict[str, Any]:
    return {
        "store": store,
        "slug": name,
        "live": not removed,
        "revision": revision,
        "memory": memory,
        "revisions": revisions,
        "actions": allowed_actions(repo, store),
    }


def timeline(
    repo: Repository, store: str, author: str | None = None, limit: int = 500
) -> list[dict[str, Any]]:
    """Every version the store went through, newest first, optionally only ``author``'s,
    at most ``limit`` (0: all): ``[{"commit", "slug", "revision", "op", "removed",
    "author", "by", "time", "description", "lines_added", "lines_removed"}]``; ``by`` as
    blame gives it (``agent``, ``operator``, or ``git``: a commit gitmem did not make,
    whose author is any name its maker chose).

    Only the newest commits are read, going further back while ``author``'s rows are
    fewer than ``limit``, so a long history costs what is shown. A file store's rows
    are its files' revisions (``slug`` the path), such as the observer's steps'."""
    if is_file_store(repo, store):
        return _file_timeline(repo, store, author, limit)
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
                "by": repo.made_as(r.commit),
                "time": r.time,
                "description": r.description,
                "lines_added": added,
                "lines_removed": gone,
            }
        )
        if limit and len(rows) >= limit:
            break
    return rows


def _file_timeline(
    repo: Repository, store: str, author: str | None, limit: int
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for r, diff in file_log(repo, store, patch=True):
        if author is not None and r.author != author:
            continue
        added, gone = diff_stat(diff)
        rows.append(
            {
                "commit": r.commit,
                "slug": r.path,
                "revision": r.revision,
                "op": r.op,
                "removed": r.removed,
                "author": r.author,
                "by": repo.made_as(r.commit),
                "time": r.time,
                "description": "",
                "lines_added": added,
                "lines_removed": gone,
            }
        )
        if limit and len(rows) >= limit:
            break
    return rows
