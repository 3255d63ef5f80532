"""The permissions git gives what it makes in a repository shared by several accounts
(``core.sharedRepository``), for what gitmem makes beside it.

A server's repository made with ``git init --bare --shared=group`` is written by every
pusher's own account: git makes its files group-writable and its folders group-writable
and set-group-id, whatever each pusher's umask. What a push hook keeps there is made
the same way, so that the next pusher, another account, can replace it and add to it.
"""

from __future__ import annotations

import os
import stat

from gitmem.lean.repository import plain_config

__all__ = ["adjust", "shared_mode"]

_GROUP, _EVERYBODY = 0o660, 0o664
_NAMES = {
    "umask": 0,
    "false": 0,
    "no": 0,
    "off": 0,
    "": 0,
    "group": _GROUP,
    "true": _GROUP,
    "yes": _GROUP,
    "on": _GROUP,
    "all": _EVERYBODY,
    "world": _EVERYBODY,
    "everybody": _EVERYBODY,
}


def shared_mode(git_dir: str) -> int:
    """What ``core.sharedRepository`` of the repository at ``git_dir`` asks, as git reads
    it: 0 to leave modes to the umask, the bits to add (``0o660`` for a group,
    ``0o664`` for everybody), or, negated, the exact mode of a file (an octal value)."""
    config = plain_config(git_dir)
    if config is None:  # quoting or subsections: read by the git library
        from dulwich.config import ConfigFile

        try:
            value = ConfigFile.from_path(os.path.join(git_dir, "config")).get(
                b"core", b"sharedrepository"
            )
        except (OSError, ValueError, KeyError):
            return 0
        text = value.decode("utf-8", "replace")
    else:
        found = config.get(("core", "sharedrepository"))
        if found is None:
            return 0
        text = found
    return _mode(text.strip().lower())


def _mode(text: str) -> int:
    if text in _NAMES:
        return _NAMES[text]
    if not text or any(c not in "01234567" for c in text):
        return 0  # not a value git takes: git refuses to run, and nothing is widened
    value = int(text, 8)
    if value in (0, 1, 2):
        return (0, _GROUP, _EVERYBODY)[value]
    if value & 0o600 != 0o600:
        return 0  # git refuses a mode its owner cannot read and write
    return -(value & 0o666)


def adjust(path: str, shared: int) -> None:
    """Give the file or folder at ``path`` the permissions git would give it in a
    repository whose ``core.sharedRepository`` reads ``shared`` (see :func:`shared_mode`);
    best effort, as what is kept there is derived. It is opened without following a
    link and changed through that descriptor: a link put in its place (several
    accounts write such a repository) changes nothing it leads to."""
    if not shared:
        return
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return
    try:
        mode = os.fstat(fd).st_mode
        tweak = -shared if shared < 0 else shared
        if not mode & stat.S_IWUSR:
            tweak &= ~0o222
        if mode & stat.S_IXUSR:
            tweak |= (tweak & 0o444) >> 2
        wanted = (mode & ~0o777) | tweak if shared < 0 else mode | tweak
        if stat.S_ISDIR(mode):
            wanted |= (wanted & 0o444) >> 2 | stat.S_ISGID
        if stat.S_IMODE(wanted) != stat.S_IMODE(mode):
            os.fchmod(fd, stat.S_IMODE(wanted))
    except OSError:
        return
    finally:
        os.close(fd)
