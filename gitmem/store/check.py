"""Repository health: every reachable object reads and hashes to its name, every store
commit carries gitmem's trailers and a message no longer than a store commit's may be,
every memory file parses, and every file of a file store is UTF-8 text at a usable
path."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from dulwich.objects import Blob, Commit, ObjectID, ShaFile, Tree
from dulwich.repo import Repo

from gitmem.errors import GitmemError
from gitmem.store import memoryfiles as files
from gitmem.store.message import overlong, parse_message
from gitmem.types import check_path

__all__ = ["check"]

_GITLINK_MODE = 0o160000
_LINK_MODE = 0o120000
_DIR_MODE = 0o040000


def check(
    directory: str,
    progress: Callable[[int], None] | None = None,
    prefix: str = "refs/heads/",
) -> list[str]:
    """Every problem found in the repository; empty when it is healthy.

    Every object reachable from every ref must read and hash to its name, every store
    commit must carry gitmem's trailers, and every memory file must parse: what
    ``git fsck`` checks of objects, plus gitmem's own rules. ``progress`` is called with
    the number of objects read so far. The stores are the branches under ``prefix``;
    inside a project only they and gitmem's markers are walked, never the project's own
    refs.
    """
    stores = prefix.encode()
    own = stores == b"refs/heads/"
    problems: list[str] = []
    try:
        git = Repo(directory)
    except Exception as exc:  # dulwich raises several types for a broken repository
        return [f"the repository cannot be opened: {exc}"]
    try:
        # an object is judged once per layout: a tree may appear in both kinds of store
        seen: set[tuple[ObjectID, bool]] = set()
        md_blobs: dict[ObjectID, tuple[str, str]] = {}
        text_blobs: dict[ObjectID, str] = {}
        for ref in sorted(git.refs.allkeys()):
            name = ref.decode("utf-8", "replace")
            if ref == b"HEAD" or not (
                own or ref.startswith(stores) or ref.startswith(b"refs/gitmem/")
            ):
                continue
            try:
                start = git.refs[ref]
            except KeyError:
                problems.append(f"ref {name} points nowhere")
                continue
            is_store = ref.startswith(stores)
            stack: list[tuple[ObjectID, str, str, bool]] = [(start, name, "", False)]
            while stack:
                sha, where, path, plain = stack.pop()
                if (sha, plain) in seen:
                    continue
                seen.add((sha, plain))
                if progress is not None:
                    progress(len(seen))
                obj = _read(git, sha, where, problems)
                if obj is None:
                    continue
                short = sha.decode()[:12]
                if isinstance(obj, Commit):
                    facts = parse_message(obj.message)
                    if is_store and facts is None:
                        problems.append(f"commit {short} on {where} has no gitmem trailers")
                    if is_store and (long := overlong(obj.message, facts)) is not None:
                        problems.append(f"commit {short} on {where}: {long}")
                    paths = facts is not None and facts.paths
                    stack.append((obj.tree, f"{where} (commit {short})", "", paths))
                    stack.extend((p, where, "", False) for p in obj.parents)
                elif isinstance(obj, Tree):
                    for entry in obj.items():
                        child = entry.path.decode("utf-8", "replace")
                        full = f"{path}/{child}" if path else child
                        odd = _odd_entry(entry.mode, child)
                        if odd is not None:
                            problems.append(f"{where}: {full!r} {odd}")
                        if entry.mode in (_GITLINK_MODE, _LINK_MODE):
                            continue
                        if plain:
                            try:
                                check_path(full)
                            except GitmemError as exc:
                                problems.append(f"{where}: {exc}")
                            if entry.mode != _DIR_MODE:
                                text_blobs.setdefault(entry.sha, f"{where}: {full}")
                        elif child.endswith(files.MD) and not child.endswith(
                            (files.CODE, files.ON_USE)
                        ):
                            md_blobs.setdefault(entry.sha, (f"{where}: {full}", child))
                        stack.append((entry.sha, where, full, plain))
        for sha, (where, filename) in md_blobs.items():
            if (obj := _file(git, sha, where, problems)) is None:
                continue
            slug = filename[: -len(files.MD)]
            try:
                files.decode_md(slug, obj.as_raw_string())
            except GitmemError as exc:
                problems.append(f"{where}: {exc}")
        for sha, where in text_blobs.items():
            if (obj := _file(git, sha, where, problems)) is None:
                continue
            try:
                obj.as_raw_string().decode("utf-8")
            except UnicodeDecodeError as exc:
                problems.append(f"{where} is not UTF-8 text (byte {exc.start})")
    finally:
        git.close()
    return problems


def _file(git: Repo, sha: ObjectID, where: str, problems: list[str]) -> Blob | None:
    """The blob a file names; ``None`` (reporting it) if the object is not a blob."""
    try:
        obj = git.object_store[sha]
    except Exception:
        return None  # already reported as unreadable
    if not isinstance(obj, Blob):
        problems.append(f"{where} is not a file")
        return None
    return obj


def _odd_entry(mode: int, name: str) -> str | None:
    """Why a tree entry may not be in a store (a link, or a name git or a checkout
    treats specially), or ``None``."""
    if mode == _LINK_MODE:
        return "is a symbolic link; a store holds only files"
    if mode == _GITLINK_MODE:
        return "is a submodule link (gitlink); a store holds only files"
    if name in ("", ".", "..") or "/" in name or name.lower() == ".git":
        return "is not a usable name in a store"
    return None


def _read(git: Repo, sha: ObjectID, where: str, problems: list[str]) -> ShaFile | None:
    short = sha.decode("ascii", "replace")[:12]
    try:
        obj = git.object_store[sha]
        raw = obj.as_raw_string()
    except KeyError:
        problems.append(f"object {short} (reached from {where}) is missing")
        return None
    except Exception as exc:  # zlib, parse and I/O errors all mean the same here
        problems.append(f"object {short} (reached from {where}) does not read: {exc}")
        return None
    header = obj.type_name + b" " + str(len(raw)).encode() + b"\x00"
    actual = hashlib.sha1(header + raw).hexdigest().encode()
    if actual != sha:
        problems.append(f"object {short} (reached from {where}) hashes to {actual.decode()[:12]}")
        return None
    return obj
