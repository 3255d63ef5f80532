"""What a push would add to a store, read and checked commit by commit (for the hooks).

A :class:`PushReader` opens a repository as git's ``pre-receive`` or ``pre-push`` hook
sees it: on the server the pushed objects wait in a quarantine directory
(``GIT_OBJECT_DIRECTORY``) until the hook accepts them, so they are read through the
packs and loose objects of that directory and of the repository, and nothing is
written.

:meth:`PushReader.commit` turns one new commit into a :class:`PushCommit`: the memories
(or, in a file store, the files) it changes against its first parent, read as the kind
of store the receiving side holds it to, with every structural rule it breaks listed
in its ``problems`` (the tree holds no link or name git refuses, the files parse, slugs
are valid and in their fan-out directory, a gitmem commit's trailers name what the tree
changes with the right ops, revisions and totals). A commit gitmem did not make (a
plain ``git commit``) has no trailers to hold. A memory that does not read is left out
of ``changed``, so what depends on its content is not judged twice. Limits, secrets and
guard code are judged above the store, by :mod:`gitmem.githooks`.

A push reads each object once: a commit is compared with its parent subtree by
subtree, skipping every subtree whose id did not change, and a memory's files are
parsed once whatever number of commits hold them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple, cast

from dulwich.object_store import BaseObjectStore, DiskObjectStore
from dulwich.objects import Blob, Commit, ObjectID, Tree, parse_tree
from dulwich.pack import Pack
from dulwich.repo import Repo

from gitmem.errors import GitmemError
from gitmem.names import tree_name_problem
from gitmem.store import layout
from gitmem.store import memoryfiles as files
from gitmem.store.message import FILES, Facts, parse_message
from gitmem.store.snapshot import ALLOWLIST, GUARD
from gitmem.types import Memory, Totals, check_path, check_slug

__all__ = ["PushCommit", "PushReader", "Refused", "is_zero"]

_ZERO = "0" * 40
_DIR_MODE = 0o040000
_LINKS = {0o120000: "a symbolic link", 0o160000: "a submodule link (gitlink)"}
_HEX = frozenset("0123456789abcdef")
_HEX_BYTES = frozenset(b"0123456789abcdef")
_ANCESTRY_MAX = 1_000_000
_CACHE_MAX = 20_000
_TREES_MAX = 4_096  # a push walks its commits in order: a tree is read again soon or never

_Entry = tuple[int, bytes]
"""A tree entry: its mode and its object's id (hex)."""


class Refused(Exception):
    """A commit breaks ``rule`` (``history``, ``parse``, ``tree``, ``slug``,
    ``trailers``, ``kind``, ``limit``, ``widen``, ``secret``, ``guard``); ``commit`` is
    the one that does."""

    def __init__(self, rule: str, commit: str, message: str) -> None:
        super().__init__(message)
        self.rule = rule
        self.commit = commit
        self.message = message


class _Head(NamedTuple):
    """What a push needs of a commit object: read from its raw bytes, no object made."""

    tree: bytes
    parents: tuple[str, ...]
    author: str
    message: bytes


@dataclass(frozen=True)
class PushCommit:
    """One new commit of a store: what it changes against its first parent."""

    sha: str
    parent: str | None
    merge: bool
    facts: Facts | None
    """What its trailers say; ``None`` for a commit gitmem did not make."""
    author: str
    changed: dict[str, tuple[Memory | None, Memory | None]]
    """slug → (before, after), for every memory whose files differ from the parent's
    and read (a memory's that do not is one of the ``problems``)."""
    parent_totals: Totals
    """The store's totals as of the first parent (counted from its tree when gitmem did
    not make it)."""
    files: dict[str, str] | None = None
    """For a file store's commit: path → new text of every file it writes."""
    message: str = ""
    """The commit's whole message."""
    problems: list[Refused] = field(default_factory=lambda: list[Refused]())
    """Every structural rule the commit breaks (empty: it reads)."""


class PushReader:
    """A repository read as a hook sees it; ``quarantine`` is the directory where a
    receive-pack keeps the pushed objects (``None``: every object is in place)."""

    def __init__(self, git_dir: str, quarantine: str | None = None) -> None:
        self._repo = Repo(git_dir)
        self.main: BaseObjectStore = self._repo.object_store
        self._stores: list[BaseObjectStore] = [self.main]
        if quarantine:
            self._stores.insert(0, DiskObjectStore(quarantine))
        # a push of more than git's unpack limit (100 objects) waits as a pack: its
        # index is asked first, without the object stores' loose-object and
        # multi-pack-index look-ups for every object
        self._packs: list[Pack] = [
            pack
            for store in self._stores
            if isinstance(store, DiskObjectStore)
            for pack in store.packs
        ]
        self.standalone = layout.serves_standalone(self._repo)
        self._revisions: dict[str, tuple[dict[str, int], bool]] = {}
        self._heads: dict[str, _Head] = {}
        self._facts: dict[str, Facts | None] = {}
        self._trees: dict[bytes, list[tuple[bytes, int, bytes]]] = {}
        self._memories: dict[tuple[str, bytes | None, bytes | None, bytes | None], Memory] = {}
        self._totals: dict[str, Totals] = {}
        self._texts: dict[bytes, str] = {}
        self.memo: dict[str, object] = {}
        """Per-commit answers a checker above the store remembers for this push."""

    def close(self) -> None:
        self._repo.close()

    @staticmethod
    def is_bare(path: str) -> bool:
        """Whether ``path`` is a bare git repository."""
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
        repo = Repo(path)
        try:
            layout.record_layout(repo, standalone or layout.is_standalone(repo))
        finally:
            repo.close()

    def refs(self, prefix: str) -> dict[str, str]:
        """Every ref under ``prefix`` (full name → commit)."""
        base = prefix.encode().rstrip(b"/")
        return {
            (base + b"/" + name).decode(): sha.decode()
            for name, sha in self._repo.refs.as_dict(base).items()  # type: ignore[arg-type]
        }

    def store_of(self, ref: str) -> str | None:
        """The store a ref is the branch of, or ``None`` for a project's own ref."""
        if ref.startswith(layout.PROJECT_PREFIX):
            return ref[len(layout.PROJECT_PREFIX) :] or None
        if self.standalone and ref.startswith(layout.STANDALONE_PREFIX):
            return ref[len(layout.STANDALONE_PREFIX) :] or None
        return None

    # -- objects ---------------------------------------------------------------------

    def _raw(self, sha: bytes, commit: str) -> tuple[int, bytes]:
        """An object's type and raw bytes, from whichever store holds it."""
        try:
            if len(sha) != 40 or not _HEX_BYTES.issuperset(sha):
                raise KeyError(sha)
            binary = bytes.fromhex(sha.decode())
            for pack in self._packs:
                try:
                    return pack.get_raw(binary)  # type: ignore[arg-type]
                except KeyError:
                    continue
            for store in self._stores:
                try:
                    return store.get_raw(ObjectID(sha))
                except KeyError:
                    continue
        except KeyError:
            pass
        except Exception as exc:  # a damaged object reads as many kinds of error
            raise Refused(
                "parse",
                commit,
                f"object {sha.decode('ascii', 'replace')[:12]} does not read: {exc}",
            ) from None
        raise Refused("parse", commit, f"object {sha.decode('ascii', 'replace')[:12]} is missing")

    def _head(self, sha: str) -> _Head:
        found = self._heads.get(sha)
        if found is None:
            kind, raw = self._raw(sha.encode(), sha)
            if kind != Commit.type_num:
                raise Refused("parse", sha, f"{sha[:12]} is not a commit")
            found = _read_head(sha, raw)
            if len(self._heads) >= _CACHE_MAX:
                self._heads.clear()
            self._heads[sha] = found
        return found

    def has(self, sha: str) -> bool:
        """Whether the repository (pushed objects included) holds ``sha``."""
        # each store asked in turn: dulwich's overlay answers `in` from loose objects
        # only, and a push of more than git's unpack limit (100 objects) stays a pack
        oid = ObjectID(sha.encode())
        return any(oid in store for store in self._stores)

    def in_main(self, sha: str) -> bool:
        """Whether ``sha`` was in the repository before the push (not quarantined)."""
        return ObjectID(sha.encode()) in self.main

    def parents(self, sha: str) -> list[str]:
        return list(self._head(sha).parents)

    def standing(self, sha: str) -> Facts | None:
        """The facts of ``sha``, else of its nearest first-parent ancestor gitmem made."""
        at: str | None = sha
        while at is not None:
            found = self.facts(at)
            if found is not None:
                return found
            parents = self._head(at).parents
            at = parents[0] if parents else None
        return None

    def ancestors(self, sha: str | None) -> set[str]:
        """``sha`` and every commit it descends from (empty for ``None``)."""
        seen: set[str] = set()
        stack = [sha] if sha is not None else []
        while stack:
            at = stack.pop()
            if at in seen:
                continue
            seen.add(at)
            stack.extend(self._head(at).parents)
        return seen

    def facts(self, sha: str) -> Facts | None:
        if sha not in self._facts:
            if len(self._facts) >= _CACHE_MAX:
                self._facts.clear()
            self._facts[sha] = parse_message(self._head(sha).message)
        return self._facts[sha]

    # -- walking ---------------------------------------------------------------------

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
            for parent in reversed(self._head(sha).parents):
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
            stack.extend(self._head(sha).parents)
        return False

    # -- trees -----------------------------------------------------------------------

    def _tree(self, sha: bytes, commit: str) -> list[tuple[bytes, int, bytes]]:
        """A tree's entries read straight from its raw bytes, in git's order."""
        found = self._trees.get(sha)
        if found is None:
            kind, raw = self._raw(sha, commit)
            if kind != Tree.type_num:
                raise Refused("parse", commit, f"{sha.decode()[:12]} is not a tree")
            try:
                found = cast("list[tuple[bytes, int, bytes]]", parse_tree(raw, 20))
            except Exception as exc:
                raise Refused(
                    "parse", commit, f"tree {sha.decode()[:12]} does not read: {exc}"
                ) from None
            if len(self._trees) >= _TREES_MAX:
                self._trees.clear()
            self._trees[sha] = found
        return found

    def _diff(
        self, old: bytes | None, new: bytes | None, commit: str, problems: list[Refused]
    ) -> list[tuple[str, _Entry | None, _Entry | None]]:
        """The entries two trees hold differently, by name: ``(name, old, new)``, in
        git's order. A new entry that no store may hold is one of the ``problems`` and
        left out; the entries both trees share were held to the rules already."""
        if old == new:
            return []
        before = self._tree(old, commit) if old is not None else []
        after = self._tree(new, commit) if new is not None else []
        gone: dict[bytes, _Entry] = {
            name: (mode, sha) for name, mode, sha in set(before).difference(after)
        }
        came: dict[bytes, _Entry] = {}
        for name, mode, sha in set(after).difference(before):
            problem = _entry_problem(name, mode)
            if problem is None:
                came[name] = (mode, sha)
            else:
                problems.append(Refused("tree", commit, problem))
                gone.pop(name, None)  # neither kept nor removed: refused
        return [
            (name.decode("utf-8", "replace"), gone.get(name), came.get(name))
            for name in sorted(gone.keys() | came.keys())
        ]

    def meta(self, sha: str | None, name: str) -> str | None:
        """The store file ``name`` (``@allowlist``, ``@guard.ts``) as of commit ``sha``."""
        if sha is None:
            return None
        wanted = name.encode()
        for entry, mode, blob in self._tree(self._head(sha).tree, sha):
            if entry == wanted and mode != _DIR_MODE:
                found = self._texts.get(blob)
                if found is None:
                    found = self._blob(blob, sha).decode("utf-8", "replace")
                    if len(self._texts) >= _CACHE_MAX:
                        self._texts.clear()
                    self._texts[blob] = found
                return found
        return None

    # -- one commit ------------------------------------------------------------------

    def commit(self, sha: str, kind: str) -> PushCommit:
        """Read one new commit as a store of ``kind`` holds it (``"files"`` or
        ``"memories"``), listing every structural rule it breaks."""
        head = self._head(sha)
        facts = self.facts(sha)
        parent = head.parents[0] if head.parents else None
        merge = len(head.parents) > 1
        old_root = self._head(parent).tree if parent else None
        problems: list[Refused] = []
        message = head.message.decode("utf-8", "replace")
        if kind == FILES:
            written: dict[str, str] = {}
            self._written(sha, old_root, head.tree, "", problems, written)
            parent_facts = self.facts(parent) if parent else None
            totals = parent_facts.totals if parent_facts else Totals()
            return PushCommit(
                sha, parent, merge, facts, head.author, {}, totals, written, message, problems
            )
        changed = self._changed(sha, old_root, head.tree, problems)
        # trailers are held to a tree that reads, of the kind they describe
        if facts is not None and not facts.paths and not problems:
            line = self.revisions(parent) if parent is not None else None
            parent_facts = self.facts(parent) if parent else None
            try:
                _hold_trailers(sha, merge, facts, changed, parent_facts, line)
            except Refused as refused:
                problems.append(refused)
        totals = self.totals(parent) if parent else Totals()
        return PushCommit(
            sha, parent, merge, facts, head.author, changed, totals, None, message, problems
        )

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

    def _written(
        self,
        sha: str,
        old: bytes | None,
        new: bytes | None,
        base: str,
        problems: list[Refused],
        written: dict[str, str],
    ) -> None:
        """Every file of a file store's commit that differs from its first parent."""
        for name, before, after in self._diff(old, new, sha, problems):
            if after is None:
                continue
            path = f"{base}/{name}" if base else name
            if after[0] == _DIR_MODE:
                inner = before[1] if before is not None and before[0] == _DIR_MODE else None
                self._written(sha, inner, after[1], path, problems, written)
                continue
            try:
                check_path(path)
                written[path] = self._blob(after[1], sha).decode("utf-8")
            except GitmemError as exc:
                problems.append(Refused("slug", sha, str(exc)))
            except UnicodeDecodeError:
                problems.append(Refused("parse", sha, f"{path} is not UTF-8 text"))
            except Refused as refused:
                problems.append(refused)

    def _changed(
        self, sha: str, old_root: bytes | None, new_root: bytes, problems: list[Refused]
    ) -> dict[str, tuple[Memory | None, Memory | None]]:
        changed: dict[str, tuple[Memory | None, Memory | None]] = {}
        for name, before, after in self._diff(old_root, new_root, sha, problems):
            if name in (ALLOWLIST, GUARD):
                continue
            if after is not None and not _is_bucket(name, after):
                problems.append(
                    Refused(
                        "parse", sha, f"the tree holds {name!r}, which is not a fan-out directory"
                    )
                )
                continue
            old = before[1] if before is not None and _is_bucket(name, before) else None
            new = after[1] if after is not None else None
            slugs: set[str] = set()
            for filename, _, entry in self._diff(old, new, sha, problems):
                if entry is not None and entry[0] == _DIR_MODE:
                    problems.append(
                        Refused("parse", sha, f"{filename}/ is a folder inside a fan-out directory")
                    )
                    continue
                split = files.split_name(filename)
                if split is None:
                    problems.append(
                        Refused("parse", sha, f"{name}/{filename} is not a memory file")
                    )
                    continue
                slugs.add(split[0])
            for slug in sorted(slugs):
                try:
                    check_slug(slug)
                except GitmemError as exc:
                    problems.append(Refused("slug", sha, str(exc)))
                    continue
                if files.bucket(slug) != name:
                    problems.append(
                        Refused(
                            "slug",
                            sha,
                            f"`{slug}` is filed under {name}/, not {files.bucket(slug)}/",
                        )
                    )
                    continue
                try:
                    changed[slug] = (
                        self._memory(slug, self._bucket(old, sha), sha),
                        self._memory(slug, self._bucket(new, sha), sha),
                    )
                except Refused as refused:
                    problems.append(refused)
        return changed

    def memories(self, sha: str) -> dict[str, Memory]:
        """Every memory of the store as of commit ``sha`` (already accepted), by slug."""
        found: dict[str, Memory] = {}
        for name, mode, tree in self._tree(self._head(sha).tree, sha):
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
        return {
            name.decode("utf-8", "replace"): blob
            for name, mode, blob in self._tree(tree, commit)
            if mode != _DIR_MODE
        }

    def _memory(self, slug: str, bucket: dict[str, bytes], commit: str) -> Memory | None:
        md = bucket.get(slug + files.MD)
        code = bucket.get(slug + files.CODE)
        on_use = bucket.get(slug + files.ON_USE)
        if md is None:
            if code is not None or on_use is not None:
                raise Refused("parse", commit, f"`{slug}` has code but no {slug}{files.MD}")
            return None
        key = (slug, md, code, on_use)
        found = self._memories.get(key)
        if found is not None:
            return found
        try:
            description, body = files.decode_md(slug, self._blob(md, commit))
            halves = [
                self._blob(h, commit).decode("utf-8") if h is not None else ""
                for h in (code, on_use)
            ]
        except GitmemError as exc:
            raise Refused("parse", commit, str(exc)) from None
        except UnicodeDecodeError:
            raise Refused("parse", commit, f"the code of `{slug}` is not UTF-8 text") from None
        found = Memory(slug, description, body, halves[0], halves[1])
        if len(self._memories) >= _CACHE_MAX:
            self._memories.clear()
        self._memories[key] = found
        return found

    def _blob(self, sha: bytes, commit: str) -> bytes:
        kind, raw = self._raw(sha, commit)
        if kind != Blob.type_num:
            raise Refused("parse", commit, f"{sha.decode()[:12]} is not a file")
        return raw

    def revisions(self, sha: str | None) -> tuple[dict[str, int], bool]:
        """Each slug's latest revision along ``sha``'s first-parent line, and whether
        that line holds no merge (when it does, a side's revisions may run higher)."""
        if sha is None:
            return {}, True
        found = self._revisions.get(sha)
        if found is not None:
            return found
        line: list[str] = []
        at: str | None = sha
        while at is not None and at not in self._revisions:
            line.append(at)
            parents = self._head(at).parents
            at = parents[0] if parents else None
        last, exact = (dict(self._revisions[at][0]), self._revisions[at][1]) if at else ({}, True)
        for step in reversed(line):
            facts = self.facts(step)
            exact = exact and len(self._head(step).parents) < 2
            if facts is not None and not facts.paths:
                for edit in facts.edits:
                    last[edit.slug] = max(last.get(edit.slug, 0), edit.revision)
            # keep the maps of the line's ends only: a push walks them in order
            if step == sha:
                self._revisions[step] = (last, exact)
                last = dict(last)
        return self._revisions[sha]


def _read_head(sha: str, raw: bytes) -> _Head:
    """A commit's tree, parents, author name and message, from its raw bytes."""
    end = raw.find(b"\n\n")
    header, message = (raw[:end], raw[end + 2 :]) if end >= 0 else (raw, b"")
    lines = header.split(b"\n")
    tree = lines[0][5:] if lines[0].startswith(b"tree ") else b""
    parents: list[str] = []
    author = b""
    for line in lines[1:]:
        if line.startswith(b"parent "):
            parents.append(line[7:].decode("ascii", "replace"))
        elif line.startswith(b"author "):
            author = line[7:]
    if (
        len(tree) != 40
        or not _HEX_BYTES.issuperset(tree)
        or any(len(p) != 40 or not _HEX.issuperset(p) for p in parents)
    ):
        raise Refused("parse", sha, f"commit {sha[:12]} does not read")
    name = author.decode("utf-8", "replace").split(" <", 1)[0]
    return _Head(tree, tuple(parents), name, message)


def _entry_problem(name: bytes, mode: int) -> str | None:
    """Why a tree entry may not be in a store, or ``None``."""
    text = name.decode("utf-8", "replace")
    if mode in _LINKS:
        return f"{text!r} is {_LINKS[mode]}; a store holds only files"
    problem = tree_name_problem(text)
    return f"the tree holds an entry named {text!r}, which {problem}" if problem else None


def _is_bucket(name: str, entry: _Entry) -> bool:
    return entry[0] == _DIR_MODE and len(name) == 2 and set(name) <= _HEX


def _hold_trailers(
    sha: str,
    merge: bool,
    facts: Facts,
    changed: dict[str, tuple[Memory | None, Memory | None]],
    parent_facts: Facts | None,
    revisions: tuple[dict[str, int], bool] | None,
) -> None:
    """Refuse a commit whose trailers disagree with what its tree changes: the slugs and
    ops named, each revision's number after its parent line's (``revisions``; ``None``
    for a root commit), and the totals and peaks."""
    parent = revisions is not None
    named = {e.slug: e for e in facts.edits}
    unnamed = sorted(set(changed) - set(named))
    if unnamed:
        raise Refused(
            "trailers", sha, f"the tree changes `{unnamed[0]}` but the trailers do not name it"
        )
    last, exact = revisions if revisions is not None else ({}, True)
    for edit in facts.edits:
        before, after = changed.get(edit.slug, (None, None))
        if edit.slug not in changed and parent:
            # named but unchanged: what the parent holds is what it holds now
            continue
        # a sync merge names what it took from either side "merge", removals too
        taken = merge and edit.op == "merge"
        if not taken and (edit.op == "delete") != (after is None):
            state = "removes" if after is None else "keeps"
            raise Refused(
                "trailers",
                sha,
                f"the trailers say {edit.op} `{edit.slug}` but the tree {state} it",
            )
        previous = last.get(edit.slug, 0)
        wrong = edit.revision != previous + 1 if exact and not merge else edit.revision <= previous
        if wrong:
            raise Refused(
                "trailers",
                sha,
                f"`{edit.slug}` is numbered revision {edit.revision} after revision {previous}",
            )
    if parent and parent_facts is None:
        return  # a parent gitmem did not write: no totals to continue from
    base = parent_facts.totals if parent_facts else Totals()
    count, chars, lines = base.count, base.chars, base.lines
    for before, after in changed.values():
        count += (after is not None) - (before is not None)
        chars += (after.chars if after else 0) - (before.chars if before else 0)
        lines += (after.lines if after else 0) - (before.lines if before else 0)
    totals = Totals(count, chars, lines)
    if facts.totals != totals:
        raise Refused(
            "trailers",
            sha,
            f"the trailers count {facts.totals.count} memories, {facts.totals.chars} "
            f"characters, {facts.totals.lines} lines; the tree holds {count}, {chars}, {lines}",
        )
    floor = (parent_facts.peaks if parent_facts else Totals()).peak(totals)
    peaks = facts.peaks
    low = peaks.count < floor.count or peaks.chars < floor.chars or peaks.lines < floor.lines
    if low or (not merge and peaks != floor):
        raise Refused("trailers", sha, "the trailers' peaks disagree with the totals")


def is_zero(sha: str) -> bool:
    """Whether ``sha`` is git's all-zero id (a ref created or deleted)."""
    return sha == _ZERO
