"""A memory store as of one commit: its memories, listings, per-slug revisions and root
files, read through the object reader without writing anything."""

from __future__ import annotations

import bisect
import os
from itertools import compress
from typing import TYPE_CHECKING

from gitmem.errors import StorageError
from gitmem.lean.objects import Objects
from gitmem.lean.survey import READ_DIRECTLY, build, summary
from gitmem.store import memoryfiles as files
from gitmem.store.collector import uncollected
from gitmem.store.history import History
from gitmem.store.memoryfiles import ALLOWLIST, GUARD
from gitmem.store.objects import (
    BLOB,
    DIR_MODE,
    MemoryFiles,
    ObjectReader,
    differing,
    held_bucket,
    memory_files,
    read_memories,
)
from gitmem.store.objects import packed as read_packed
from gitmem.store.summaries import Listing, Summaries, Summary
from gitmem.store.view import StoreView
from gitmem.types import Memory, Totals

if TYPE_CHECKING:
    # the secret detectors scan writes; a read needs none
    from gitmem.secrets import Allowlist

__all__ = ["ALLOWLIST", "GUARD", "META", "Snapshot", "readable_memory"]

META = {ALLOWLIST: "Gitmem-Allowlist", GUARD: "Gitmem-Guard"}

# how many memories a listing reads and files one by one before it reads every kept
# summary, reads the blobs in one sweep, and sorts instead
_READ_DIRECTLY = READ_DIRECTLY
# how many memories' files found in root trees a reader keeps (a server reads the same
# few at every call)
_FOUND_MAX = 10_000


def readable_memory(reader: ObjectReader, slug: str, found: MemoryFiles) -> Memory:
    """The memory ``slug`` of files ``found``; one whose files do not read as text (a
    hand commit's) read as far as they go, bytes that are not UTF-8 replaced, rather
    than refused: a write that replaces it measures it so, and its history reads."""
    try:
        return reader.memory(slug, found)
    except (StorageError, UnicodeDecodeError):
        pass
    blob = reader.blob
    description, body = files.decode_lenient(blob(found.md))
    code = blob(found.code).decode("utf-8", "replace") if found.code else ""
    on_use = blob(found.on_use).decode("utf-8", "replace") if found.on_use else ""
    return Memory(slug, description, body, code, on_use)


class Snapshot(StoreView):
    """A store as of one commit (``commit`` is ``None`` for a store not yet written)."""

    overlaid = False
    """Whether a proposal's pending memories are laid over the store (what a holder
    whose writes await review reads); no index kept for the store's head fits it."""

    def __init__(
        self, reader: ObjectReader, history: History, store: str, commit: str | None
    ) -> None:
        super().__init__(reader, history, store, commit)
        self._all: dict[str, MemoryFiles] | None = None

    def __contains__(self, slug: object) -> bool:
        return isinstance(slug, str) and self._files(slug) is not None

    def __len__(self) -> int:
        return len(self._listing())

    def slugs(self) -> list[str]:
        """Every slug in the store, sorted."""
        return sorted(self._listing())

    def get(self, slug: str) -> Memory | None:
        """The memory ``slug``, or ``None``."""
        found = self._files(slug)
        return self._reader.memory(slug, found) if found else None

    def readable(self, slug: str) -> Memory | None:
        """The memory ``slug``, or ``None``; one whose files do not read as text (a hand
        commit's) read as far as they go, not refused: what a write that replaces it
        measures it by, so that a write (a revert, a restore) can repair it."""
        found = self._files(slug)
        if found is None:
            return None
        return readable_memory(self._reader, slug, found)

    def memory_files(self, slug: str) -> MemoryFiles | None:
        """The blobs of ``slug``'s files, or ``None``: equal blobs, equal memory."""
        return self._files(slug)

    def memories(self) -> list[Memory]:
        """Every memory, sorted by slug."""
        listing = self._listing()
        return read_memories(self._reader, [(slug, listing[slug]) for slug in sorted(listing)])

    def _count(self) -> Totals:
        try:
            found = self.memories()
        except (StorageError, UnicodeDecodeError):  # a memory that does not read as text
            listing = self._listing()
            found = [readable_memory(self._reader, s, listing[s]) for s in sorted(listing)]
        return Totals(len(found), sum(m.chars for m in found), sum(m.lines for m in found))

    def summaries(
        self, kept: Summaries, *, remember: bool = True, write: bool = True
    ) -> list[tuple[str, Summary]]:
        """Every memory's slug and summary (description, characters, lines), sorted by
        slug; the ``.md`` blobs ``kept`` knows are not read, the others are added to it.
        A listing ``kept`` holds of this very tree is taken whole; of an earlier tree,
        its rows in fan-out folders this tree still has unchanged are taken, and only
        the other folders are read. Without ``remember`` the listing is not kept (a
        reading of the past leaves the head's listing in place); without ``write``
        neither the listing nor the summaries read are (a reading that writes
        nothing)."""
        if self.root is None:
            return []
        whole = kept.listing(self.store, self.root)
        if whole is not None:
            return whole
        with uncollected():  # a listing of a whole store keeps every row it makes
            return self._read_listing(kept, self.root, remember=remember, write=write)

    def _read_listing(
        self, kept: Summaries, root: str, *, remember: bool, write: bool
    ) -> list[tuple[str, Summary]]:
        """The listing of ``root`` (see ``summaries``), read and kept."""
        buckets = {n: sha.decode() for n, mode, sha in self._reader.tree(root) if mode == DIR_MODE}
        read = set(buckets)
        out: Listing = []
        folders: list[str] = []
        blobs: list[str] = []
        prior: dict[str, Summary] = {}  # the last listing's rows in the folders read again
        last = kept.last_listing(self.store)
        if last is None:
            whole = self._read_whole(kept, root, remember=remember, write=write)
            if whole is not None:
                return whole
        if last is not None:
            read = {n for n in buckets if last.buckets.get(n) != buckets[n]}
            gone = read | (last.buckets.keys() - buckets.keys())
            keep = [folder not in gone for folder in last.folders]
            out = list(compress(last.rows, keep))
            folders = list(compress(last.folders, keep))
            blobs = list(compress(last.blobs, keep))
            prior = {
                f"{md} {row[0]}": row[1]
                for row, md, kept_row in zip(last.rows, last.blobs, keep, strict=True)
                if not kept_row
            }
        listing, placed = self._folders(root, read)
        if not placed and len(read) < len(buckets):
            # a slug filed outside its own fan-out folder (no gitmem write or checked
            # push makes one) may also be in a folder that did not change: read them all
            listing, placed = self._folders(root, set(buckets))
            out, folders, blobs = [], [], []
        keys = {slug: f"{files_.md.decode()} {slug}" for slug, (_, files_) in listing.items()}
        unknown = sum(1 for key in keys.values() if key not in prior)
        # a few memories are read sooner than every summary ever kept is
        known = kept.known() if unknown > _READ_DIRECTLY else {}
        found: dict[str, Summary] = {}
        if unknown > _READ_DIRECTLY:
            unread = {
                slug: files_
                for slug, (_, files_) in listing.items()
                if keys[slug] not in prior and keys[slug] not in known
            }
            read = _summaries(self._reader, unread)
            found = {keys[slug]: read[slug] for slug in unread if slug in read}
        new: list[tuple[tuple[str, Summary], str, str]] = []
        for slug, (folder, files_) in listing.items():
            key = keys[slug]
            summary = prior.get(key) or known.get(key) or found.get(key)
            if summary is None:
                memory = self._reader.memory(slug, files_, keep=False)
                summary = found[key] = (memory.description, memory.chars, memory.lines)
            new.append(((slug, summary), folder, files_.md.decode()))
        if len(new) <= _READ_DIRECTLY:  # into the sorted rows, each where its slug goes
            for row, folder, md in new:
                at = bisect.bisect_left(out, (row[0],))
                out.insert(at, row)
                folders.insert(at, folder)
                blobs.insert(at, md)
        else:  # slugs are distinct: the order is the slugs'
            merged = sorted([*zip(out, folders, blobs, strict=True), *new])
            out = [row for row, _, _ in merged]
            folders = [folder for _, folder, _ in merged]
            blobs = [md for _, _, md in merged]
        if len(found) > _READ_DIRECTLY:
            # the pack's pages a reading of many memories touched would stay in this
            # process's resident set (a server idles on them): let go of the mapping
            self._reader.forget_packs()
        if not write:
            return out
        kept.add(found)
        # a listing of a tree with a slug out of place is kept without its folders, so
        # that the next listing reads every folder again
        if remember:
            kept.keep_listing(self.store, root, buckets if placed else {}, out, folders, blobs)
        return out

    def _read_whole(
        self, kept: Summaries, root: str, *, remember: bool, write: bool
    ) -> Listing | None:
        """The listing of ``root`` with none kept before, read whole by the one builder
        of a whole listing (:func:`gitmem.lean.survey.build`, which the lean read path
        builds a fresh clone's first listing with), and kept as ``summaries`` says;
        ``None`` if it leaves the tree to this reader (no packs, an object it does not
        read, a memory that does not read as a memory: this reader reads it, and says
        what is wrong)."""
        folder = self._reader.packs.folder
        if folder is None:
            return None
        try:
            found = build(Objects(os.path.dirname(folder)), root, kept.stored)
        except (KeyError, ValueError, OSError):
            return None
        if found is None:
            return None
        listing, read = found
        if write:
            kept.add(read)
            if remember:
                kept.keep_listing(self.store, *listing)
        return listing[2]

    def revision(self, slug: str) -> int:
        """The number of ``slug``'s latest revision in this commit's history (0 if never
        written): how many revisions it has there, hand-made ones and both sides of a
        merge included, so the next one's number is its place. Exact for any commit of
        the store; cheap for its head and the head's first-parent ancestors."""
        return self._history.last_revision(self.commit, slug)

    def changed_since(self, other: Snapshot | None) -> set[str]:
        """The slugs whose files differ between ``other`` (``None``: an empty store) and
        this snapshot: fan-out folders whose trees are equal are skipped, so the cost
        follows the change, not the store."""
        before = other.root if other is not None else None
        if before == self.root:
            return set()
        mine = self._reader.names(self.root) if self.root else {}
        theirs = self._reader.names(before) if before else {}
        found: set[str] = set()
        for name in mine.keys() | theirs.keys():
            now, then = mine.get(name), theirs.get(name)
            if now == then:
                continue
            folders = [
                entry[1] if entry is not None and entry[0] == DIR_MODE else None
                for entry in (then, now)
            ]
            for entry in differing(self._reader, *folders):
                try:
                    split = files.split_name(entry.decode())
                except UnicodeDecodeError:
                    raise StorageError(
                        f"a tree of store {self.store} names a file {entry!r}, which is not "
                        "UTF-8; run `gitmem check`"
                    ) from None
                if split:
                    found.add(split[0])
        return found

    def meta(self, name: str) -> str | None:
        """The text of the store's root file ``name`` (:data:`ALLOWLIST`, :data:`GUARD`),
        or ``None`` if the store holds none."""
        if self.root is None:
            return None
        entry = self._reader.entry(self.root, name)
        if entry is None or entry[0] == DIR_MODE:
            return None
        return self._reader.text(entry[1])

    def allowlist(self) -> Allowlist:
        """The secrets this store admits (see ``read_allowlist``)."""
        from gitmem.secrets import read_allowlist  # writes only: a read scans nothing

        return read_allowlist(self.meta(ALLOWLIST))

    def _files(self, slug: str) -> MemoryFiles | None:
        if self._all is not None:
            return self._all.get(slug)
        if self.root is None:
            return None
        kept = self._reader.found
        known = kept.get((self.root, slug))
        if known is not None:
            return known
        found = self._find(self.root, slug)
        if found is not None:
            if len(kept) >= _FOUND_MAX:
                kept.clear()
            kept[self.root, slug] = found
        return found

    def _find(self, root: str, slug: str) -> MemoryFiles | None:
        """The files of ``slug`` in tree ``root``, read from the tree."""
        name = files.bucket(slug)
        folder = self._reader.entry(root, name)
        if folder is None or folder[0] != DIR_MODE:
            return None
        # a folder two snapshots were compared in: its files found in its raw bytes
        kept = self._reader.trees.files(folder[1], [(slug + s).encode() for s in files.SUFFIXES])
        if kept is not None:
            md, code, on_use = (None if e is None else e[1] for e in kept)
            return None if md is None else MemoryFiles(md, code, on_use)
        held = held_bucket(self._reader, root, name)
        if held is not None:  # a comparison of two snapshots read the folder already
            return memory_files(slug, held)
        # the fan-out folder parsed as the tree a write changing the memory builds on
        tree = self._reader.raw_tree(folder[1].decode())
        md, code, on_use = (tree.get(slug + suffix) for suffix in files.SUFFIXES)
        if md is None:
            return None
        return MemoryFiles(md[1], code[1] if code else None, on_use[1] if on_use else None)

    def _listing(self) -> dict[str, MemoryFiles]:
        if self._all is None:
            listing: dict[str, MemoryFiles] = {}
            if self.root is not None:
                for name, mode, _ in self._reader.tree(self.root):
                    if mode == DIR_MODE:
                        listing.update(self._folder(name))
            self._all = listing
        return self._all

    def _folder(self, name: str, *, keep: bool = True) -> dict[str, MemoryFiles]:
        """The memories in the root's fan-out folder ``name`` (without ``keep``, the
        folder's entries are not kept once read)."""
        entries = self._reader.bucket(self.root, name, keep=keep) if self.root is not None else {}
        found: dict[str, MemoryFiles] = {}
        for entry in entries:
            split = files.split_name(entry)
            memory = memory_files(split[0], entries) if split else None
            if split and split[1] == files.MD and memory:
                found[split[0]] = memory
        return found

    def _folders(
        self, root: str, names: set[str]
    ) -> tuple[dict[str, tuple[str, MemoryFiles]], bool]:
        """The memories in the fan-out folders ``names`` of ``root``, each with its
        folder (read in the root's order, as ``_listing`` reads them), and whether each
        is in its own folder."""
        listing: dict[str, tuple[str, MemoryFiles]] = {}
        placed = True
        for name, mode, _ in self._reader.tree(root):
            if mode == DIR_MODE and name in names:
                folder = self._folder(name, keep=False)
                placed = placed and all(files.bucket(slug) == name for slug in folder)
                listing.update((slug, (name, blobs)) for slug, blobs in folder.items())
        return listing, placed


def _summaries(reader: ObjectReader, found: dict[str, MemoryFiles]) -> dict[str, Summary]:
    """The summaries of many memories at once, ``slug → files``, their blobs read in one
    sweep through each pack: what a listing of a whole store reads. A memory whose
    files are not all in a pack, or do not read as a memory's, is left out (the reader
    reads it as ever, and says what is wrong)."""
    packed = read_packed(reader, [sha.decode() for blobs in found.values() for sha in blobs if sha])
    out: dict[str, Summary] = {}
    for slug, (md, code, on_use) in found.items():
        got = packed.get(md.decode())
        if got is None or got[0] != BLOB:
            continue
        if (code or on_use) and not _halves_read(packed, code, on_use):
            continue
        read = summary(got[1])
        if read is not None:
            out[slug] = read
    return out


def _halves_read(packed: dict[str, tuple[int, bytes]], *halves: bytes | None) -> bool:
    """Whether a memory's code halves were read, and are text (as a memory's are)."""
    for sha in halves:
        if sha:
            got = packed.get(sha.decode())
            if got is None or got[0] != BLOB:
                return False
            try:
                got[1].decode()
            except UnicodeDecodeError:
                return False
    return True
