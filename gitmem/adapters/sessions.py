"""A client session's own instance, a capability's text, and what a Claude Code session's
hook processes hand each other; with the prompt and the Stop that need no holder.

Each Claude Code session keeps one small JSON file in gitmem's folder of its
repository, ``gitmem/claude-code/<sha256 of the session id>.json`` (see
:class:`gitmem.adapters.claude_code.Session`). Beside what the hooks hand each other,
it records what the last hook bound (``bound``): the repository's folder, the store,
the instance, and a digest of the capability's text.

Most prompts of a session get no context at all: the session has started, no views
wait for it, and its instance has seen its store's head (the instance's notice
watermark is the head, or says "before the first commit" of a store that has none).
Most turns end having read no memory, so no onUse script runs at their Stop.
:func:`quiet_hook` answers such a prompt or Stop from those files, two refs and the
turn's part of the transcript, without binding a holder (a few files read, where
binding one loads most of gitmem), and keeps the transcript's length as the full hook
keeps it. Anything else is the full hook's, which runs as if this were not there:
another command line, a session not started or with views waiting, a capability
changed since, a client process that names another instance, a notice to give, a turn
whose transcript names ``read_memory`` (or escapes one of its characters, which could
spell it), a repository this does not read whole (a project's work tree with a
``.git`` file, a config it does not follow).

This module loads nothing of gitmem's beyond the errors and the light readers.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import time

from gitmem.errors import InvalidArgument
from gitmem.lean import refs
from gitmem.lean.argv import options
from gitmem.lean.grammar import ENVVARS
from gitmem.lean.repository import hook_start, located
from gitmem.lean.shapes import SLUG_CHARS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from hashlib import sha256
    from typing import Any, cast
else:
    from gitmem.lean.light import cast

    try:  # the module itself: hashlib would load OpenSSL for a digest or two
        from _sha256 import sha256
    except ImportError:
        try:  # its name from Python 3.12 on
            from _sha2 import sha256
        except ImportError:  # a Python built without it
            from hashlib import sha256


__all__ = [
    "BEFORE_FIRST",
    "CAPABILITY_MAX",
    "FOLDER",
    "INPUT_MAX",
    "TIMEOUT",
    "capability_digest",
    "capability_text",
    "client_process",
    "encode_session",
    "gave_up",
    "hook_begun",
    "hook_options",
    "parse_input",
    "quiet_hook",
    "read_event",
    "session_instance",
    "session_path",
    "time_left",
    "transcript_size",
    "write_session",
]

FOLDER = "claude-code"
"""The folder of gitmem's folder that holds the sessions' files."""
INPUT_MAX = 1 << 20
"""The longest event a hook reads, in characters."""
CAPABILITY_MAX = 1 << 20
"""The longest capability file read, in bytes."""
TIMEOUT = 20.0
"""How long a hook may take, in seconds, unless ``--timeout`` says."""
BEFORE_FIRST = "f03116507f106fd2c778821e327c924522c02a86"
"""The commit a notice watermark names before its store's first commit: an empty root
commit of gitmem's own, the same in every repository."""

# -- the client session's instance ----------------------------------------------------

# what stands between a client and the processes it starts: shells and launchers
_LAUNCHERS = frozenset(
    {"sh", "bash", "dash", "zsh", "ksh", "fish", "csh", "tcsh", "env", "nice", "nohup"}
    | {"timeout", "uv", "uvx", "gitmem"}
)
_ANCESTORS_MAX = 16
_HOST_CHARACTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-")


def session_instance(profile: str) -> str:
    """The instance of the client session this process runs in: ``<profile>-<host>-<pid>``,
    ``pid`` the client's process (see :func:`client_process`), or ``<profile>-<host>``
    where the process table cannot be read."""
    name = os.uname().nodename.split(".")[0]
    host = "".join(c if c in _HOST_CHARACTERS else "-" for c in name)[:40] or "host"
    client = client_process()
    return f"{profile}-{host}" if client is None else f"{profile}-{host}-{client}"


def client_process() -> int | None:
    """The pid of the client that started this process: the nearest ancestor that is
    not a shell or a launcher (``None``: the process table cannot be read)."""
    pid = os.getppid()
    for _ in range(_ANCESTORS_MAX):
        if pid <= 1:
            return None
        found = _process(pid)
        if found is None:
            return None
        name, parent = found
        if name.lstrip("-") not in _LAUNCHERS:  # "-bash": a login shell
            return pid
        pid = parent
    return None


def _process(pid: int) -> tuple[str, int] | None:
    """A process's command name and parent pid, from /proc or else from ``ps``."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read(4096).decode("utf-8", "replace")
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        return name, int(stat[stat.rindex(")") + 2 :].split()[1])
    except (OSError, ValueError, IndexError):
        pass
    import subprocess

    try:
        done = subprocess.run(
            ["ps", "-o", "ppid=,comm=", "-p", str(pid)],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
        parent, command = done.stdout.split(None, 1)
        return os.path.basename(command.strip()), int(parent)
    except (OSError, ValueError, subprocess.SubprocessError):
        return None


# -- the capability -------------------------------------------------------------------


def capability_text(value: str) -> str:
    """The capability's JSON text: ``value`` itself if it is JSON text, else the UTF-8
    text of the file ``value`` names (at most :data:`CAPABILITY_MAX` bytes)."""
    if value.lstrip().startswith("{"):
        return value
    try:
        with open(value, "rb") as handle:
            data = handle.read(CAPABILITY_MAX + 1)
    except OSError as exc:
        raise InvalidArgument(
            f"cannot read the capability file {value}: {exc.strerror or exc}"
        ) from None
    if len(data) > CAPABILITY_MAX:
        raise InvalidArgument(f"the capability file {value} is larger than 1 MB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidArgument(f"the capability file {value} is not UTF-8 text") from None


def capability_digest(value: str | None) -> str | None:
    """A digest of the capability text ``value`` stands for (see :func:`capability_text`);
    ``None`` for none, or one that does not read."""
    if value is None:
        return None
    try:
        text = capability_text(value)
    except (InvalidArgument, ValueError):  # ValueError: a file name holding a NUL
        return None
    return sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


# -- a session's file -----------------------------------------------------------------


def parse_input(text: str) -> dict[str, Any]:
    """Claude Code's event JSON."""
    if len(text) > INPUT_MAX:
        raise InvalidArgument("the hook input is larger than 1 MB")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nested past json's depth
        raise InvalidArgument("the hook input is not JSON") from None
    if not isinstance(data, dict):
        raise InvalidArgument("the hook input is not a JSON object")
    event = cast("dict[str, Any]", data)
    if not isinstance(event.get("session_id"), str) or not event["session_id"]:
        raise InvalidArgument("the hook input has no session_id")
    if "\\u" in text:
        # an unpaired \ud800-\udfff escape reads as a string no file or commit can hold
        try:
            json.dumps(event, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidArgument(
                "the hook input holds a lone surrogate (an unpaired \\ud800-\\udfff escape); "
                "send valid Unicode"
            ) from None
        except RecursionError:
            raise InvalidArgument("the hook input is not JSON") from None
    return event


def session_path(directory: str, session_id: str) -> str:
    """Where the repository at ``directory`` keeps the session ``session_id``'s file."""
    digest = sha256(session_id.encode("utf-8", "replace")).hexdigest()
    return os.path.join(directory, "gitmem", FOLDER, digest + ".json")


def encode_session(
    session_id: str,
    launch: dict[str, Any],
    views: list[list[str]],
    started: bool,
    offset: int,
    compacting: bool,
    bound: dict[str, str] | None,
) -> str:
    """A session's file, as every hook writes it."""
    data: dict[str, Any] = {
        "session_id": session_id,
        "launch": launch,
        "views": views,
        "started": started,
        "offset": offset,
        "compacting": compacting,
    }
    if bound is not None:
        data["bound"] = bound
    return json.dumps(data, ensure_ascii=False)


def write_session(path: str, text: str) -> None:
    """Write a session's file atomically (a hook killed mid-write leaves the old one)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    temporary = f"{path}.{os.urandom(6).hex()}.tmp"
    try:  # a hook's alarm may come at any step: the file made is in the try
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):  # never made, or gone
            os.unlink(temporary)
        raise


def transcript_size(path: object) -> int:
    """How long the transcript at ``path`` is (0 for none, or one that does not read)."""
    if not isinstance(path, str) or not path:
        return 0
    try:
        return os.path.getsize(path)
    except (OSError, ValueError):  # ValueError: no file name (a NUL)
        return 0


# -- the prompt that needs no holder ----------------------------------------------------

_SESSION_KEYS = ["session_id", "launch", "views", "started", "offset", "compacting"]
_LAUNCH_KEYS = [
    "capability",
    "profile",
    "instance",
    "started_as",
    "store",
    "compaction",
    "per_session",
]
_BOUND_KEYS = ["directory", "store", "instance", "capability"]
# the options of `gitmem hook claude-code` taken here: the launch's (the session's file
# holds the one it binds with) and the timeout; a choice or --help is the full command
# line's to read
_OPTIONS = {
    "--capability": ("capability", False),
    "--profile": ("profile", False),
    "--instance": ("instance", False),
    "--store": ("store", False),
    "-s": ("store", False),
    "--per-session": ("per_session", True),
    "--timeout": ("timeout", False),
}
_GROUP = {"--repo": ("repo", False)}
_HOOK = ["hook", "claude-code"]
_QUIET = ("user-prompt-submit", "stop")
"""The events a hook may answer without binding a holder."""
_TRANSCRIPT_MAX = 8 << 20
"""The most of a transcript a Stop reads (the full hook reads no more)."""
# a JSON escape of a character of "read_memory", with which a line could spell the name
_SPELLS = re.compile(rb"\\u00(?:72|65|61|64|5f|6d|6f|79)", re.IGNORECASE)


def hook_options(argv: list[str]) -> tuple[str, str | None, float] | None:
    """The event, ``--repo`` (``None``: not given) and ``--timeout`` of ``argv`` (after
    the program's name) if it is a plain ``gitmem hook claude-code user-prompt-submit``
    or ``stop`` that :func:`quiet_hook` may answer; ``None`` for any other command line."""
    group = options(argv, _GROUP, stop_at_word=True)
    if group is None:
        return None
    found, _, at = group
    if argv[at : at + 2] != _HOOK:
        return None
    mine = options(argv[at + 2 :], _OPTIONS, stop_at_word=False)
    if mine is None:
        return None
    given, words, _ = mine
    if len(words) != 1 or words[0] not in _QUIET:
        return None
    timeout = given.get("timeout", "")
    seconds = _seconds(timeout) if isinstance(timeout, str) and timeout else TIMEOUT
    repo = found.get("repo")
    if seconds is None or isinstance(repo, bool):
        return None
    return words[0], repo, seconds


def _seconds(value: str) -> float | None:
    """The timeout ``value`` gives, if the command line takes it (a number, at least
    0.1)."""
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if 0.1 <= seconds < float("inf") else None


_BEGUN: list[float] = []


def hook_begun() -> None:
    """Note that this process has begun to answer its hook: the time the hook may take
    counts from the first call on, however many ways it is tried."""
    if not _BEGUN:
        _BEGUN.append(time.monotonic())


def time_left(seconds: float) -> float:
    """What is left of a hook's ``seconds`` (all of them if it was not begun here); 0
    once they are spent."""
    if not _BEGUN:
        return seconds
    return max(seconds - (time.monotonic() - _BEGUN[0]), 0.0)


def gave_up(seconds: float) -> str:
    """What a hook says when it gave up after ``seconds``."""
    return f"gitmem hook: gave up after {seconds:g} s; the session goes on"


def read_event(fd: int, limit: int) -> bytes:
    """Up to ``limit`` bytes of the event on ``fd``, read to its end (a hook's alarm
    bounds the wait)."""
    parts: list[bytes] = []
    size = 0
    while size < limit:
        part = os.read(fd, min(limit - size, 1 << 16))
        if not part:
            break
        parts.append(part)
        size += len(part)
    return b"".join(parts)


def quiet_hook(given: tuple[str, str | None, float], environ: Mapping[str, str], text: str) -> bool:
    """Answer the hook ``given`` (its :func:`hook_options`), whose event is ``text``, if
    it is a prompt that gets no context or a Stop that runs nothing (see the module's
    notes): keep the transcript's length in the session's file, and say so. ``False``:
    the full hook answers it, and nothing was written."""
    try:
        event = parse_input(text)
    except InvalidArgument:
        return False
    hook, repo, _ = given
    chosen = repo if repo is not None else environ.get(ENVVARS["repo"]) or None
    place = located(chosen, hook_start(event.get("cwd"), environ))
    if place is None:
        return False
    directory, branches = place
    session_id: str = event["session_id"]
    path = session_path(directory, session_id)
    kept = _quiet_session(path, session_id, directory)
    if kept is None:
        return False
    data, store, instance = kept
    transcript = event.get("transcript_path")
    if hook == "stop":
        if not _reads_none(transcript, data["offset"]):
            return False
    else:
        # the instance has seen the store's head, or there is none and it has seen that
        seen = refs.read(directory, f"refs/gitmem/notices/{instance}/{store}")
        head = refs.read(directory, branches + store)
        if head is None:
            if seen != BEFORE_FIRST or not refs.absent(directory, branches + store):
                return False
        elif seen != head:
            return False
    write_session(path, _file_text(data, transcript_size(transcript)))
    return True


def _file_text(kept: dict[str, Any], offset: int) -> str:
    """The session's file ``kept`` (as :func:`_quiet_session` took it), its transcript
    now at ``offset``, as every hook writes it."""
    return encode_session(
        kept["session_id"],
        kept["launch"],
        kept["views"],
        kept["started"],
        offset,
        kept["compacting"],
        kept["bound"],
    )


def _reads_none(path: object, offset: int) -> bool:
    """Whether the transcript at ``path`` plainly holds no ``read_memory`` call since
    ``offset``, as a Stop reads it: the name is not in its bytes, nor a JSON escape of
    one of its characters, which could spell it. One that is not a regular file holds
    none; one shorter than ``offset``, or longer past it than a Stop reads, is the full
    hook's."""
    if not isinstance(path, str) or not path:
        return True
    try:
        # non-blocking: opening a FIFO with no writer would wait for ever
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except (OSError, ValueError):  # ValueError: no file name (a NUL, a lone surrogate)
        return True
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            return True
        if not 0 <= offset <= status.st_size or status.st_size - offset > _TRANSCRIPT_MAX:
            return False
        part = os.pread(fd, status.st_size - offset, offset)
    except OSError:
        return False
    finally:
        os.close(fd)
    return b"read_memory" not in part and _SPELLS.search(part) is None


def _quiet_session(
    path: str, session_id: str, directory: str
) -> tuple[dict[str, Any], str, str] | None:
    """The session's file at ``path``, its store and its instance, if it is one whose
    prompt gets nothing but a watermark check: written as the hooks write it, started,
    no views waiting, and bound (in ``directory``) with the capability, instance and
    launch a holder would bind with now."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(INPUT_MAX + 1)
        data = json.loads(raw)
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    kept = cast("dict[str, Any]", data)
    if list(kept) != [*_SESSION_KEYS, "bound"]:
        return None
    launch = cast("dict[str, Any]", kept["launch"] if isinstance(kept["launch"], dict) else {})
    bound = cast("dict[str, Any]", kept["bound"] if isinstance(kept["bound"], dict) else {})
    if (
        kept["session_id"] != session_id
        or kept["views"] != []
        or kept["started"] is not True
        or type(kept["offset"]) is not int
        or not isinstance(kept["compacting"], bool)
        or list(launch) != _LAUNCH_KEYS
        or list(bound) != _BOUND_KEYS
        or not all(isinstance(value, str) for value in bound.values())
    ):
        return None
    # written as the hooks write it: a full hook would write the very same bytes
    if _file_text(kept, kept["offset"]).encode("utf-8", "surrogatepass") != raw:
        return None
    capability, profile, instance = launch["capability"], launch["profile"], launch["instance"]
    if not (
        isinstance(capability, str)
        and isinstance(profile, str)
        and profile
        and (instance is None or isinstance(instance, str))
        and isinstance(launch["started_as"], str)
        and launch["started_as"]
        and launch["store"] is None
        and isinstance(launch["compaction"], str)
        and launch["compaction"]
        and isinstance(launch["per_session"], bool)
    ):
        return None
    if instance is None:
        instance = session_instance(profile) if launch["per_session"] else profile
    store: str = bound["store"]
    if (
        bound["directory"] != directory
        or bound["instance"] != instance
        or not _name(instance)
        or not refs.usable_store(store)
        or bound["capability"] != capability_digest(capability)
    ):
        return None
    return kept, store, instance


def _name(value: str) -> bool:
    """Whether ``value`` is usable as an agent's profile or instance."""
    return (
        0 < len(value) <= 100
        and value[0] != "."
        and ".." not in value
        and SLUG_CHARS.issuperset(value)  # a name's characters are a slug's
    )
