"""Line origins: for each line of a memory's files, the commit that last changed it.

**The core** (:func:`attribute`) works on texts alone. Given a file's revisions newest
first, each a key and the file's text then, it says which revision each line of the
newest came from: a line the next older text holds unchanged (a line diff says which)
passes to that revision, a line it does not hold is the newer revision's own. It asks
for the next text only while some line is unexplained, so a file whose lines all
changed lately reads a few texts however long its history (git's blame stops there
too). Any reader can feed it: it imports nothing that reads git.

**A history with no merge** is a line, so a memory's revisions are a list: the history
index's rows for the memory, newest first, runs that left the file as it was folded
into their oldest without reading it, each text read only when the core asks for it;
past the memory's creation by a rename, the old name's rows before it.

**A history with merges** is walked as git walks it: from the head with every line
unexplained; at each commit, lines a parent holds unchanged pass to that parent and the
rest are the commit's own. A commit whose file equals a parent's hands that parent
every line without a diff (so a merge that took one side's text credits that side), and
a commit that created the memory by renaming another hands its lines to the old name's
file in the parent. Commits are taken children first, in the reverse of the history
index's order (parents come before children there), so each commit is explained once,
with every line its children passed it.

**The diff** is git's in the part that decides most lines: the lines both texts share
at their start and end are kept as they are, found by comparing the line lists pair
by pair with C-level iterators (no Python loop over lines); only what lies
between is matched line by line (``difflib``'s matcher, which hashes each line once),
and only when the two share a line at all (lines rewritten outright share none).
That matcher's work grows with the product of the two parts' lengths, and faster
still where lines repeat; past :data:`MATCHED_MAX` line pairs the parts are matched
as patience diff matches them instead, in time near linear: the lines each side holds
exactly once, in the longest order both sides agree on, and the equal lines next to
each. A memory is blamed up to :data:`BLAME_LINES` lines a file, in each revision it
reads; a longer one is refused, as every line's record costs a blame some hundreds of
bytes.

It loads neither ``typing`` nor ``difflib`` until they are needed: a blame on the lean
read path is a fresh process, whose imports cost as much as its reading.
"""

from __future__ import annotations

import os
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import compress, count, islice
from operator import ne

from gitmem.lean.heads import authored, message_of
from gitmem.lean.layout import MD, SUFFIXES, bucket

BLAME_LINES = 50_000
"""The most lines of one file a blame reads (a memory's text, its code or onUse)."""
MATCHED_MAX = 250_000
"""The most line pairs (old lines times new ones) the line-by-line matcher is given."""

TYPE_CHECKING = False
if TYPE_CHECKING:
    # for the type checker only: a fresh process's blame does without ``typing``
    from collections.abc import Sequence
    from typing import NamedTuple, Protocol, TypeVar

    from gitmem.store.history import History
    from gitmem.store.historyfile import Edit, Said
    from gitmem.store.objects import ObjectReader
    from gitmem.store.rows import Entry

    K = TypeVar("K")

    class Commits(Protocol):
        """What blame reads of a store's commits (the store's reader, or the lean path's)."""

        def parents(self, sha: str) -> list[str]: ...

        def facts(self, sha: str) -> Said | None: ...

        def root(self, sha: str) -> str: ...

        def bucket(self, root: str, name: str) -> Mapping[str, bytes]: ...

        def outside(self, sha: str) -> Sequence[Edit]: ...

        def blob(self, sha: bytes) -> bytes: ...
else:
    from gitmem.lean.tuples import NamedTuple


__all__ = [
    "Origin",
    "attribute",
    "line_origins",
    "made",
    "origins",
    "split_lines",
    "stamped",
]

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


def split_lines(data: bytes) -> list[bytes]:
    """A file's lines as git counts them: split at ``\\n`` only, the last one kept if it
    has no newline."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


# -- the core: texts in, owners out ----------------------------------------------------


# The core's own records are plain classes: a named tuple's class costs a fresh
# process a third of a millisecond to make, and the core makes one of these a step.


class _Text:
    """A text and its lines."""

    __slots__ = ("data", "lines")

    def __init__(self, data: bytes, lines: list[bytes]) -> None:
        self.data = data
        self.lines = lines


class _Ask:
    """Lines still unexplained: their indexes in the text at hand (rising) and in the
    newest text, side by side."""

    __slots__ = ("at", "final")

    def __init__(self, at: list[int], final: list[int]) -> None:
        self.at = at
        self.final = final


_NONE = _Ask([], [])  # no lines (never added to: each list is made anew to be)


def attribute(revisions: Iterable[tuple[K, bytes]]) -> list[tuple[bytes, K]]:
    """Each line of the newest text of ``revisions`` with the key of the revision that
    last changed it. ``revisions``: a file's texts newest first, each with a key, each
    the one before it as its parent left it (equal texts are fine: lines pass on);
    the oldest owns what no older text explains. Stops taking texts once every line
    has its owner. Empty if ``revisions`` is."""
    given = iter(revisions)
    first = next(given, None)
    if first is None:
        return []
    key, text = first
    new = _Text(text, _lines(text))
    lines = new.lines
    owners: list[K] = [key] * len(lines)
    ask = _Ask(list(range(len(lines))), list(range(len(lines))))
    for older_key, older in given:
        if older != new.data:
            old = _Text(older, _lines(older))
            ask, left = _match(old, new, ask)
            for final in left.final:
                owners[final] = key
            new = old
        key = older_key
        if not ask.at:
            return list(zip(lines, owners, strict=True))
    for final in ask.final:
        owners[final] = key
    return list(zip(lines, owners, strict=True))


def _lines(data: bytes) -> list[bytes]:
    """:func:`split_lines` of any text a blame reads, the newest or an older one, if it
    has at most :data:`BLAME_LINES` lines: counted before the text is split, so an older
    revision of millions of empty lines costs nothing to refuse."""
    count = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
    if count > BLAME_LINES:
        from gitmem.errors import LimitExceeded

        raise LimitExceeded(
            f"blame reads at most {BLAME_LINES:,} lines of a file, and this one has "
            f"{count:,}; read it with `gitmem show`, or `git blame` on the store's branch",
            limit="blameLines",
            attempted=count,
            maximum=BLAME_LINES,
        )
    return split_lines(data)


def _shared(old: list[bytes], new: list[bytes]) -> tuple[int, int]:
    """How many lines ``old`` and ``new`` share at their start, and then at their end
    (never counting a line twice): each found by one pass of C-level iterators that
    stops at the first pair of lines that differ."""
    most = min(len(old), len(new))
    start = next(compress(count(), map(ne, old, new)), most)
    rest = most - start
    differ = islice(map(ne, reversed(old), reversed(new)), rest)
    return start, next(compress(count(), differ), rest)


def _match(old: _Text, new: _Text, ask: _Ask) -> tuple[_Ask, _Ask]:
    """Split the lines ``ask`` holds (lines of ``new``) into those ``old`` holds
    unchanged, as lines of ``old``, and those it does not."""
    start, end = _shared(old.lines, new.lines)
    stop_new, stop_old = len(new.lines) - end, len(old.lines) - end
    at, final = ask.at, ask.final
    i = bisect_left(at, start)
    j = bisect_left(at, stop_new, i)
    shift = stop_old - stop_new
    if i == j and (not shift or j == len(at)):
        return ask, _NONE  # no line asked for changed or moved: all pass as they are
    passed_at, passed_final = at[:i], final[:i]
    left = _NONE
    if i < j:
        old_middle, new_middle = old.lines[start:stop_old], new.lines[start:stop_new]
        # lines rewritten outright (the common case) share no line: nothing to match
        if old_middle and not set(old_middle).isdisjoint(new_middle):
            keep = _kept(old_middle, new_middle, start)
            left = _Ask([], [])
            for line, to in zip(at[i:j], final[i:j], strict=True):
                kept = keep.get(line)
                if kept is None:
                    left.at.append(line)
                    left.final.append(to)
                else:
                    passed_at.append(kept)
                    passed_final.append(to)
        else:
            left = _Ask(at[i:j], final[i:j])
    passed_at += at[j:] if not shift else [line + shift for line in at[j:]]
    passed_final += final[j:]
    return _Ask(passed_at, passed_final), left


def _kept(old: list[bytes], new: list[bytes], start: int) -> dict[int, int]:
    """Which lines of ``new`` (from line ``start``) ``old`` holds unchanged, and where."""
    if len(old) * len(new) > MATCHED_MAX:
        return {start + b: start + a for b, a in _anchored(old, new).items()}
    # imported here: its import compiles a pattern, and most diffs never get this far
    from difflib import SequenceMatcher

    keep: dict[int, int] = {}
    for a, b, size in SequenceMatcher(None, old, new, False).get_matching_blocks():
        for k in range(size):
            keep[start + b + k] = start + a + k
    return keep


def _anchored(old: list[bytes], new: list[bytes]) -> dict[int, int]:
    """Lines of ``new`` that ``old`` holds, as patience diff pairs them: the lines each
    side holds exactly once, in the longest order both agree on, then the equal lines
    next to each pair, out to the neighbouring pairs. Near-linear however lines repeat."""
    seen_old: dict[bytes, int] = {}
    for i, line in enumerate(old):
        seen_old[line] = -1 if line in seen_old else i
    seen_new: dict[bytes, int] = {}
    for j, line in enumerate(new):
        seen_new[line] = -1 if line in seen_new else j
    pairs = [
        (j, seen_old[line])
        for line, j in seen_new.items()
        if j >= 0 and seen_old.get(line, -1) >= 0
    ]
    pairs.sort()
    # the longest run of pairs rising on both sides (patience sorting)
    tops: list[int] = []
    ends: list[int] = []
    before: list[int] = []
    for k, (_, i) in enumerate(pairs):
        at = bisect_left(tops, i)
        before.append(ends[at - 1] if at else -1)
        if at == len(tops):
            tops.append(i)
            ends.append(k)
        else:
            tops[at], ends[at] = i, k
    chain: list[tuple[int, int]] = []
    k = ends[-1] if ends else -1
    while k >= 0:
        chain.append(pairs[k])
        k = before[k]
    chain.reverse()
    keep: dict[int, int] = {}
    last_j = last_i = -1  # the pair before: the lines after it are walked forward
    for j, i in [*chain, (len(new), len(old))]:
        fj, fi = last_j + 1, last_i + 1
        while fj < j and fi < i and new[fj] == old[fi]:
            keep[fj] = fi
            fj, fi = fj + 1, fi + 1
        bj, bi = j - 1, i - 1  # and the lines before this pair, backward
        while bj >= fj and bi >= fi and new[bj] == old[bi]:
            keep[bj] = bi
            bj, bi = bj - 1, bi - 1
        if j < len(new):
            keep[j] = i
        last_j, last_i = j, i
    return keep


# -- reading a store's history ---------------------------------------------------------


class _Key:
    """A revision of a memory's file: its commit, the memory's name there, and that
    commit's revision of it (0 where the walk does not know it)."""

    __slots__ = ("commit", "revision", "slug")

    def __init__(self, commit: str, slug: str, revision: int = 0) -> None:
        self.commit = commit
        self.slug = slug
        self.revision = revision


def _states(
    reader: Commits,
    entries: Callable[[str, str], list[Entry]],
    head: str,
    slug: str,
    suffix: str,
) -> Iterator[tuple[_Key, str]]:
    """``slug``'s file (of ``suffix``) at ``head`` and before, newest first, as the
    history index has it: each revision with the file's blob id then, up to the one
    that created it (past a rename, the old name's). For a history with no merge;
    ``entries(head, slug)``: the history index's rows of ``slug`` up to ``head``."""
    index = SUFFIXES.index(suffix)
    name, top = slug, head
    while True:
        last = None
        for entry in reversed(entries(top, name)):
            blob = entry.blobs[index]
            if entry.removed or blob == "-":
                break
            yield _Key(entry.commit, name, entry.revision), blob
            last = entry
        if last is None:
            return
        old = _renamed_from(reader, last.commit, name)
        if old is None:
            return
        name, top = old, reader.parents(last.commit)[0]


def _runs(states: Iterable[tuple[_Key, str]]) -> Iterator[tuple[_Key, str]]:
    """``states`` with each run of revisions of one blob folded into its oldest."""
    key: _Key | None = None
    blob = ""
    for older, found in states:
        if key is not None and found != blob:
            yield key, blob
        key, blob = older, found
    if key is not None:
        yield key, blob


def _texts(
    read: Callable[[list[str]], list[bytes]], states: Iterable[tuple[_Key, str]]
) -> Iterator[tuple[_Key, bytes]]:
    """The texts of ``states`` (see :func:`_runs`), read by ``read`` (blob ids → their
    contents) in batches that double from 4 to 256: one read of many objects costs
    less than a read of each, and a batch reads no more texts past the one last asked
    for than were asked for before it."""
    runs = _runs(states)
    size = 4
    while True:
        batch = list(islice(runs, size))
        if not batch:
            return
        yield from zip((key for key, _ in batch), read([blob for _, blob in batch]), strict=True)
        size = min(2 * size, 256)


def origins(
    reader: Commits,
    history: History,
    head: str,
    slug: str,
    read: Callable[[list[str]], list[bytes]],
) -> list[Origin]:
    """The origin of every line of ``slug``'s files at ``head`` (empty if it has none
    there), the revisions of a history with no merge read from the history index and
    their texts by ``read`` (blob ids → their contents, in that order)."""
    linear = history.linear(head)
    walk: _Walk | None = None
    kept: dict[tuple[str, str], list[Entry]] = {}

    def entries(top: str, name: str) -> list[Entry]:
        found = kept.get((top, name))
        if found is None:
            found = kept[top, name] = history.entries(top, name)
        return found

    found: list[Origin] = []
    for suffix in SUFFIXES:
        if linear:
            owned = attribute(_texts(read, _states(reader, entries, head, slug, suffix)))
        else:
            walk = walk or _Walk(reader, history, head)
            owned = walk.file(slug, suffix)
        found += [
            Origin(suffix, i, text.decode("utf-8", "replace"), key.commit, key.slug, key.revision)
            for i, (text, key) in enumerate(owned, 1)
        ]
    return found


def _blob(reader: Commits, root: str, slug: str, suffix: str) -> bytes | None:
    return reader.bucket(root, bucket(slug)).get(slug + suffix)


class _Lines:
    """Lines a commit is asked to explain: the file's name and blob there, and which."""

    __slots__ = ("ask", "blob", "slug")

    def __init__(self, slug: str, blob: bytes, ask: _Ask) -> None:
        self.slug = slug
        self.blob = blob
        self.ask = ask


class _Walk:
    """Blame over a history with merges, commit by commit (see the module's docstring)."""

    def __init__(self, reader: Commits, history: History, head: str) -> None:
        self.reader = reader
        self.history = history
        self.head = head
        self.order = history.commits(head)
        self.place = {sha: i for i, sha in enumerate(self.order)}
        self._changed: dict[str, dict[str, int]] = {}
        self._texts: dict[bytes, _Text] = {}

    def changed(self, name: str) -> Mapping[str, int]:
        """The commits whose rows name ``name``, with their revisions of it."""
        found = self._changed.get(name)
        if found is None:
            commits = self.history.changes(self.head, name)
            found = self._changed[name] = {c: i for i, c in enumerate(commits, 1)}
        return found

    def text(self, blob: bytes) -> _Text:
        found = self._texts.get(blob)
        if found is None:
            data = self.reader.blob(blob)
            found = self._texts[blob] = _Text(data, _lines(data))
        return found

    def file(self, slug: str, suffix: str) -> list[tuple[bytes, _Key]]:
        """Each line of ``slug``'s ``suffix`` file at the head with its revision."""
        import heapq  # here: a history with no merge never needs it

        reader, head = self.reader, self.head
        blob = _blob(reader, reader.root(head), slug, suffix)
        if blob is None:
            return []
        lines = _lines(reader.blob(blob))
        count = len(lines)
        owners = [_Key("", slug)] * count
        pending: dict[str, list[_Lines]] = {
            head: [_Lines(slug, blob, _Ask(list(range(count)), list(range(count))))]
        }
        queue = [-self.place[head]]

        def hand(commit: str, asked: _Lines) -> None:
            waiting = pending.get(commit)
            if waiting is None:
                pending[commit] = [asked]
                heapq.heappush(queue, -self.place[commit])
            else:
                waiting.append(asked)

        while queue:
            commit = self.order[-heapq.heappop(queue)]
            parents = reader.parents(commit)
            for asked in pending.pop(commit):
                name = asked.slug
                if len(parents) == 1 and commit not in self.changed(name):
                    hand(parents[0], asked)  # the memory did not change here
                    continue
                found = [_parent_blob(reader, commit, p, name, suffix) for p in parents]
                same = next((i for i, f in enumerate(found) if f and f[1] == asked.blob), None)
                kept = found[same] if same is not None else None
                if same is not None and kept is not None:
                    hand(parents[same], _Lines(kept[0], asked.blob, asked.ask))  # the same text
                    continue
                ask = asked.ask
                for parent, at in zip(parents, found, strict=True):
                    if at is None or not ask.at:
                        continue
                    passed, left = _match(self.text(at[1]), self.text(asked.blob), ask)
                    if passed.at:
                        hand(parent, _Lines(at[0], at[1], passed))
                    ask = left
                revision = self.changed(name).get(commit, 0)
                for final in ask.final:
                    owners[final] = _Key(commit, name, revision)
        return list(zip(lines, owners, strict=True))


def _parent_blob(
    reader: Commits, commit: str, parent: str, slug: str, suffix: str
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


def _renamed_from(reader: Commits, commit: str, slug: str) -> str | None:
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
    md = _blob(reader, reader.root(commit), slug, MD)
    before = reader.root(parents[0])
    for edit in reader.outside(commit):
        if edit.op == "delete" and _blob(reader, before, edit.slug, MD) == md:
            return edit.slug
    return None


def line_origins(reader: ObjectReader, history: History, head: str, slug: str) -> list[Origin]:
    """:func:`origins` of ``slug`` at ``head``, with each line's author, time and
    trailers (a blame reads many objects: straight from the packs, while it lasts)."""
    # imported here: the core above reads no git
    from gitmem.store.message import parse_message
    from gitmem.store.objects import BLOB, COMMIT
    from gitmem.store.packreader import packed_reads

    objects = os.path.join(reader.repo.controldir(), "objects")
    with packed_reads(objects, reader.raw) as read:
        found = origins(reader, history, head, slug, lambda shas: [read(sha, BLOB) for sha in shas])
        return stamped(found, lambda sha: made(read(sha, COMMIT), parse_message))


Made = tuple[str, int, "Mapping[str, str] | None"]
"""A commit's author name and time, and the extra trailers of its facts (``None`` for a
commit gitmem did not make)."""


def stamped(found: list[Origin], made_by: Callable[[str], Made]) -> list[Origin]:
    """``found`` with each line's author, time and trailers, ``made_by`` its commit's
    id (each commit asked once)."""
    made = {sha: made_by(sha) for sha in dict.fromkeys(o.commit for o in found)}
    return [o._replace(author=a, time=t, trailers=x) for o in found for a, t, x in [made[o.commit]]]


def made(raw: bytes, said: Callable[[bytes], Said | None]) -> Made:
    """A raw commit's :data:`Made`, its message's facts read by ``said``."""
    name, when = authored(raw)
    facts = said(message_of(raw))
    return name, when, facts.extra if facts is not None else None
