"""Refs as git keeps them: a loose file holding a commit id, or a line of
``packed-refs``; and the rule a store id obeys, which is also what makes its branch a
plain file under ``refs/heads/``.

Anything else (a symbolic ref, a name git would not take, a line that does not read)
makes these say ``None``: the caller leaves the question to the full reader.
"""

from __future__ import annotations

import os

__all__ = ["STORE_MAX", "absent", "names", "read", "usable_store"]

STORE_MAX = 200
_HEX = frozenset("0123456789abcdef")
_FIRST = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_REST = _FIRST | {"."}


def usable_store(store: str) -> bool:
    """Whether ``store`` is a usable store id: 1-200 characters, in parts separated by
    ``/``, each of letters, digits, ``-``, ``_`` and ``.``, not starting with ``.`` nor
    ending in ``.`` or ``.lock``, and no ``..`` anywhere; not ``HEAD`` and not starting
    with ``-`` (git takes neither as a branch name: the first would stand for the
    repository's HEAD, the second for an option)."""
    if not store or len(store) > STORE_MAX or ".." in store:
        return False
    if store == "HEAD" or store[0] == "-":
        return False
    for part in store.split("/"):
        if not part or part[0] not in _FIRST or not _REST.issuperset(part):
            return False
        if part.endswith((".lock", ".")):
            return False
    return True


def _commit_id(value: bytes) -> str | None:
    text = value.decode("ascii", "replace")
    return text if len(text) == 40 and _HEX.issuperset(text) else None


def _packed(directory: str) -> dict[str, str] | None:
    """The refs ``packed-refs`` names (empty if there is none); ``None`` if a line of it
    does not read."""
    try:
        with open(os.path.join(directory, "packed-refs"), "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return {}
    except OSError:
        return None
    found: dict[str, str] = {}
    for line in data.splitlines():
        if not line or line.startswith((b"#", b"^")):
            continue
        sha, space, name = line.partition(b" ")
        commit = _commit_id(sha)
        if not space or commit is None or b" " in name:
            return None
        found[name.decode("utf-8", "replace")] = commit
    return found


def read(directory: str, ref: str) -> str | None:
    """The commit ``ref`` names in the git directory ``directory``: its loose file, else
    its ``packed-refs`` line; ``None`` if it has neither, or they do not read plainly."""
    try:
        with open(os.path.join(directory, ref), "rb") as f:
            data = f.read(42)
    except FileNotFoundError:
        packed = _packed(directory)
        return packed.get(ref) if packed is not None else None
    except OSError:
        return None
    return _commit_id(data[:40]) if len(data) == 41 and data[40:] == b"\n" else None


def absent(directory: str, ref: str) -> bool:
    """Whether ``ref`` plainly does not exist in the git directory ``directory``: nothing
    at its loose file's path, and a ``packed-refs`` (if any) that reads and does not name
    it."""
    if os.path.lexists(os.path.join(directory, ref)):
        return False
    packed = _packed(directory)
    return packed is not None and ref not in packed


def names(directory: str, prefix: str) -> list[str] | None:
    """The names (after ``prefix``, which ends in ``/``) of every ref under ``prefix``,
    sorted; ``None`` if one of them is not a usable store id (the full reader decides
    what such a ref is)."""
    found: set[str] = set()
    top = os.path.join(directory, prefix)
    for root, _, files in os.walk(top):
        folder = os.path.relpath(root, top)
        for name in files:
            found.add(name if folder == "." else f"{folder}/{name}")
    packed = _packed(directory)
    if packed is None:
        return None
    found.update(name[len(prefix) :] for name in packed if name.startswith(prefix))
    if not all(usable_store(name) for name in found):
        return None
    return sorted(found)
