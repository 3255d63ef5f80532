"""Settings kept in the repository's own git config, under ``gitmem.<section>.<key>``.

They are plain git configuration, so ``git config --get-regexp '^gitmem\\.'`` shows them
and ``git config`` edits them; gitmem reads them afresh on every call (a running
process sees a change made by another). Keys are git config variable names: a letter,
then letters, digits and ``-``; git compares them without regard to case.
"""

from __future__ import annotations

import os
import re

from dulwich.repo import Repo

from gitmem.errors import InvalidArgument
from gitmem.store.locking import WriteLock

__all__ = ["Configured", "check_key", "read_section", "tracks", "write_setting"]

_KEY_RE = re.compile(r"[A-Za-z][A-Za-z0-9-]{0,63}")
_SECTION_RE = re.compile(r"[a-z][a-z0-9-]{0,31}")


def check_key(section: str, key: str) -> None:
    """Refuse a section or key git config could not hold."""
    if not _SECTION_RE.fullmatch(section):
        raise InvalidArgument(f"settings section {section!r} is not a config name")
    if not _KEY_RE.fullmatch(key):
        raise InvalidArgument(
            f"setting {key!r} is not a config name; use a letter, then letters, digits and '-'"
        )


def read_section(repo: Repo, section: str) -> dict[str, str]:
    """Every ``gitmem.<section>.*`` value, keys lower-cased."""
    config = repo.get_config()
    name = (b"gitmem", section.encode())
    if not config.has_section(name):
        return {}
    return {
        key.decode("utf-8", "replace").lower(): value.decode("utf-8", "replace")
        for key, value in config.items(name)
    }


def tracks(git_dir: str, path: str) -> bool:
    """Whether the index of the work tree whose git directory is ``git_dir`` tracks
    ``path`` (relative to the work tree, ``/``-separated); ``FileNotFoundError`` when it
    has no index yet, another ``OSError`` or ``ValueError`` when it cannot be read."""
    from dulwich.index import Index

    try:
        index = Index(os.path.join(git_dir, "index"))
    except OSError:
        raise
    except Exception as exc:  # a damaged index: dulwich's reader raises what it meets
        raise ValueError(f"the index of {git_dir} cannot be read: {exc}") from None
    return path.encode() in index


def write_setting(repo: Repo, section: str, key: str, value: str | None) -> None:
    """Set (``None``: remove) ``gitmem.<section>.<key>`` in the repository's config."""
    check_key(section, key)
    if value is not None and ("\n" in value or "\x00" in value):
        raise InvalidArgument(f"the value of {key!r} may not hold a newline")
    config = repo.get_config()
    name = (b"gitmem", section.encode())
    if value is None:
        if config.has_section(name):
            values = config[name]
            for held in [k for k in values if k.lower() == key.lower().encode()]:
                del values[held]
    else:
        config.set(name, key.lower().encode(), value.encode())
    config.write_to_path()


class Configured:
    """The part of a repository that reads and writes its settings (a base of
    ``Storage``)."""

    _repo: Repo
    _lock: WriteLock

    def settings(self, section: str) -> dict[str, str]:
        """The repository's ``gitmem.<section>.*`` git config values (keys lower-cased)."""
        check_key(section, "x")
        return read_section(self._repo, section)

    def set_setting(self, section: str, key: str, value: str | None) -> None:
        """Set (``None``: remove) ``gitmem.<section>.<key>`` in the repository's config."""
        with self._lock.held():
            write_setting(self._repo, section, key, value)
