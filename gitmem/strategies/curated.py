"""curated (seed 002): rows with an owner, a role, a status and a claim kind, kept
append-only and retired by a lifecycle (supersedes, closed, graduated), never deleted.

A row is one memory: its slug is the row's name, its description the claim (whose
first word is the kind of claim), and its body a small header, a blank line, then the
content::

    owner: project alpha        owner: user | owner: project <key> | owner: host
    role: thread                knowledge | thread | log
    status: live                live | closed | graduated
    supersedes: old-row         optional link lines, names separated by one space,
    superseded_by: newer-row    each kept in step with its reverse in the other row
    graduated_to: anchor-row
    graduated_from: thread-row

    The content, verbatim.

The header is read line by line, strictly (the three first lines in that order, the
link lines optional and in that order, then the blank line), so reading a row is linear
in its size and a malformed one is told apart from a row. Links live in both rows they
join, so a link is one commit that changes both, every edge is versioned, and whether a
row is superseded is read from the row alone.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Literal

from gitmem import edits
from gitmem.edits import Build, Rules
from gitmem.errors import AlreadyExists, InvalidArgument, NotFound
from gitmem.store import Snapshot
from gitmem.store import Storage as Repository
from gitmem.strategies.base import Desk, PromptContext, Tool
from gitmem.strategies.keyword_search import Hit, SearchIndex, check_keywords, search_text
from gitmem.types import Change, Edit, Memory, check_slug, check_text

__all__ = [
    "KINDS",
    "LINK_KINDS",
    "OWNERS",
    "ROLES",
    "STATUSES",
    "Curated",
    "NotARow",
    "Row",
    "RowIndex",
    "add",
    "append",
    "birth_block",
    "conflicts",
    "link",
    "parse_row",
    "reclassify",
    "relevant_text",
    "row_text",
    "unlink",
]

OWNERS = ("user", "project", "host")
ROLES = ("knowledge", "thread", "log")
STATUSES = ("live", "closed", "graduated")
KINDS = (
    "fact",
    "preference",
    "decision",
    "milestone",
    "learning",
    "dead-end",
    "pending",
    "feedback",
    "symptom",
)
"""The claim vocabulary: the first word of a row's description."""
LINK_KINDS = ("supersedes", "graduated_to")
_REVERSE = {"supersedes": "superseded_by", "graduated_to": "graduated_from"}
_LINK_KEYS = ("supersedes", "superseded_by", "graduated_to", "graduated_from")
_LINE_MAX = 32_768
"""Characters one header line may hold (a row superseding hundreds of rows fits)."""


class NotARow(InvalidArgument):
    """A memory in a curated store whose header does not read as a row's."""

    kind = "invalid-argument"


@dataclass(frozen=True)
class Row:
    """One curated row."""

    name: str
    description: str
    owner: str
    """``user``, ``project`` or ``host``."""
    project: str
    """The project's key for a project row, else ``""``."""
    role: str
    status: str
    content: str
    links: Mapping[str, tuple[str, ...]] = field(
        default_factory=lambda: dict[str, tuple[str, ...]]()
    )
    """Link lines by key (``supersedes``, ``superseded_by``, ...), absent when empty."""

    @property
    def kind(self) -> str:
        """The claim kind: the description's first word, lowered, trailing punctuation off."""
        return claim_kind(self.description)

    def linked(self, key: str) -> tuple[str, ...]:
        return self.links.get(key, ())

    @property
    def superseded(self) -> bool:
        return bool(self.linked("superseded_by"))

    @property
    def live(self) -> bool:
        """Live and not superseded: what injections and conflicts consider."""
        return self.status == "live" and not self.superseded

    @property
    def pending(self) -> bool:
        """A live thread: counted at birth, listed whole by ``get_relevant``."""
        return self.live and self.role == "thread"

    @property
    def whose(self) -> str:
        """``user``, ``host`` or ``project <key>``."""
        return f"project {self.project}" if self.owner == "project" else self.owner

    def body(self) -> str:
        lines = [f"owner: {self.whose}", f"role: {self.role}", f"status: {self.status}"]
        lines += [f"{k}: {' '.join(self.linked(k))}" for k in _LINK_KEYS if self.linked(k)]
        return "\n".join(lines) + "\n\n" + self.content

    def memory(self) -> Memory:
        return Memory(self.name, self.description, self.body())

    def with_link(self, key: str, name: str, *, present: bool) -> Row:
        now = [n for n in self.linked(key) if n != name]
        if present:
            now.append(name)
        links = {k: v for k, v in self.links.items() if k != key}
        if now:
            links[key] = tuple(now)
        return replace(self, links=links)


def claim_kind(description: str) -> str:
    first = description.split(None, 1)[0] if description.strip() else ""
    return first.rstrip(":,.;—").lower()


def parse_row(memory: Memory) -> Row:
    """The row ``memory`` holds; ``NotARow`` saying where its header goes wrong."""
    body, name = memory.body, memory.slug
    fields: dict[str, str] = {}
    keys = ("owner", "role", "status", *_LINK_KEYS)
    at, want = 0, 0
    for number in range(1, len(keys) + 2):
        end = body.find("\n", at, at + _LINE_MAX + 1)
        if end < 0:
            raise NotARow(f"`{name}` is not a row: line {number} of its header does not end")
        line = body[at:end]
        at = end + 1
        if not line:
            break
        key, sep, value = line.partition(": ")
        if not sep or key not in keys[want:] or not value:
            expected = " or ".join(keys[want : want + 1] if want < 3 else keys[want:])
            raise NotARow(
                f"`{name}` is not a row: line {number} of its header should be `{expected}: ...`"
            )
        want = keys.index(key) + 1
        fields[key] = value
    else:
        raise NotARow(f"`{name}` is not a row: its header has no blank line after it")
    if want < 3:
        raise NotARow(f"`{name}` is not a row: its header lacks {keys[want]}")
    owner, _, project = fields["owner"].partition(" ")
    if owner not in OWNERS or (owner == "project") != bool(project) or " " in project:
        raise NotARow(f"`{name}` is not a row: its owner {fields['owner']!r} is not one")
    if fields["role"] not in ROLES or fields["status"] not in STATUSES:
        raise NotARow(f"`{name}` is not a row: its role or status is not one")
    links = {k: tuple(fields[k].split(" ")) for k in _LINK_KEYS if k in fields}
    return Row(
        name,
        memory.description,
        owner,
        project,
        fields["role"],
        fields["status"],
        body[at:],
        links,
    )


# -- checking what a caller names ----------------------------------------------------------


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
    if owner not in OWNERS:
        raise InvalidArgument(f"owner must be one of {', '.join(OWNERS)}, not {owner!r}")
    key = "" if project is None else check_project(project)
    if owner == "project" and not key:
        raise InvalidArgument(
            "a project row names its project: give project=<key> "
            "(a row that names no owner's project reaches no reader looking for it)"
        )
    if owner == "user" and key:
        raise InvalidArgument(
            "a user row holds in any project, so it has no project; leave project out, "
            "or make it a project row (owner=project)"
        )
    if owner == "host" and key:
        raise InvalidArgument(
            "a host row is about the host, not a project; leave project out, or make it "
            "a project row (owner=project)"
        )
    return str(owner), key


def check_project(project: object) -> str:
    try:
        return check_slug(project)
    except InvalidArgument:
        raise InvalidArgument(
            f"project key {project!r} is not usable; use 1-64 letters, digits, '-', '_' and '.'"
        ) from None


def _choice(value: object, allowed: tuple[str, ...], what: str) -> str:
    if value not in allowed:
        raise InvalidArgument(f"{what} must be one of {', '.join(allowed)}, not {value!r}")
    return str(value)


def _get(snapshot: Snapshot, rules: Rules, name: str, project: str | None) -> Row:
    row = parse_row(edits.existing(snapshot, name, rules.voice))
    if project is not None and row.project != project:
        # a named project is never swapped for another
        raise InvalidArgument(
            f"`{name}` is not a row of project {project}: it is {row.whose}'s. Name that "
            "project, or leave project out (a row is found by its name wherever it is)"
        )
    return row


# -- the write rules, as change builders -----------------------------------------------------


def add(rules: Rules, row: Row, *, correct: bool = False) -> Build:
    """A new row; over an existing name refused, unless ``correct`` (a marked correction
    that keeps the row's status and links)."""
    check_slug(row.name)
    check_kind(row.description)
    check_owner(row.owner, row.project or None)
    _choice(row.role, ROLES, "role")
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
        row = _get(snapshot, rules, name, project)
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
    _choice(kind, LINK_KINDS, "the link kind")
    if source == target:
        raise InvalidArgument(f"a row cannot link to itself (`{source}`)")
    op = "link" if present else "unlink"

    def build(snapshot: Snapshot) -> Change:
        src = _get(snapshot, rules, source, None)
        dst = _get(snapshot, rules, target, None)
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
        new_dst = dst.with_link(_REVERSE[kind], source, present=present)
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
        _choice(status, STATUSES, "status")
    if role is not None:
        _choice(role, ROLES, "role")

    def build(snapshot: Snapshot) -> Change:
        row = _get(snapshot, rules, name, project)
        new = replace(row, status=status or row.status, role=role or row.role)
        if new == row:
            raise InvalidArgument(
                f"`{name}` is already {row.role}, {row.status}; nothing to change"
            )
        return rules.change(snapshot, "reclassify", name, new.memory())

    return build


# -- reading ---------------------------------------------------------------------------------


def rows_of(memories: Iterable[Memory]) -> list[Row]:
    """The rows among ``memories`` (a memory that is not a row is left out)."""
    found: list[Row] = []
    for memory in memories:
        try:
            found.append(parse_row(memory))
        except NotARow:
            continue
    return found


def row_text(row: Row) -> str:
    """A row as ``read_row`` shows it: claim, owner, lifecycle and links, then content."""
    lines = [f"`{row.name}` — {row.description}", f"{row.whose} · {row.role} · {row.status}"]
    if row.superseded:
        lines.append(
            "superseded by "
            + ", ".join(f"`{n}`" for n in row.linked("superseded_by"))
            + ": it has left every injection and is kept for its history"
        )
    for key in ("supersedes", "graduated_to", "graduated_from"):
        if row.linked(key):
            lines.append(f"{key.replace('_', ' ')} " + ", ".join(f"`{n}`" for n in row.linked(key)))
    return "\n".join(lines) + "\n\n" + row.content


def birth_block(user: Iterable[Row], projects: Mapping[str, int], host: int) -> str:
    """What a session is born with: each project with its live-pending count, the
    host's, then the user's rows and preferences whole ("" when there is nothing)."""
    standing = sorted((r for r in user if r.live and r.role != "log"), key=lambda r: r.name)
    if not standing and not projects and not host:
        return ""
    out = ["## Projects"]
    if projects:
        for key in sorted(projects):
            out.append(f"- `{key}`: {_threads(projects[key])} (get_relevant reads them)")
    else:
        out.append("- none yet")
    out += ["", "## Environment", f"- host: {_threads(host)}"]
    for title, rows in (
        ("User", [r for r in standing if r.kind != "preference"]),
        ("Preferences", [r for r in standing if r.kind == "preference"]),
    ):
        out += ["", f"## {title}"]
        if not rows:
            out.append("- none")
        for r in rows:
            out.append(f"- `{r.name}` — {r.description}")
            out.extend(f"  {line}" for line in r.content.splitlines())
    return "\n".join(out)


def _threads(n: int) -> str:
    return f"{n} live pending thread" + ("" if n == 1 else "s")


def relevant_text(project: str, pending: list[Row], knowledge: list[Row] | None) -> str:
    """``get_relevant``'s answer: the whole live-pending set, with bodies."""
    if not pending:
        head = f"Project {project} owes nothing: no live pending thread (this is the complete set)."
    else:
        head = f"Project {project}: {_threads(len(pending))}, every one, with its body:"
    parts = [head] + [row_text(r) for r in sorted(pending, key=lambda r: r.name)]
    if knowledge is not None:
        parts.append(f"Standing knowledge of project {project}: {len(knowledge)} live row(s).")
        parts += [row_text(r) for r in sorted(knowledge, key=lambda r: r.name)]
    return "\n\n".join(parts)


_WORDS = re.compile(r"[a-z0-9][a-z0-9_-]*")
_STOP = frozenset(
    [
        "the",
        "and",
        "for",
        "with",
        "that",
        "this",
        "from",
        "into",
        "over",
        "when",
        "what",
        "which",
        "where",
        "have",
        "has",
        "are",
        "was",
        "were",
        "not",
        "but",
        "all",
        "any",
        "its",
        "their",
        "there",
        "then",
        "than",
        "them",
        "they",
        "you",
        "your",
        "our",
        "per",
        "via",
        "use",
        "used",
        "uses",
        "only",
        "also",
        "just",
        "more",
        "most",
        "less",
        "each",
        "every",
    ]
)


def _wording(row: Row) -> frozenset[str]:
    words = _WORDS.findall(row.description.lower()[:4096])
    return frozenset(w for w in words[1:] if len(w) > 2 and w not in _STOP)


def conflicts(rows: Iterable[Row], owner: str | None = None) -> list[tuple[Row, Row, list[str]]]:
    """Pairs of live rows of one owner whose descriptions share wording: candidates to
    read side by side, never a verdict. ``owner`` (``user``, ``host``, ``project <key>``)
    narrows the list. Most shared words first."""
    groups: dict[str, list[tuple[Row, frozenset[str]]]] = {}
    for row in rows:
        if row.live and row.role != "log" and (owner is None or row.whose == owner):
            groups.setdefault(row.whose, []).append((row, _wording(row)))
    found: list[tuple[Row, Row, list[str]]] = []
    for members in groups.values():
        postings: dict[str, list[int]] = {}
        for i, (_, words) in enumerate(members):
            for w in words:
                postings.setdefault(w, []).append(i)
        shared: Counter[tuple[int, int]] = Counter()
        for ids in postings.values():
            if len(ids) > 50:
                continue  # a word this common says nothing about a pair
            for a in range(len(ids)):
                for b in range(a + 1, len(ids)):
                    shared[(ids[a], ids[b])] += 1
        for (a, b), n in shared.items():
            wa, wb = members[a][1], members[b][1]
            if n >= 2 and n * 2 >= min(len(wa), len(wb)):
                ra, rb = sorted((members[a][0], members[b][0]), key=lambda r: r.name)
                found.append((ra, rb, sorted(wa & wb)))
    found.sort(key=lambda c: (-len(c[2]), c[0].name, c[1].name))
    return found


def conflicts_text(found: list[tuple[Row, Row, list[str]]]) -> str:
    if not found:
        return "No two live rows of one owner share wording."
    lines = [f"{len(found)} candidate pair(s); only reading both says whether they disagree:"]
    for a, b, words in found:
        lines.append(f"- `{a.name}` and `{b.name}` ({a.whose}) share: {', '.join(words)}")
    return "\n".join(lines)


class RowIndex:
    """Every row of one store by name, with the sets a birth block and ``get_relevant``
    read, kept in step with the head one change at a time."""

    def __init__(self) -> None:
        self.commit: str | None = None
        self.rows: dict[str, Row] = {}
        self._owned: dict[str, set[str]] = {}
        """Names by owner (``user``, ``host``, ``project <key>``)."""
        self._pending: dict[str, set[str]] = {}
        self._search: SearchIndex | None = None
        """Names, claims and contents (not headers), built on the first search."""

    def follow(self, repo: Repository, store: str) -> RowIndex:
        head = repo.head(store)
        if self.commit == head:
            return self
        changes = repo.revisions_since(store, self.commit, head) if self.commit else []
        if not changes:
            self.rows.clear()
            self._owned.clear()
            self._pending.clear()
            self._search = None
            if head is not None:
                for row in rows_of(repo.snapshot(store, head).memories()):
                    self._put(row)
        for rev in changes:
            self._remove(rev.slug)
            if not rev.removed:
                for row in rows_of([Memory(rev.slug, rev.description, rev.body)]):
                    self._put(row)
        self.commit = head
        return self

    def _put(self, row: Row) -> None:
        self.rows[row.name] = row
        if self._search is not None:
            self._search.put(Memory(row.name, row.description, row.content))
        self._owned.setdefault(row.whose, set()).add(row.name)
        if row.pending:
            self._pending.setdefault(row.whose, set()).add(row.name)

    def _remove(self, name: str) -> None:
        row = self.rows.pop(name, None)
        if self._search is not None:
            self._search.remove(name)
        if row is not None:
            self._owned[row.whose].discard(name)
            self._pending.get(row.whose, set()).discard(name)

    def search(self, keywords: list[str]) -> list[Hit]:
        """Every row that mentions a keyword, ranked as ``search_memories`` ranks; a
        hit's memory holds the row's content, not its header."""
        if self._search is None:
            self._search = SearchIndex()
            self._search.reset(
                [Memory(r.name, r.description, r.content) for r in self.rows.values()],
                self.commit,
            )
        return self._search.search(keywords, 0)

    def birth_block(self) -> str:
        projects = {
            whose[len("project ") :]: len(self._pending.get(whose, ()))
            for whose, names in self._owned.items()
            if whose.startswith("project ") and names
        }
        user = [self.rows[n] for n in self._owned.get("user", ())]
        return birth_block(user, projects, len(self._pending.get("host", ())))

    def pending(self, project: str) -> list[Row]:
        return [self.rows[n] for n in self._pending.get(f"project {project}", ())]

    def knowledge(self, project: str) -> list[Row]:
        names = self._owned.get(f"project {project}", ())
        return [r for r in (self.rows[n] for n in names) if r.live and r.role == "knowledge"]


# -- the tools -------------------------------------------------------------------------------

_NAME = {"type": "string", "description": "The row's name: 1-64 letters, digits, '-', '_', '.'."}
_PROJECT = {
    "type": "string",
    "description": "A project's key. On a row verb it is optional: when given, the row "
    "must belong to that project (it is never swapped for another).",
}


def _flag(args: Mapping[str, object], key: str) -> bool:
    value = args.get(key, False)
    if not isinstance(value, bool):
        raise InvalidArgument(f"{key} must be true or false")
    return value


def _project(args: Mapping[str, object]) -> str | None:
    value = args.get("project")
    return None if value is None else check_project(value)


def _index(desk: Desk) -> RowIndex:
    return _cached_index(desk.repo, desk.store_id, desk.cache)


def _cached_index(repo: Repository, store: str, cache: dict[str, object]) -> RowIndex:
    found = cache.get("row-index")
    if not isinstance(found, RowIndex):
        found = cache["row-index"] = RowIndex()
    return found.follow(repo, store)


def _add(desk: Desk, args: dict[str, object]) -> str:
    owner, project = check_owner(args["owner"], args.get("project"))
    row = Row(
        check_slug(args["name"]),
        check_text(args["description"], "description"),
        owner,
        project,
        _choice(args.get("role", "knowledge"), ROLES, "role"),
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


def _append(desk: Desk, args: dict[str, object]) -> str:
    name = check_slug(args["name"])
    desk.publish(append(desk.rules, name, check_text(args["text"], "text"), _project(args)))
    return f"Appended to `{name}`."


def _link(desk: Desk, args: dict[str, object]) -> str:
    source, target = check_slug(args["source"]), check_slug(args["target"])
    kind = _choice(args["kind"], LINK_KINDS, "kind")
    desk.publish(link(desk.rules, source, kind, target))
    if kind == "supersedes":
        return f"`{source}` supersedes `{target}`; `{target}` leaves every injection and stays readable."
    return f"`{source}` graduated to `{target}`; the lineage is kept in both rows."


def _reclassify(desk: Desk, args: dict[str, object]) -> str:
    name = check_slug(args["name"])
    status, role = args.get("status"), args.get("role")
    build = reclassify(
        desk.rules,
        name,
        status=None if status is None else _choice(status, STATUSES, "status"),
        role=None if role is None else _choice(role, ROLES, "role"),
        project=_project(args),
    )
    revision = desk.publish(build)[0]
    now = parse_row(Memory(name, revision.description, revision.body))
    return f"`{name}` is now {now.role}, {now.status}; nothing was deleted."


def _read(desk: Desk, args: dict[str, object]) -> str:
    return row_text(_get(desk.snapshot(), desk.rules, check_slug(args["name"]), _project(args)))


def _search(desk: Desk, args: dict[str, object]) -> str:
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


def _relevant(desk: Desk, args: dict[str, object]) -> str:
    project = check_project(args["project"])
    index = _index(desk)
    knowledge = index.knowledge(project) if _flag(args, "knowledge") else None
    return relevant_text(project, index.pending(project), knowledge)


class Curated:
    """Append-only rows with owners, roles, claim kinds and a lifecycle."""

    name = "curated"
    aggregate_limits = frozenset({"maxCount"})
    loads_code_on: Literal["write", "read"] = "read"
    notice_bodies = False
    notice_tail = "Read one with `read_row` if it bears on what you are doing."
    find_hint = (
        "search_rows finds rows by their words, and get_relevant lists a project's live threads"
    )
    revise_call = "add_row"
    pinned_in_prompt = False

    def __init__(self) -> None:
        string = {"type": "string"}
        self.tools: tuple[Tool, ...] = (
            Tool(
                "add_row",
                "Write one new row: a claim whose description begins with its kind "
                f"({', '.join(KINDS)}), an owner (user, project with its key, or host) and "
                "a role (knowledge, thread, log). Rows are append-only: an existing name "
                "is refused; replace=true is only for correcting an error in a row.",
                {
                    "name": _NAME,
                    "description": {
                        "type": "string",
                        "description": "One sentence whose first word is the claim kind.",
                    },
                    "owner": {"type": "string", "enum": list(OWNERS)},
                    "project": {
                        "type": "string",
                        "description": "The project's key (owner=project only).",
                    },
                    "role": {
                        "type": "string",
                        "enum": list(ROLES),
                        "description": "Default knowledge.",
                    },
                    "body": {
                        "type": "string",
                        "description": "The content: what holds, why, where it came from and when.",
                    },
                    "replace": {
                        "type": "boolean",
                        "description": "Correct an error in an existing row (marked in its history).",
                    },
                },
                ("name", "description", "owner", "body"),
                _add,
                hint="Rows are append-only: knowledge changes by a new row that supersedes "
                "the old one (link_rows from the new row to the old).",
            ),
            Tool(
                "append_row",
                "Add text to the end of a log or a live thread (durable knowledge never grows).",
                {"name": _NAME, "text": string, "project": _PROJECT},
                ("name", "text"),
                _append,
            ),
            Tool(
                "link_rows",
                "Link two rows: kind supersedes (from the new row to the old, which leaves "
                "every injection) or graduated_to (from a thread to the row it became).",
                {
                    "source": _NAME,
                    "kind": {"type": "string", "enum": list(LINK_KINDS)},
                    "target": _NAME,
                },
                ("source", "kind", "target"),
                _link,
            ),
            Tool(
                "reclassify_row",
                "Set a row's status (live, closed, graduated) and/or role; nothing is deleted.",
                {
                    "name": _NAME,
                    "status": {"type": "string", "enum": list(STATUSES)},
                    "role": {"type": "string", "enum": list(ROLES)},
                    "project": _PROJECT,
                },
                ("name",),
                _reclassify,
                hint="Whoever sees a thread resolved closes it (reclassify_row status=closed); "
                "a live thread costs every later session.",
            ),
            Tool(
                "read_row",
                "Read one row whole: claim, owner, lifecycle, links and content.",
                {"name": _NAME, "project": _PROJECT},
                ("name",),
                _read,
                writes=False,
            ),
            Tool(
                "search_rows",
                "Search rows by keywords, scoped to user and host rows plus the project "
                "named; an empty result is about this phrasing and scope, not absence.",
                {
                    "keywords": {"type": "array", "items": string, "minItems": 1},
                    "project": _PROJECT,
                },
                ("keywords",),
                _search,
                writes=False,
            ),
            Tool(
                "get_relevant",
                "A project's whole live-pending set, with bodies (knowledge=true adds its "
                "standing knowledge rows). Read it before writing into a project.",
                {
                    "project": {"type": "string", "description": "The project's key."},
                    "knowledge": {"type": "boolean"},
                },
                ("project",),
                _relevant,
                writes=False,
            ),
        )

    def pinned(self, memories: list[Memory]) -> str:
        rows = rows_of(memories)
        projects: dict[str, int] = {}
        for r in rows:
            if r.owner == "project":
                projects[r.project] = projects.get(r.project, 0) + r.pending
        host = sum(1 for r in rows if r.owner == "host" and r.pending)
        return birth_block([r for r in rows if r.owner == "user"], projects, host)

    def in_context(self) -> str:
        return (
            "Your memory is curated rows, each with an owner (the user, a project, or the "
            "host), a role (durable knowledge, a live thread, a log) and a description "
            "whose first word is its kind of claim. Pinned below is what a session is born "
            "with: each project with its count of live pending threads, the host's, then "
            "the user's rows and preferences whole. A project's rows come in when you read "
            "them with get_relevant."
        )

    def index_line(self, memory: Memory) -> str:
        return ""

    def pinned_from(self, repo: Repository, store: str, cache: dict[str, object]) -> str | None:
        # the index a holder's row reads keep: a compaction follows the new commits only
        return _cached_index(repo, store, cache).birth_block()

    def prompt_section(self, context: PromptContext) -> str | None:
        return None

    def operator_refusal(self, op: str, slug: str) -> str | None:
        if op in ("create", "edit"):
            return (
                "a curated store's rows are append-only: use `gitmem rows add`, "
                "`rows append`, `rows link` or `rows reclassify`"
            )
        return None
