"""What a store's head commit says, read as :mod:`gitmem.store.message` reads it: its
tree, and, for a commit gitmem made to a memory store, its totals, peaks and extra
trailers.

Only a head whose own message gitmem wrote for a memory store is read here; a file
store's, a commit gitmem did not make (its standing facts are an ancestor's) or one
that does not read is ``None``, for the full reader.
"""

from __future__ import annotations

from gitmem.lean.objects import COMMIT, Objects, Unreadable
from gitmem.lean.shapes import op_shape, slug_shape

__all__ = [
    "CAPABILITY_TRAILER",
    "SESSION_TRAILER",
    "TOTAL_KEYS",
    "Head",
    "authored",
    "committed",
    "facts",
    "head",
    "message_of",
    "names_gitmem",
    "op_shape",
    "slug_shape",
    "trailer_block",
]

TOTAL_KEYS = (
    "Gitmem-Count",
    "Gitmem-Chars",
    "Gitmem-Lines",
    "Gitmem-Peak-Count",
    "Gitmem-Peak-Chars",
    "Gitmem-Peak-Lines",
)
SESSION_TRAILER = "Gitmem-Session"
"""The session (or run) a write came from."""
CAPABILITY_TRAILER = "Gitmem-Capability"
"""The strategy and limits a store records (see :mod:`gitmem.trailers`)."""
_EDIT_KEYS = ("Gitmem-Slug", "Gitmem-Op", "Gitmem-Revision", "Gitmem-Path")


def names_gitmem(message: bytes) -> bool:
    """Whether the paragraph after ``message``'s subject line and a blank line holds
    ``Gitmem-`` at all, found without copying or decoding the message: one that does
    not is no gitmem message, and costs a reader no more than this search, however
    long it is. (Decoding makes no ``Gitmem-`` of other bytes, nor a blank line.)"""
    start = message.find(b"\n\n") + 2
    if start < 2:
        return False
    end = message.find(b"\n\n", start)
    return message.find(b"Gitmem-", start, end if end >= 0 else len(message)) >= 0


def trailer_block(message: bytes) -> list[str] | None:
    """The lines of a gitmem message's trailer block (the paragraph after the subject
    line and a blank line), or ``None`` if the message has no such shape or the block
    names no ``Gitmem-`` trailer."""
    if not names_gitmem(message):
        return None
    subject, sep, rest = message.decode("utf-8", "replace").partition("\n\n")
    if not sep or not subject.strip() or "\n" in subject:
        return None
    return rest.split("\n\n", 1)[0].splitlines()


def message_of(raw: bytes) -> bytes:
    """A raw commit's message: what follows its header and the blank line after it."""
    return raw.partition(b"\n\n")[2]


def authored(raw: bytes) -> tuple[str, int]:
    """A raw commit's author name and time (seconds since the epoch), read from its
    header as git writes it (``author NAME <EMAIL> TIME ZONE``); ``("", 0)`` where
    there is none."""
    header = raw.partition(b"\n\n")[0]
    for line in header.split(b"\n"):
        if line.startswith(b"author "):
            ident, _, rest = line[7:].rpartition(b"> ")
            name = ident.decode("utf-8", "replace").rsplit(" <", 1)[0]
            at = rest.split(b" ", 1)[0]
            return name, int(at) if at.isdigit() else 0
    return "", 0


def committed(raw: bytes) -> int | None:
    """A raw commit's (committer's) time, read from its header as git writes it
    (``committer NAME <EMAIL> TIME ZONE``); ``None`` where that does not read."""
    header = raw.partition(b"\n\n")[0]
    for line in header.split(b"\n"):
        if line.startswith(b"committer "):
            when = line.rpartition(b"> ")[2].split(b" ", 1)[0]
            return int(when) if when.isdigit() else None
    return None


class Head:
    """A memory store's head commit as gitmem wrote it."""

    __slots__ = ("commit", "extra", "peaks", "totals", "tree")

    def __init__(
        self,
        commit: str,
        tree: str,
        totals: tuple[int, int, int],
        peaks: tuple[int, int, int],
        extra: dict[str, str],
    ) -> None:
        self.commit = commit
        self.tree = tree
        self.totals = totals
        self.peaks = peaks
        self.extra = extra


def facts(message: bytes) -> tuple[list[int], dict[str, str], list[tuple[str, str, int]]] | None:
    """The six totals, the extra trailers and the edits (slug, op, revision) of a memory
    store's gitmem message; ``None`` if it is not one this reads."""
    lines = trailer_block(message)
    if lines is None:
        return None
    trailers: dict[str, str] = {}
    edits: dict[str, list[str]] = {key: [] for key in _EDIT_KEYS}
    for line in lines:
        if not line.startswith("Gitmem-"):
            continue
        key, sep, value = line.partition(": ")
        if not sep:
            continue
        if key in edits:
            edits[key].append(value)
        else:
            trailers[key] = value
    slugs, ops, revisions = (edits[key] for key in _EDIT_KEYS[:3])
    if edits["Gitmem-Path"] or not len(slugs) == len(ops) == len(revisions):
        return None  # a file store's, or not gitmem's: for the full reader
    if len(set(slugs)) < len(slugs):
        return None
    found: list[tuple[str, str, int]] = []
    try:
        for slug, op, revision in zip(slugs, ops, revisions, strict=True):
            number = int(revision)
            if number < 0 or not op_shape(op) or not slug_shape(slug):
                return None
            found.append((slug, op, number))
        numbers = [int(trailers[k]) for k in TOTAL_KEYS]
    except (KeyError, ValueError):
        return None
    if min(numbers) < 0:
        return None
    extra = {k: v for k, v in trailers.items() if k not in TOTAL_KEYS}
    return numbers, extra, found


def head(objects: Objects, commit: str) -> Head | None:
    """The memory store's head ``commit``, or ``None`` if it is not one this reads."""
    try:
        kind, content = objects.read(commit)
    except (KeyError, Unreadable):
        return None
    if kind != COMMIT:
        return None
    header, sep, message = content.partition(b"\n\n")
    first = header.split(b"\n", 1)[0]
    if not sep or not first.startswith(b"tree ") or len(first) != 45:
        return None
    found = facts(message)
    if found is None:
        return None
    (count, chars, lines, peak_count, peak_chars, peak_lines), extra, _ = found
    tree = first[5:].decode("ascii", "replace")
    return Head(commit, tree, (count, chars, lines), (peak_count, peak_chars, peak_lines), extra)
