"""A curated row: one memory with an owner, a role, a status and a claim kind.

A row's slug is its name, its description the claim (whose first word is the kind of
claim), and its body a small header, a blank line, then the content::

    owner: project alpha        owner: user | owner: project <key> | owner: host
    role: thread                knowledge | thread | log
    status: live                live | closed | graduated
    supersedes: old-row         optional link lines, names separated by one space,
    superseded_by: newer-row    each kept in step with its reverse in the other row
    graduated_to: anchor-row
    graduated_from: thread-row

    The content, verbatim.

Rows are append-only and retired by their lifecycle (supersedes, closed, graduated),
never deleted. Links live in both rows they join, so a link is one commit that changes
both, every edge is versioned, and whether a row is superseded is read from the row alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from gitmem.errors import InvalidArgument
from gitmem.types import Memory

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
REVERSE = {"supersedes": "superseded_by", "graduated_to": "graduated_from"}
"""Each link kind's reverse, the line the other row keeps."""
LINK_KEYS = ("supersedes", "superseded_by", "graduated_to", "graduated_from")
"""The link lines a header may hold, in the order it holds them."""


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
        lines += [f"{k}: {' '.join(self.linked(k))}" for k in LINK_KEYS if self.linked(k)]
        return "\n".join(lines) + "\n\n" + self.content

    def memory(self) -> Memory:
        return Memory(self.name, self.description, self.body())

    def to_dict(self) -> dict[str, Any]:
        """``{"name", "description", "kind", "owner", "project", "role", "status",
        "superseded", "links", "content"}``."""
        return {
            "name": self.name,
            "description": self.description,
            "kind": self.kind,
            "owner": self.owner,
            "project": self.project or None,
            "role": self.role,
            "status": self.status,
            "superseded": self.superseded,
            "links": {k: list(v) for k, v in self.links.items()},
            "content": self.content,
        }

    def searchable(self) -> Memory:
        """The row as search reads it: name, claim and content, not its header."""
        return Memory(self.name, self.description, self.content)

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
