"""Operator edits and upkeep: what a person at the command line does to a repository.

Each edit is one library mutation authored as the operator (by default the user's git
identity), obeying the same slug and text rules an agent's writes obey::

    from gitmem import Repository
    from gitmem import operator

    repo = Repository.open(".gitmem")
    me = operator.operator_author()
    operator.create(repo, "notes", me, "deploy-runbook", "how staging is rolled", "1. ...")
    operator.edit(repo, "notes", me, "deploy-runbook", old_text="1.", new_text="First,")
    operator.delete(repo, "notes", me, "deploy-runbook")

``check`` inspects the repository's health: the store's object and file checks, plus
the code halves.
"""

from __future__ import annotations

import getpass
import re
import socket
from collections.abc import Callable, Iterator
from typing import Any, Protocol, cast

from gitmem.capability import Capability, Implementation, Limits
from gitmem.errors import GitmemError, InvalidArgument, InvalidAuthor, NotFound
from gitmem.holder import CAPABILITY_TRAILER, Holder, limits_from_trailer, state_event
from gitmem.limits import check_write
from gitmem.repository import Repository
from gitmem.sandbox import Sandbox
from gitmem.scope import Agent, Binding
from gitmem.store import Snapshot, git_identity
from gitmem.strategies import STRATEGIES
from gitmem.strategies.keyword_search import Hit, SearchIndex
from gitmem.types import Author, Change, Memory, Revision, check_slug, check_text

__all__ = [
    "LimitCheck",
    "check",
    "code_problems",
    "create",
    "delete",
    "edit",
    "limits_for",
    "operator_author",
    "pick_store",
]


class LimitCheck(Protocol):
    """Refuses a change that would breach a store's limits (raises ``LimitExceeded``)."""

    def __call__(self, before: Snapshot, change: Change) -> None: ...


def limits_for(repo: Repository, store: str) -> LimitCheck | None:
    """The limits operator edits on ``store`` obey: those of the binding that made it.

    A store a binding wrote records its strategy and limits on each commit; a store only
    operators have written is unbounded.
    """
    trailer = repo.snapshot(store).trailers.get(CAPABILITY_TRAILER)
    found = limits_from_trailer(trailer) if trailer else None
    if found is None:
        return None
    strategy, limits = found

    def check(before: Snapshot, change: Change) -> None:
        if change.memory is None:
            return
        check_write(
            limits,
            strategy.aggregate_limits,
            before.get(change.slug),
            change.memory,
            before.memories,
            count=before.totals.count,
            total_chars=before.totals.chars,
        )

    return check


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


def _publish(
    repo: Repository, store: str, author: Author, fn: Callable[[Snapshot], Change]
) -> Revision:
    limits = limits_for(repo, store)

    def checked(snapshot: Snapshot) -> Change:
        change = fn(snapshot)
        if limits is not None:
            limits(snapshot, change)
        return change

    return repo.mutate(store, author, checked)


def create(
    repo: Repository,
    store: str,
    author: Author,
    slug: str,
    description: str,
    body: str,
    code: str = "",
    on_use: str = "",
) -> Revision:
    """Create memory ``slug``; refused if it exists."""
    memory = Memory(check_slug(slug), description, body, code, on_use)
    return _publish(repo, store, author, lambda _: Change("create", slug, memory))


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
) -> Revision:
    """Change memory ``slug``: replace ``old_text`` (found exactly once) by ``new_text``,
    or the whole ``body``, and/or the ``description``. An empty result is refused."""
    check_slug(slug)
    if (old_text is None) != (new_text is None):
        raise InvalidArgument("give both the text to replace and its replacement (--old and --new)")
    if old_text is not None and body is not None:
        raise InvalidArgument("give either a replacement (--old/--new) or a whole body, not both")
    if old_text is None and body is None and description is None:
        raise InvalidArgument("nothing to change; give --old/--new, --body or --description")
    if old_text == "":
        raise InvalidArgument("the text to replace is empty; quote the text to change")

    def change(snapshot: Snapshot) -> Change:
        memory = snapshot.get(slug)
        if memory is None:
            raise NotFound(f"there is no memory named {slug!r} to edit; `gitmem ls` lists them")
        new_body = memory.body if body is None else body
        if old_text is not None and new_text is not None:
            found = memory.body.count(old_text)
            if found == 0:
                raise NotFound(
                    f"the text to replace does not occur in {slug!r}; "
                    f"copy it exactly from `gitmem show {slug}`"
                )
            if found > 1:
                raise InvalidArgument(
                    f"the text to replace occurs {found} times in {slug!r}; "
                    "include more surrounding text so it occurs exactly once"
                )
            new_body = memory.body.replace(old_text, new_text, 1)
        if not new_body:
            raise InvalidArgument(
                f"the edit would leave {slug!r} empty; delete it instead with `gitmem delete {slug}`"
            )
        new = Memory(
            slug,
            memory.description if description is None else description,
            new_body,
            memory.code,
            memory.on_use,
        )
        return Change("edit", slug, new)

    return _publish(repo, store, author, change)


def delete(repo: Repository, store: str, author: Author, slug: str) -> Revision:
    """Delete memory ``slug`` (its history stays)."""
    check_slug(slug)
    return _publish(repo, store, author, lambda _: Change("delete", slug, None))


# -- health ------------------------------------------------------------------------


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


# -- the capability's views, for an operator ------------------------------------------


def recorded_capability(repo: Repository, store: str) -> Capability:
    """The capability a store was written under (its head's record), else an unbounded
    markdown one: what ``state``, ``search`` and ``run`` hold the store to."""
    trailer = repo.snapshot(store).trailers.get(CAPABILITY_TRAILER)
    found = limits_from_trailer(trailer) if trailer else None
    strategy, limits = found if found else (STRATEGIES["markdown"], Limits(max_results=25))
    return Capability(
        implementation=cast(Implementation, strategy.name), scope="shared", limits=limits
    )


def operator_holder(repo: Repository, store: str, author: Author) -> Holder:
    """A writable holder of ``store`` for the operator, under the store's own limits."""
    instance = re.sub(r"[^A-Za-z0-9._-]", "-", author.name).strip(".-") or "operator"
    agent = Agent("operator", instance[:100])
    capability = recorded_capability(repo, store)
    return Holder(repo, capability, agent, Binding(store, True), author=author)


def state(repo: Repository, store: str) -> dict[str, Any]:
    """The store's ``memory_state`` as an operator sees it (scope ``operator``)."""
    limits = recorded_capability(repo, store).limits
    return state_event(repo.snapshot(store), "operator", True, limits)


def search(repo: Repository, store: str, keywords: list[str], limit: int = 0) -> list[Hit]:
    """Rank the store's memories as ``search_memories`` does (``limit`` 0: the store's)."""
    for keyword in keywords:
        check_text(keyword, "keyword")
    if not any(keywords):
        raise InvalidArgument("give at least one non-empty keyword")
    limit = limit or recorded_capability(repo, store).limits.max_results
    index = SearchIndex()
    index.reset(repo.snapshot(store).memories(), None)
    return index.search(keywords, limit)
