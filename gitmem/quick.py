"""The lean read path: the plain, valid forms of the read commands, answered before the
command line loads, from the files gitmem keeps and a few git objects.

:func:`answer` takes the process's arguments and either prints the command's output
and says its exit status, or says ``None``: not a form it answers exactly (help, a
usage error, an option it leaves to the full command line, a store it does not read,
a derived file not kept yet, anything odd on disk), and the full command line runs as
if this did not exist, so every refusal and error keeps its one home there. What it
prints comes from the same functions the full command line's reports print with
(:mod:`gitmem.lean.lines`), from the same kept files, under the same rules (a kept
listing is taken only for the very tree it lists).
"""

from __future__ import annotations

import os

from gitmem.lean import grammar, listing, refs, rendered, repository
from gitmem.lean.argv import options
from gitmem.lean.heads import CAPABILITY_TRAILER, SESSION_TRAILER, Head, authored, head, slug_shape
from gitmem.lean.layout import FILE_NAMES, MD, SUFFIXES, bucket, description, split_md
from gitmem.lean.lines import (
    blame_text,
    block,
    excerpt,
    hits_text,
    listing_text,
    log_line,
    memory_text,
    state_around,
    state_rows,
)
from gitmem.lean.objects import BLOB, TREE, Objects, tree_entries, tree_named
from gitmem.lean.survey import (
    SHARED_FROM,
    indexed_text,
    keep,
    known_summaries,
    md_blobs,
    resurvey,
    survey,
    texts,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from gitmem.lean.commits import Commits
    from gitmem.search.index import SearchIndex
    from gitmem.store.history import History
    from gitmem.store.rows import Entry

__all__ = ["COMMANDS", "Parsed", "answer", "keep_printed", "parse", "printed"]

COMMANDS = ("ls", "show", "log", "search", "state", "blame")
"""The commands whose grammar :mod:`gitmem.lean.grammar` holds."""

Rows = list[tuple[str, tuple[str, int, int]]]
"""A listing's rows: each memory's slug and its description, characters and lines."""


class Parsed:
    """A command line as click would parse it: the group's options, the command, its
    options (by parameter name) and its arguments."""

    __slots__ = ("arguments", "command", "group", "options")

    def __init__(
        self,
        group: dict[str, str | bool],
        command: str,
        options: dict[str, str | bool],
        arguments: list[str],
    ) -> None:
        self.group = group
        self.command = command
        self.options = options
        self.arguments = arguments


def parse(argv: list[str]) -> Parsed | None:
    """``argv`` (after the program's name) parsed as the read commands' grammar, or
    ``None`` if it is not a plain form of one."""
    group = options(argv, grammar.GLOBAL, stop_at_word=True)
    if group is None or group[2] >= len(argv):
        return None
    given, _, at = group
    command = argv[at]
    table = grammar.COMMANDS.get(command)
    if table is None:
        return None
    found = options(argv[at + 1 :], table[0], stop_at_word=False)
    if found is None:
        return None
    mine, words, _ = found
    wanted = table[1]
    if not wanted:
        if words:
            return None
    else:
        ((_, count, required),) = wanted  # the read commands take one argument at most
        if (required and not words) or (count >= 0 and len(words) > count):
            return None
    return Parsed(given, command, mine, words)


_DIR_MODE = 0o040000


class _Store:
    """A standalone repository's store, its head commit as gitmem wrote it."""

    __slots__ = ("_history", "_root", "directory", "head", "name", "objects")

    def __init__(self, directory: str, name: str, objects: Objects, found: Head) -> None:
        self.directory = directory
        self.name = name
        self.objects = objects
        self.head = found
        self._root: dict[str, tuple[int, str]] | None = None
        self._history: tuple[Commits, History] | None = None

    def history(self) -> tuple[Commits, History]:
        """The store's commits and its history index, as the store reads them."""
        if self._history is None:
            # the store's own modules, which load neither dulwich nor the store's types
            from gitmem.lean.commits import Commits
            from gitmem.store.history import History

            commits = Commits(self.objects)
            folder = os.path.join(self.directory, "gitmem", "history")
            self._history = commits, History(History.file_for(folder, self.name), commits)
        return self._history

    def at(self, moment: str) -> _Store | None:
        """The store as it stood at the commit ``moment`` names, named as the store's
        reader names it (the same rule, from the same index); ``None`` if that commit
        is not one this reads. A moment that names no commit raises, for the command
        line to refuse."""
        from gitmem.lean.asof import named
        from gitmem.lean.heads import committed

        commits, history = self.history()

        def commit_time(sha: str) -> int:
            found = committed(commits.raw(sha))
            if found is None:
                raise ValueError(f"commit {sha} has no time this reads")
            return found

        commit = named(self.name, self.head.commit, moment, history, commit_time)
        found = head(self.objects, commit)
        if found is None:
            return None
        pinned = _Store(self.directory, self.name, self.objects, found)
        pinned._history = self._history
        return pinned

    def listing(self, *, read: bool = True) -> Rows | None:
        """The listing kept for this very head's tree; with none kept at all (a fresh
        clone), the tree's listing read whole and kept; with one kept of another tree (a
        write since), only what changed read, and kept; ``None`` where the full reader
        reads it (see :func:`~gitmem.lean.survey.resurvey`), or, unless ``read``, where
        none is kept for this tree."""
        meta = os.path.join(self.directory, "gitmem")
        try:
            with open(listing.listing_path(meta, self.name), "rb") as f:
                data = f.read()
        except FileNotFoundError:
            data = b""
        tree = self.head.tree
        kept = listing.parse(data, folders=False, tree=tree)
        if kept is None and read:
            last = listing.parse(data, folders=True, tree=None)
            # a light module of the store's, which loads no more of it
            from gitmem.store.collector import uncollected

            with uncollected():  # a listing of every memory keeps every row it makes
                if last is None:
                    kept = survey(self.objects, meta, self.name, tree, shared=self._shared())
                else:
                    kept = resurvey(self.objects, meta, self.name, tree, last)
        return kept[2] if kept is not None else None

    def rendered(
        self, command: str, lay_out: Callable[[Rows], str], *, read: bool = True
    ) -> str | bytes | None:
        """``command``'s text of the listing of this very head's tree, as UTF-8: as kept
        beside the listing, else laid out by ``lay_out`` from the listing (see
        :meth:`listing`, given ``read``) and kept for the next read; ``None`` with no
        listing (as text: one that does not encode, which is not kept)."""
        meta = os.path.join(self.directory, "gitmem")
        tree = self.head.tree
        kept = rendered.read(meta, self.name, command, tree)
        if kept is not None:
            return kept
        rows = self.listing(read=read)
        if rows is None:
            return None
        text = lay_out(rows)
        try:
            data = text.encode()
        except UnicodeEncodeError:  # a description holding half a surrogate pair
            return text
        rendered.keep(meta, self.name, command, tree, data)
        return data

    def index_afresh(self, path: str) -> SearchIndex | None:
        """The search index of this very head, built from one read of every memory's
        text, and written at ``path`` for the next search (derived data: one that cannot
        be written is built again next time), and the listing and summaries that read
        makes kept for the next listing; ``None`` if a memory does not read as the
        store reads it."""
        from gitmem.search.index import SearchIndex
        from gitmem.search.stored import encode, write

        meta = os.path.join(self.directory, "gitmem")
        tree, known = self.head.tree, lambda: known_summaries(meta)
        found = texts(self.objects, tree, known, shared=self._shared())
        if found is None:
            return None
        keep(meta, self.name, found[2], found[1])
        data = encode(self.head.commit, found[0], md_blobs(found[1]))
        write(path, data)
        return SearchIndex.of(data)

    def caught_up(self, index: SearchIndex) -> SearchIndex | None:
        """``index``, read from its file, brought up to this very head as the store's
        reader brings it: each revision since its commit, from the history index, put or
        removed in turn, each put memory's text read from its ``.md`` blob. ``None``
        where that reader writes the index again (:data:`~gitmem.search.index.BEHIND`
        memories changed, or a history it cannot follow) or a revision is not one gitmem
        made or does not read as the store reads it: the full reader catches it up."""
        from gitmem.search.index import BEHIND

        if not index.commit:
            return None  # an index of no commit: the store's reader builds it afresh
        commits, history = self.history()
        entries = history.since(index.commit, self.head.commit)
        # as many memories changed as the reader writes the index again for: none read
        if not entries or len({entry.slug for entry in entries}) >= BEHIND:
            return None
        for entry in entries:
            if commits.facts(entry.commit) is None:
                return None
            if entry.removed:
                index.remove(entry.slug)
                continue
            if entry.blobs[0] == "-":
                return None
            kind, content = self.objects.read(entry.blobs[0])
            found = indexed_text(entry.slug, kind, content)
            if found is None:
                return None
            index.put_text(entry.slug, found[0])
        if index.changed >= BEHIND:
            return None
        index.commit = self.head.commit
        return index

    def _shared(self) -> bool:
        """Whether reading every memory is shared with a forked child: a large store,
        as its head commit counts its memories (this process runs no other thread)."""
        return self.head.totals[0] >= SHARED_FROM

    def memory(self, slug: str) -> tuple[str, str] | None:
        """The description and body of the memory ``slug`` at the head, read as the store
        reads a memory (its code halves too, which must be text); ``None`` if it is not
        there or does not read."""
        if self._root is None:
            self._root = self._tree(self.head.tree)
        found = self.files(slug)
        if found is None:
            return None
        read = self.read(found)
        return (read[0], read[1]) if read is not None else None

    def files(self, slug: str) -> tuple[str, str, str] | None:
        """The blob ids of ``slug``'s files at the head (``.md``, code, onUse; "-"
        where absent, as the history index has them), or ``None``."""
        if self._root is None:
            self._root = self._tree(self.head.tree)
        folder = self._root.get(bucket(slug))
        if folder is None or folder[0] != _DIR_MODE:
            return None
        entries = self._tree(folder[1], tuple(slug + suffix for suffix in SUFFIXES))
        if slug + MD not in entries:
            return None
        md, code, on_use = (entries.get(slug + suffix, (0, "-"))[1] for suffix in SUFFIXES)
        return md, code, on_use

    def read(self, blobs: tuple[str, str, str]) -> tuple[str, str, str, str] | None:
        """The description, body, code and onUse text of a memory whose files are
        ``blobs``, read as the store reads a memory (every file must be text); ``None``
        if it does not read."""
        md, code, on_use = blobs
        code_text, on_use_text = (
            self._blob(half).decode() if half != "-" else "" for half in (code, on_use)
        )
        framed = split_md(self._blob(md))
        if framed is None:
            return None
        found = description(framed[0])
        if found is None:
            return None
        return found, framed[1].decode(), code_text, on_use_text

    def _tree(self, sha: str, names: tuple[str, ...] | None = None) -> dict[str, tuple[int, str]]:
        """Tree ``sha``'s entries (only those of ``names``, if given)."""
        kind, content = self.objects.read(sha)
        if kind != TREE:
            raise ValueError(f"{sha} is not a tree")
        return tree_entries(content) if names is None else tree_named(content, names)

    def _blob(self, sha: str) -> bytes:
        kind, content = self.objects.read(sha)
        if kind != BLOB:
            raise ValueError(f"{sha} is not a blob")
        return content


def _store(parsed: Parsed, environ: Mapping[str, str]) -> _Store | None:
    """The memory store the command names (``--store``, else the only one) in the
    standalone repository ``--repo`` names (else the one found from here)."""
    given = parsed.group.get("repo")
    chosen = given if isinstance(given, str) else environ.get(grammar.ENVVARS["repo"]) or None
    place = repository.located(chosen, os.getcwd())
    if place is None:
        return None
    directory, branches = place
    name = parsed.options.get("store")
    if name is None:
        stores = refs.names(directory, branches)
        if stores is None or len(stores) != 1:
            return None
        name = stores[0]
    if not isinstance(name, str) or not refs.usable_store(name):
        return None
    return _opened(directory, branches, name)


def _opened(directory: str, branches: str, name: str) -> _Store | None:
    """Store ``name`` of the repository whose git directory is ``directory`` and whose
    stores' branches are under ``branches``, if its head is a commit gitmem made."""
    commit = refs.read(directory, branches + name)
    if commit is None:
        return None
    objects = Objects(os.path.join(directory, "objects"))
    found = head(objects, commit)
    return _Store(directory, name, objects, found) if found is not None else None


def keep_printed(directory: str, branches: str, name: str) -> None:
    """Lay out and keep what the plain ``gitmem ls`` and ``gitmem state`` print of store
    ``name`` (as :func:`_opened` finds it), from the listing kept of its head, as the
    first of each would keep it; nothing where no listing is kept of that head or this
    path does not read the store (those commands then do it themselves)."""
    try:
        store = _opened(directory, branches, name)
        if store is None:
            return
        store.rendered("ls", listing_text, read=False)
        if CAPABILITY_TRAILER not in store.head.extra:
            store.rendered("state", state_rows, read=False)
    except Exception:  # derived data: anything unforeseen is the command line's to meet
        return


def _ls(store: _Store, parsed: Parsed) -> str | bytes | None:
    return store.rendered("ls", listing_text)


def _state(store: _Store, parsed: Parsed) -> str | bytes | None:
    if CAPABILITY_TRAILER in store.head.extra:
        return None  # its limits and strategy are the full command line's to read
    rows = store.rendered("state", state_rows)
    if rows is None:
        return None
    count, chars, lines = store.head.totals
    peak_count, peak_chars, peak_lines = store.head.peaks
    before, after = state_around(
        {
            "store": store.name,
            "totals": {"count": count, "chars": chars, "lines": lines},
            "peaks": {"count": peak_count, "chars": peak_chars, "lines": peak_lines},
            "limits": {},  # a store no binding wrote: every limit off
            "exceeded": [],
        }
    )
    if isinstance(rows, str):
        return before + rows + after
    # as UTF-8: the rows (megabytes in a large store) are not decoded to be printed
    return b"".join([before.encode(), rows, after.encode()])


def _search(store: _Store, parsed: Parsed) -> str | None:
    from gitmem.search.index import SearchIndex, check_keywords, index_path

    given = parsed.options.get("limit", "0")
    if not isinstance(given, str) or not (given.isascii() and given.isdigit()):
        return None
    limit = int(given)
    if not limit and CAPABILITY_TRAILER in store.head.extra:
        return None  # its maxResults is the full command line's to read
    keywords = check_keywords(parsed.arguments)
    path = index_path(store.directory, store.name)
    index = SearchIndex.load(path)
    if index is None and not os.path.exists(path):
        index = store.index_afresh(path)  # none kept yet (a fresh clone): built here
    if index is not None and index.commit != store.head.commit:
        index = store.caught_up(index)
    if index is None:
        return None  # damaged, or far behind the head: the full path catches it up
    lowered = [k.lower() for k in keywords]
    hits: list[tuple[str, str, str]] = []
    for slug, _, _ in index.rank(keywords, limit):
        # its .md file as the index was told it: no folder of the tree read
        md = index.blob(slug)
        found = store.read((md, "-", "-")) if md is not None else store.memory(slug)
        if found is None:
            return None
        hits.append((slug, found[0], excerpt(found[1], lowered)))
    return "".join(hits_text(hits, parsed.arguments))


def _revisions(store: _Store, slug: str) -> list[tuple[Entry, str, int]] | None:
    """``slug``'s revisions at the head, oldest first, each with its author and time;
    ``None`` if it has none, or one of them is not a revision gitmem made (whose
    totals the store counts) or does not read as the store reads a revision."""
    commits, history = store.history()
    entries = history.entries(store.head.commit, slug)
    found: list[tuple[Entry, str, int]] = []
    for entry in entries:
        if entry.blobs[0] == "-" or commits.facts(entry.commit) is None:
            return None
        found.append((entry, *authored(commits.raw(entry.commit))))
    if not found or any(store.read(entry.blobs) is None for entry, _, _ in found):
        return None
    return found


def _log(store: _Store, parsed: Parsed) -> str | None:
    if not parsed.arguments or not slug_shape(parsed.arguments[0]):
        return None  # the whole store's log is the command line's
    found = _revisions(store, parsed.arguments[0])
    if found is None:
        return None
    return "".join(
        log_line(e.commit, e.op, e.slug, e.revision, author, time) + "\n"
        for e, author, time in reversed(found)
    )


def _show(store: _Store, parsed: Parsed) -> str | None:
    (slug,) = parsed.arguments
    if not slug_shape(slug):
        return None
    found = _revisions(store, slug)
    live = store.files(slug)
    if found is None or live is None:
        return None
    last = found[-1][0]
    if last.removed or last.blobs != live:
        return None  # changed outside gitmem since: the command line says how
    text = store.read(live)
    if text is None:
        return None
    return f"# {slug}  revision {last.revision}\n" + block(memory_text(*text))


def _blame(store: _Store, parsed: Parsed) -> str | None:
    from gitmem.lean.commits import said
    from gitmem.store.blame import made, origins, stamped

    (slug,) = parsed.arguments
    if not slug_shape(slug):
        return None
    commits, history = store.history()
    found = origins(commits, history, store.head.commit, slug, commits.texts)
    if not found:
        return None  # no such memory: the command line says so
    commits.read_all(list(dict.fromkeys(o.commit for o in found)))
    found = stamped(found, lambda sha: made(commits.raw(sha), said))
    return "".join(
        blame_text(
            [
                (
                    o.commit,
                    o.revision,
                    o.author,
                    (o.trailers or {}).get(SESSION_TRAILER, ""),
                    o.time,
                    FILE_NAMES[o.suffix],
                    o.line,
                    o.text,
                )
                for o in found
            ]
        )
    )


_ANSWERS: dict[str, tuple[frozenset[str], Callable[[_Store, Parsed], str | bytes | None]]] = {
    "blame": (frozenset({"store", "at"}), _blame),
    "log": (frozenset({"store", "at"}), _log),
    "ls": (frozenset({"store"}), _ls),
    "show": (frozenset({"store", "at"}), _show),
    "search": (frozenset({"store", "limit"}), _search),
    "state": (frozenset({"store"}), _state),
}
"""What the lean path answers: each command, the options it answers with, its answer
(with ``--at``, given the store as of the commit it names)."""


def answer(argv: list[str], environ: Mapping[str, str]) -> str | None:
    """The text the command ``argv`` (after the program's name) prints, with exit
    status 0; ``None`` if the full command line must answer it."""
    text = printed(argv, environ)
    if not isinstance(text, bytes):
        return text
    try:
        return text.decode()
    except UnicodeDecodeError:  # a kept text no gitmem wrote: the command line reads it
        return None


def printed(argv: list[str], environ: Mapping[str, str]) -> str | bytes | None:
    """As :func:`answer`, but a text kept as UTF-8 (a listing's) given as those bytes,
    to be written out as they are."""
    parsed = parse(argv)
    if parsed is None or set(parsed.group) - {"repo"}:
        return None
    known = _ANSWERS.get(parsed.command)
    if known is None or set(parsed.options) - known[0]:
        return None
    try:
        store = _store(parsed, environ)
        moment = parsed.options.get("at")
        if store is not None and isinstance(moment, str):
            store = store.at(moment)  # every read of it as of that commit
        text = known[1](store, parsed) if store is not None else None
    except Exception:  # anything unforeseen: the full command line reads it
        return None
    # on a terminal the command line shows control characters; elsewhere click drops
    # colour sequences: text holding ESC is the command line's to print
    if text is None:
        return None
    if b"\x1b" in text if isinstance(text, bytes) else "\x1b" in text:
        return None
    return text
