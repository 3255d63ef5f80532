"""The write rules, as change builders: add, append, link, unlink and reclassify a row."""

from __future__ import annotations

from dataclasses import replace

from gitmem.edits import Build, Rules
from gitmem.errors import AlreadyExists, InvalidArgument, NotFound
from gitmem.store import Snapshot
from gitmem.strategies.curated.checks import check_kind, check_owner, choice, named_row
from gitmem.strategies.curated.parse import parse_row
from gitmem.strategies.curated.rows import LINK_KINDS, REVERSE, ROLES, STATUSES, Row
from gitmem.types import Change, Edit, check_slug, check_text


def add(rules: Rules, row: Row, *, correct: bool = False) -> Build:
    """A new row; over an existing name refused, unless ``correct`` (a marked correction
    that keeps the row's status and links)."""
    check_slug(row.name)
    check_kind(row.description)
    check_owner(row.owner, row.project or None)
    choice(row.role, ROLES, "role")
    for value, what in ((row.description, "description"), (row.content, "body")):
        check_text(value, what)

    def build(snapshot: Snapshot) -> Change:
        old = snapshot.get(row.name)
        if old is None:
            if correct:
                raise NotFound(f"there is no row `{row.name}` to correct; add it without replace")
            return rules.change(snapshot, "add", row.name, row.memory())
        if not correct:
            raise AlreadyExists(
                f"a row named `{row.name}` already exists, and rows are append-only: write "
                "a new row and link it to this one with kind supersedes, or, only to "
                "correct an error in it, add it again with replace=true"
            )
        held = parse_row(old)
        fixed = replace(row, status=held.status, links=held.links)
        revision = snapshot.revision(row.name)
        change = Change(
            "correct",
            row.name,
            fixed.memory(),
            {**rules.trailers, "Gitmem-Correction": f"replaces revision {revision}"},
        )
        rules.check(snapshot, change)
        return change

    return build


def append(rules: Rules, name: str, text: str, project: str | None = None) -> Build:
    """Grow a log or a live thread by ``text`` (on a line of its own)."""
    check_slug(name)
    check_text(text, "text")
    if not text.strip():
        raise InvalidArgument("there is nothing to append; give the text to add")

    def build(snapshot: Snapshot) -> Change:
        row = named_row(snapshot, rules, name, project)
        if row.role == "knowledge":
            raise InvalidArgument(
                f"`{name}` is durable knowledge, which is never edited: only a log or a "
                "live thread grows by append. Write a new row that supersedes it instead"
            )
        sep = "" if not row.content or row.content.endswith("\n") else "\n"
        grown = replace(row, content=row.content + sep + text)
        return rules.change(snapshot, "append", name, grown.memory())

    return build


def _edge(rules: Rules, source: str, kind: str, target: str, *, present: bool) -> Build:
    check_slug(source)
    check_slug(target)
    choice(kind, LINK_KINDS, "the link kind")
    if source == target:
        raise InvalidArgument(f"a row cannot link to itself (`{source}`)")
    op = "link" if present else "unlink"

    def build(snapshot: Snapshot) -> Change:
        src = named_row(snapshot, rules, source, None)
        dst = named_row(snapshot, rules, target, None)
        has = target in src.linked(kind)
        if present and has:
            raise AlreadyExists(f"`{source}` already {kind} `{target}`")
        if not present and not has:
            raise NotFound(f"`{source}` has no {kind} link to `{target}`")
        if present and kind == "supersedes":
            if src.superseded:
                raise InvalidArgument(
                    f"`{source}` is itself superseded (by {', '.join(src.linked('superseded_by'))}); "
                    "the arrow goes from the newest row to the one it replaces"
                )
            if source in dst.linked("supersedes"):
                raise InvalidArgument(
                    f"`{target}` supersedes `{source}`; an arrow back would retire both"
                )
        new_src = src.with_link(kind, target, present=present)
        new_dst = dst.with_link(REVERSE[kind], source, present=present)
        return rules.change(
            snapshot, op, source, new_src.memory(), Edit(op, target, new_dst.memory())
        )

    return build


def link(rules: Rules, source: str, kind: str, target: str) -> Build:
    """An arrow from ``source`` to ``target`` (``supersedes``: the new row to the old,
    which leaves every injection; ``graduated_to``: a thread to what it became), kept
    in both rows by one commit."""
    return _edge(rules, source, kind, target, present=True)


def unlink(rules: Rules, source: str, kind: str, target: str) -> Build:
    """Remove an arrow (an operator's verb): one commit; the edge stays in history."""
    return _edge(rules, source, kind, target, present=False)


def reclassify(
    rules: Rules,
    name: str,
    *,
    status: str | None = None,
    role: str | None = None,
    project: str | None = None,
) -> Build:
    """Change a row's status (``live``, ``closed``, ``graduated``) and/or role; its
    content stays as it is."""
    check_slug(name)
    if status is None and role is None:
        raise InvalidArgument("reclassify needs a status, a role or both")
    if status is not None:
        choice(status, STATUSES, "status")
    if role is not None:
        choice(role, ROLES, "role")

    def build(snapshot: Snapshot) -> Change:
        row = named_row(snapshot, rules, name, project)
        new = replace(row, status=status or row.status, role=role or row.role)
        if new == row:
            raise InvalidArgument(
                f"`{name}` is already {row.role}, {row.status}; nothing to change"
            )
        return rules.change(snapshot, "reclassify", name, new.memory())

    return build
