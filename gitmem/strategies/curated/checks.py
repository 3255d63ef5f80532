"""Checking what a caller names: a claim kind, an owner and project, a choice, a row."""

from __future__ import annotations

from gitmem import edits
from gitmem.edits import Rules
from gitmem.errors import InvalidArgument
from gitmem.lean.text import shown
from gitmem.store import Snapshot
from gitmem.strategies.curated.parse import parse_row
from gitmem.strategies.curated.rows import KINDS, OWNERS, Row, claim_kind
from gitmem.types import check_slug

_NO_PROJECT = {
    "user": "a user row holds in any project, so it has no project; leave project out, "
    "or make it a project row (owner=project)",
    "host": "a host row is about the host, not a project; leave project out, or make it "
    "a project row (owner=project)",
}
"""Why an owner other than a project's takes no project key."""


def check_kind(description: str) -> str:
    kind = claim_kind(description)
    if kind not in KINDS:
        shown = f"`{kind}`" if kind else "nothing"
        raise InvalidArgument(
            f"the description's first word names the kind of claim, and {shown} is not "
            f'one; begin it with one of {", ".join(KINDS)} (e.g. "Fact: ...")'
        )
    return kind


def check_owner(owner: object, project: object) -> tuple[str, str]:
    """``(owner, project)``, refused where they do not fit together."""
    owner = choice(owner, OWNERS, "owner")
    key = "" if project is None else check_project(project)
    if owner == "project" and not key:
        raise InvalidArgument(
            "a project row names its project: give project=<key> "
            "(a row that names no owner's project reaches no reader looking for it)"
        )
    if key and owner in _NO_PROJECT:
        raise InvalidArgument(_NO_PROJECT[owner])
    return owner, key


def check_project(project: object) -> str:
    try:
        return check_slug(project)
    except InvalidArgument:
        raise InvalidArgument(
            f"project key {shown(project, quoted=True)} is not usable; use 1-64 letters, digits, '-', '_' "
            "and '.'"
        ) from None


def choice(value: object, allowed: tuple[str, ...], what: str) -> str:
    """``value``, refused unless it is one of ``allowed``."""
    if value not in allowed:
        raise InvalidArgument(
            f"{what} must be one of {', '.join(allowed)}, not {shown(value, quoted=True)}"
        )
    return str(value)


def named_row(snapshot: Snapshot, rules: Rules, name: str, project: str | None) -> Row:
    """The row called ``name``; refused when ``project`` is given and it is not that project's."""
    row = parse_row(edits.existing(snapshot, name, rules.voice))
    if project is not None and row.project != project:
        # a named project is never swapped for another
        raise InvalidArgument(
            f"`{name}` is not a row of project {project}: it is {row.whose}'s. Name that "
            "project, or leave project out (a row is found by its name wherever it is)"
        )
    return row
