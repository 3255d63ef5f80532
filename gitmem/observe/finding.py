"""Finding the repository a capture hook records into, and whether it records there,
with ``os`` alone.

The hook records only into a repository gitmem serves: a git project where ``gitmem
init`` ran, or a ``.gitmem`` that is a repository of its own. A ``.gitmem`` that is a
symbolic link, a folder that is no repository, or one the enclosing project tracks
(committed into it, so it comes with every clone, and whatever is written there is
staged by the next ``git add -A``) is passed over: a project's files never choose where
a session is written. The repository's config may turn capture off, or name tools it
never records (``gitmem.observer.enabled``, ``skip-tools``).
"""

from __future__ import annotations

import os

__all__ = [
    "common_of",
    "enclosing_work_tree",
    "find_git_dir",
    "git_dir_of",
    "index_tracks",
    "observer_settings",
]

_INDEX_MAX = 256 << 20
_CONFIG_MAX = 1 << 20


def find_git_dir(start: str) -> str | None:
    """The git directory of the gitmem repository ``start`` is in, found as the command
    line finds it: ``GITMEM_REPO`` if set, else walking up, the nearest ``.gitmem`` or a
    git project in gitmem's use (``gitmem init`` made its ``gitmem`` folder); a project
    gitmem does not serve is passed over, and with none there is nothing to record."""
    named = os.environ.get("GITMEM_REPO")
    if named:
        dot_git = os.path.join(named, ".git")
        return _common(dot_git) if os.path.exists(dot_git) else os.path.abspath(named)
    here = os.path.abspath(start)
    while True:
        standalone = os.path.join(here, ".gitmem")
        if _own_repository(standalone):
            return standalone
        dot_git = os.path.join(here, ".git")
        if os.path.exists(dot_git):
            common = _common(dot_git)
            if common is not None and _real_folder(os.path.join(common, "gitmem")):
                return common
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def _real_folder(path: str) -> bool:
    """Whether ``path`` is a folder itself, not a symbolic link to one."""
    try:
        return os.lstat(path).st_mode & 0o170000 == 0o040000  # stat.S_ISDIR, without stat
    except (OSError, ValueError):
        return False


def _own_repository(path: str) -> bool:
    """Whether the ``.gitmem`` at ``path`` is a repository gitmem serves: a folder (not
    a link) holding ``HEAD``, ``config`` and ``objects``, that no enclosing work tree
    tracks."""
    if not _real_folder(path) or not _real_folder(os.path.join(path, "objects")):
        return False
    if not all(os.path.isfile(os.path.join(path, name)) for name in ("HEAD", "config")):
        return False
    return not _tracked(path)


def _tracked(git_dir: str) -> bool:
    """Whether the nearest work tree enclosing ``git_dir`` tracks its ``config`` (as
    :func:`gitmem.observe.config.tracked_by` asks, read without the store)."""
    found = enclosing_work_tree(git_dir)
    if found is None:
        return False
    folder, own = found
    config = os.path.relpath(os.path.join(git_dir, "config"), folder)
    return index_tracks(own, config.replace(os.sep, "/"))


def enclosing_work_tree(git_dir: str) -> tuple[str, str] | None:
    """The nearest folder above ``git_dir`` that holds a ``.git``, and the git directory
    of that work tree; ``None`` if there is none, or its ``.git`` names none."""
    folder = os.path.dirname(git_dir)
    while True:
        dot_git = os.path.join(folder, ".git")
        if os.path.lexists(dot_git):
            own = git_dir_of(dot_git)
            return None if own is None else (folder, own)
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def index_tracks(git_dir: str, path: str) -> bool:
    """Whether the index of the work tree whose git directory is ``git_dir`` lists
    ``path`` (``/``-separated); an index that cannot be read is taken as listing it,
    and none yet lists nothing."""
    try:
        fd = os.open(os.path.join(git_dir, "index"), os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    except (OSError, ValueError):
        return True
    try:
        size = os.fstat(fd).st_size
        if size > _INDEX_MAX:
            return True
        chunks: list[bytes] = []
        while sum(map(len, chunks)) < size:
            chunk = os.read(fd, size)
            if not chunk:
                break
            chunks.append(chunk)
        data = b"".join(chunks)
    except OSError:
        return True
    finally:
        os.close(fd)
    if data[:4] != b"DIRC" or len(data) < 12:
        return True
    name = path.encode("utf-8", "surrogateescape")
    version = int.from_bytes(data[4:8], "big")
    if version in (2, 3):
        return _listed(data, name)
    if version == 4:
        found = _listed_v4(data, name, 20)
        return found if found is not None else _listed_v4(data, name, 32) is not False
    return True


def _listed(data: bytes, name: bytes) -> bool:
    """Whether an index of version 2 or 3 lists ``name``: its path, NUL-ended, right after
    flags (and extended flags) that give its length."""
    size = min(len(name), 0xFFF)
    at = data.find(name + b"\0", 12)
    while at >= 0:
        for back in (2, 4):
            if (
                at >= 12 + back
                and int.from_bytes(data[at - back : at - back + 2], "big") & 0xFFF == size
            ):
                return True
        at = data.find(name + b"\0", at + 1)
    return False


def _listed_v4(data: bytes, name: bytes, digest: int) -> bool | None:
    """Whether an index of version 4 (each path the previous one's first part and a
    suffix) lists ``name``, its object ids ``digest`` bytes long; ``None`` when it
    does not read as such an index."""
    count = int.from_bytes(data[8:12], "big")
    at = 12
    previous = b""
    try:
        for _ in range(count):
            flags = int.from_bytes(data[at + 40 + digest : at + 42 + digest], "big")
            at += 42 + digest + (2 if flags & 0x4000 else 0)
            byte = data[at]
            at += 1
            strip = byte & 127
            while byte & 128:
                byte = data[at]
                at += 1
                strip = ((strip + 1) << 7) | (byte & 127)
            end = data.index(b"\0", at)
            if strip > len(previous):
                return None
            previous = previous[: len(previous) - strip] + data[at:end]
            at = end + 1
            if previous == name:
                return True
    except (IndexError, ValueError):
        return None
    return False if at <= len(data) else None


_TRUE = ("true", "yes", "on", "1")


def observer_settings(git_dir: str) -> tuple[bool, frozenset[str]]:
    """``gitmem.observer.enabled`` and ``skip-tools`` as the repository's git config at
    ``git_dir`` sets them, read without the store: whether capture runs (an unreadable
    config or a value that is not true turns it off: either can only record less) and
    the tools it never records."""
    try:
        fd = os.open(os.path.join(git_dir, "config"), os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return True, frozenset()
    except (OSError, ValueError):
        return False, frozenset()
    try:
        if os.fstat(fd).st_mode & 0o170000 != 0o100000:
            return False, frozenset()
        text = os.read(fd, _CONFIG_MAX).decode("utf-8", "replace")
    except OSError:
        return False, frozenset()
    finally:
        os.close(fd)
    held: dict[str, str] = {}
    ours = False
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            header = line[1 : line.find("]")].strip()
            name, _, sub = header.partition(" ")
            ours = (name.lower(), sub.strip()) == ("gitmem", '"observer"') or (
                header.lower() == "gitmem.observer"
            )
        elif ours and line[:1].isalpha():
            key, equals, value = line.partition("=")
            held[key.strip().lower()] = _config_value(value) if equals else "true"
    enabled = held.get("enabled", "true").strip().lower() in _TRUE
    skip = held.get("skip-tools", "").split(",")
    return enabled, frozenset(t.strip().lower() for t in skip if t.strip())


def _config_value(text: str) -> str:
    """A git config value as written after ``=``: quotes and escapes undone, a comment
    set aside."""
    kept: list[str] = []
    quoted = False
    escaped = False
    for char in text:
        if escaped:
            kept.append({"n": "\n", "t": "\t", "b": "\b"}.get(char, char))
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == '"':
            quoted = not quoted
        elif char in "#;" and not quoted:
            break
        else:
            kept.append(char)
    return "".join(kept).strip()


def _common(dot_git: str) -> str | None:
    """The common git directory of the project whose ``.git`` is ``dot_git``."""
    path = git_dir_of(dot_git)
    return None if path is None else common_of(path)


def git_dir_of(dot_git: str) -> str | None:
    """The git directory a project's ``.git`` is, or names (``gitdir:``, a linked work
    tree's); ``None`` if it names none."""
    if not os.path.isfile(dot_git):
        return os.path.abspath(dot_git)
    try:
        with open(dot_git, encoding="utf-8") as handle:
            line = handle.read(4096).strip()
    except OSError:
        return None
    if not line.startswith("gitdir:"):
        return None
    return os.path.abspath(os.path.join(os.path.dirname(dot_git), line[len("gitdir:") :].strip()))


def common_of(git_dir: str) -> str:
    """A linked work tree's common git directory (``git_dir`` itself for any other)."""
    try:
        with open(os.path.join(git_dir, "commondir"), encoding="utf-8") as handle:
            return os.path.abspath(os.path.join(git_dir, handle.read(4096).strip()))
    except OSError:
        return git_dir
