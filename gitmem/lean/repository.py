"""A repository's place on disk, found and recognised as ``Repository.open`` takes it:
a standalone one (a bare git repository whose config says ``gitmem.version``, with
gitmem's folder in it, its stores under ``refs/heads/``), or a project's own (its work
tree's ``.git`` a plain folder with gitmem's folder in it, its stores under
``refs/heads/gitmem/``).

Anything else (a project whose ``.git`` is a file, a linked work tree, a config this
reader does not follow, a project without gitmem's folder, whose use the full reader
decides from its refs) is not recognised: ``None``, and the full reader opens it.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "PROJECT_BRANCHES",
    "REPOSITORY_DIR",
    "STANDALONE_BRANCHES",
    "found",
    "git_directory",
    "hook_start",
    "located",
    "plain_config",
    "standalone",
]

REPOSITORY_DIR = ".gitmem"
"""The folder a standalone repository has in the project or folder it serves."""
STANDALONE_BRANCHES = "refs/heads/"
"""Where a standalone repository keeps its stores' branches."""
PROJECT_BRANCHES = "refs/heads/gitmem/"
"""Where a project's repository keeps its stores' branches."""


def plain_config(directory: str) -> dict[tuple[str, str], str] | None:
    """The ``(section, key) → value`` pairs of a plain git config (a subsection's keys
    under ``name "subsection"``, as a clone's ``[remote "origin"]`` has them); ``None``
    for one with includes, quoted values, escapes or continued lines, or a subsection
    named with a quote or a backslash in it."""
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
        if line[0] == "[":
            section = _section(line)
            if section is None or section == "include" or section.startswith("includeif"):
                return None
            continue
        if any(c in line for c in '"\\'):
            return None
        if not section or "#" in line or ";" in line:
            return None
        key, _, value = line.partition("=")
        found[section, key.strip().lower()] = value.strip()
    return found


def _section(header: str) -> str | None:
    """The section a header line ``[name]`` or ``[name "subsection"]`` opens, its name
    lowered (a subsection's case is kept, as git keeps it); ``None`` for any other
    shape."""
    if not header.endswith("]"):
        return None
    name, space, rest = header[1:-1].partition(" ")
    if not name or any(c in name for c in '\t"\\'):
        return None
    if not space:
        return name.lower()
    sub = rest[1:-1]
    if len(rest) < 2 or rest[0] != '"' or rest[-1] != '"' or any(c in sub for c in '"\\'):
        return None
    return f'{name.lower()} "{sub}"'


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


def found(start: str) -> str | None:
    """The repository found from ``start`` as the command line finds it, walking up:
    the nearest ``.gitmem`` folder, or git project with gitmem's folder in its ``.git``
    folder; ``None`` where that walk would ask more (a project without that folder, or
    a ``.git`` file) or finds none."""
    here = os.path.abspath(start)
    while True:
        if os.path.isdir(os.path.join(here, REPOSITORY_DIR)):
            return os.path.join(here, REPOSITORY_DIR)
        dot_git = os.path.join(here, ".git")
        if os.path.lexists(dot_git):
            return here if os.path.isdir(os.path.join(dot_git, "gitmem")) else None
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def git_directory(place: str) -> tuple[str, str] | None:
    """The git directory of the repository at ``place`` (absolute) and where its stores'
    branches are: a standalone repository, or a project's work tree whose ``.git`` is a
    plain folder (no linked work tree, a config this reads) with gitmem's folder in it;
    ``None`` for any other."""
    directory = standalone(place)
    if directory is not None:
        return directory, STANDALONE_BRANCHES
    dot_git = os.path.join(place, ".git")
    if os.path.islink(dot_git) or not all(
        os.path.isdir(os.path.join(dot_git, name)) for name in ("gitmem", "objects", "refs")
    ):
        return None
    if os.path.lexists(os.path.join(dot_git, "commondir")):
        return None
    config = plain_config(dot_git)
    if config is None or ("gitmem", "version") in config or ("core", "worktree") in config:
        return None
    if config.get(("core", "repositoryformatversion"), "0") != "0":
        return None
    if config.get(("core", "bare"), "false") != "false":
        return None
    return dot_git, PROJECT_BRANCHES


def hook_start(cwd: object, environ: Mapping[str, str] = os.environ) -> str:
    """Where a Claude Code hook looks for its repository: the folder its session started
    in, ``CLAUDE_PROJECT_DIR``, which Claude Code sets for every hook and which the
    session's shell cannot move; else (a client that does not set it) the event's
    ``cwd``, which follows the shell's ``cd``; else this process's own folder. So a
    model that moves its shell into another project does not move the session's
    memory, transcripts or observations there."""
    started = environ.get("CLAUDE_PROJECT_DIR", "")
    if os.path.isabs(started):
        return started
    return cwd if isinstance(cwd, str) and cwd else os.getcwd()


def located(chosen: str | None, start: str) -> tuple[str, str] | None:
    """The git directory of the repository ``chosen`` names (else the one found from
    ``start``) and where its stores' branches are; ``None`` where the full reader
    decides (see :func:`git_directory`)."""
    place = found(start) if chosen is None else os.path.abspath(chosen)
    return git_directory(place) if place is not None else None
