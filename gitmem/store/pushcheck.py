"""What a push would add to a store, read and checked commit by commit (for the hooks).

A :class:`PushReader` opens a repository as git's ``pre-receive`` or ``pre-push`` hook
sees it: on the server the pushed objects wait in a quarantine directory
(``GIT_OBJECT_DIRECTORY``) until the hook accepts them, so they are read through an
overlay of that directory and the repository's own objects, and nothing is written.

:meth:`PushReader.commit` turns one new commit into a :class:`Commit`: the memories it
changes against its first parent, with the structural rules already held (the files
parse, slugs are valid and in their fan-out directory, the trailers name what the tree
changes with the right ops, revisions and totals). A broken rule raises
:class:`Refused` naming the rule. Limits, secrets and guard code are judged above the
store, by :mod:`gitmem.githooks`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from dulwich.object_store import BaseObjectStore, DiskObjectStore, OverlayObjectStore
from dulwich.objects import Blob, Commit, ObjectID, ShaFile, Tree, parse_tree
from dulwich.repo import Repo

from gitmem.errors import GitmemError
from gitmem.store import layout
from gitmem.store import memoryfiles as files
from gitmem.store.message import Facts, parse_message
from gitmem.store.snapshot import ALLOWLIST, GUARD
from gitmem.types import Memory, Totals, check_path, check_slug

__all__ = ["PushCommit", "PushReader", "Refused", "is_zero"]

_ZERO = "0" * 40
_DIR_MODE = 0o040000
_LINKS = {0o120000: "a symbolic link", 0o160000: "a submodule link (gitlink)"}
_HEX = frozenset("0123456789abcdef")
_ANCESTRY_MAX = 1_000_000
_CACHE_MAX = 20_000


class Refused(Exception):
    """A commit breaks ``rule`` (``history``, ``parse``, ``tree``, ``slug``,
    ``trailers``, ``kind``, ``limit``, ``widen``, ``secret``, ``guard``); ``commit`` is
    the one that does."""

    def __init__(self, rule: str, commit: str, message: str) -> None:
        super().__init__(message)
        self.rule = rule
        self.commit = commit
        self.message = message


@dataclass(frozen=True)
class PushCommit:
    """One new commit of a memory store: what it changes against its first parent."""

    sha: str
    parent: str | None
    merge: bool
    facts: Facts
    author: str
    changed: dict[str, tuple[Memory | None, Memory | None]]
    """slug → (before, after), for every memory whose files differ from the parent's."""
    parent_totals: Totals | None
    files: dict[str, str] | None = None
    """For a file store's commit: path → new text of every file it writes."""
    message: str = ""
    """The commit's whole message."""


class PushReader:
    """A repository read as a hook sees it; ``quarantine`` is the directory where a
    receive-pack keeps the pushed objects (``None``: every object is in place)."""

    def __init__(self, git_dir: str, quarantine: str | None = None) -> None:
        self._repo = Repo(git_dir)
        self.main: BaseObjectStore = self._repo.object_store
        self._objects: BaseObjectStore = self.main
        self._stores: list[BaseObjectStore] = [self.main]
        if quarantine:
            pushed = DiskObjectStore(quarantine)
            self._objects = OverlayObjectStore([pushed, self.main])
            self._stores = [pushed, self.main]
        self.standalone = layout.serves_standalone(self._repo)
        self._revisions: dict[str, tuple[dict[str, int], bool]] = {}
        # a push reads each commit and root tree several times (as a commit, as a
        # parent, for its files): read each once
        self._cache: dict[bytes, ShaFile] = {}
        self._facts: dict[str, Facts | None] = {}
        self._trees: dict[bytes, dict[str, tuple[int, bytes]]] = {}
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

    def _object(self, sha: str | bytes, commit: str) -> ShaFile:
        key = sha.encode() if isinstance(sha, str) else sha
        found = self._cache.get(key)
        if found is not None:
            return found
        try:
            found = self._objects[ObjectID(key)]
            if isinstance(found, Commit):
                if len(self._cache) >= _CACHE_MAX:
                    self._cache.clear()
                self._cache[key] = found
            return found
        except KeyError:
            raise Refused("parse", commit, f"object {key.decode()[:12]} is missing") from None
        except Exception as exc:  # a damaged object reads as many kinds of error
            raise Refused(
                "parse", commit, f"object {key.decode()[:12]} does not read: {exc}"
            ) from None

    def _commit(self, sha: str) -> Commit:
        found = self._object(sha, sha)
        if not isinstance(found, Commit):
            raise Refused("parse", sha, f"{sha[:12]} is not a commit")
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
        return [p.decode() for p in self._commit(sha).parents]

    def standing(self, sha: str) -> Facts | None:
        """The facts of ``sha``, else of its nearest first-parent ancestor gitmem made."""
        at: str | None = sha
        while at is not None:
            found = self.facts(at)
            if found is not None:
                return found
            parents = self.parents(at)
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
            stack.extend(p.decode() for p in self._commit(at).parents)
        return seen

    def facts(self, sha: str) -> Facts | None:
        if sha not in self._facts:
            if len(self._facts) >= _CACHE_MAX:
                self._facts.clear()
            self._facts[sha] = parse_message(self._commit(sha).message)
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
            for parent in reversed(self._commit(sha).parents):
                stack.append((parent.decode(), False))
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
            stack.extend(p.decode() for p in self._commit(sha).parents)
        return False

    # -- one commit ------------------------------------------------------------------

    def meta(self, sha: str | None, name: str) -> str | None:
        """The store file ``name`` (``@allowlist``, ``@guard.ts``) as of commit ``sha``."""
        if sha is None:
            return None
        entry = self._entries(self._commit(sha).tree, sha).get(name)
        if entry is None or entry[0] == _DIR_MODE:
            return None
        blob = self._object(entry[1], sha)
        return blob.as_raw_string().decode("utf-8", "replace") if isinstance(blob, Blob) else None

    def _tree(self, sha: bytes, commit: str) -> Tree:
        found = self._object(sha, commit)
        if not isinstance(found, Tree):
            raise Refused("parse", commit, f"{sha.decode()[:12]} is not a tree")
        return found

    def _tree_entries(self, sha: bytes, commit: str) -> list[tuple[bytes, int, bytes]]:
        """A tree's entries read straight from its raw bytes: a push reads thousands
        of trees once each, so no tree object is made (nor sorted)."""
        try:
            kind, raw = self._objects.get_raw(ObjectID(sha))
        except KeyError:
            raise Refused("parse", commit, f"object {sha.decode()[:12]} is missing") from None
        except Exception as exc:  # a damaged object reads as many kinds of error
            raise Refused(
                "parse", commit, f"object {sha.decode()[:12]} does not read: {exc}"
            ) from None
        if kind != Tree.type_num:
            raise Refused("parse", commit, f"{sha.decode()[:12]} is not a tree")
        try:
            return cast("list[tuple[bytes, int, bytes]]", parse_tree(raw, 20))
        except Exception as exc:
            raise Refused(
                "parse", commit, f"tree {sha.decode()[:12]} does not read: {exc}"
            ) from None

    def _entries(self, sha: bytes | None, commit: str) -> dict[str, tuple[int, bytes]]:
        if sha is None:
            return {}
        found = self._trees.get(sha)
        if found is None:
            found = {}
            for path, mode, child in self._tree_entries(sha, commit):
                name = path.decode("utf-8", "replace")
                if mode in _LINKS:
                    raise Refused(
                        "tree", commit, f"{name!r} is {_LINKS[mode]}; a store holds only files"
                    )
                if name in ("", ".", "..") or "/" in name or name.lower() == ".git":
                    raise Refused("tree", commit, f"the tree holds an entry named {name!r}")
                found[name] = (mode, child)
            if len(self._trees) >= _CACHE_MAX:
                self._trees.clear()
            self._trees[sha] = found
        return found

    def commit(self, sha: str) -> PushCommit:
        """Read one new commit, holding the structural rules; ``Refused`` if it breaks one."""
        commit = self._commit(sha)
        facts = self.facts(sha)
        if facts is None:
            raise Refused("trailers", sha, "it has no gitmem trailers (not written by gitmem)")
        parents = [p.decode() for p in commit.parents]
        parent = parents[0] if parents else None
        merge = len(parents) > 1
        parent_facts = self.facts(parent) if parent else None
        parent_totals = parent_facts.totals if parent_facts else (None if parent else Totals())
        author = commit.author.decode("utf-8", "replace").split(" <", 1)[0]
        old_root = self._commit(parent).tree if parent else None
        message = commit.message.decode("utf-8", "replace")
        if facts.paths:
            files = self._files(sha, commit)
            return PushCommit(sha, parent, merge, facts, author, {}, parent_totals, files, message)
        changed = self._changed(sha, old_root, commit.tree)
        line = self.revisions(parent) if parent is not None else None
        _hold_trailers(sha, merge, facts, changed, parent_facts, line)
        return PushCommit(sha, parent, merge, facts, author, changed, parent_totals, None, message)

    def _files(self, sha: str, commit: Commit) -> dict[str, str]:
        """Every file of a file store's commit that differs from its first parent."""
        parent = commit.parents[0] if commit.parents else None
        before = self._flat(self._commit(parent.decode()).tree if parent else None, sha, "")
        after = self._flat(commit.tree, sha, "")
        written: dict[str, str] = {}
        for path, blob in after.items():
            if before.get(path) == blob:
                continue
            try:
                check_path(path)
            except GitmemError as exc:
                raise Refused("slug", sha, str(exc)) from None
            data = cast(Blob, self._object(blob, sha)).as_raw_string()
            try:
                written[path] = data.decode("utf-8")
            except UnicodeDecodeError:
                raise Refused("parse", sha, f"{path} is not UTF-8 text") from None
        return written

    def _flat(self, root: bytes | None, commit: str, base: str) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        for name, (mode, blob) in self._entries(root, commit).items():
            path = f"{base}/{name}" if base else name
            if mode == _DIR_MODE:
                found.update(self._flat(blob, commit, path))
            else:
                found[path] = blob
        return found

    def _changed(
        self, sha: str, old_root: bytes | None, new_root: bytes
    ) -> dict[str, tuple[Memory | None, Memory | None]]:
        before = self._entries(old_root, sha)
        after = self._entries(new_root, sha)
        changed: dict[str, tuple[Memory | None, Memory | None]] = {}
        for name in sorted(set(before) | set(after)):
            if before.get(name) == after.get(name) or name in (ALLOWLIST, GUARD):
                continue
            entry = after.get(name)
            if entry is not None and (
                entry[0] != _DIR_MODE or len(name) != 2 or not set(name) <= _HEX
            ):
                raise Refused(
                    "parse", sha, f"the tree holds {name!r}, which is not a fan-out directory"
                )
            old_bucket = self._bucket(before.get(name), sha)
            new_bucket = self._bucket(entry, sha)
            slugs: set[str] = set()
            for filename in set(old_bucket) | set(new_bucket):
                if old_bucket.get(filename) == new_bucket.get(filename):
                    continue
                split = files.split_name(filename)
                if split is None:
                    raise Refused("parse", sha, f"{name}/{filename} is not a memory file")
                slugs.add(split[0])
            for slug in sorted(slugs):
                try:
                    check_slug(slug)
                except GitmemError as exc:
                    raise Refused("slug", sha, str(exc)) from None
                if files.bucket(slug) != name:
                    raise Refused(
                        "slug", sha, f"`{slug}` is filed under {name}/, not {files.bucket(slug)}/"
                    )
                changed[slug] = (
                    self._memory(slug, old_bucket, sha),
                    self._memory(slug, new_bucket, sha),
                )
        return changed

    def memories(self, sha: str) -> dict[str, Memory]:
        """Every memory of the store as of commit ``sha`` (already accepted), by slug."""
        found: dict[str, Memory] = {}
        for name, entry in self._entries(self._commit(sha).tree, sha).items():
            if entry[0] != _DIR_MODE or len(name) != 2 or not set(name) <= _HEX:
                continue
            bucket = self._bucket(entry, sha)
            for slug in sorted({split[0] for split in map(files.split_name, bucket) if split}):
                memory = self._memory(slug, bucket, sha)
                if memory is not None:
                    found[slug] = memory
        return found

    def _bucket(self, entry: tuple[int, bytes] | None, commit: str) -> dict[str, bytes]:
        if entry is None:
            return {}
        found: dict[str, bytes] = {}
        for name, (mode, blob) in self._entries(entry[1], commit).items():
            if mode == _DIR_MODE:
                raise Refused("parse", commit, f"{name}/ is a folder inside a fan-out directory")
            found[name] = blob
        return found

    def _memory(self, slug: str, bucket: dict[str, bytes], commit: str) -> Memory | None:
        md = bucket.get(slug + files.MD)
        code = bucket.get(slug + files.CODE)
        on_use = bucket.get(slug + files.ON_USE)
        if md is None:
            if code is not None or on_use is not None:
                raise Refused("parse", commit, f"`{slug}` has code but no {slug}{files.MD}")
            return None
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
        return Memory(slug, description, body, halves[0], halves[1])

    def _blob(self, sha: bytes, commit: str) -> bytes:
        found = self._object(sha, commit)
        if not isinstance(found, Blob):
            raise Refused("parse", commit, f"{sha.decode()[:12]} is not a file")
        return found.as_raw_string()

    def revisions(self, sha: str | None) -> tuple[dict[str, int], bool]:
        """Each slug's latest revision along ``sha``'s first-parent line, and whether
        that line holds no merge and no hand-made commit (when it does, revisions may run
        higher)."""
        if sha is None:
            return {}, True
        found = self._revisions.get(sha)
        if found is not None:
            return found
        line: list[str] = []
        at: str | None = sha
        while at is not None and at not in self._revisions:
            line.append(at)
            parents = self._commit(at).parents
            at = parents[0].decode() if parents else None
        last, exact = (dict(self._revisions[at][0]), self._revisions[at][1]) if at else ({}, True)
        for step in reversed(line):
            commit = self._commit(step)
            facts = self.facts(step)
            # a merge, or a hand-made commit (its memories' revisions count), may
            # number a later revision past the line's own
            exact = exact and len(commit.parents) < 2 and facts is not None
            if facts is not None and not facts.paths:
                for edit in facts.edits:
                    last[edit.slug] = max(last.get(edit.slug, 0), edit.revision)
            # keep the maps of the line's ends only: a push walks them in order
            if step == sha:
                self._revisions[step] = (last, exact)
                last = dict(last)
        return self._revisions[sha]


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
