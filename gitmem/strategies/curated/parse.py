"""Reading a row from a memory, strictly and in time linear in its size.

The header is read line by line: the three first lines in their order, the link lines
optional and in theirs, then the blank line; a malformed header is told apart from a row.
"""

from __future__ import annotations

from collections.abc import Iterable

from gitmem.strategies.curated.rows import LINK_KEYS, OWNERS, ROLES, STATUSES, NotARow, Row
from gitmem.types import Memory

_LINE_MAX = 32_768
"""Characters one header line may hold (a row superseding hundreds of rows fits)."""


def _not_a_row(name: str, why: str) -> NotARow:
    return NotARow(f"`{name}` is not a row: {why}")


def parse_row(memory: Memory) -> Row:
    """The row ``memory`` holds; ``NotARow`` saying where its header goes wrong."""
    body, name = memory.body, memory.slug
    fields: dict[str, str] = {}
    keys = ("owner", "role", "status", *LINK_KEYS)
    at, want = 0, 0
    for number in range(1, len(keys) + 2):
        end = body.find("\n", at, at + _LINE_MAX + 1)
        if end < 0:
            raise _not_a_row(name, f"line {number} of its header does not end")
        line = body[at:end]
        at = end + 1
        if not line:
            break
        key, sep, value = line.partition(": ")
        if not sep or key not in keys[want:] or not value:
            expected = " or ".join(keys[want : want + 1] if want < 3 else keys[want:])
            raise _not_a_row(name, f"line {number} of its header should be `{expected}: ...`")
        want = keys.index(key) + 1
        fields[key] = value
    else:
        raise _not_a_row(name, "its header has no blank line after it")
    if want < 3:
        raise _not_a_row(name, f"its header lacks {keys[want]}")
    owner, _, project = fields["owner"].partition(" ")
    if owner not in OWNERS or (owner == "project") != bool(project) or " " in project:
        raise _not_a_row(name, f"its owner {fields['owner']!r} is not one")
    if fields["role"] not in ROLES or fields["status"] not in STATUSES:
        raise _not_a_row(name, "its role or status is not one")
    links = {k: tuple(fields[k].split(" ")) for k in LINK_KEYS if k in fields}
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


def rows_of(memories: Iterable[Memory]) -> list[Row]:
    """The rows among ``memories`` (a memory that is not a row is left out)."""
    found: list[Row] = []
    for memory in memories:
        try:
            found.append(parse_row(memory))
        except NotARow:
            continue
    return found
