"""Line origins: for each line of a memory's files, the commit that last changed it.

The walk is git's: start at a commit with every line of a file as yet unexplained;
at each commit, a line that its parent holds unchanged (a line diff says which) passes
to that parent; a line no parent holds is the commit's own. A commit whose file equals
a parent's hands that parent every line without a diff (so a merge that took one side's
text credits that side), and a commit that created the memory by renaming another hands
its lines to the old name's file in the parent. Commits are taken children first, in
the reverse of the history index's order (parents come before children there), so each
commit is explained once, with every line its children passed it.

Cost: one line diff per revision that changed the file. A commit that changed no memory
of that name and has one parent passes its lines on without reading a tree; a merge
reads the file in each parent.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping
from difflib import SequenceMatcher
from typing import NamedTuple

from gitmem.store import memoryfiles as files
from gitmem.store.history import History
from gitmem.store.objects import Blobs, ObjectReader

__all__ = ["Origin", "line_origins", "origins"]

_RENAME = "rename"


class Origin(NamedTuple):
    """Where one line of a memory's file came from."""

    suffix: str
    """Which file: ``.md`` (description and body), ``.code.ts`` or ``.onuse.ts``."""
    line: int
    """Its number in the file, from 1."""
    text: str
    commit: str
    """The commit that last changed it."""
    slug: str
    """The memory's name in that commit (it may have been renamed since)."""
    revision: int = 0
    """That commit's revision of the memory (by that name); 0 where it has none."""
    author: str = ""
    """The commit's git author: an agent instance, an operator, a person."""
    time: int = 0
    trailers: Mapping[str, str] | None = None
    """The extra trailers of a commit gitmem made; ``None`` for one it did not make."""


class _Lines(NamedTuple):
    """Lines a commit is asked to explain: the file's name and blob there, and pairs
    of (line's index in that blob, its index in the final file)."""

    slug: str
    blob: bytes
    pairs: list[tuple[int, int]]


def split_lines(data: bytes) -> list[bytes]:
    """A file's lines as git counts them: split at ``\\n`` only, the last one kept if it
    has no newline."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


Before = Callable[[str], Mapping[str, Blobs | None] | None]
"""For a slug, each of its rows' commits → the blob ids of its files in that commit's
parent (``None``: not there); ``None`` where the history does not tell (a merge in it)."""


def origins(
    reader: ObjectReader,
    order: list[str],
    changed: Callable[[str], Mapping[str, int]],
    before: Before,
    head: str,
    slug: str,
) -> list[Origin]:
    """The origin of every line of ``slug``'s files at ``head`` (empty if it has none
    there). ``order``: every commit reachable from ``head``, parents before children;
    ``changed(slug)``: the commits whose rows name ``slug`` (with their revisions);
    ``before``: what the history index knows of their parents' files, which spares
    reading trees."""
    found: list[Origin] = []
    root = reader.root(head)
    for suffix in files.SUFFIXES:
        blob = _blob(reader, root, slug, suffix)
        if blob is None:
            continue
        lines = split_lines(reader.blob(blob))
        owners = _walk(reader, order, changed, before, head, slug, suffix, blob, len(lines))
        for i, text in enumerate(lines):
            commit, name = owners[i]
            found.append(Origin(suffix, i + 1, text.decode("utf-8", "replace"), commit, name))
    return found


def _blob(reader: ObjectReader, root: str, slug: str, suffix: str) -> bytes | None:
    return reader.bucket(root, files.bucket(slug)).get(slug + suffix)


def _walk(
    reader: ObjectReader,
    order: list[str],
    changed: Callable[[str], Mapping[str, int]],
    before: Before,
    head: str,
    slug: str,
    suffix: str,
    blob: bytes,
    count: int,
) -> list[tuple[str, str]]:
    """For each line of the file (``count`` lines), the commit and name it came from."""
    place = {sha: i for i, sha in enumerate(order)}
    linear = before(slug) is not None
    owners: list[tuple[str, str]] = [("", slug)] * count
    pending: dict[str, list[_Lines]] = {head: [_Lines(slug, blob, [(i, i) for i in range(count)])]}
    queue = [-place[head]]
    texts: dict[bytes, list[bytes]] = {}

    def lines_of(sha: bytes) -> list[bytes]:
        found = texts.get(sha)
        if found is None:
            found = texts[sha] = split_lines(reader.blob(sha))
        return found

    def hand(commit: str, lines: _Lines) -> None:
        waiting = pending.get(commit)
        if waiting is None:
            pending[commit] = [lines]
            heapq.heappush(queue, -place[commit])
        else:
            waiting.append(lines)

    while queue:
        at = -heapq.heappop(queue)
        commit = order[at]
        # a history with no merge is a line: a commit's parent is the one before it
        parents = (order[at - 1 : at] if at else []) if linear else reader.parents(commit)
        for asked in pending.pop(commit):
            name = asked.slug
            if len(parents) == 1 and commit not in changed(name):
                hand(parents[0], asked)  # the memory did not change here
                continue
            left = asked.pairs
            known = before(name) if len(parents) == 1 else None
            ids = known.get(commit) if known is not None else None
            if ids is not None:
                kept = ids[files.SUFFIXES.index(suffix)]
                found = [(name, kept.encode()) if kept != "-" else None]
            else:
                found = [_parent_blob(reader, commit, p, name, suffix) for p in parents]
            same = next((i for i, f in enumerate(found) if f and f[1] == asked.blob), None)
            kept = found[same] if same is not None else None
            if same is not None and kept is not None:
                hand(parents[same], _Lines(kept[0], asked.blob, left))  # the same text
                continue
            for parent, at in zip(parents, found, strict=True):
                if at is None or not left:
                    continue
                passed, left = _match(lines_of(at[1]), lines_of(asked.blob), left)
                if passed:
                    hand(parent, _Lines(at[0], at[1], passed))
            for _, final in left:
                owners[final] = (commit, name)
    return owners


def _parent_blob(
    reader: ObjectReader, commit: str, parent: str, slug: str, suffix: str
) -> tuple[str, bytes] | None:
    """The name and blob of the file in ``parent`` that ``commit``'s ``slug`` file
    continues: the same name's, or where ``commit`` renamed the memory, the old
    name's; ``None`` when there is none."""
    root = reader.root(parent)
    blob = _blob(reader, root, slug, suffix)
    if blob is not None:
        return slug, blob
    old = _renamed_from(reader, commit, slug)
    if old is None:
        return None
    blob = _blob(reader, root, old, suffix)
    return (old, blob) if blob is not None else None


def _renamed_from(reader: ObjectReader, commit: str, slug: str) -> str | None:
    """The memory ``commit`` renamed to ``slug``: gitmem's rename names both; a commit
    gitmem did not make that removed a memory and added ``slug`` with the very same
    text renamed it too (as git sees a rename)."""
    facts = reader.facts(commit)
    if facts is not None:
        if facts.paths or not any(e.slug == slug and e.op == _RENAME for e in facts.edits):
            return None
        return next((e.slug for e in facts.edits if e.slug != slug and e.op == _RENAME), None)
    parents = reader.parents(commit)
    if not parents:
        return None
    md = _blob(reader, reader.root(commit), slug, files.MD)
    before = reader.root(parents[0])
    for edit in reader.outside(commit):
        if edit.op == "delete" and _blob(reader, before, edit.slug, files.MD) == md:
            return edit.slug
    return None


def _match(
    old: list[bytes], new: list[bytes], pairs: list[tuple[int, int]]
) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Split ``pairs`` (lines of ``new``) into those ``old`` holds unchanged, as pairs
    of ``old``'s lines, and those it does not."""
    # the lines both ends share are kept as they are (as git's diff trims them first);
    # only what lies between is diffed
    start, most = 0, min(len(old), len(new))
    while start < most and old[start] == new[start]:
        start += 1
    end = 0
    while end < most - start and old[-1 - end] == new[-1 - end]:
        end += 1
    keep: dict[int, int] = {}
    matcher = SequenceMatcher(
        None, old[start : len(old) - end], new[start : len(new) - end], autojunk=False
    )
    for a, b, size in matcher.get_matching_blocks():
        for k in range(size):
            keep[start + b + k] = start + a + k
    shift = len(old) - len(new)
    passed: list[tuple[int, int]] = []
    left: list[tuple[int, int]] = []
    for line, final in pairs:
        if line < start:
            passed.append((line, final))
        elif line >= len(new) - end:
            passed.append((line + shift, final))
        elif line in keep:
            passed.append((keep[line], final))
        else:
            left.append((line, final))
    return passed, left


def line_origins(reader: ObjectReader, history: History, head: str, slug: str) -> list[Origin]:
    """:func:`origins` of ``slug`` at ``head``, with each line's revision, author, time
    and trailers, the history index answering what it can."""
    order = history.commits(head)
    places: dict[str, dict[str, int]] = {}

    def changed(name: str) -> Mapping[str, int]:
        found = places.get(name)
        if found is None:
            commits = history.changes(head, name)
            found = places[name] = {c: i for i, c in enumerate(commits, 1)}
        return found

    linear = history.linear(head)
    parents_files: dict[str, dict[str, Blobs | None]] = {}

    def before(name: str) -> Mapping[str, Blobs | None] | None:
        if not linear:
            return None
        found = parents_files.get(name)
        if found is None:
            found = parents_files[name] = {}
            last: Blobs | None = None
            for entry in history.entries(head, name):
                found[entry.commit] = last
                last = None if entry.removed else entry.blobs
        return found

    found = origins(reader, order, changed, before, head, slug)
    made: dict[str, tuple[str, int, Mapping[str, str] | None]] = {}
    for sha in {o.commit for o in found}:
        raw = reader.commit(sha)
        author = raw.author.decode("utf-8", "replace").rsplit(" <", 1)[0]
        facts = reader.facts(sha)
        made[sha] = (author, raw.author_time, facts.extra if facts is not None else None)
    return [
        o._replace(revision=changed(o.slug).get(o.commit, 0), author=a, time=t, trailers=x)
        for o in found
        for a, t, x in [made[o.commit]]
    ]
