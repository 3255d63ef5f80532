"""A store's listing read whole from its tree, as the listing of a store with nothing
kept reads it (see :meth:`gitmem.store.snapshot.Snapshot.summaries`): every memory's
summary, its ``.md`` blob read in one sweep through the pack in the order the pack holds
them, and the listing kept for the next command.

This is what a fresh clone's first ``gitmem ls`` does before the command line loads.
Anything it does not read exactly as the full reader does (a memory file without front
matter, a description that is not one JSON string, text that is not UTF-8, an object
that is not the type its tree says) is ``None``: the full reader reads it, and says
what is wrong.
"""

from __future__ import annotations

import os

from gitmem.lean import listing
from gitmem.lean.files import replace_quietly
from gitmem.lean.halves import halves
from gitmem.lean.layout import CLOSE, CODE, MD, ON_USE, OPEN, bucket, description
from gitmem.lean.objects import BLOB, TREE, Objects, tree_items

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "READ_DIRECTLY",
    "SHARED_FROM",
    "Summary",
    "build",
    "indexed_text",
    "keep",
    "known_summaries",
    "md_blobs",
    "resurvey",
    "summary",
    "survey",
    "texts",
]

Summary = tuple[str, int, int]
"""A memory's description, and its body's characters and lines."""

READ_DIRECTLY = 32
"""How many memories a listing reads one by one before it reads every kept summary."""

SHARED_FROM = 2_000
"""How many memories a store holds (as its head commit counts them) from which a process
that reads every one shares the reading with a forked child (see :func:`build`)."""

_DIR_MODE = 0o040000

try:  # json's own scanner, as layout.description reads a description
    from _json import scanstring as _scan
except ImportError:
    _scan = None
_OPENED, _CLOSED = len(OPEN), len(CLOSE)
_HALVES = (CODE, ON_USE)


def summary(md: bytes) -> Summary | None:
    """The summary of a memory whose ``.md`` file holds ``md``: its description, and its
    body's characters and lines (a last line without a newline counts); ``None`` if
    the file does not read as a memory's."""
    front = _front(md)
    if front is None:
        return None
    found, start = front
    # counted in the bytes: ASCII text has a character a byte; other text is decoded,
    # as the memory's reader decodes it
    if md.isascii():
        chars = len(md) - start
    else:
        try:
            chars = len(md[start:].decode())
        except UnicodeDecodeError:
            return None
    # the body's lines, as _lines counts them: an empty body ends the file with the
    # front matter's newline
    return found, chars, md.count(b"\n", start) + (0 if md.endswith(b"\n") else 1)


def _front(md: bytes) -> tuple[str, int] | None:
    """The description of a memory whose ``.md`` file holds ``md``, and where its body
    starts; ``None`` if its front matter does not read as a memory's. Framed as
    :func:`~gitmem.lean.layout.split_md` frames it, without its tuple of two slices:
    this runs for every memory of a listing or a first search."""
    end = md.find(CLOSE, _OPENED)
    if end < 0 or not md.startswith(OPEN):
        return None
    framed = md[_OPENED:end]
    found = _quoted(framed)
    if found is None:
        found = description(framed)
        if found is None:
            return None
    return found, end + _CLOSED


def _quoted(framed: bytes) -> str | None:
    """The description of front matter ``framed`` as gitmem writes it (one JSON string,
    alone), as :func:`~gitmem.lean.layout.description` reads it; ``None`` for any other
    (which that reads)."""
    if framed[:1] != b'"' or _scan is None:
        return None
    try:
        text = framed.decode()
        value, stop = _scan(text, 1, True)
    except (UnicodeDecodeError, ValueError):
        return None
    return value if stop == len(text) else None


def _lines(body: bytes) -> int:
    """The lines of a memory's body (a last line without a newline counts), counted in
    its bytes: UTF-8 holds a newline only as itself."""
    return body.count(b"\n") + (0 if body[-1:] in (b"\n", b"") else 1)


def survey(
    objects: Objects, meta: str, store: str, tree: str, *, shared: bool = False
) -> listing.Kept | None:
    """The listing of the root ``tree`` of ``store``, read whole and kept in gitmem's
    folder ``meta`` (its summaries and the listing, as the full reader keeps them);
    ``None`` if a memory does not read as the full reader reads it. ``shared`` as
    :func:`build` has it."""
    found = build(objects, tree, lambda: known_summaries(meta), shared=shared)
    if found is None:
        return None
    keep(meta, store, found[1], found[0])
    return found[0]


def resurvey(
    objects: Objects, meta: str, store: str, tree: str, last: listing.Kept
) -> listing.Kept | None:
    """The listing of the root ``tree`` of ``store`` from ``last``, the listing kept of
    another tree of it, as the full reader reads a changed tree: the rows of fan-out
    folders whose tree id is unchanged are taken, only the other folders are read, and
    only the memories whose ``.md`` blob no kept summary knows; kept as :func:`survey`
    keeps one. ``None`` where the full reader reads it: ``last`` kept no folders, a
    memory is out of its own folder, or one does not read as the full reader reads it."""
    _, before, rows, folders, blobs = last
    buckets = _buckets(objects, tree) if before else None
    if buckets is None:
        return None
    changed = {name: sha for name, sha in buckets.items() if before.get(name) != sha}
    gone = changed.keys() | (before.keys() - buckets.keys())
    prior: listing.Summaries = {}
    kept: list[tuple[tuple[str, Summary], str, str]] = []
    for row, folder, md in zip(rows, folders, blobs, strict=True):
        if folder in gone:
            prior[f"{md} {row[0]}"] = row[1]
        else:
            kept.append((row, folder, md))
    filed = _Filed(changed)
    if not _file(objects, filed) or not filed.placed or filed.count != len(filed.mds):
        return None
    order = sorted(filed.mds)
    mds = [filed.mds[slug].hex() for slug in order]
    keys = _keys(mds, order)
    unknown = sum(key not in prior for key in keys)
    known = known_summaries(meta) if unknown > READ_DIRECTLY else {}
    unread = [
        (slug, key)
        for slug, key in zip(order, keys, strict=True)
        if key not in prior and key not in known
    ]
    read = _read(objects, filed, [slug for slug, _ in unread]) if unread else []
    if read is None:
        return None
    fresh = dict(zip([key for _, key in unread], read, strict=True))
    summaries = prior | known | fresh
    new = [
        ((slug, summaries[key]), filed.where[slug], md)
        for slug, key, md in zip(order, keys, mds, strict=True)
    ]
    merged = sorted([*kept, *new])  # slugs are distinct: the order is the slugs'
    found = (
        tree,
        buckets,
        [row for row, _, _ in merged],
        [folder for _, folder, _ in merged],
        [md for _, _, md in merged],
    )
    keep(meta, store, fresh, found)
    return found


def build(
    objects: Objects, tree: str, known: Callable[[], listing.Summaries], *, shared: bool = False
) -> tuple[listing.Kept, listing.Summaries] | None:
    """The listing of the root ``tree`` read whole, and the summaries it read that
    ``known()`` (the kept summaries, asked for only when more than
    :data:`READ_DIRECTLY` memories are listed) did not hold: what a listing with none
    kept keeps. ``None`` if a memory does not read as the full reader reads it;
    :class:`~gitmem.lean.objects.Unreadable` or ``KeyError`` if an object does not.
    ``shared``: half the folders read by a forked child (see :func:`_shared`)."""
    split = _shared(objects, tree, known, lowered=False) if shared else None
    if split is not None:
        return split[1:]
    filed = _filed(objects, tree)
    if filed is None:
        return None
    order = sorted(filed.mds)  # each slug once: its rows in slug order
    blobs = [filed.mds[slug].hex() for slug in order]
    keys = _keys(blobs, order)
    kept_before = known() if len(order) > READ_DIRECTLY else {}
    if kept_before:
        unread = [i for i, key in enumerate(keys) if key not in kept_before]
        read = _read(objects, filed, [order[i] for i in unread])
        if read is None:
            return None
        fresh = dict(zip([keys[i] for i in unread], read, strict=True))
        summaries = kept_before | fresh
        rows = [(slug, summaries[key]) for slug, key in zip(order, keys, strict=True)]
    else:
        read = _read(objects, filed, order)
        if read is None:
            return None
        fresh = dict(zip(keys, read, strict=True))
        rows = list(zip(order, read, strict=True))
    return _kept(tree, filed, order, rows, blobs), fresh


def texts(
    objects: Objects, tree: str, known: Callable[[], listing.Summaries], *, shared: bool = False
) -> tuple[dict[str, str], listing.Kept, listing.Summaries] | None:
    """Every memory's text under the root ``tree``, by slug, as the search index holds
    it (``slug NUL description NUL body``, lowered), its blobs read in one sweep
    through each pack; and, made from the same sweep, what :func:`build` gives of the
    tree (its listing, and the summaries ``known()`` does not hold, asked as it asks):
    what a listing keeps, so that the next listing reads no blob again. ``None`` if a
    memory does not read as the full reader reads it, an error as :func:`build` says
    them; ``shared`` as :func:`build` has it."""
    split = _shared(objects, tree, known, lowered=True) if shared else None
    if split is not None:
        return split
    filed = _filed(objects, tree)
    if filed is None:
        return None
    order = sorted(filed.mds)
    if not _halves_read(objects, filed, order):
        return None
    ids = [filed.mds[slug] for slug in order]
    found: dict[str, str] = {}
    read: list[Summary] = [("", 0, 0)] * len(order)
    for i, (kind, content) in objects.each(ids):
        slug = order[i]
        text = indexed_text(slug, kind, content)
        if text is None:
            return None
        found[slug], read[i] = text
    blobs = [sha.hex() for sha in ids]
    keys = _keys(blobs, order)
    kept_before = known() if len(order) > READ_DIRECTLY else {}
    fresh = dict(zip(keys, read, strict=True))
    if kept_before:
        fresh = {key: got for key, got in fresh.items() if key not in kept_before}
    rows = list(zip(order, read, strict=True))
    return found, _kept(tree, filed, order, rows, blobs), fresh


def indexed_text(slug: str, kind: int, content: bytes) -> tuple[str, Summary] | None:
    """The memory ``slug``'s text as the search index holds it (lowered) and its summary,
    from its ``.md`` object; ``None`` if it does not read as the store reads it."""
    if kind != BLOB:
        return None
    front = _front(content)
    if front is None:
        return None
    about, start = front
    raw = content[start:]
    try:
        body = raw.decode()
    except UnicodeDecodeError:
        return None
    # as summary() counts: a character is a character of the decoded body
    return f"{slug}\0{about}\0{body}".lower(), (about, len(body), _lines(raw))


_Swept = tuple[str, str, str, "Summary | None", "str | None"]
"""A memory read by half a listing: its slug, folder and ``.md`` blob id, its summary
(``None`` where the kept summaries hold it) and its text as the search index holds it
(``None`` unless asked for)."""


def _shared(
    objects: Objects, tree: str, known: Callable[[], listing.Summaries], *, lowered: bool
) -> tuple[dict[str, str], listing.Kept, listing.Summaries] | None:
    """What :func:`texts` gives of the root ``tree`` (its texts only if ``lowered``),
    each half of its folders read whole by one process (see :mod:`gitmem.lean.halves`):
    a fresh clone's first listing of a large store, on two cores. ``None`` where the
    work is not so shared (a tree that is not one, a slug in two folders, a memory that
    does not read, or so few memories that the kept summaries are not asked):
    :func:`texts` then reads as it always did, deciding and saying every error itself."""
    buckets = _buckets(objects, tree)
    if buckets is None:
        return None
    kept_before = known()
    parts = halves(
        lambda part: _swept(objects, part, kept_before, lowered), list(buckets.items()), 2
    )
    if any(part is None for part in parts):
        return None
    read = [row for part in parts if part is not None for row in part[1]]
    order = [row[0] for row in read]
    if len(set(order)) != len(order) or len(order) <= READ_DIRECTLY:
        return None
    # two runs, each in slug order: one merge, each row placed by its slug alone (no
    # two rows share one)
    read.sort()
    order = [row[0] for row in read]
    blobs = [row[2] for row in read]
    keys = _keys(blobs, order)
    rows: list[tuple[str, Summary]] = []
    fresh: listing.Summaries = {}
    for (slug, _, _, got, _), key in zip(read, keys, strict=True):
        if got is None:
            rows.append((slug, kept_before[key]))
        else:
            rows.append((slug, got))
            if key not in kept_before:
                fresh[key] = got
    placed = all(part is not None and part[0] for part in parts)
    found = {row[0]: row[4] or "" for row in read} if lowered else {}
    # each folder named by this process's one string of its name, as a reading alone
    # names it: marshal writes a string shared by many rows once, the kept bytes alike
    names = {name: name for name in buckets}
    kept = tree, buckets if placed else {}, rows, [names[row[1]] for row in read], blobs
    return found, kept, fresh


def _swept(
    objects: Objects, part: list[tuple[str, str]], known: listing.Summaries, lowered: bool
) -> tuple[bool, list[_Swept]] | None:
    """Half a listing read whole: the memories of the fan-out folders ``part`` (name,
    id) in slug order, each read unless ``known`` holds its summary (each read if
    ``lowered``, its text too); and whether each is in its own folder. ``None`` if a
    memory does not read as the full reader reads it, or a slug is in two folders."""
    filed = _Filed(dict(part))
    if not _file(objects, filed) or filed.count != len(filed.mds):
        return None
    order = sorted(filed.mds)
    if not _halves_read(objects, filed, order):
        return None
    mds = filed.mds
    blobs = [mds[slug].hex() for slug in order]
    if lowered:
        wanted = list(range(len(order)))
    else:
        wanted = [i for i, key in enumerate(_keys(blobs, order)) if key not in known]
    summaries: list[Summary | None] = [None] * len(order)
    lowers: list[str | None] = [None] * len(order)
    for j, (kind, content) in objects.each([mds[order[i]] for i in wanted]):
        i = wanted[j]
        if not lowered:
            summaries[i] = got = summary(content) if kind == BLOB else None
            if got is None:
                return None
            continue
        text = indexed_text(order[i], kind, content)
        if text is None:
            return None
        lowers[i], summaries[i] = text
    where = filed.where
    return filed.placed, [
        (slug, where[slug], blob, got, lower)
        for slug, blob, got, lower in zip(order, blobs, summaries, lowers, strict=True)
    ]


def md_blobs(kept: listing.Kept) -> dict[str, str]:
    """The ``.md`` blob id of each memory of a listing as it is kept, by slug."""
    return dict(zip([slug for slug, _ in kept[2]], kept[4], strict=True))


def _keys(blobs: list[str], order: list[str]) -> list[str]:
    """The kept summaries' keys of the memories ``order``, whose ``.md`` blobs are
    ``blobs``."""
    return [f"{md} {slug}" for md, slug in zip(blobs, order, strict=True)]


def _kept(
    tree: str, filed: _Filed, order: list[str], rows: list[tuple[str, Summary]], blobs: list[str]
) -> listing.Kept:
    """The listing of the root ``tree`` as it is kept: its rows, the folder and ``.md``
    blob of each, and its fan-out folders (when each memory is in its own)."""
    return tree, filed.buckets if filed.placed else {}, rows, [filed.where[s] for s in order], blobs


class _Filed:
    """The fan-out folders of a root tree (name → id) and, by slug, each memory's
    folder, ``.md`` blob and code halves' blobs (for a memory that has any), in three
    plain tables; ``placed``: whether each memory is in its own folder."""

    __slots__ = ("buckets", "count", "halves", "mds", "placed", "where")

    def __init__(self, buckets: dict[str, str]) -> None:
        self.buckets = buckets
        self.where: dict[str, str] = {}
        self.mds: dict[str, bytes] = {}
        self.halves: dict[str, tuple[bytes, ...]] = {}
        self.placed = True
        self.count = 0
        """How many memory files the folders hold (a slug in two folders counts twice)."""


def _filed(objects: Objects, tree: str) -> _Filed | None:
    """Every memory's files under the root ``tree``; ``None`` if the root or a folder is
    not a tree."""
    buckets = _buckets(objects, tree)
    if buckets is None:
        return None
    filed = _Filed(buckets)
    return filed if _file(objects, filed) else None


def _buckets(objects: Objects, tree: str) -> dict[str, str] | None:
    """The fan-out folders of the root ``tree`` (name → id); ``None`` if it is not a
    tree."""
    kind, content = objects.read(tree)
    if kind != TREE:
        return None
    return {name: sha.hex() for name, mode, sha in tree_items(content) if mode == _DIR_MODE}


def _file(objects: Objects, filed: _Filed) -> bool:
    """File every memory of the folders of ``filed``; whether each folder is a tree."""
    folders_read = objects.read_many(filed.buckets.values())
    # a slug in two folders is taken from the last, as one folder's name twice is
    where, mds, halves = filed.where, filed.mds, filed.halves
    for name, sha in filed.buckets.items():
        kind, content = folders_read[sha]
        if kind != TREE:
            return False
        items = tree_items(content)
        # a name ending in .md is a memory's (its code halves end otherwise)
        named = [(e[: -len(MD)], sha) for e, _, sha in items if e.endswith(MD) and len(e) > len(MD)]
        mds.update(named)
        slugs = [slug for slug, _ in named]
        where.update(dict.fromkeys(slugs, name))
        if len(named) < len(items):  # else no memory of the folder has code
            entries = {entry: sha for entry, _, sha in items}
            for slug in slugs:
                halves[slug] = tuple(entries[slug + h] for h in _HALVES if slug + h in entries)
        elif halves:  # none here, whatever an earlier folder of the same slug had
            for slug in slugs:
                halves.pop(slug, None)
        filed.placed = filed.placed and all(bucket(slug) == name for slug in slugs)
        filed.count += len(slugs)
    return True


def _read(objects: Objects, filed: _Filed, slugs: list[str]) -> list[Summary] | None:
    """The summaries of the memories ``slugs``, their blobs read in one sweep through
    each pack, each summed up as it is read; ``None`` if one does not read as the full
    reader reads it."""
    if not _halves_read(objects, filed, slugs):
        return None
    out: list[Summary] = [("", 0, 0)] * len(slugs)
    for i, (kind, content) in objects.each([filed.mds[slug] for slug in slugs]):
        got = summary(content) if kind == BLOB else None
        if got is None:
            return None
        out[i] = got
    return out


def _halves_read(objects: Objects, filed: _Filed, slugs: list[str]) -> bool:
    """Whether every code half of the memories ``slugs`` is a blob of text, as the full
    reader reads a memory."""
    halves = filed.halves
    coded = [sha for slug in slugs if slug in halves for sha in halves[slug]] if halves else []
    for _, (kind, content) in objects.each(coded) if coded else ():
        if kind != BLOB:
            return False
        try:
            content.decode()
        except UnicodeDecodeError:
            return False
    return True


def known_summaries(meta: str) -> listing.Summaries:
    """Every summary the summaries file in gitmem's folder ``meta`` holds."""
    try:
        with open(listing.summaries_path(meta), "rb") as f:
            return listing.summaries(f.read())
    except OSError:
        return {}


def keep(meta: str, store: str, read: listing.Summaries, kept: listing.Kept) -> None:
    """Keep the summaries ``read`` and the listing ``kept`` of ``store`` in gitmem's
    folder ``meta``, as the full reader keeps them (best effort: derived data, read
    again by the next listing if it is lost)."""
    _keep_summaries(meta, read)
    replace_quietly(listing.listing_path(meta, store), listing.encode(*kept))


def _keep_summaries(meta: str, read: listing.Summaries) -> None:
    """Append the summaries ``read`` to the summaries file in gitmem's folder ``meta``."""
    if not read:
        return
    try:
        fd = os.open(listing.summaries_path(meta), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, listing.summaries_record(read))
        finally:
            os.close(fd)
    except OSError:
        pass
