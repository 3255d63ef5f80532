"""The objects and commits a push brings, read as git's hooks see them.

On a server, ``git receive-pack`` keeps the pushed objects in a quarantine directory
(``GIT_OBJECT_DIRECTORY``) until its ``pre-receive`` hook accepts them; an
:class:`Incoming` reads them through that directory and the repository's own objects,
and writes nothing. A push of more than git's unpack limit (100 objects) waits there as
one pack; :mod:`gitmem.store.pushobjects` reads the folders' files directly.

What a hook needs of a commit (its tree, parents, author and message) is read from the
commit's raw bytes, and a tree's entries straight from its raw bytes, each once per
push. Anything that does not read is :class:`Refused` under the rule ``parse``.
:mod:`gitmem.store.pushcheck` reads what each commit changes on top of this.
"""

from __future__ import annotations

import re
from collections import OrderedDict, deque

from gitmem.lean.tuples import made
from gitmem.store import layout
from gitmem.store.message import Facts, parse_message
from gitmem.store.pushobjects import Objects, common_dir, control_dir
from gitmem.store.treeform import form_problem
from gitmem.store.trees import BadTree, Entries, Trees

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import NamedTuple
else:
    from gitmem.lean.tuples import NamedTuple  # a push hook's process never loads typing

__all__ = ["DIR_MODE", "Incoming", "Refused", "TreeEntries", "is_zero"]

DIR_MODE = 0o040000
_ZERO = "0" * 40
_HEX_DIGITS = b"0123456789abcdef"  # what deleting them from an id leaves empty
_ANCESTRY_MAX = 1_000_000
_CACHE_MAX = 20_000
_META_PREFIX = b"@"  # the store's own files (``@allowlist``, ``@guard.ts``) sort first
_COMMIT, _TREE, _BLOB = 1, 2, 3  # git's type numbers
_REVISIONS_KEPT = 256
_REVISIONS_EVERY = 64  # commits of a line between the copies of its map kept

TreeEntries = Entries
"""A tree's entries, ``(name, mode, hex id)``, in git's order."""


class Refused(Exception):
    """A commit breaks ``rule`` (``history``, ``parse``, ``tree``, ``slug``,
    ``trailers``, ``kind``, ``limit``, ``widen``, ``secret``, ``guard``); ``commit`` is
    the one that does."""

    def __init__(self, rule: str, commit: str, message: str) -> None:
        super().__init__(message)
        self.rule = rule
        self.commit = commit
        self.message = message


class Head(NamedTuple):
    """What a hook needs of a commit object."""

    tree: bytes
    parents: tuple[str, ...]
    author: str
    """The author's name."""
    message: bytes
    header: bytes
    """The header past the tree, parents and author's name: the author's address and
    time, the committer, and any signature, encoding or other line (what a secret could
    hide in, too)."""


class Incoming:
    """A repository read as a hook sees it; ``quarantine`` is the directory where a
    receive-pack keeps the pushed objects (``None``: every object is in place)."""

    def __init__(
        self, git_dir: str, quarantine: str | None = None, trees: Trees | None = None
    ) -> None:
        self._git_dir = common_dir(control_dir(git_dir))
        self.standalone = layout.serves_standalone_at(self._git_dir)
        self._objects = Objects(self._git_dir, quarantine)
        # the oldest dropped first, in constant time (a dict's own first key is found
        # past every entry deleted before it)
        self._revisions: OrderedDict[str, tuple[dict[str, int], bool]] = OrderedDict()
        self._end: tuple[str, dict[str, int], bool] | None = None
        self._carried = 0
        self._heads: dict[str, Head] = {}
        self._facts: dict[str, Facts | None] = {}
        self._standings: dict[str, Facts | None] = {}
        self.trees = trees if trees is not None else Trees()
        """The trees read so far (shared with the other readers of one sync)."""
        self._metas: dict[bytes, dict[bytes, bytes]] = {}
        self._texts: dict[bytes, str] = {}
        self._formed: set[bytes] = set()
        """The trees found of git's form (see :meth:`formed`)."""
        self._reader: tuple[str, Callable[[bytes], bytes]] | None = None
        self.memo: dict[str, object] = {}
        """Per-commit answers a checker above the store remembers for this push."""

    def close(self) -> None:
        self._objects.close()

    @property
    def git_dir(self) -> str:
        """The repository's git directory (a worktree's, its common one)."""
        return self._git_dir

    @staticmethod
    def is_bare(path: str) -> bool:
        """Whether ``path`` is a bare git repository."""
        from dulwich.repo import Repo  # installing a hook, not running one

        try:
            repo = Repo(path)
        except Exception:  # dulwich raises several kinds for "not a repository"
            return False
        try:
            return repo.bare
        finally:
            repo.close()

    @staticmethod
    def serve(path: str, standalone: bool) -> None:
        """Record that the bare repository at ``path`` serves standalone stores
        (``refs/heads/<store-id>``) or a project's (``refs/heads/gitmem/<store-id>``)."""
        from dulwich.repo import Repo

        repo = Repo(path)
        try:
            layout.record_layout(repo, standalone or layout.is_standalone(repo))
        finally:
            repo.close()

    def refs(self, prefix: str) -> dict[str, str]:
        """Every ref under ``prefix`` (full name → commit)."""
        from dulwich.repo import Repo  # the client-side hook's question alone

        base = prefix.encode().rstrip(b"/")
        repo = Repo(self._git_dir)
        try:
            return {
                (base + b"/" + name).decode(): sha.decode()
                for name, sha in repo.refs.as_dict(base).items()  # type: ignore[arg-type]
            }
        finally:
            repo.close()

    def store_of(self, ref: str) -> str | None:
        """The store a ref is the branch of, or ``None`` for a project's own ref."""
        if ref.startswith(layout.PROJECT_PREFIX):
            return ref[len(layout.PROJECT_PREFIX) :] or None
        if self.standalone and ref.startswith(layout.STANDALONE_PREFIX):
            return ref[len(layout.STANDALONE_PREFIX) :] or None
        return None

    # -- objects ---------------------------------------------------------------------

    def raw(self, sha: bytes, commit: str) -> tuple[int, bytes]:
        """An object's type number and raw bytes, from whichever folder holds it;
        ``Refused`` (for ``commit``) if none does or it does not read."""
        try:
            # most objects a push reads are its own, found by id at once
            found = self._objects.pushed(sha)
            if found is None and len(sha) == 40 and not sha.translate(None, _HEX_DIGITS):
                found = self._objects.get(sha)
        except Exception as exc:  # a damaged object reads as many kinds of error
            short = sha.decode("ascii", "replace")[:12]
            raise Refused("parse", commit, f"object {short} does not read: {exc}") from None
        if found is None:
            short = sha.decode("ascii", "replace")[:12]
            raise Refused("parse", commit, f"object {short} is missing")
        return found

    def head(self, sha: str) -> Head:
        """What a hook needs of commit ``sha``."""
        found = self._heads.get(sha)
        if found is None:
            kind, raw = self.raw(sha.encode(), sha)
            if kind != _COMMIT:
                raise Refused("parse", sha, f"{sha[:12]} is not a commit")
            found = _read_head(sha, raw)
            if len(self._heads) >= _CACHE_MAX:
                self._heads.clear()
            self._heads[sha] = found
        return found

    def tree(self, sha: bytes, commit: str) -> TreeEntries:
        """A tree's entries, read straight from its raw bytes (no tree object made)."""
        try:
            return self.trees.entries(sha, self._reading(commit))
        except BadTree as exc:
            short = exc.sha.decode()[:12]
            raise Refused("parse", commit, f"tree {short} does not read: {exc.reason}") from None

    def _reading(self, commit: str) -> Callable[[bytes], bytes]:
        """Reads a tree's raw bytes, refused (for ``commit``) if it is not one (made
        once per commit: a commit's trees are read one after another)."""
        if self._reader is not None and self._reader[0] == commit:
            return self._reader[1]

        def read(sha: bytes) -> bytes:
            kind, found = self.raw(sha, commit)
            if kind != _TREE:
                raise Refused("parse", commit, f"{sha.decode()[:12]} is not a tree")
            return found

        self._reader = (commit, read)
        return read

    def differing(
        self, old: bytes | None, new: bytes, commit: str
    ) -> tuple[TreeEntries, TreeEntries]:
        """The entries of tree ``old`` (``None``: none) and of tree ``new`` that are
        not in both, each in git's order: what a commit changed at one level (see
        :meth:`gitmem.store.trees.Trees.differing`: a tree that is its parent's with an
        entry changed is not parsed whole)."""
        try:
            found = self.trees.differing(old, new, self._reading(commit))
        except BadTree as exc:
            short = exc.sha.decode()[:12]
            raise Refused("parse", commit, f"tree {short} does not read: {exc.reason}") from None
        self.formed(new, commit)
        return found

    def formed(self, sha: bytes, commit: str, content: bytes | None = None) -> None:
        """Refuse (for ``commit``, rule ``tree``) tree ``sha`` unless it is of the form
        git's fsck asks (see :mod:`gitmem.store.treeform`): every tree a commit brings
        is, whichever way it was compared with its parent's (a tree that is an accepted
        one with one id changed is of that form too, and is not asked)."""
        if sha in self._formed:
            return
        if content is None:
            content = self.trees.content(sha, self._reading(commit))
        problem = form_problem(content)
        if problem is not None:
            raise Refused("tree", commit, f"tree {sha.decode()[:12]} {problem}")
        self.vouch(sha)

    def is_formed(self, sha: bytes, commit: str) -> bool:
        """Whether tree ``sha`` is of git's form (see :meth:`formed`)."""
        try:
            self.formed(sha, commit)
        except Refused:
            return False
        return True

    def vouch(self, sha: bytes) -> None:
        """Note that tree ``sha`` is of git's form: found so, or a tree of that form
        with one entry's id changed (or one folder added in its place in git's order)."""
        if len(self._formed) >= _CACHE_MAX:
            self._formed.clear()
        self._formed.add(sha)

    def swapped(
        self, old: bytes, new: bytes, name: bytes, commit: str
    ) -> tuple[TreeEntries, TreeEntries] | None:
        """What :meth:`differing` finds when tree ``new`` is tree ``old`` with only
        entry ``name``'s id changed, found cheaply; ``None``: it is not so, or not
        known cheaply (see :meth:`gitmem.store.trees.Trees.swapped`)."""
        return self.trees.swapped(old, new, name, self._reading(commit))

    def blob(self, sha: bytes, commit: str) -> bytes:
        """A file's bytes."""
        kind, raw = self.raw(sha, commit)
        if kind != _BLOB:
            raise Refused("parse", commit, f"{sha.decode()[:12]} is not a file")
        return raw

    def has(self, sha: str) -> bool:
        """Whether the repository (pushed objects included) holds ``sha``."""
        key = _id_key(sha)
        return key is not None and self._objects.holds(key)

    def in_main(self, sha: str) -> bool:
        """Whether ``sha`` was in the repository before the push (not quarantined)."""
        key = _id_key(sha)
        return key is not None and self._objects.holds(key, main_only=True)

    # -- commits ---------------------------------------------------------------------

    def parents(self, sha: str) -> list[str]:
        return list(self.head(sha).parents)

    def facts(self, sha: str) -> Facts | None:
        """What commit ``sha``'s trailers say (``None``: gitmem did not make it)."""
        if sha not in self._facts:
            if len(self._facts) >= _CACHE_MAX:
                self._facts.clear()
            self._facts[sha] = parse_message(self.head(sha).message)
        return self._facts[sha]

    def standing(self, sha: str | None) -> Facts | None:
        """The facts of ``sha``, else of its nearest first-parent ancestor gitmem made
        (``None`` for none, or for ``sha`` ``None``); each commit's answer is kept, so a
        push of a long line of plain commits walks it once."""
        line: list[str] = []
        found: Facts | None = None
        at: str | None = sha
        while at is not None:
            if at in self._standings:
                found = self._standings[at]
                break
            line.append(at)
            found = self.facts(at)
            if found is not None:
                break
            parents = self.head(at).parents
            at = parents[0] if parents else None
        if len(self._standings) >= _CACHE_MAX:
            self._standings.clear()
        for step in line:
            self._standings[step] = found
        return found

    def ancestors(self, sha: str | None) -> set[str]:
        """``sha`` and every commit it descends from (empty for ``None``)."""
        seen: set[str] = set()
        stack = [sha] if sha is not None else []
        while stack:
            at = stack.pop()
            if at in seen:
                continue
            seen.add(at)
            stack.extend(self.head(at).parents)
        return seen

    def new_commits(self, new: str, known: Callable[[str], bool]) -> list[str]:
        """The commits reachable from ``new`` that are not ``known``, parents first."""
        order: list[str] = []
        seen: set[str] = set()
        stack: list[tuple[str, bool]] = [(new, False)]
        while stack:
            sha, expanded = stack.pop()
            if expanded:
                order.append(sha)
                continue
            if sha in seen or known(sha):
                continue
            seen.add(sha)
            stack.append((sha, True))
            for parent in reversed(self.head(sha).parents):
                stack.append((parent, False))
        return order

    def is_ancestor(self, old: str, new: str) -> bool:
        """Whether ``old`` is ``new`` or one of its ancestors."""
        seen: set[str] = set()
        stack = [new]
        while stack and len(seen) < _ANCESTRY_MAX:
            sha = stack.pop()
            if sha == old:
                return True
            if sha in seen or not self.has(sha):
                continue
            seen.add(sha)
            stack.extend(self.head(sha).parents)
        return False

    def reached(self, head: str | None) -> Callable[[str], bool]:
        """Whether a commit is ``head`` or one of its ancestors (``None``: no commit
        is), found by walking back from ``head`` nearest first, only as far as a
        question needs (a merge's base is a few commits back), at most as far as
        :meth:`is_ancestor` walks."""
        seen: set[str] = set()
        ahead: deque[str] = deque([head] if head is not None else [])

        def reached(sha: str) -> bool:
            while sha not in seen and ahead and len(seen) < _ANCESTRY_MAX:
                at = ahead.popleft()
                if at not in seen and self.has(at):
                    seen.add(at)
                    ahead.extend(self.head(at).parents)
            return sha in seen

        return reached

    def carry_revisions(self, sha: str, revisions: dict[str, int], exact: bool) -> None:
        """Take ``revisions`` and ``exact`` as :meth:`revisions` finds them for ``sha``
        (kept from an earlier reading of it): a walk along a line stops there. The map
        is this reader's from now on."""
        self._revisions[sha] = (revisions, exact)

    def revisions(self, sha: str | None) -> tuple[dict[str, int], bool]:
        """Each slug's latest revision along ``sha``'s first-parent line, and whether
        that line holds no merge and no hand-made commit (when it does, revisions may
        run higher). The map is read, never changed, and only until the next call: a
        push asks for each commit's parent in turn, and the map of the line's end is
        carried on to the next commit in place rather than copied."""
        if sha is None:
            return {}, True
        end = self._end
        if end is not None and end[0] == sha:
            return end[1], end[2]
        found = self._revisions.get(sha)
        if found is not None:
            return found
        line: list[tuple[str, int]] = []  # each commit, and how many parents it has
        at: str | None = sha
        while at is not None and at not in self._revisions and (end is None or at != end[0]):
            parents = self.head(at).parents
            line.append((at, len(parents)))
            at = parents[0] if parents else None
        if at is None:
            last, exact = {}, True
        elif end is not None and at == end[0]:
            last, exact = end[1], end[2]  # the old end is given up: carried on
        else:
            last, exact = dict(self._revisions[at][0]), self._revisions[at][1]
        for step, parents in reversed(line):
            facts = self.facts(step)
            # a merge, or a hand-made commit (its memories' revisions count), may
            # number a later revision past the line's own
            exact = exact and parents < 2 and facts is not None
            if facts is not None and not facts.paths:
                for edit in facts.edits:
                    last[edit.slug] = max(last.get(edit.slug, 0), edit.revision)
            self._carried += 1
            if self._carried % _REVISIONS_EVERY == 0:
                # now and then a copy stays, so a side line (a merge's other parent)
                # that leaves the carried end walks a few commits back, not to the root
                if len(self._revisions) >= _REVISIONS_KEPT:
                    self._revisions.popitem(last=False)
                self._revisions[step] = (dict(last), exact)
        self._end = (sha, last, exact)
        return last, exact

    # -- the store's own files -------------------------------------------------------

    def meta(self, sha: str | None, name: str) -> str | None:
        """The store file ``name`` (``@allowlist``, ``@guard.ts``) as of commit ``sha``."""
        if sha is None:
            return None
        commit = sha
        blob = self._meta_ids(self.head(sha).tree, commit).get(name.encode())
        if blob is None:
            return None
        found = self._texts.get(blob)
        if found is None:
            found = self.blob(blob, commit).decode("utf-8", "replace")
            if len(self._texts) >= _CACHE_MAX:
                self._texts.clear()
            self._texts[blob] = found
        return found

    def _meta_ids(self, root: bytes, commit: str) -> dict[bytes, bytes]:
        found = self._metas.get(root)
        if found is None:
            found = {
                name: blob
                for name, mode, blob in self.tree(root, commit)
                if name.startswith(_META_PREFIX) and mode != DIR_MODE
            }
            self._keep_metas(root, found)
        return found

    def carry_meta(self, old: bytes | None, new: bytes, changed: list[bytes], commit: str) -> None:
        """Note that root tree ``new`` differs from ``old`` in the entries ``changed``
        only: when none is a store file, ``new`` holds ``old``'s, found without
        reading ``new`` whole."""
        for name in changed:  # a loop, not a generator: a push's every commit asks
            if name.startswith(_META_PREFIX):
                return
        if new in self._metas:
            return
        self._keep_metas(new, self._meta_ids(old, commit) if old is not None else {})

    def _keep_metas(self, root: bytes, found: dict[bytes, bytes]) -> None:
        if len(self._metas) >= _CACHE_MAX:
            self._metas.clear()
        self._metas[root] = found


# a commit's header as git's fsck holds it: the tree, the parents (only there: git reads
# no parent elsewhere, where dulwich would), one author, the committer (each an identity
# as fsck_ident reads one), then other lines (a signature, an encoding...), none of them
# another tree, parent, author or committer line, which git and dulwich read differently
_IDENT = rb"[^<>\n]* <[^<>\n]*> (?:0|[1-9][0-9]{0,17}) [+-][0-9]{4}\n"
_HEADER = re.compile(
    rb"tree ([0-9a-f]{40})\n((?:parent [0-9a-f]{40}\n)*+)author ([^<>\n]*) (<"
    rb"[^<>\n]*> (?:0|[1-9][0-9]{0,17}) [+-][0-9]{4}\ncommitter " + _IDENT + rb"(?:"
    rb"(?!(?:tree|parent|author|committer) )[^\n]*+\n)*+)"
)
_ENCODING = rb"^encoding (.*)$"  # compiled where a header names one (rarely)
_UTF8 = (b"utf-8", b"utf8")


def _read_head(sha: str, raw: bytes) -> Head:
    """A commit's tree, parents, author name, message and further header lines, from
    its raw bytes; refused unless they read as git reads them (see ``_HEADER``), with no
    NUL and a message in UTF-8 (a message in another encoding would hide what git shows
    from the secret scan)."""
    end = raw.find(b"\n\n")
    header, message = (raw[: end + 1], raw[end + 2 :]) if end >= 0 else (raw, b"")
    found = _HEADER.fullmatch(header)
    if found is None or b"\0" in raw:
        why = (
            "it holds a NUL byte"
            if b"\0" in raw
            else "its header is not a tree, its parents, one author and the committer, "
            "each as git's fsck reads them, then other lines"
        )
        raise Refused(
            "parse", sha, f"commit {sha[:12]} does not read as git's: {why}; make it with git"
        )
    tree, parents, author, rest = found.groups()
    if b"encoding " in rest:
        for named in re.findall(_ENCODING, rest, re.MULTILINE):
            if named.strip().lower() not in _UTF8:
                encoding = named.decode("utf-8", "replace")[:40]
                raise Refused(
                    "parse",
                    sha,
                    f"commit {sha[:12]} declares its message's encoding as {encoding!r}; "
                    "a store's commits are UTF-8 (commit again without i18n.commitEncoding)",
                )
    # the parents' lines are 48 bytes each, their ids at bytes 7 to 47 (most commits
    # have one: no list made for it)
    if len(parents) == 48:
        ids: tuple[str, ...] = (parents[7:47].decode(),)
    else:
        ids = tuple([parents[at + 7 : at + 47].decode() for at in range(0, len(parents), 48)])
    name = author.decode("utf-8", "replace")
    # made as the class makes it, less its Python-level __new__ (a push reads thousands)
    return made(Head, (tree, ids, name, message, rest))


def _id_key(sha: str) -> bytes | None:
    """``sha`` as bytes, if it is an id written in full (40 lower-case hex digits)."""
    if len(sha) != 40 or not sha.isascii():
        return None
    key = sha.encode()
    return None if key.translate(None, _HEX_DIGITS) else key


def is_zero(sha: str) -> bool:
    """Whether ``sha`` is git's all-zero id (a ref created or deleted)."""
    return sha == _ZERO
