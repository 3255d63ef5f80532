"""A standalone gitmem repository's place on disk, found and recognised as
``Repository.open`` takes it: a bare git repository whose config says
``gitmem.version``, with gitmem's folder in it.

A project's repository (stores under ``refs/heads/gitmem/``), a config this reader does
not follow, or a repository without gitmem's folder (which ``Repository.open`` takes
for no standalone one) is not recognised: ``None``, and the full reader opens it.
"""

from __future__ import annotations

import os

__all__ = ["REPOSITORY_DIR", "find", "plain_config", "standalone"]

REPOSITORY_DIR = ".gitmem"
"""The folder a standalone repository has in the project or folder it serves."""


def plain_config(directory: str) -> dict[tuple[str, str], str] | None:
    """The ``(section, key) → value`` pairs of a plain git config; ``None`` for one
    with subsections, includes, quoting or continued lines."""
    try:
        with open(os.path.join(directory, "config"), "rb") as f:
            text = f.read().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    found: dict[tuple[str, str], str] = {}
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if any(c in line for c in '"\\'):
            return None
        if line[0] == "[":
            if not line.endswith("]") or " " in line or "\t" in line:
                return None
            section = line[1:-1].lower()
            if not section or section == "include" or section.startswith("includeif"):
                return None
            continue
        if not section or "#" in line or ";" in line:
            return None
        key, _, value = line.partition("=")
        found[section, key.strip().lower()] = value.strip()
    return found


def standalone(path: str) -> str | None:
    """The git directory at ``path`` (absolute) if it is a standalone gitmem repository
    this reader takes whole, else ``None``."""
    if os.path.lexists(os.path.join(path, ".git")):
        return None
    if not (
        os.path.isdir(os.path.join(path, "objects")) and os.path.isdir(os.path.join(path, "refs"))
    ):
        return None
    if os.path.lexists(os.path.join(path, "commondir")):
        return None
    config = plain_config(path)
    if config is None or ("gitmem", "version") not in config or ("core", "worktree") in config:
        return None
    if config.get(("core", "repositoryformatversion"), "0") != "0":
        return None
    if not os.path.isdir(os.path.join(path, "gitmem")):
        return None
    return path


def find(start: str) -> str | None:
    """The standalone repository found from ``start`` as git finds ``.git``: the nearest
    ``.gitmem`` folder walking up; ``None`` if a git project comes first (whether it
    keeps stores is the full reader's question) or there is none."""
    here = os.path.abspath(start)
    while True:
        candidate = os.path.join(here, REPOSITORY_DIR)
        if os.path.isdir(candidate):
            return candidate
        if os.path.exists(os.path.join(here, ".git")):
            return None
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent
