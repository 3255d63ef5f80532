"""A memory store's commits as the history index and blame read them (their parents,
what gitmem's messages say, their trees' memory files), from the raw objects.

It reads commits gitmem made to a memory store. What asks for more (what a commit
gitmem did not make changed, the blob ids of a revision not kept yet, a walk that would
extend the history index) raises :class:`NotLean`, and the caller leaves the work to
the store's reader, which writes what it finds for the next process.
"""

from __future__ import annotations

from gitmem.lean.heads import facts, message_of
from gitmem.lean.objects import BLOB, COMMIT, TREE, Objects, Unreadable, tree_entries

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn

__all__ = ["Commits", "Edit", "NotLean", "Said", "said"]

_DIR_MODE = 0o040000


class NotLean(Exception):
    """What the lean reader leaves to the store's reader."""


class Edit:
    """What a commit says of one slug it changed."""

    __slots__ = ("op", "revision", "slug")

    def __init__(self, slug: str, op: str, revision: int) -> None:
        self.slug = slug
        self.op = op
        self.revision = revision


class Said:
    """What a commit gitmem made to a memory store says of itself."""

    __slots__ = ("edits", "extra", "paths")

    def __init__(self, edits: tuple[Edit, ...], extra: dict[str, str]) -> None:
        self.edits = edits
        self.extra = extra
        self.paths = False


def said(message: bytes) -> Said | None:
    """What the commit ``message`` says (``None``: a commit gitmem did not make); one
    that names gitmem's trailers yet does not read here is :class:`NotLean`."""
    found = facts(message)
    if found is None:
        if b"Gitmem-" in message:
            raise NotLean("a message this does not read")
        return None
    _, extra, edits = found
    return Said(tuple(Edit(*edit) for edit in edits), extra)


class Commits:
    """The commits, trees and blobs of one repository's objects, each commit read once."""

    def __init__(self, objects: Objects) -> None:
        self._objects = objects
        self._raw: dict[str, bytes] = {}
        self._said: dict[str, Said | None] = {}
        self._trees: dict[str, dict[str, tuple[int, str]]] = {}

    def raw(self, sha: str) -> bytes:
        """The commit ``sha`` as stored."""
        found = self._raw.get(sha)
        if found is None:
            found = self._raw[sha] = self._read(sha, COMMIT)
        return found

    def read_all(self, shas: list[str]) -> None:
        """Read the commits ``shas`` together (in the order their packs hold them), for
        :meth:`raw` to give one by one."""
        wanted = [sha for sha in shas if sha not in self._raw]
        for sha, (kind, content) in self._objects.read_many(wanted).items():
            if kind != COMMIT:
                raise Unreadable(f"object {sha} is not of the type expected")
            self._raw[sha] = content

    def parents(self, sha: str) -> list[str]:
        """A commit's parents, the first parent first."""
        header = self.raw(sha).partition(b"\n\n")[0]
        return [line[7:].decode("ascii") for line in header.split(b"\n") if line[:7] == b"parent "]

    def root(self, sha: str) -> str:
        """The id of a commit's root tree."""
        first = self.raw(sha)[:46]
        if first[:5] != b"tree " or first[45:] != b"\n":
            raise Unreadable(f"commit {sha} does not start with its tree")
        return first[5:45].decode("ascii")

    def facts(self, sha: str) -> Said | None:
        """What the commit ``sha`` says of itself (see :func:`said`)."""
        if sha not in self._said:
            self._said[sha] = said(message_of(self.raw(sha)))
        return self._said[sha]

    def bucket(self, root: str, name: str) -> dict[str, bytes]:
        """The entries (file name → blob id) of one fan-out folder of a root tree."""
        entry = self._tree(root).get(name)
        if entry is None or entry[0] != _DIR_MODE:
            return {}
        return {n: sha.encode() for n, (_, sha) in self._tree(entry[1]).items()}

    def blob(self, sha: bytes) -> bytes:
        return self._read(sha.decode("ascii"), BLOB)

    def texts(self, shas: list[str]) -> list[bytes]:
        """The blobs ``shas``, read together (in the order their packs hold them)."""
        found = self._objects.read_many(shas)
        if any(found[sha][0] != BLOB for sha in shas):
            raise Unreadable("an object is not of the type expected")
        return [found[sha][1] for sha in shas]

    def outside(self, sha: str) -> NoReturn:
        raise NotLean(f"commit {sha} was not made by gitmem")

    def step(self, sha: str) -> NoReturn:
        raise NotLean(f"the blob ids of commit {sha} are not kept yet")

    def heading(self, sha: str) -> NoReturn:
        raise NotLean("the history index does not reach this head")

    def _tree(self, sha: str) -> dict[str, tuple[int, str]]:
        found = self._trees.get(sha)
        if found is None:
            found = self._trees[sha] = tree_entries(self._read(sha, TREE))
        return found

    def _read(self, sha: str, kind: int) -> bytes:
        found, content = self._objects.read(sha)
        if found != kind:
            raise Unreadable(f"object {sha} is not of the type expected")
        return content
