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
from gitmem.lean.layout import CLOSE, CODE, MD, ON_USE, OPEN, bucket, description, split_md
from gitmem.lean.objects import BLOB, TREE, Objects, tree_items

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "READ_DIRECTLY",
    "Summary",
    "build",
    "keep",
    "known_summaries",
    "md_blobs",
    "summary",
    "survey",
    "texts",
]

Summary = tuple[str, int, int]
"""A memory's description, and its body's characters and lines."""

READ_DIRECTLY = 32
"""How many memories a listing reads one by one before it reads every kept summary."""

_DIR_MODE = 0o040000
_OPENED, _CLOSED = len(OPEN), len(CLOSE)
_HALVES = (CODE, ON_USE)


def summary(md: bytes) -> Summary | None:
    """The summary of a memory whose ``.md`` file holds ``md``: its description, and its
    body's characters and lines (a last line without a newline counts); ``None`` if
    the file does not read as a memory's."""
    # framed as split_md frames it, here without its call: this runs for every memory
    end = md.find(CLOSE, _OPENED)
    if end < 0 or not md.startswith(OPEN):
        return None
    found = description(md[_OPENED:end])
    if found is None:
        return None
    body = md[end + _CLOSED :]
    # counted in the bytes: ASCII text has a character a byte; other text is decoded,
    # as the memory's reader decodes it
    if body.isascii():
        chars = len(body)
    else:
        try:
            chars = len(body.decode())
        except UnicodeDecodeError:
            return None
    return found, chars, _lines(body)


def _lines(body: bytes) -> int:
    """The lines of a memory's body (a last line without a newline counts), counted in
    its bytes: UTF-8 holds a newline only as itself."""
    return body.count(b"\n") + (0 if body[-1:] in (b"\n", b"") else 1)


def _framed(md: bytes) -> tuple[str, bytes] | None:
    """The description and the body's bytes of a memory whose ``.md`` file holds
    ``md``; ``None`` if the file does not read as a memory's."""
    framed = split_md(md)
    if framed is None:
        return None
    found = description(framed[0])
    return None if found is None else (found, framed[1])


def survey(objects: Objects, meta: str, store: str, tree: str) -> listing.Kept | None:
    """The listing of the root ``tree`` of ``store``, read whole and kept in gitmem's
    folder ``meta`` (its summaries and the listing, as the full reader keeps them);
    ``None`` if a memory does not read as the full reader reads it."""
    found = build(objects, tree, lambda: known_summaries(meta))
    if found is None:
        return None
    keep(meta, store, found[1], found[0])
    return found[0]


def build(
    objects: Objects, tree: str, known: Callable[[], listing.Summaries]
) -> tuple[listing.Kept, listing.Summaries] | None:
    """The listing of the root ``tree`` read whole, and the summaries it read that
    ``known()`` (the kept summaries, asked for only when more than
    :data:`READ_DIRECTLY` memories are listed) did not hold: what a listing with none
    kept keeps. ``None`` if a memory does not read as the full reader reads it;
    :class:`~gitmem.lean.objects.Unreadable` or ``KeyError`` if an object does not."""
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
    objects: Objects, tree: str, known: Callable[[], listing.Summaries]
) -> tuple[dict[str, str], listing.Kept, listing.Summaries] | None:
    """Every memory's text under the root ``tree``, by slug, as the search index holds
    it (``slug NUL description NUL body``, lowered), its blobs read in one sweep
    through each pack; and, made from the same sweep, what :func:`build` gives of the
    tree (its listing, and the summaries ``known()`` does not hold, asked as it asks):
    what a listing keeps, so that the next listing reads no blob again. ``None`` if a
    memory does not read as the full reader reads it, an error as :func:`build` says
    them."""
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
        framed = _framed(content) if kind == BLOB else None
        if framed is None:
            return None
        about, raw = framed
        try:
            body = raw.decode()
        except UnicodeDecodeError:
            return None
        slug = order[i]
        found[slug] = f"{slug}\0{about}\0{body}".lower()
        # as summary() counts: a character is a character of the decoded body
        read[i] = (about, len(body), _lines(raw))
    blobs = [sha.hex() for sha in ids]
    keys = _keys(blobs, order)
    kept_before = known() if len(order) > READ_DIRECTLY else {}
    fresh = dict(zip(keys, read, strict=True))
    if kept_before:
        fresh = {key: got for key, got in fresh.items() if key not in kept_before}
    rows = list(zip(order, read, strict=True))
    return found, _kept(tree, filed, order, rows, blobs), fresh


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

    __slots__ = ("buckets", "halves", "mds", "placed", "where")

    def __init__(self, buckets: dict[str, str]) -> None:
        self.buckets = buckets
        self.where: dict[str, str] = {}
        self.mds: dict[str, bytes] = {}
        self.halves: dict[str, tuple[bytes, ...]] = {}
        self.placed = True


def _filed(objects: Objects, tree: str) -> _Filed | None:
    """Every memory's files under the root ``tree``; ``None`` if the root or a folder is
    not a tree."""
    kind, content = objects.read(tree)
    if kind != TREE:
        return None
    filed = _Filed(
        {name: sha.hex() for name, mode, sha in tree_items(content) if mode == _DIR_MODE}
    )
    folders_read = objects.read_many(filed.buckets.values())
    # a slug in two folders is taken from the last, as one folder's name twice is
    where, mds, halves = filed.where, filed.mds, filed.halves
    for name, sha in filed.buckets.items():
        kind, content = folders_read[sha]
        if kind != TREE:
            return None
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
    return filed


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
