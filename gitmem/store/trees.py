"""Trees as git stores them: a tree kept as its encoded entries (:class:`RawTree`,
what a write builds on), and trees read once: a tree's content, its entries as git's
parser gives them and where each entry starts, kept by id, and what two versions of a
tree hold differently.

One :class:`Trees` is shared by the readers taking part in one piece of work (a sync:
the copy of history, the check of the commits it brought, the store's reader
comparing and merging both lines), so a tree one of them read is not read or parsed
again by the next; and a tree that is its parent version with an entry or two changed
is never parsed whole: its entries are the parent's with the changed span parsed.

Objects never change, so a tree kept by id is always right; the cache only needs a
bound. A reader keeps only content read from the repository's own objects or checked
against its id.
"""

from __future__ import annotations

import stat
from bisect import bisect_left, bisect_right
from itertools import accumulate, repeat
from operator import add, itemgetter

from gitmem.lean.alike import common_head, common_tail
from gitmem.store.native import native

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from collections.abc import Callable, Mapping, Sequence
    from typing import TypeVar

    K = TypeVar("K")
    V = TypeVar("V")
    Read = Callable[[bytes], bytes]
    """Reads the content of a tree by hex id (raising the reader's own error)."""

_native_objects = native("_objects")  # dulwich's native tree parser, alone
if _native_objects is not None:
    parse_tree = _native_objects.parse_tree
else:  # a dulwich built without its native parts
    from dulwich.objects import parse_tree

__all__ = [
    "EMPTY_TREE",
    "BadTree",
    "Entries",
    "RawTree",
    "Trees",
    "common_head",
    "common_tail",
    "named",
    "names_of",
    "only_in",
    "parse",
    "spliced",
    "starts_in",
    "starts_of",
]

Entries = list[tuple[bytes, int, bytes]]
"""A tree's entries ``(name, mode, hex id)``, in its order, as dulwich's parser gives them."""

_MOST = 2_048
"""Trees kept at most by default: a sync of a few hundred changes a side reads fewer."""

# an entry is "<mode in octal> <name>\0<20-byte id>": its length less the name's, for
# each mode git writes (any other mode counts 0, which leaves the total short)
_LENGTH = {
    mode: len(b"%o" % mode) + 22 for mode in (0o040000, 0o100644, 0o100755, 0o120000, 0o160000)
}

names_of = itemgetter(0)
_modes_of = itemgetter(1)


def starts_of(entries: Entries, size: int) -> list[int] | None:
    """Where each of ``entries`` starts in the tree's content of ``size`` bytes, and
    ``size`` last; ``None`` unless each mode is a usual one spelled as git spells it
    (plain octal). Any other spelling of a mode is longer than the plain one, so
    lengths that add up to ``size`` mean every entry is where the plain spelling puts it."""
    lengths = map(
        add, map(len, map(names_of, entries)), map(_LENGTH.get, map(_modes_of, entries), repeat(0))
    )
    starts = list(accumulate(lengths, initial=0))
    return starts if starts[-1] == size else None


# a tree every entry of which has a mode git writes, spelled as git spells it, and a
# name: held to that whole in one pass of the engine (linear: an entry matches one way
# only, and the possessive repeats never give one back to try another)
_USUAL_TEXT = rb"(?:(?:100644|40000|100755|120000|160000) [^\0]++\0.{20})*+"
# a tree all of whose entries have one mode (a fan-out folder's files, a root's
# folders): each entry, in one pass
_ALIKE_MODES = (b"100644", b"40000")
_patterns: tuple[re.Pattern[bytes], dict[bytes, re.Pattern[bytes]]] | None = None


def _compiled() -> tuple[re.Pattern[bytes], dict[bytes, re.Pattern[bytes]]]:
    """The patterns, compiled at their first use (a push hook that reads each commit
    from its parent's reading may never need them)."""
    global _patterns
    if _patterns is None:
        import re

        alike = {mode: re.compile(rb"%s [^\0]++\0.{20}" % mode, re.DOTALL) for mode in _ALIKE_MODES}
        _patterns = (re.compile(_USUAL_TEXT, re.DOTALL), alike)
    return _patterns


def starts_in(content: bytes) -> list[int] | None:
    """Where each entry of a tree's ``content`` starts, and its length last, found
    without parsing its entries: what :func:`starts_of` finds of git's parse of the
    tree, when every mode is a usual one spelled as git spells it and no name is empty
    (else ``None``, nothing parsed).

    A tree of entries of one mode: the entries the engine finds one after the other,
    whose lengths add up to the tree's, lie end to end from its first byte, each as
    git's parse reads it. Else, once the whole tree is known to be such entries, each
    entry's name ends at the first NUL past its mode, and its id fills the 20 bytes
    after that: a NUL inside an id is never searched from."""
    usual, alike = _compiled()
    for mode, pattern in alike.items():
        if content.startswith(mode + b" "):
            starts = list(accumulate(map(len, pattern.findall(content)), initial=0))
            if starts[-1] == len(content):
                return starts
            break
    if usual.fullmatch(content) is None:
        return None
    placed: list[int] = []
    append = placed.append
    find = content.find
    at, end = 0, len(content)
    while at < end:
        append(at)
        at = find(b"\0", at + 6) + 21  # past the shortest mode and its space
    append(end)
    return placed


_SMALL = 16  # entries of a tree read whole rather than from where it differs


class BadTree(ValueError):
    """Tree ``sha`` does not parse; ``reason`` says how (the parser's words)."""

    def __init__(self, sha: bytes, reason: str) -> None:
        super().__init__(reason)
        self.sha = sha
        self.reason = reason


def parse(content: bytes, sha: bytes = b"") -> Entries:
    """A tree's entries from its content; :class:`BadTree` if it does not parse."""
    try:
        found: Entries = list(parse_tree(content, 20))  # pyright: ignore[reportUnknownArgumentType]
        return found
    except Exception as exc:  # dulwich raises its format error, or others for garbage
        raise BadTree(sha, str(exc)) from None


def only_in(entries: Entries, other: Entries) -> Entries:
    """The entries of ``entries`` not in ``other``, in their order."""
    if not other:
        return list(entries)
    held = set(other)
    return [entry for entry in entries if entry not in held]


class Trees:
    """Trees by hex id (as bytes): content, entries and entry starts, each kept once
    found; ``read`` arguments read a tree's content when it is not kept."""

    def __init__(self, most: int = _MOST) -> None:
        self.most = most
        """How many trees of each kind are kept at most, the oldest let go first."""
        self._contents: dict[bytes, bytes] = {}
        self._entries: dict[bytes, Entries] = {}
        self._starts: dict[bytes, list[int]] = {}
        self._differences: dict[tuple[bytes, bytes], tuple[Entries, Entries]] = {}
        self._checked: dict[bytes, bytes] = {}
        self._files: dict[tuple[bytes, tuple[bytes, ...]], list[tuple[int, bytes] | None]] = {}
        self._places: dict[bytes, dict[bytes, int]] = {}

    def content(self, sha: bytes, read: Read) -> bytes:
        found = self._contents.get(sha)
        if found is None:
            found = read(sha)
            _keep(self._contents, self.most, sha, found)
        return found

    def held(self, sha: bytes) -> Entries | None:
        """The entries of tree ``sha`` if they were found already (nothing is read)."""
        return self._entries.get(sha)

    def entries(self, sha: bytes, read: Read) -> Entries:
        """The entries of tree ``sha``; :class:`BadTree` if it does not parse."""
        found = self._entries.get(sha)
        if found is None:
            found = parse(self.content(sha, read), sha)
            _keep(self._entries, self.most, sha, found)
        return found

    def parsed(self, sha: bytes, content: bytes) -> Entries:
        """The entries of tree ``sha``, whose ``content`` was read by its id: parsed
        once, and kept; :class:`BadTree` if it does not parse."""
        found = self._entries.get(sha)
        if found is None:
            found = parse(content, sha)
            _keep(self._entries, self.most, sha, found)
        return found

    def placed(self, sha: bytes) -> tuple[bytes, list[int], dict[bytes, int]] | None:
        """Tree ``sha``'s content, where each of its entries starts, and each name's
        place among them, when its content and its starts (or entries) are kept and no
        name is given twice (see :meth:`swapped`); else ``None`` (nothing is read)."""
        content = self._contents.get(sha)
        starts = self._starts.get(sha)
        if starts is None and content is not None:
            entries = self._entries.get(sha)  # a small tree, parsed whole
            starts = starts_of(entries, len(content)) if entries is not None else None
        if content is None or starts is None:
            return None
        places = self._places_of(sha, content)
        return (content, starts, places) if places else None

    def _places_of(self, sha: bytes, content: bytes) -> dict[bytes, int]:
        """Each name of tree ``sha`` → its place, found once (empty: a name is given
        twice, which has no one place)."""
        places = self._places.get(sha)
        if places is None:
            names = list(map(names_of, parse(content, sha)))
            places = {n: i for i, n in enumerate(names)} if len(set(names)) == len(names) else {}
            _keep(self._places, self.most, sha, places)
        return places

    def keep(
        self, sha: bytes, content: bytes, starts: list[int] | None = None, *, checked: bool = False
    ) -> None:
        """Keep what a reader found of tree ``sha`` (see the module's text); ``checked``:
        ``content`` was found to hash to ``sha`` (a copy that writes it need not hash it
        again)."""
        _keep(self._contents, self.most, sha, content)
        if starts is not None:
            _keep(self._starts, self.most, sha, starts)
        if checked:
            _keep(self._checked, self.most, sha, content)

    def checked(self, sha: bytes) -> bytes | None:
        """The content of tree ``sha`` if it was found to hash to ``sha`` (nothing is read)."""
        return self._checked.get(sha)

    def starts(self, sha: bytes, read: Read) -> list[int] | None:
        """Where each entry of tree ``sha`` starts, its length last; ``None`` unless
        each is written as git writes it (see :func:`starts_of`)."""
        found = self._starts.get(sha)
        if found is None:
            entries = self._entries.get(sha)
            content = self.content(sha, read)
            if entries is None:
                # a folder of a large store holds hundreds of entries: placed from its
                # bytes, not parsed (`differing` parses the spans it compares); a small
                # tree, or one written otherwise, is parsed, and its entries kept when few
                found = starts_in(content)
                if found is not None and len(found) > _SMALL + 1:
                    _keep(self._starts, self.most, sha, found)
                    return found
                entries = parse(content, sha)
                if len(entries) <= _SMALL:
                    _keep(self._entries, self.most, sha, entries)
            found = starts_of(entries, len(content))
            if found is None:
                return None
            _keep(self._starts, self.most, sha, found)
        return found

    def files(self, sha: bytes, names: Sequence[bytes]) -> list[tuple[int, bytes] | None] | None:
        """The ``(mode, hex id)`` of tree ``sha``'s entries ``names`` (``None`` for a name
        it lacks; of a name given twice, the last, as git reads it), found in its raw
        bytes without parsing them; ``None`` (nothing read) unless its content and
        where each entry starts are kept. What is found is kept (a sync asks for a
        memory's files in a folder again as it compares, merges and sums up); callers
        do not change the list."""
        key = (sha, tuple(names))
        answer = self._files.get(key)
        if answer is not None:
            return answer
        content = self._contents.get(sha)
        starts = self._starts.get(sha)
        if content is None or starts is None:
            return None
        found = _indexes_of(content, starts, names)
        answer = [_at(content, starts, found[name][-1]) if found[name] else None for name in names]
        _keep(self._files, self.most, key, answer)
        return answer

    def kept_content(self, sha: bytes) -> bytes | None:
        """The content of tree ``sha`` if it is kept (nothing is read)."""
        return self._contents.get(sha)

    def differing(self, old: bytes | None, new: bytes, read: Read) -> tuple[Entries, Entries]:
        """The entries of tree ``old`` (``None``: none) and of tree ``new`` that are
        not in both, each in git's order: what a commit changed at one level.

        A commit's tree is most often its parent's with one entry changed, so the
        bytes both share at their head and tail are not parsed again: parsing starts
        at the entry where they first differ and stops where their common tail
        begins on an entry of ``old``. Parsing that span of ``new`` on its own must
        end exactly there, so ``new`` reads as git reads it: ``old``'s entries before
        the span, the span's, then ``old``'s after it.

        What two trees hold differently is kept (the check of a sync's commits and
        the comparison of each side with the merge base ask about the same pairs);
        callers do not change the lists."""
        if old is None:
            return [], self.entries(new, read)
        found = self._differences.get((old, new))
        if found is None:
            found = self._differing(old, new, read)
            _keep(self._differences, self.most, (old, new), found)
        return found

    def swapped(
        self, old: bytes, new: bytes, name: bytes, read: Read
    ) -> tuple[Entries, Entries] | None:
        """What :meth:`differing` finds when tree ``new`` is tree ``old`` with only the
        id of its one entry ``name`` changed (a commit's usual change to a root: the
        folder of the memory it writes), checked by comparing the bytes around that id
        alone, not by searching both trees for where they part; else ``None``. Only a
        tree whose entry starts are kept (the parent a push compared last) is asked.

        Where each name's entry is comes from the names of ``old``, found once and
        carried on to ``new``: its names and their places are ``old``'s."""
        a = self._contents.get(old)
        starts = self._starts.get(old)
        if a is None or starts is None:
            return None
        b = self.content(new, read)
        if len(a) != len(b):
            return None
        # a name given twice has no one place: such a tree is compared whole
        places = self._places_of(old, a)
        i = places.get(name)
        if i is None:
            return None
        end = starts[i + 1]
        cut = end - 20
        if a[cut:end] == b[cut:end] or a[:cut] != b[:cut] or a[end:] != b[end:]:
            return None
        _keep(self._starts, self.most, new, starts)  # never mutated: shared
        _keep(self._places, self.most, new, places)
        mode, was = _at(a, starts, i)
        return [(name, mode, was)], [(name, mode, b[cut:end].hex().encode())]

    def _differing(self, old: bytes, new: bytes, read: Read) -> tuple[Entries, Entries]:
        before = self._entries.get(old)
        after = self._entries.get(new)
        # a small tree (`starts` keeps the entries of one) is read whole below anyway
        small = before is not None and len(before) <= _SMALL
        starts = self.starts(old, read) if (before is None or after is None) and not small else None
        if starts is not None and len(starts) > _SMALL + 1:
            a = self.content(old, read)
            b = self.content(new, read)
            if len(a) == len(b):
                one = self._one_id(old, new, starts, a, b)
                if one is not None:
                    return one
            span = _span(a, b, starts)
            if span is not None:
                first, last = span
                end = len(b) - (len(a) - starts[last])
                try:
                    middle = parse(b[starts[first] : end], new)
                except BadTree:  # not whole entries there: the tree is read whole below
                    middle = None
                if middle is not None:
                    self._carry_starts(new, starts, first, last, middle, len(b) - len(a))
                    old_part = parse(a[starts[first] : starts[last]], old)
                    return only_in(old_part, middle), only_in(middle, old_part)
        before = self.entries(old, read)
        after = self.entries(new, read)
        return only_in(before, after), only_in(after, before)

    def _one_id(
        self, old: bytes, new: bytes, starts: list[int], a: bytes, b: bytes
    ) -> tuple[Entries, Entries] | None:
        """What :meth:`differing` finds when tree ``b`` (``new``) is tree ``a``
        (``old``) with one entry's id changed and nothing else (a commit's usual change
        to a root or a fan-out directory), found by parsing that entry alone: every
        byte before that entry's id and every byte after it alike, so ``b`` parses as
        ``a`` with that id; else ``None``."""
        first = common_head(a, b, len(a))
        if first == len(a):
            return None  # the same content under another id: left to the full reading
        i = bisect_right(starts, first) - 1
        end = starts[i + 1]
        if first < end - 20 or a[end:] != b[end:]:
            return None
        [was] = parse(a[starts[i] : end], old)
        entry = (was[0], was[1], b[end - 20 : end].hex().encode())
        _keep(self._starts, self.most, new, starts)  # never mutated: shared
        return [was], [entry]

    def _carry_starts(
        self, sha: bytes, starts: list[int], first: int, last: int, middle: Entries, shift: int
    ) -> None:
        """Keep where each entry of tree ``sha`` starts, from its parent tree's
        ``starts``: the span ``first:last`` became ``middle``, and what follows moved by
        ``shift`` bytes (the next commit's tree is compared with this one)."""
        spans = starts_of(middle, starts[last] + shift - starts[first])
        if spans is None:
            return  # an entry of the span spelled otherwise: `starts` reads it whole
        spans = [at + starts[first] for at in spans[:-1]]
        if shift == 0 and spans == starts[first:last]:
            found = starts  # the usual change, an id: every entry where it was (never mutated)
        else:
            found = starts[:first] + spans + [start + shift for start in starts[last:]]
        _keep(self._starts, self.most, sha, found)


def _keep(cache: dict[K, V], most: int, sha: K, value: V) -> None:
    if len(cache) >= most:
        # the oldest goes (another thread may be letting it go too)
        try:
            oldest = next(iter(cache))
        except (StopIteration, RuntimeError):
            oldest = None
        if oldest is not None:
            cache.pop(oldest, None)
    cache[sha] = value


def named(content: bytes, starts: list[int], name: bytes) -> tuple[int, bytes] | None:
    """The ``(mode, hex id)`` of the last entry ``name`` of a raw tree whose entries
    start at ``starts`` (see ``_indexes``)."""
    found = _indexes(content, starts, name)
    return _at(content, starts, found[-1]) if found else None


def _at(content: bytes, starts: list[int], i: int) -> tuple[int, bytes]:
    """The ``(mode, hex id)`` of entry ``i`` of a raw tree whose entries start at ``starts``."""
    start, end = starts[i], starts[i + 1]
    mode = content[start : content.index(b" ", start)]
    return int(mode, 8), content[end - 20 : end].hex().encode()


def spliced(content: bytes, starts: list[int], files: Mapping[bytes, bytes | None]) -> bytes | None:
    """Raw tree ``content`` (its entries starting at ``starts``, in git's order) with
    ``files`` set: name → hex id of a plain file (mode ``100644``), ``None`` removes
    it. An entry replaced stays where it was, a new one goes where git's order puts it,
    the others are copied as they are: the work follows the files, not the tree.
    ``None`` when that cannot be done so (a name given twice, an entry out of git's
    order where a new one goes): the caller encodes the tree whole."""
    cuts: list[tuple[int, int, bytes, bytes]] = []
    indexes = _indexes_of(content, starts, list(files))
    for name, sha in files.items():
        if len(sha or b"0" * 40) != 40:
            return None
        entry = b"" if sha is None else b"100644 " + name + b"\0" + bytes.fromhex(sha.decode())
        found = indexes[name]
        if len(found) > 1:
            return None
        if found:
            cuts.append((starts[found[0]], starts[found[0] + 1], name, entry))
        elif sha is not None:
            at = _place(content, starts, name)
            if at is None:
                return None
            cuts.append((starts[at], starts[at], name, entry))
    cuts.sort()
    out: list[bytes] = []
    at = 0
    for start, end, _, entry in cuts:
        out += (content[at:start], entry)
        at = end
    out.append(content[at:])
    return b"".join(out)


def _indexes(content: bytes, starts: list[int], name: bytes) -> list[int]:
    """Which entries of a raw tree (starting at ``starts``) are named ``name``, found
    in its bytes: a match counts only where it is an entry's whole name (it ends 20
    bytes before the next entry starts, and no space comes between its entry's start
    and it), so a name inside another entry's name or id is never taken for one."""
    needle = b" " + name + b"\0"
    # `find`, not `in`: a bytes operand of `in` is first tried as a byte's number, a
    # failure that costs more than the search
    found: list[int] = []
    at = content.find(needle)
    while at >= 0:
        i = bisect_right(starts, at) - 1
        if at + len(needle) + 20 == starts[i + 1] and content.find(b" ", starts[i], at) < 0:
            found.append(i)
        at = content.find(needle, at + 1)
    return found


def _indexes_of(
    content: bytes, starts: list[int], names: Sequence[bytes]
) -> dict[bytes, list[int]]:
    """Which entries of a raw tree are named each of ``names`` (as ``_indexes`` finds
    them), the names that share a stem (a memory's files: ``<slug>.md``,
    ``<slug>.code.ts``, ``<slug>.onuse.ts``) found in one search of the bytes for what
    they begin with alike, not one search each: a name is missing from most folders,
    and a search for it reads the folder to its end."""
    found: dict[bytes, list[int]] = {name: [] for name in names}
    stems: dict[bytes, set[bytes]] = {}
    for name in found:
        stems.setdefault(name.partition(b".")[0], set()).add(name)
    for stem, group in stems.items():
        if len(group) == 1:
            [name] = group
            found[name] = _indexes(content, starts, name)
            continue
        needle = b" " + stem + (b"." if all(name.find(b".") >= 0 for name in group) else b"")
        at = content.find(needle)
        while at >= 0:
            i = bisect_right(starts, at) - 1
            # the first space of its entry (the one after the mode), so the name runs
            # from there to the NUL 20 bytes before the next entry
            if content.find(b" ", starts[i], at) < 0:
                name = content[at + 1 : starts[i + 1] - 21]
                if name in group:
                    found[name].append(i)
            at = content.find(needle, at + 1)
    return found


def _order(content: bytes, starts: list[int], i: int) -> bytes:
    """What entry ``i`` of a raw tree sorts by in git's order: its name, and a slash
    after a directory's."""
    space = content.index(b" ", starts[i])
    name = content[space + 1 : starts[i + 1] - 21]
    return name + b"/" if content[starts[i] : space] == b"40000" else name


def _place(content: bytes, starts: list[int], name: bytes) -> int | None:
    """Where file ``name`` goes among the entries of a raw tree in git's order: the
    first entry that sorts after it (``None`` if its neighbours there are not in
    order around it)."""
    low, high = 0, len(starts) - 1
    while low < high:
        mid = (low + high) // 2
        if _order(content, starts, mid) < name:
            low = mid + 1
        else:
            high = mid
    if low > 0 and _order(content, starts, low - 1) >= name:
        return None
    if low < len(starts) - 1 and _order(content, starts, low) <= name:
        return None
    return low


def _span(a: bytes, b: bytes, starts: list[int]) -> tuple[int, int] | None:
    """The entries of raw tree ``a`` (starting at ``starts``) that raw tree ``b`` may
    not share: ``(first, last)``, every entry before ``first`` and from ``last`` on
    lying in bytes both trees hold at the same distance from their head or tail."""
    first = bisect_right(starts, common_head(a, b, len(a))) - 1
    tail = common_tail(a, b, len(a))
    last = max(first, bisect_left(starts, len(a) - tail))
    if len(b) - (len(a) - starts[last]) < starts[first]:
        return None
    return first, last


class RawTree:
    """A tree as git stores it: one encoded entry per name, in git's order.

    A commit changes one or two entries of a root tree of 256: the new tree is the old
    one's entries with those swapped, joined, rather than 256 entries encoded and sorted
    again. Instances are never changed in place, so two trees may share their index.
    Entries are parsed, encoded and put in git's order by dulwich (``parse_tree``,
    ``serialize_tree``, ``sorted_tree_items``); this class only keeps them as chunks.
    """

    __slots__ = ("chunks", "index")

    def __init__(self, chunks: list[bytes], index: dict[str, int]) -> None:
        self.chunks = chunks
        """Each entry as stored: ``<octal mode> <name>\\0<20-byte id>``."""
        self.index = index
        """name → position in ``chunks``."""

    @classmethod
    def parse(cls, content: bytes) -> RawTree:
        """The entries of a tree object's content; ``ValueError`` if it does not parse."""
        try:
            entries = parse(content)
        except BadTree as exc:
            raise ValueError(f"a tree does not parse: {exc.reason}") from None
        names = list(map(bytes.decode, map(names_of, entries)))
        starts = starts_of(entries, len(content))
        if starts is None:
            # dulwich's parse checked every entry: each one ends 20 bytes past its name's NUL
            starts = [0]
            for _ in entries:
                starts.append(content.index(b"\0", starts[-1]) + 21)
        chunks = list(map(content.__getitem__, map(slice, starts, starts[1:])))
        return cls(chunks, dict(zip(names, range(len(names)), strict=True)))

    def content(self) -> bytes:
        return b"".join(self.chunks)

    def get(self, name: str) -> tuple[int, bytes] | None:
        """The ``(mode, hex id)`` of entry ``name``, or ``None``."""
        i = self.index.get(name)
        if i is None:
            return None
        _, mode, sha = _entry(self.chunks[i])
        return mode, sha

    def entries(self) -> list[tuple[str, int, bytes]]:
        """Every entry as ``(name, mode, hex id)``, in the tree's order."""
        return [(name.decode(), mode, sha) for name, mode, sha in parse(self.content())]

    def replaced(self, changes: Mapping[str, tuple[int, bytes] | None]) -> RawTree:
        """This tree with ``changes`` applied: name → ``(mode, hex id)``, ``None`` removes."""
        # a write's, never a hook's reading: dulwich's encoders only here
        from dulwich.objects import ObjectID, serialize_tree, sorted_tree_items

        chunks = self.chunks.copy()
        index = self.index
        reorder = False
        for name, new in changes.items():
            i = index.get(name)
            if (
                new is None
                or i is None
                or stat.S_ISDIR(new[0]) != stat.S_ISDIR(_entry(chunks[i])[1])
            ):
                reorder = True  # a name comes or goes, or sorts anew (git sorts a tree as "name/")
                continue
            [chunks[i]] = serialize_tree([(name.encode(), new[0], ObjectID(new[1]))])
        if not reorder:
            return RawTree(chunks, index)
        # entries come or go: dulwich sorts the entries and encodes the changed ones
        items: dict[bytes, tuple[int, ObjectID]] = {
            name: (mode, ObjectID(sha)) for name, mode, sha in parse(self.content())
        }
        for name, new in changes.items():
            if new is None:
                items.pop(name.encode(), None)
            else:
                items[name.encode()] = (new[0], ObjectID(new[1]))
        kept: list[bytes] = []
        order: dict[str, int] = {}
        for entry in sorted_tree_items(items, False):
            name = entry.path.decode()
            i = index.get(name)
            if i is None or name in changes:
                [chunk] = serialize_tree([entry])
                kept.append(chunk)
            else:
                kept.append(self.chunks[i])
            order[name] = len(order)
        return RawTree(kept, order)


EMPTY_TREE = RawTree([], {})


def _entry(chunk: bytes) -> tuple[bytes, int, bytes]:
    """One encoded tree entry as ``(name, mode, hex id)``."""
    [found] = parse(chunk)
    return found
