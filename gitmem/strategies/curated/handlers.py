"""The curated tools' handlers: each checks an agent's arguments, calls one rule and answers."""

from __future__ import annotations

from collections.abc import Mapping

from gitmem.errors import InvalidArgument
from gitmem.strategies.base import Desk
from gitmem.strategies.curated.build import add, append, link, reclassify
from gitmem.strategies.curated.checks import check_owner, check_project, choice, named_row
from gitmem.strategies.curated.index import RowIndex, cached_index
from gitmem.strategies.curated.parse import parse_row
from gitmem.strategies.curated.render import relevant_text, row_text
from gitmem.strategies.curated.rows import KINDS, LINK_KINDS, OWNERS, ROLES, STATUSES, Row
from gitmem.strategies.keyword_search import check_keywords, search_text
from gitmem.types import Memory, check_line, check_slug, check_text


def _flag(args: Mapping[str, object], key: str) -> bool:
    value = args.get(key, False)
    if not isinstance(value, bool):
        raise InvalidArgument(f"{key} must be true or false")
    return value


def _project(args: Mapping[str, object]) -> str | None:
    value = args.get("project")
    return None if value is None else check_project(value)


def _index(desk: Desk) -> RowIndex:
    return cached_index(desk.repo, desk.store_id, desk.cache)


def add_row(desk: Desk, args: dict[str, object]) -> str:
    owner, project = check_owner(args["owner"], args.get("project"))
    row = Row(
        check_slug(args["name"]),
        check_line(args["description"], "description"),
        owner,
        project,
        choice(args.get("role", "knowledge"), ROLES, "role"),
        "live",
        check_text(args["body"], "body"),
    )
    correct = _flag(args, "replace")
    desk.publish(add(desk.rules, row, correct=correct))
    done = "Corrected" if correct else "Added"
    return (
        f"{done} `{row.name}`: a {row.kind} of {_owner_phrase(row)}, {row.role}, live. "
        f"(Kinds: {', '.join(KINDS)}; owners: {', '.join(OWNERS)}.)"
    )


def _owner_phrase(row: Row) -> str:
    return row.whose if row.owner == "project" else f"the {row.owner}"


def append_row(desk: Desk, args: dict[str, object]) -> str:
    name = check_slug(args["name"])
    desk.publish(append(desk.rules, name, check_text(args["text"], "text"), _project(args)))
    return f"Appended to `{name}`."


def link_rows(desk: Desk, args: dict[str, object]) -> str:
    source, target = check_slug(args["source"]), check_slug(args["target"])
    kind = choice(args["kind"], LINK_KINDS, "kind")
    desk.publish(link(desk.rules, source, kind, target))
    if kind == "supersedes":
        return f"`{source}` supersedes `{target}`; `{target}` leaves every injection and stays readable."
    return f"`{source}` graduated to `{target}`; the lineage is kept in both rows."


def reclassify_row(desk: Desk, args: dict[str, object]) -> str:
    name = check_slug(args["name"])
    status, role = args.get("status"), args.get("role")
    build = reclassify(
        desk.rules,
        name,
        status=None if status is None else choice(status, STATUSES, "status"),
        role=None if role is None else choice(role, ROLES, "role"),
        project=_project(args),
    )
    revision = desk.publish(build)[0]
    now = parse_row(Memory(name, revision.description, revision.body))
    return f"`{name}` is now {now.role}, {now.status}; nothing was deleted."


def read_row(desk: Desk, args: dict[str, object]) -> str:
    return row_text(
        named_row(desk.snapshot(), desk.rules, check_slug(args["name"]), _project(args))
    )


def search_rows(desk: Desk, args: dict[str, object]) -> str:
    keywords = check_keywords(args["keywords"])
    project = _project(args)
    index = _index(desk)
    scope = {"user", "host"}
    if project:
        scope.add(f"project {project}")
    hits = [h for h in index.search(keywords) if index.rows[h.memory.slug].whose in scope]
    limit = desk.rules.limits.max_results
    text = search_text(hits[:limit] if limit else hits, keywords, noun=("row", "rows"))
    where = f"project {project}, user and host rows" if project else "user and host rows only"
    note = f"(Searched {where}."
    if not hits:
        note += " No match here answers this phrasing in this scope, not that nothing is owed:"
        note += " name another project, or sweep one with get_relevant."
    return f"{text}\n{note})"


def get_relevant(desk: Desk, args: dict[str, object]) -> str:
    project = check_project(args["project"])
    index = _index(desk)
    knowledge = index.knowledge(project) if _flag(args, "knowledge") else None
    return relevant_text(project, index.pending(project), knowledge)
