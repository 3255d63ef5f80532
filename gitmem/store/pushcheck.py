"""What a push would add to a store, read commit by commit (for the hooks).

:meth:`PushReader.commit` turns one new commit into a :class:`PushCommit`: the memories
(or, in a file store, the files) it changes against its first parent, read as the kind
of store the receiving side holds it to, with every structural rule it breaks listed in
its ``problems``: the tree holds no link nor any name git refuses, the files parse,
slugs are valid and in their fan-out directory, and a gitmem commit's trailers name what
the tree changes with the right ops, revisions and totals. A commit gitmem did not make
(a plain ``git commit``) has no trailers to hold. A memory that does not read is left
out of ``changed``, so nothing that depends on its content is judged on a guess.
Limits, secrets and guard code are judged above the store, by :mod:`gitmem.githooks`.

A push reads each object once (see :mod:`gitmem.store.incoming`): a commit is compared
with its parent subtree by subtree, skipping every subtree whose id did not change, a
name is held to the tree rules once, and a memory's files are parsed once whatever
number of commits hold them. A commit as gitmem writes one (one parent, trailers naming
one memory, a root that is its parent's with only that memory's directory's id changed)
is read the short way: its root is compared with its parent's around that one id, not
searched for where the two part; any other commit, or one that breaks a rule, is read
the full way.
"""

from __future__ import annotations

from binascii import hexlify
from bisect import bisect_left
from operator import itemgetter, methodcaller

from gitmem.errors import GitmemError
from gitmem.lean.text import count_lines
from gitmem.lean.totals import Totals
from gitmem.lean.tuples import made
from gitmem.names import PATH_DEPTH, check_path, check_slug, tree_name_problem
from gitmem.store import memoryfiles as files
from gitmem.store.incoming import DIR_MODE, Head, Incoming, Refused, is_zero
from gitmem.store.memoryfiles import ALLOWLIST, GUARD
from gitmem.store.message import FILES, Facts
from gitmem.store.pushtrailers import hold_trailers, one_problem
from gitmem.store.treeform import key_at
from gitmem.store.trees import BadTree, Entries, Trees

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from gitmem.lean.tuples import NamedTuple  # a push hook's process never loads typing

__all__ = ["PushCommit", "PushReader", "PushedEdit", "PushedMemory", "Refused", "is_zero"]

_FILE_MODE = 0o100644
_LINKS = {0o120000: "a symbolic link", 0o160000: "a submodule link (gitlink)"}
_HEX = frozenset("0123456789abcdef")
_CACHE_MAX = 20_000
_SMALL = 16  # entries of a directory whose parsed entries are scanned for a memory's files
_SMALL_BYTES = _SMALL * 64  # the bytes of such a directory, its names of usual lengths
_NAME, _MODE, _ID = itemgetter(0), itemgetter(1), itemgetter(2)
_TEXT = methodcaller("decode", "utf-8", "replace")

_Entry = tuple[int, bytes]
"""A tree entry: its mode and its object's id (hex)."""
_Diff = list[tuple[str, _Entry | None, _Entry | None]]
"""The entries two trees hold differently: ``(name, old, new)``."""
_Step = tuple[str, bytes, bytes | None, list[int] | None, dict[bytes, int] | None]
"""A commit read without a problem: its id, its root's id, and (when known) the root's
bytes, where each of its entries starts and each name's place."""
_TREE = 2  # git's type number


class PushedMemory(NamedTuple):
    """A memory as a pushed commit holds it: the values of a
    :class:`gitmem.types.Memory`, in its order (``Memory(*pushed)`` is that memory),
    read without loading the values' module into a hook's process."""

    slug: str
    description: str
    body: str
    code: str = ""
    on_use: str = ""

    @property
    def chars(self) -> int:
        """Characters (code points) of the body: what the limits count."""
        return len(self.body)

    @property
    def lines(self) -> int:
        return count_lines(self.body)


class PushedEdit(NamedTuple):
    """One memory's part of a pushed commit, as the write screens read it (the values
    of a :class:`gitmem.types.Edit`, in its order)."""

    op: str
    slug: str
    memory: PushedMemory | None


class PushCommit(NamedTuple):
    """One new commit of a store: what it changes against its first parent."""

    sha: str
    parent: str | None
    merge: bool
    facts: Facts | None
    """What its trailers say; ``None`` for a commit gitmem did not make."""
    author: str
    changed: dict[str, tuple[PushedMemory | None, PushedMemory | None]]
    """slug → (before, after), for every memory whose files differ from the parent's
    and read (one that does not is among the ``problems``)."""
    parent_totals: Totals
    """The store's totals as of the first parent (counted from its tree when gitmem did
    not make it)."""
    files: dict[str, str] | None
    """For a file store's commit: path → new text of every file it writes."""
    message: str
    """The commit's whole message."""
    problems: list[Refused]
    """Every structural rule the commit breaks (empty: it reads)."""


class _Memories(Incoming):
    """The memories of a repository read as a hook sees it: each slug's fan-out
    directory and file names, each memory's files parsed once (see :class:`PushReader`)."""

    def __init__(
        self, git_dir: str, quarantine: str | None = None, trees: Trees | None = None
    ) -> None:
        super().__init__(git_dir, quarantine, trees)
        self._memories: dict[
            tuple[str, bytes | None, bytes | None, bytes | None], PushedMemory
        ] = {}
        self._totals: dict[str, Totals] = {}
        self._names: set[bytes] = set()
        self._homes: dict[str, str] = {}
        """Each valid slug met, with the fan-out directory it belongs in."""
        self._wanted: dict[str, dict[bytes, str]] = {}
        """Each slug met: its files' names as a tree holds them, and as text."""
        self._known: dict[str, tuple[bytes, dict[bytes, str]]] = {}
        self._named: dict[str, tuple[str, str, str]] = {}
        """Each slug met: its files' names, as text."""
        """Each valid slug met: its fan-out directory's name as a tree holds it, and
        its files' names."""

    def _home(self, slug: str) -> str | None:
        """The fan-out directory valid slug ``slug`` belongs in (``None``: not valid)."""
        home = self._homes.get(slug)
        if home is None:
            try:
                check_slug(slug)
            except GitmemError:
                return None
            home = files.bucket(slug)
            if len(self._homes) >= _CACHE_MAX:
                self._homes.clear()
            self._homes[slug] = home  # a push writes the same slugs again and again
        return home

    def _wanted_of(self, slug: str) -> dict[bytes, str]:
        """The names of valid slug ``slug``'s files, as a tree holds them → as text."""
        wanted = self._wanted.get(slug)
        if wanted is None:
            wanted = {(slug + suffix).encode(): slug + suffix for suffix in files.SUFFIXES}
            if len(self._wanted) >= _CACHE_MAX:
                self._wanted.clear()
            self._wanted[slug] = wanted  # a push writes the same slugs again and again
        return wanted

    def totals(self, sha: str) -> Totals:
        """The store's totals as of commit ``sha``: its trailers', else counted from
        its tree (a commit gitmem did not make records none)."""
        facts = self.facts(sha)
        if facts is not None:
            return facts.totals
        found = self._totals.get(sha)
        if found is None:
            held = self.memories(sha).values()
            found = Totals(len(held), sum(m.chars for m in held), sum(m.lines for m in held))
            if len(self._totals) >= _CACHE_MAX:
                self._totals.clear()
            self._totals[sha] = found
        return found

    def memories(self, sha: str) -> dict[str, PushedMemory]:
        """Every memory of the store as of commit ``sha`` (already accepted), by slug."""
        found: dict[str, PushedMemory] = {}
        for name, mode, tree in self.tree(self.head(sha).tree, sha):
            bucket = name.decode("utf-8", "replace")
            if not _is_bucket(bucket, (mode, tree)):
                continue
            held = self._bucket(tree, sha)
            for slug in sorted({split[0] for split in map(files.split_name, held) if split}):
                memory = self._memory(slug, held, sha)
                if memory is not None:
                    found[slug] = memory
        return found

    def _bucket(self, tree: bytes | None, commit: str) -> dict[str, bytes]:
        """A fan-out directory's files by name (a folder in it holds no memory)."""
        if tree is None:
            return {}
        entries = self.tree(tree, commit)
        if DIR_MODE in map(_MODE, entries):
            entries = [entry for entry in entries if entry[1] != DIR_MODE]
        return dict(zip(map(_TEXT, map(_NAME, entries)), map(_ID, entries), strict=True))

    def _files_of(self, slug: str, tree: bytes | None, commit: str) -> dict[str, bytes]:
        """The files of valid slug ``slug`` in a fan-out directory, by name (the other
        files' names are not decoded)."""
        if tree is None:
            return {}
        wanted = self._wanted_of(slug)
        held = self.trees.held(tree)
        if held is not None and len(held) <= _SMALL:
            # a small directory, parsed whole when its commit was compared: its entries
            found: dict[str, bytes] = {}
            for name, mode, sha in held:
                text = wanted.get(name)
                if text is not None and mode != DIR_MODE:
                    found[text] = sha  # a name given twice: the last, as git reads it
            return found
        # a directory the check of its commit compared: the files found in its raw bytes
        kept = self.trees.files(tree, list(wanted))
        if kept is not None and all(e is None or e[0] != DIR_MODE for e in kept):
            return {wanted[n]: e[1] for n, e in zip(wanted, kept, strict=True) if e is not None}
        found: dict[str, bytes] = {}
        for name, mode, sha in self.tree(tree, commit):
            if name in wanted and mode != DIR_MODE:
                found[wanted[name]] = sha  # a name given twice: the last, as git reads it
        return found

    def _memory(self, slug: str, bucket: dict[str, bytes], commit: str) -> PushedMemory | None:
        named = self._named.get(slug)
        if named is None:
            named = (slug + files.MD, slug + files.CODE, slug + files.ON_USE)
            if len(self._named) >= _CACHE_MAX:
                self._named.clear()
            self._named[slug] = named  # a push writes the same slugs again and again
        md, code, on_use = bucket.get(named[0]), bucket.get(named[1]), bucket.get(named[2])
        if md is None:
            if code is not None or on_use is not None:
                raise Refused("parse", commit, f"`{slug}` has code but no {slug}{files.MD}")
            return None
        key = (slug, md, code, on_use)
        found = self._memories.get(key)
        if found is not None:
            return found
        try:
            description, body = files.decode_md(slug, self.blob(md, commit))
            code_text = self.blob(code, commit).decode("utf-8") if code is not None else ""
            on_use_text = self.blob(on_use, commit).decode("utf-8") if on_use is not None else ""
        except GitmemError as exc:
            raise Refused("parse", commit, str(exc)) from None
        except UnicodeDecodeError:
            raise Refused("parse", commit, f"the code of `{slug}` is not UTF-8 text") from None
        found = made(PushedMemory, (slug, description, body, code_text, on_use_text))
        if len(self._memories) >= _CACHE_MAX:
            self._memories.clear()
        self._memories[key] = found
        return found


class PushReader(_Memories):
    """A repository read as a hook sees it, commit by commit; ``quarantine`` is the
    directory where a receive-pack keeps the pushed objects (``None``: every object
    is in place)."""

    def __init__(
        self, git_dir: str, quarantine: str | None = None, trees: Trees | None = None
    ) -> None:
        super().__init__(git_dir, quarantine, trees)
        self._step: _Step | None = None
        """The last memory-store commit read without a problem: its root as read."""

    def commit(self, sha: str, kind: str) -> PushCommit:
        """Read one new commit as a store of ``kind`` holds it (``"files"`` or
        ``"memories"``), listing every structural rule it breaks."""
        head = self.head(sha)
        facts = self.facts(sha)
        if kind != FILES:
            usual = self._next(sha, head, facts)  # carries its root on when it reads
            if usual is None:
                usual = self._usual(sha, head, facts)
                self._step = (sha, head.tree, None, None, None)
            if usual is not None:
                if usual.problems:
                    self._step = None
                return usual
        self._step = None
        parent = head.parents[0] if head.parents else None
        merge = len(head.parents) > 1
        old_root = self.head(parent).tree if parent else None
        problems: list[Refused] = []
        message = head.message.decode("utf-8", "replace")
        diff = self._diff(old_root, head.tree, sha, problems)
        self.carry_meta(old_root, head.tree, [n.encode() for n, _, _ in diff], sha)
        if kind == FILES:
            written: dict[str, str] = {}
            self._written(sha, diff, "", problems, written)
            parent_facts = self.facts(parent) if parent else None
            totals = parent_facts.totals if parent_facts else Totals()
            return PushCommit(
                sha, parent, merge, facts, head.author, {}, totals, written, message, problems
            )
        changed = self._changed(sha, diff, problems)
        # trailers are held to a tree that reads, of the kind they describe
        if facts is not None and not facts.paths and not problems:
            line = self.revisions(parent) if parent is not None else None
            parent_facts = self.facts(parent) if parent else None
            try:
                hold_trailers(sha, merge, facts, changed, parent_facts, line)
            except Refused as refused:
                problems.append(refused)
        totals = self.totals(parent) if parent else Totals()
        if not problems:
            self._step = (sha, head.tree, None, None, None)
        return PushCommit(
            sha, parent, merge, facts, head.author, changed, totals, None, message, problems
        )

    def _usual(self, sha: str, head: Head, facts: Facts | None) -> PushCommit | None:
        """A memory store's commit as gitmem writes one, read the short way: one parent,
        trailers naming one memory, and a root that is its parent's with only the id of
        that memory's fan-out directory changed, in which only that memory's files
        differ, as plain files. What :meth:`commit` reads of it, read by the same rules
        (the names held to them, the memory parsed, the trailers held to the tree), less
        the work of finding where the trees differ; ``None``: any other commit, or one
        that breaks a rule, read the full way."""
        if facts is None or facts.paths or len(facts.edits) != 1 or len(head.parents) != 1:
            return None
        slug = facts.edits[0].slug
        home = self._home(slug)
        parent = head.parents[0]
        old_root = self.head(parent).tree
        # a root that is its parent's with one id changed is of git's form when that is
        if home is None or old_root == head.tree or not self.is_formed(old_root, sha):
            return None
        name = home.encode()
        swapped = self.swapped(old_root, head.tree, name, sha)
        if swapped is None or swapped[0][0][1] != DIR_MODE or swapped[1][0][1] != DIR_MODE:
            return None
        old, new = swapped[0][0][2], swapped[1][0][2]
        try:
            removed, added = self.differing(old, new, sha)
        except Refused:
            return None  # refused as the full reading refuses it
        wanted = self._wanted_of(slug)
        if not (removed or added) or any(entry[0] not in wanted for entry in removed):
            return None
        for filename, mode, _ in added:
            if filename not in wanted or mode != _FILE_MODE:
                return None
            if filename not in self._names:
                if _entry_problem(filename, mode) is not None:
                    return None
                if len(self._names) >= _CACHE_MAX:
                    self._names.clear()
                self._names.add(filename)
        try:
            changed = {
                slug: (
                    self._memory(slug, self._files_of(slug, old, sha), sha),
                    self._memory(slug, self._files_of(slug, new, sha), sha),
                )
            }
        except Refused:
            return None
        self.carry_meta(old_root, head.tree, [name], sha)
        self.vouch(head.tree)
        problems: list[Refused] = []
        try:
            hold_trailers(sha, False, facts, changed, self.facts(parent), self.revisions(parent))
        except Refused as refused:
            problems.append(refused)
        message = head.message.decode("utf-8", "replace")
        totals = self.totals(parent)
        return PushCommit(
            sha, parent, False, facts, head.author, changed, totals, None, message, problems
        )

    def _next(self, sha: str, head: Head, facts: Facts | None) -> PushCommit | None:
        """What :meth:`_usual` reads of a commit whose one parent is the commit read
        just before it without a problem (a push's commits, one after another), read
        from what that reading left: the parent's root as read (its bytes, where each
        entry starts, each name's place), and the fan-out directory's entries as
        parsed, all kept by the ids they were read by. Only the ids of the root's entry
        and of the memory's files are compared; ``None``: any other commit, or one that
        is not plainly usual (it is read the other ways)."""
        step = self._step
        if (
            step is None
            or facts is None
            or facts.paths
            or len(facts.edits) != 1
            or head.parents != (step[0],)
        ):
            return None
        parent, old_root, a, starts, places = step
        new_root = head.tree
        # a root that is its parent's with one id changed (or one folder added where
        # git's order puts it) is of git's form when that is
        if old_root not in self._formed and not self.is_formed(old_root, sha):
            return None
        try:
            kind, b = self._objects.pushed(new_root) or self.raw(new_root, sha)
        except Refused:
            return None  # refused as the full reading refuses it
        if kind != _TREE:
            return None
        if a is None or starts is None or places is None:
            try:
                placed = self.trees.placed(old_root)
            except BadTree:
                return None
            if placed is None:
                return None
            a, starts, places = placed
        slug = facts.edits[0].slug
        known = self._known.get(slug)
        if known is None:
            home = self._home(slug)
            if home is None:
                return None
            known = (home.encode(), self._wanted_of(slug))
            if len(self._known) >= _CACHE_MAX:
                self._known.clear()
            self._known[slug] = known
        name, wanted = known
        root = _swapped_in(a, b, starts, places, name)
        if root is None:
            return None
        old, new, starts, places = root
        before = self.trees.held(old) if old is not None else []
        if before is None and old is not None:
            # a folder no commit read here wrote (the first write to it in this push):
            # its entries read once, as the parent's root holds them, unless its bytes
            # are more than a few entries' (a large store's folder is read the other
            # ways, which find where two folders differ without parsing either)
            try:
                if len(self.trees.content(old, self._reading(sha))) > _SMALL_BYTES:
                    return None
                before = self.tree(old, sha)
            except Refused:
                return None
        if before is None or len(before) > _SMALL:
            return None
        try:
            kind, content = self._objects.pushed(new) or self.raw(new, sha)
            after = self.trees.parsed(new, content) if kind == _TREE else None
            if after is not None and new not in self._formed:
                self.formed(new, sha, content)
        except (Refused, BadTree):
            return None
        if after is None:
            return None
        # a folder of a few entries: each looked for among the other's (as only_in),
        # in loops (a comprehension is a function made and called, for every commit)
        removed: Entries = []
        for entry in before:
            if entry not in after:
                if entry[0] not in wanted:
                    return None  # another file than the memory's is gone
                removed.append(entry)
        added: Entries = []
        for entry in after:
            if entry not in before:
                added.append(entry)
        if not (removed or added):
            return None
        names = self._names
        for filename, mode, _ in added:
            if filename not in wanted or mode != _FILE_MODE:
                return None
            if filename not in names:
                if _entry_problem(filename, mode) is not None:
                    return None
                if len(names) >= _CACHE_MAX:
                    names.clear()
                names.add(filename)
        try:
            was = self._memory(slug, _held_files(wanted, before), sha)
            now = self._memory(slug, _held_files(wanted, after), sha)
        except Refused:
            return None
        changed = {slug: (was, now)}
        self.carry_meta(old_root, new_root, [name], sha)
        parent_facts = self.facts(parent)
        problems: list[Refused] = []
        if parent_facts is not None:
            found = one_problem(sha, facts, was, now, parent_facts, self.revisions(parent))
            if found is not None:
                problems.append(found)
        else:
            try:
                hold_trailers(sha, False, facts, changed, None, self.revisions(parent))
            except Refused as refused:
                problems.append(refused)
        message = head.message.decode("utf-8", "replace")
        totals = parent_facts.totals if parent_facts is not None else self.totals(parent)
        commit = made(
            PushCommit,
            (sha, parent, False, facts, head.author, changed, totals, None, message, problems),
        )
        self.vouch(new_root)
        self._step = (sha, new_root, b, starts, places)
        return commit

    def _diff(
        self, old: bytes | None, new: bytes | None, commit: str, problems: list[Refused]
    ) -> _Diff:
        """The entries two trees hold differently, by name, in git's order. A new entry
        that no store may hold is one of the ``problems`` and left out; the entries
        both trees share were held to the rules already."""
        if old == new:
            return []
        if new is None:
            removed, added = self.tree(old, commit) if old is not None else [], []
        else:
            removed, added = self.differing(old, new, commit)
        gone: dict[bytes, _Entry] = {name: (mode, sha) for name, mode, sha in removed}
        came: dict[bytes, _Entry] = {}
        for name, mode, sha in added:
            # a push names the same files in commit after commit: each is judged once
            known = name in self._names and mode not in _LINKS
            problem = None if known else _entry_problem(name, mode)
            if problem is None:
                came[name] = (mode, sha)
                if len(self._names) >= _CACHE_MAX:
                    self._names.clear()
                self._names.add(name)
            else:
                problems.append(Refused("tree", commit, problem))
                gone.pop(name, None)  # neither kept nor removed: refused
        return [
            (name.decode("utf-8", "replace"), gone.get(name), came.get(name))
            for name in sorted(gone.keys() | came.keys())
        ]

    def _written(
        self, sha: str, diff: _Diff, base: str, problems: list[Refused], written: dict[str, str]
    ) -> None:
        """Every file of a file store's commit that differs from its first parent."""
        for name, before, after in diff:
            if after is None:
                continue
            path = f"{base}/{name}" if base else name
            if after[0] == DIR_MODE:
                if path.count("/") + 1 >= PATH_DEPTH:  # what it holds is a name too deep
                    shown = path if len(path) <= 80 else path[:80] + "..."
                    why = f"folder {shown!r} holds names past {PATH_DEPTH} folders deep"
                    problems.append(Refused("slug", sha, why))
                    continue
                inner = before[1] if before is not None and before[0] == DIR_MODE else None
                self._written(
                    sha, self._diff(inner, after[1], sha, problems), path, problems, written
                )
                continue
            try:
                check_path(path)
                written[path] = self.blob(after[1], sha).decode("utf-8")
            except GitmemError as exc:
                problems.append(Refused("slug", sha, str(exc)))
            except UnicodeDecodeError:
                problems.append(Refused("parse", sha, f"{path} is not UTF-8 text"))
            except Refused as refused:
                problems.append(refused)

    def _changed(
        self, sha: str, diff: _Diff, problems: list[Refused]
    ) -> dict[str, tuple[PushedMemory | None, PushedMemory | None]]:
        changed: dict[str, tuple[PushedMemory | None, PushedMemory | None]] = {}
        for name, before, after in diff:
            if name in (ALLOWLIST, GUARD):
                continue
            if after is not None and not _is_bucket(name, after):
                why = f"the tree holds {name!r}, which is not a fan-out directory"
                problems.append(Refused("parse", sha, why))
                continue
            old = before[1] if before is not None and _is_bucket(name, before) else None
            new = after[1] if after is not None else None
            for slug in self._slugs(sha, name, self._diff(old, new, sha, problems), problems):
                try:
                    changed[slug] = (
                        self._memory(slug, self._files_of(slug, old, sha), sha),
                        self._memory(slug, self._files_of(slug, new, sha), sha),
                    )
                except Refused as refused:
                    problems.append(refused)
        return changed

    def _slugs(self, sha: str, bucket: str, diff: _Diff, problems: list[Refused]) -> list[str]:
        """The valid slugs whose files a fan-out directory's ``diff`` changes."""
        slugs: set[str] = set()
        for filename, _, entry in diff:
            if entry is not None and entry[0] == DIR_MODE:
                why = f"{filename}/ is a folder inside a fan-out directory"
                problems.append(Refused("parse", sha, why))
                continue
            split = files.split_name(filename)
            if split is None:
                problems.append(Refused("parse", sha, f"{bucket}/{filename} is not a memory file"))
                continue
            slugs.add(split[0])
        valid: list[str] = []
        for slug in sorted(slugs):
            home = self._home(slug)
            if home is None:
                try:
                    check_slug(slug)
                except GitmemError as exc:
                    problems.append(Refused("slug", sha, str(exc)))
                continue
            if home != bucket:
                why = f"`{slug}` is filed under {bucket}/, not {home}/"
                problems.append(Refused("slug", sha, why))
                continue
            valid.append(slug)
        return valid


def _swapped_in(
    a: bytes, b: bytes, starts: list[int], places: dict[bytes, int], name: bytes
) -> tuple[bytes | None, bytes, list[int], dict[bytes, int]] | None:
    """Root ``b`` as root ``a`` (its entries starting at ``starts``, each name at its
    place in ``places``) with only fan-out directory ``name``'s id changed, or with
    only that directory added: the directory's old id (``None``: added) and new id,
    and where ``b``'s entries start and each name's place; ``None``: ``b`` is not
    so. Every byte of ``b`` but the id's (or the added entry's) is ``a``'s, on an
    entry's boundary, so ``b`` parses as ``a`` with that one change."""
    i = places.get(name)
    if i is not None:
        end = starts[i + 1]
        cut = end - 20
        if (
            len(a) != len(b)
            or a[cut:end] == b[cut:end]
            or a[:cut] != b[:cut]
            or a[end:] != b[end:]
            or not a.startswith(b"40000 ", starts[i])  # a directory, as git spells its mode
        ):
            return None
        return hexlify(a[cut:end]), hexlify(b[cut:end]), starts, places
    entry = b"40000 " + name + b"\0"
    size = len(entry) + 20
    if len(b) != len(a) + size:
        return None
    at = b.find(entry)
    k = bisect_left(starts, at)
    if (
        at < 0
        or k == len(starts)
        or starts[k] != at
        or a[:at] != b[:at]
        or a[at:] != b[at + size :]
    ):
        return None
    # in git's order between the entries it came between (a name not in ``a``)
    key = name + b"/"
    if (k > 0 and key_at(a, starts[k - 1]) >= key) or (
        k < len(starts) - 1 and key >= key_at(a, starts[k])
    ):
        return None
    placed = {n: j + (j >= k) for n, j in places.items()}
    placed[name] = k
    moved = starts[:k] + [at] + [start + size for start in starts[k:]]
    return None, hexlify(b[at + size - 20 : at + size]), moved, placed


def _held_files(wanted: dict[bytes, str], entries: Entries) -> dict[str, bytes]:
    """The files of a memory (``wanted``: its files' names) in a fan-out directory's
    parsed ``entries``, by name (a name given twice: the last, as git reads it)."""
    found: dict[str, bytes] = {}
    for name, mode, sha in entries:
        text = wanted.get(name)
        if text is not None and mode != DIR_MODE:
            found[text] = sha
    return found


def _entry_problem(name: bytes, mode: int) -> str | None:
    """Why a tree entry may not be in a store, or ``None``."""
    text = name.decode("utf-8", "replace")
    if mode in _LINKS:
        return f"{text!r} is {_LINKS[mode]}; a store holds only files"
    problem = tree_name_problem(text)
    return f"the tree holds an entry named {text!r}, which {problem}" if problem else None


def _is_bucket(name: str, entry: _Entry) -> bool:
    return entry[0] == DIR_MODE and len(name) == 2 and set(name) <= _HEX
