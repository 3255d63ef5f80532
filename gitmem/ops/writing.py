"""An operator's edits: create, edit, delete and save memories, each through
:mod:`gitmem.edits` under the limits the store records, as one commit."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from gitmem.errors import InvalidArgument
from gitmem.limits import Limits
from gitmem.types import Author, Memory, Revision, check_slug

if TYPE_CHECKING:
    from gitmem import edits
    from gitmem.repository import Repository

__all__ = ["create", "delete", "edit", "save", "set_limits"]


def _rules(repo: Repository, store: str, op: str, slug: str) -> edits.Rules:
    """The rules an operator's ``op`` of ``slug`` obeys; a strategy may refuse the
    plain op (a notebook is saved whole), naming what to use."""
    from gitmem.strategies.operator import operator_rules, recorded

    found = recorded(repo, store)
    refusal = found.strategy.operator_refusal(op, slug) if found is not None else None
    if refusal is not None:
        raise InvalidArgument(refusal)
    return operator_rules(found)


def _based_on(build: edits.Build, slug: str, expected: int | None) -> edits.Build:
    from gitmem import edits

    return build if expected is None else edits.based_on(build, slug, expected)


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


def set_limits(
    repo: Repository, store: str, author: Author, assignments: Sequence[str], widen: bool = False
) -> str:
    """Record new limits for ``store`` (``maxLenPerMemory=2000`` ...; the others kept)
    as one commit that changes no memory; returns it. Loosening a limit (turning it
    off, or raising it) is refused unless ``widen``: the commit then says so, and sync
    adopts it elsewhere with a line that names it; a push hook refuses it, so widen
    where the shared store is kept."""
    from gitmem.limits import LIMITS
    from gitmem.strategies.operator import recorded
    from gitmem.trailers import WIDEN_TRAILER, capability_trailer

    found = recorded(repo, store)
    if found is None:
        raise InvalidArgument(
            f"store {store!r} records no limits yet; a binding's first write records them"
        )
    params = found.limits.as_params()
    for text in assignments:
        name, sep, value = text.partition("=")
        if not sep or name not in LIMITS or not value.isdigit() or len(value) > 18:
            raise InvalidArgument(
                f"{text!r} is not a limit setting; use NAME=N with NAME one of {', '.join(LIMITS)}"
            )
        params[name] = int(value)
    limits = Limits.from_params(params)
    loosened = found.limits.widened(limits)
    if loosened and not widen:
        raise InvalidArgument(
            f"that loosens {', '.join(loosened)}; pass --widen to loosen limits on purpose"
        )
    trailers = capability_trailer(found.strategy.name, limits)
    if loosened:
        trailers[WIDEN_TRAILER] = " ".join(loosened)
    return repo.record(store, "set limits", trailers, author)
