"""File stores: a store whose tree is plain UTF-8 text files at the paths a client names.

A memory store lays each memory out under a fan-out directory with front matter; a file
store holds exactly the files its client wrote, at their own paths, so ``git clone``
of its branch is that folder. Directories are implicit: one exists while it holds a
file. A file store's commits name paths with ``Gitmem-Path`` where a memory store's
name slugs (see ``gitmem.store.message``); the totals count files, and their
characters and lines. Per-path revisions and history come from the same history index
as slugs do, keyed by path.

Paths obey ``gitmem.types.check_path``: relative, ``/``-separated slug-valid segments,
at most 16 deep and 1,024 characters, so ``..``, ``.git`` and empty segments never
reach a tree.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from gitmem.errors import InvalidArgument, StorageError
from gitmem.store.objects import DIR_MODE, FILE_MODE, NewObjects, ObjectReader
from gitmem.store.trees import EMPTY_TREE
from gitmem.store.view import StoreView
from gitmem.types import Totals, count_lines

__all__ = ["Child", "FileSnapshot", "build_tree"]


class Child(NamedTuple):
    """One entry of a directory in a file store."""

    name: str
    is_dir: bool
    size: int
    """A file's size in bytes (UTF-8); a directory's is its git tree object's size,
    as a filesystem gives a directory's own size rather than its contents'."""


class FileSnapshot(StoreView):
    """A file store as of one commit (``commit`` is ``None`` before its first write)."""

    def _entry(self, path: str) -> tuple[int, bytes] | None:
        if self.root is None:
            return None
        if not path:
            return (DIR_MODE, self.root.encode())
        return self._reader.entry_at(self.root, path)

    def __contains__(self, path: object) -> bool:
        return isinstance(path, str) and self.is_file(path)

    def is_file(self, path: str) -> bool:
        """Whether a file lives at ``path``."""
        found = self._entry(path) if path else None
        return found is not None and found[0] != DIR_MODE

    def is_dir(self, path: str) -> bool:
        """Whether ``path`` is a directory: ``""`` (the root) always is; any other while
        it holds a file."""
        if not path:
            return True
        found = self._entry(path)
        return found is not None and found[0] == DIR_MODE

    def read(self, path: str) -> str | None:
        """The text of the file at ``path``, or ``None`` if there is none."""
        found = self._entry(path) if path else None
        if found is None or found[0] == DIR_MODE:
            return None
        text = self._reader.text(found[1])
        if text is None:
            raise StorageError(
                f"file {path} in store {self.store!r} is not UTF-8 text; run `gitmem check`"
            )
        return text

    def size(self, path: str) -> int | None:
        """The size in bytes of the file at ``path`` (``None`` if there is none)."""
        found = self._entry(path) if path else None
        if found is None or found[0] == DIR_MODE:
            return None
        return self._reader.size(found[1])

    def children(self, directory: str = "") -> list[Child]:
        """The entries of ``directory`` (``""``: the root), sorted by name; empty if it
        is not a directory."""
        found = self._entry(directory)
        if found is None or found[0] != DIR_MODE:
            return []
        return [
            Child(name, mode == DIR_MODE, self._reader.size(sha))
            for name, mode, sha in sorted(self._reader.tree(found[1].decode()))
        ]

    def object_ids(self, directory: str = "") -> dict[str, str]:
        """The git object id of each entry of ``directory`` (``""``: the root), by name:
        an entry whose id is unchanged is unchanged, so derived data can be kept per id."""
        found = self._entry(directory)
        if found is None or found[0] != DIR_MODE:
            return {}
        return {name: sha.decode() for name, _, sha in self._reader.tree(found[1].decode())}

    def tree_size(self, directory: str = "") -> int:
        """The size of a directory's git tree object (0 for an empty store)."""
        found = self._entry(directory)
        return self._reader.size(found[1]) if found and found[0] == DIR_MODE else 0

    def files(self, under: str = "") -> list[str]:
        """Every file path in the store (or under directory ``under``), sorted."""
        found = self._entry(under)
        if found is None or found[0] != DIR_MODE:
            return []
        paths: list[str] = []
        # depth-first with an explicit stack: paths are at most 16 deep anyway
        stack = [(under, found[1].decode())]
        while stack:
            prefix, sha = stack.pop()
            for name, mode, entry in self._reader.tree(sha):
                path = f"{prefix}/{name}" if prefix else name
                if mode == DIR_MODE:
                    stack.append((path, entry.decode()))
                else:
                    paths.append(path)
        return sorted(paths)

    def __len__(self) -> int:
        return self.totals.count

    def _count(self) -> Totals:
        texts = [self._countable(path) for path in self.files()]
        return Totals(len(texts), sum(map(len, texts)), sum(map(count_lines, texts)))

    def _countable(self, path: str) -> str:
        """A file's text as the totals count it: one plain git committed that is not
        UTF-8 text, or a submodule, counts as empty rather than stopping every write."""
        try:
            return self.read(path) or ""
        except StorageError:
            return ""

    def revision(self, path: str) -> int:
        """The highest revision number ``path`` reached in this commit's history (0 if
        never written); see ``Snapshot.revision``."""
        return self._history.last_revision(self.commit, path)


def build_tree(
    reader: ObjectReader,
    root: str | None,
    changes: Mapping[str, bytes | None],
    new: NewObjects,
) -> bytes:
    """The root tree after ``changes`` (path → blob id, ``None`` removes), its new trees
    added to ``new``; returns the root's id. Removals apply first; a write where a
    directory stands, or below a file, raises ``InvalidArgument``. Only the directories
    on a changed path are encoded again, each from its stored entries."""
    found = _rewrite(reader, root, changes, new, "")
    return found if found is not None else new.add_tree(EMPTY_TREE)


def _rewrite(
    reader: ObjectReader,
    tree: str | None,
    changes: Mapping[str, bytes | None],
    new: NewObjects,
    where: str,
) -> bytes | None:
    # recursion is bounded: check_path allows at most 16 segments
    base = reader.raw_tree(tree) if tree else EMPTY_TREE
    out: dict[str, tuple[int, bytes] | None] = {}
    nested: dict[str, dict[str, bytes | None]] = {}
    writes: dict[str, bytes] = {}
    for path, blob in changes.items():
        head, sep, rest = path.partition("/")
        if sep:
            nested.setdefault(head, {})[rest] = blob
        elif blob is None:
            if head in base.index:
                out[head] = None
        else:
            writes[head] = blob
    for name, sub in nested.items():
        old = None if name in out else base.get(name)
        if old is not None and old[0] != DIR_MODE:
            raise InvalidArgument(
                f"{where}{name} is a file, so no file can live below it; choose another path"
            )
        made = _rewrite(reader, old[1].decode() if old else None, sub, new, f"{where}{name}/")
        if made is not None:
            out[name] = (DIR_MODE, made)
        elif old is not None:
            out[name] = None
    for name, blob in writes.items():
        old = out[name] if name in out else base.get(name)
        if old is not None and old[0] == DIR_MODE:
            raise InvalidArgument(
                f"{where}{name} is a directory, so it cannot be written as a file; "
                "choose another path"
            )
        out[name] = (FILE_MODE, blob)
    changed = base.replaced(out)
    return new.add_tree(changed) if changed.chunks else None
