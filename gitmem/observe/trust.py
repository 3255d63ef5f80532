"""The model commands this machine's user chose to run, kept outside every repository.

A command model runs a command line named in a repository's config. A config can come
with files the user did not write: a project cloned or unpacked from an archive can
carry a ``.gitmem`` whose config names any command, and the Claude Code plugin's hooks
would run it as soon as a session starts in that folder. So a command is run only when
it was set on this machine with ``gitmem observe config`` (which records it here), for
that repository and that setting: a line in ``trusted-commands`` under the user's
config folder (``$XDG_CONFIG_HOME/gitmem``, else ``~/.config/gitmem``) holding the
SHA-256 of the repository's path, the setting's name and the command line. A command
written into a config any other way, or changed since, is not run until it is set again.
"""

from __future__ import annotations

import hashlib
import os
import stat

__all__ = ["TRUST_MAX", "trust", "trust_file", "trusted"]

TRUST_MAX = 1 << 20
"""Bytes of the file read at most (some 15,000 commands); past it, the oldest half
is dropped when a command is added."""

_LINE = 65  # a digest and its newline


def trust_file() -> str:
    """Where this machine's user's trusted commands are kept."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "gitmem", "trusted-commands")


def _digest(git_dir: str, key: str, command: str) -> bytes:
    named = "\0".join((os.path.realpath(git_dir), key, command))
    return hashlib.sha256(named.encode("utf-8", "surrogatepass")).hexdigest().encode()


def _lines(path: str) -> list[bytes]:
    """The digests the file at ``path`` holds (none if it is not a plain file)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return []
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return []
        data = os.read(fd, TRUST_MAX)
    finally:
        os.close(fd)
    return [line for line in data.split(b"\n") if len(line) == _LINE - 1]


def trusted(git_dir: str, key: str, command: str) -> bool:
    """Whether ``command`` was set as setting ``key`` of the repository at ``git_dir``
    on this machine."""
    return _digest(git_dir, key, command) in _lines(trust_file())


def trust(git_dir: str, key: str, command: str) -> None:
    """Record that this machine's user set ``command`` as setting ``key`` of the
    repository at ``git_dir``."""
    path = trust_file()
    held = _lines(path)
    digest = _digest(git_dir, key, command)
    if digest in held:
        return
    held.append(digest)
    if len(held) * _LINE > TRUST_MAX:
        held = held[len(held) // 2 :]
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    temporary = f"{path}.{os.getpid()}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        view = memoryview(b"".join(line + b"\n" for line in held))
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temporary, path)
