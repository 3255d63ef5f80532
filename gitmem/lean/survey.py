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
from gitmem.lean.layout import CODE, MD, ON_USE, bucket, description, split_md
from gitmem.lean.objects import BLOB, TREE, Objects, tree_entries

__all__ = ["READ_DIRECTLY", "Summary", "summary", "survey", "survey_texts"]

Summary = tuple[str, int, int]
"""A memory's description, and its body's characters and lines."""

READ_DIRECTLY = 32
"""How many memories a listing reads one by one before it reads every kept summary."""

_DIR_MODE = 0o040000
_HALVES = (CODE, ON_USE)


def summary(md: bytes) -> Summary | None:
    """The summary of a memory whose ``.md`` file holds ``md``: its description, and its
    body's characters and lines (a last line without a newline counts); ``None`` if
    the file does not read as a memory's."""
    found = _memory(md)
    return _summed(*found) if found is not None else None


def _memory(md: bytes) -> tuple[str, str] | None:
    """The description and body of a memory whose ``.md`` file holds ``md``."""
    framed = split_md(md)
    if framed is None:
        return None
    found = description(framed[0])
    if found is None:
        return None
    try:
        return found, framed[1].decode()
    except UnicodeDecodeError:
        return None


def _summed(found: str, body: str) -> Summary:
    lines = body.count("\n") + (0 if not body or body.endswith("\n") else 1)
    return found, len(body), lines


def survey(objects: Objects, meta: str, store: str, tree: str) -> listing.Kept | None:
    """The listing of the root ``tree`` of ``store``, read whole and kept in gitmem's
    folder ``meta`` (its summaries and the listing, as the full reader keeps them);
    ``None`` if a memory does not read as the full reader reads it."""
    found = _survey(objects, meta, store, tree, None)
    return found[0] if found is not None else None


def survey_texts(
    objects: Objects, meta: str, store: str, tree: str
) -> tuple[listing.Kept, dict[str, str]] | None:
    """As :func:`survey`, every memory read (none taken from the kept summaries), and
    with the listing each memory's text as the search index holds it: ``slug NUL
    description NUL body``, lowered."""
    return _survey(objects, meta, store, tree, {})


def _survey(
    objects: Objects, meta: str, store: str, tree: str, texts: dict[str, str] | None
) -> tuple[listing.Kept, dict[str, str]] | None:
    kind, content = objects.read(tree)
    if kind != TREE:
        return None
    buckets = {n: sha for n, (mode, sha) in tree_entries(content).items() if mode == _DIR_MODE}
    folders_read = objects.read_many(buckets.values())
    # slug → (folder, md blob, code halves): a slug in two folders keeps its first place
    found: dict[str, tuple[str, str, tuple[str, ...]]] = {}
    placed = True
    for name, sha in buckets.items():
        kind, content = folders_read[sha]
        if kind != TREE:
            return None
        entries = tree_entries(content)
        # a name ending in .md is a memory's (its code halves end otherwise)
        slugs = [e[: -len(MD)] for e in entries if e.endswith(MD) and len(e) > len(MD)]
        halved = len(slugs) < len(entries)  # else no memory of the folder has code
        for slug in slugs:
            halves = ()
            if halved:
                halves = tuple(entries[slug + h][1] for h in _HALVES if slug + h in entries)
            found[slug] = (name, entries[slug + MD][1], halves)
            placed = placed and bucket(slug) == name
    known: listing.Summaries = _known(meta) if len(found) > READ_DIRECTLY else {}
    keys = {slug: f"{md} {slug}" for slug, (_, md, _) in found.items()}
    unread = [
        (slug, md, halves)
        for slug, (_, md, halves) in found.items()
        if texts is not None or keys[slug] not in known
    ]
    blobs = objects.read_many([md for _, md, _ in unread])
    blobs.update(objects.read_many([sha for _, _, halves in unread for sha in halves]))
    read: listing.Summaries = {}
    for slug, md, halves in unread:
        kind, content = blobs[md]
        got = _memory(content) if kind == BLOB else None
        if got is None:
            return None
        for half in halves:
            kind, content = blobs[half]
            if kind != BLOB:
                return None
            content.decode()  # a code half must be text, as the full reader reads it
        read[keys[slug]] = _summed(*got)
        if texts is not None:
            texts[slug] = f"{slug}\0{got[0]}\0{got[1]}".lower()
    summaries = known | read
    order = sorted(found)  # each slug once: its rows in slug order
    kept: listing.Kept = (
        tree,
        buckets if placed else {},
        [(slug, summaries[keys[slug]]) for slug in order],
        [found[slug][0] for slug in order],
        [found[slug][1] for slug in order],
    )
    _keep(meta, store, {k: v for k, v in read.items() if k not in known}, kept)
    return kept, texts if texts is not None else {}


def _known(meta: str) -> listing.Summaries:
    try:
        with open(listing.summaries_path(meta), "rb") as f:
            return listing.summaries(f.read())
    except OSError:
        return {}


def _keep(meta: str, store: str, read: listing.Summaries, kept: listing.Kept) -> None:
    """Keep the summaries read and the listing, as the full reader does (best effort:
    derived data, read again by the next listing if it is lost)."""
    try:
        if read:
            fd = os.open(
                listing.summaries_path(meta), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644
            )
            try:
                os.write(fd, listing.summaries_record(read))
            finally:
                os.close(fd)
        replace_quietly(listing.listing_path(meta, store), listing.encode(*kept))
    except OSError:
        pass
