"""Capture: an agent's events appended to a bounded spool, fast.

This module is all a capture hook process loads (``os``, ``sys``, ``time`` and the C
codec under ``json``; nothing of gitmem's store, nor ``json``'s Python layer, ``re`` or
``typing``, whose imports would cost a hook more than its work), so a hook costs little
more than starting Python.

A :class:`Recorder` takes one session's events (the user's prompt, each tool call with
its result, the final message, the session's end) and appends each as one JSON line to
``<git directory>/gitmem/observe/spool/<session>.jsonl`` with a single ``O_APPEND``
write, so concurrent hooks never interleave or lose each other's lines. Before a line
is written, whatever sits inside ``<private>…</private>`` is cut out (an unclosed tag
hides the rest), and the prompt, a tool's input and its output are clamped to 2 KB,
2 KB and 4 KB as the line holds them; the observer's own tools and the interactive ones
are not recorded. A spool over its bound (:data:`SPOOL_MAX`) takes no more lines: each
dropped event is one line in ``observe/observer.log``. Every file here is opened below
the git directory one folder at a time, never through a symbolic link.

When a run ends the recorder starts the background worker unless one is running (it
holds the lock on ``observe/worker.lock``); the worker takes the finished runs from the
spool.
"""

from __future__ import annotations

import os
import sys
import time

from gitmem.lean.repository import hook_start
from gitmem.observe.finding import common_of, find_git_dir, git_dir_of, observer_settings

TYPE_CHECKING = False  # typing is not loaded at run time (see above)
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "HOOK_EVENTS",
    "INPUT_MAX",
    "OUTPUT_MAX",
    "PROMPT_MAX",
    "SKIPPED_TOOLS",
    "SPOOL_MAX",
    "Recorder",
    "clamp",
    "common_of",
    "find_git_dir",
    "git_dir_of",
    "hook_main",
    "log_line",
    "observe_dir",
    "observer_settings",
    "open_below",
    "open_own",
    "own_folder",
    "start_worker",
    "strip_private",
    "worker_running",
]

PROMPT_MAX = 2048
INPUT_MAX = 2048
OUTPUT_MAX = 4096
FINAL_MAX = 2048
SPOOL_MAX = 1 << 20
"""The bound of one session's spool, in bytes."""
NAME_MAX = 256
"""The bound of a session id, an agent, a tool's name and a call id, in characters."""
HOOK_INPUT_MAX = 4 << 20
LOG_MAX = 1 << 20
TRANSCRIPT_TAIL = 64 * 1024
SKIPPED_TOOLS = frozenset({"mem_search", "mem_read", "askuserquestion", "loadskill"})
"""The observer's own tools and the interactive ones, never observed (compared in
lower case with ``-`` read as ``_``, an MCP prefix ``mcp__server__`` set aside)."""

_CLAMPED = " …[clamped]"
_OPEN = "<private>"
_CLOSE = "</private>"
_RUN_MARK = "GITMEM_OBSERVER_RUN"  # gitmem.observe.model.RUN_MARK; not imported: kept small


def _tags(lowered: str) -> list[tuple[int, int, bool]]:
    """Where ``<private>`` and ``</private>`` stand in ``lowered``: (start, end, closing),
    in order. One pass, linear in the text."""
    found: list[tuple[int, int, bool]] = []
    at = lowered.find("<")
    while at >= 0:
        if lowered.startswith(_OPEN, at):
            found.append((at, at + len(_OPEN), False))
        elif lowered.startswith(_CLOSE, at):
            found.append((at, at + len(_CLOSE), True))
        at = lowered.find("<", at + 1)
    return found


def strip_private(text: str) -> str:
    """``text`` without what is inside ``<private>…</private>`` (the tags too, in any
    case); an unclosed tag hides everything after it. One pass, linear in the text."""
    if "<" not in text:
        return text
    kept: list[str] = []
    depth = 0
    at = 0
    # lower() keeps every index for the ASCII tags only if no character changes length
    lowered = text.lower()
    if len(lowered) != len(text):
        lowered = "".join(c.lower()[:1] for c in text)
    for start, end, closing in _tags(lowered):
        if closing:
            if depth:
                depth -= 1
                if not depth:
                    at = end
            continue
        if not depth:
            kept.append(text[at:start])
        depth += 1
    if not depth:
        kept.append(text[at:])
    return "".join(kept)


def clamp(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, the cut marked."""
    if len(text) <= limit:
        return text
    return text[: max(limit - len(_CLAMPED), 0)] + _CLAMPED


def _kept(text: str, limit: int) -> str:
    """What is recorded of ``text``: its private parts cut, then clamped so that, as the
    spool writes it (JSON, UTF-8), it takes at most ``limit`` bytes. A huge text is cut
    first (an opening tag whose end was cut hides the rest, so nothing private survives
    the cut)."""
    whole = strip_private(text[: limit * 4])
    kept = clamp(whole, limit)
    if _size(kept) <= limit:
        return kept
    room = limit - _size(_CLAMPED)
    low, high = 0, min(len(whole), limit)
    while low < high:  # the longest start that fits, with the mark
        middle = (low + high + 1) // 2
        if _size(whole[:middle]) <= room:
            low = middle
        else:
            high = middle - 1
    return whole[:low] + _CLAMPED


def _size(text: str) -> int:
    """The bytes ``text`` takes in a spool line (a control character escaped takes six)."""
    return len(dumps(text).encode("utf-8", "replace")) - 2


def _whole(digits: str) -> int | str:
    """A JSON integer; one longer than Python reads (4,300 digits) is kept as its digits,
    so a tool's input that holds one is still recorded (as text, as all of it is)."""
    try:
        return int(digits)
    except ValueError:
        return digits


class _Scanning:
    """What the C scanner reads of its caller: ``json.loads``'s defaults, but for an
    integer too long to read (:func:`_whole`)."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = staticmethod(_whole)
    parse_constant = float  # NaN, Infinity, -Infinity


def _c_codec() -> tuple[Callable[[str, int], tuple[object, int]], Callable[[object], str]] | None:
    """The C codec json itself runs on, without the Python layer that loads ``re``
    (``None`` on a Python without it: json itself is used, when needed)."""
    try:
        from _json import encode_basestring, make_encoder, make_scanner

        scan = make_scanner(_Scanning())  # pyright: ignore[reportArgumentType]
    except (ImportError, TypeError):
        return None

    def dump(value: object) -> str:
        encode = make_encoder({}, str, encode_basestring, None, ": ", ", ", False, False, True)
        return "".join(encode(value, 0))

    return scan, dump


_CODEC = _c_codec()


def loads(data: bytes | str) -> object:
    """One JSON value, as ``json.loads`` reads it, an integer too long to read kept as its
    digits (``ValueError`` for anything else)."""
    text = data.decode("utf-8").removeprefix("\ufeff") if isinstance(data, bytes) else data
    try:
        if _CODEC is None:
            import json

            return json.loads(text, parse_int=_whole)
        text = text.strip(" \t\n\r")
        value, end = _CODEC[0](text, 0)
    except StopIteration:
        raise ValueError("not JSON") from None
    except RecursionError:
        raise ValueError("the JSON is nested too deeply") from None
    if end != len(text):
        raise ValueError("extra data after the JSON value")
    return value


def dumps(value: object) -> str:
    """``value`` as ``json.dumps(value, ensure_ascii=False, default=str)`` writes it."""
    if _CODEC is None:
        import json

        return json.dumps(value, ensure_ascii=False, default=str)
    return _CODEC[1](value)


def _text(value: object) -> str:
    if isinstance(value, str):
        return value
    try:
        return dumps(value)
    except (TypeError, ValueError, RecursionError):
        return str(value)


def skipped(tool: str, more: frozenset[str] = frozenset()) -> bool:
    """Whether ``tool`` is never observed: a built-in skipped tool or one of ``more``."""
    name = tool.rsplit("__", 1)[-1].lower().replace("-", "_")
    return name in SKIPPED_TOOLS or name in more or tool.lower() in more


def observe_dir(git_dir: str) -> str:
    """Where a repository keeps the observer's spool, log and worker files."""
    return os.path.join(git_dir, "gitmem", "observe")


def open_own(path: str, flags: int, mode: int = 0o600) -> int:
    """``os.open`` of a file of the observer's own (its spool, state, log and worker
    files): never through a symbolic link, never waiting on a FIFO, and a regular file
    only (``OSError`` otherwise), whatever someone placed at ``path``."""
    return _open_in(None, path, flags, mode)


def _open_in(folder: int | None, name: str, flags: int, mode: int = 0o600) -> int:
    fd = os.open(name, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode, dir_fd=folder)
    if os.fstat(fd).st_mode & 0o170000 != 0o100000:  # stat.S_ISREG, without loading stat
        os.close(fd)
        raise OSError(f"{name} is not a regular file")
    return fd


_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def own_folder(git_dir: str, *parts: str) -> int:
    """A descriptor of the folder ``parts`` below ``git_dir``, each made if missing and
    each a folder itself: a symbolic link anywhere below the git directory (one a
    project's files brought, say) is never walked through (``OSError``)."""
    fd = os.open(git_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for depth, part in enumerate(parts):
            try:
                below = os.open(part, _FOLDER, dir_fd=fd)
            except FileNotFoundError:
                try:  # noqa: SIM105 (contextlib is more than a hook should load)
                    os.mkdir(part, dir_fd=fd)
                except FileExistsError:
                    pass
                below = os.open(part, _FOLDER, dir_fd=fd)
            except OSError:
                if os.path.islink(os.path.join(git_dir, *parts[: depth + 1])):
                    raise OSError(f"{part} below {git_dir} is a symbolic link") from None
                raise
            os.close(fd)
            fd = below
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_below(git_dir: str, path: str, flags: int, mode: int = 0o600) -> int:
    """:func:`open_own` of ``path`` (``/``-separated, below ``git_dir``), its folders
    walked by :func:`own_folder`: no symbolic link is followed anywhere below
    ``git_dir``."""
    *parts, name = path.split("/")
    folder = own_folder(git_dir, *parts)
    try:
        return _open_in(folder, name, flags, mode)
    finally:
        os.close(folder)


def _below(folder: str) -> tuple[str, str]:
    """``folder`` as a git directory and a path below it: an observer folder (see
    :func:`observe_dir`) is walked from its repository's git directory."""
    head, observe = os.path.split(os.path.normpath(folder))
    git_dir, mine = os.path.split(head)
    if (mine, observe) == ("gitmem", "observe"):
        return git_dir or ".", "gitmem/observe/"
    return folder, ""


def log_line(folder: str, message: str) -> None:
    """Append one line to the observer's log (never raises). A log over 1 MB becomes
    ``observer.log.1`` (replacing the one before) and a new one starts."""
    line = time.strftime("%Y-%m-%dT%H:%M:%SZ ", time.gmtime()) + message.replace("\n", " ")
    git_dir, below = _below(folder)
    try:
        held = own_folder(git_dir, *below.split("/")[:-1])
        try:
            fd = _open_in(held, "observer.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            try:
                os.write(fd, (line[:2000] + "\n").encode("utf-8", "replace"))
                if os.fstat(fd).st_size > LOG_MAX:
                    os.replace("observer.log", "observer.log.1", src_dir_fd=held, dst_dir_fd=held)
            finally:
                os.close(fd)
        finally:
            os.close(held)
    except OSError:
        pass


def spool_name(session: str) -> str:
    """The spool file's name for ``session``: the id itself when it is a plain word."""
    safe = "".join(c for c in session if c.isascii() and (c.isalnum() or c in "-_"))[:80]
    if safe and safe == session:
        return safe + ".jsonl"
    import hashlib

    return "s-" + hashlib.sha256(session.encode("utf-8", "replace")).hexdigest()[:32] + ".jsonl"


class _Full(Exception):
    """A spool at its bound."""


class Recorder:
    """One session's events into the spool of the repository whose git directory is
    ``git_dir``. Each call returns as soon as its line is written; ``skip_tools`` are
    more tools never observed."""

    def __init__(
        self,
        git_dir: str,
        session: str,
        *,
        agent: str = "main",
        skip_tools: frozenset[str] = frozenset(),
        spool_max: int = SPOOL_MAX,
        worker: bool = True,
    ) -> None:
        self.folder = observe_dir(git_dir)
        self.git_dir = git_dir
        self.session = session
        self.agent = agent
        self.skip_tools = frozenset(t.lower() for t in skip_tools)
        self.spool_max = spool_max
        self.worker = worker
        self.dropped = 0
        self._fd: int | None = None
        self._size = 0
        self.off = os.environ.get(_RUN_MARK) == "1"
        """A model run the pipeline started is never observed."""

    # -- events ------------------------------------------------------------------------

    def prompt(self, text: str, *, agent: str | None = None) -> None:
        """The user's prompt, which starts a run."""
        self._append("prompt", agent, text=_kept(text, PROMPT_MAX))

    def tool(
        self,
        name: str,
        tool_input: object,
        output: object,
        *,
        call_id: str = "",
        agent: str | None = None,
    ) -> None:
        """One tool call and its result."""
        if skipped(name, self.skip_tools):
            return
        self._append(
            "tool",
            agent,
            tool=clamp(name, NAME_MAX),
            id=clamp(call_id, NAME_MAX),
            input=_kept(_text(tool_input), INPUT_MAX),
            output=_kept(_text(output), OUTPUT_MAX),
        )

    def final(self, text: str = "", *, agent: str | None = None) -> None:
        """The run's final message: the run is finished."""
        self._append("stop", agent, text=_kept(text, FINAL_MAX))
        self._ended()

    def end(self) -> None:
        """The session ended: every open run of it is finished."""
        self._append("end", None)
        self._ended()

    def close(self) -> None:
        """Close the spool file."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- the spool ---------------------------------------------------------------------

    def _open(self) -> int:
        if self._fd is None:
            path = "gitmem/observe/spool/" + spool_name(self.session)
            self._fd = open_below(self.git_dir, path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            self._size = os.fstat(self._fd).st_size
        return self._fd

    def _append(self, event: str, agent: str | None, **fields: object) -> None:
        if self.off:
            return
        record: dict[str, object] = {
            "e": event,
            "s": clamp(self.session, NAME_MAX),
            "a": clamp(agent or self.agent, NAME_MAX),
            "t": time.time(),
        }
        record.update(fields)
        line = (dumps(record) + "\n").encode("utf-8", "replace")
        try:
            fd = self._open()
            if self._size + len(line) > self.spool_max:
                raise _Full
            os.write(fd, line)
        except (OSError, _Full) as exc:
            self.dropped += 1
            why = "is full" if isinstance(exc, _Full) else f"cannot be written ({exc})"
            session = clamp(self.session, NAME_MAX)
            log_line(self.folder, f"spool of session {session} {why}: dropped a {event} event")
            return
        self._size += len(line)

    def _ended(self) -> None:
        if self.worker and not self.off:
            start_worker(self.git_dir)


def worker_running(git_dir: str) -> bool:
    """Whether a worker serves ``git_dir``: one holds the lock on ``worker.lock`` (the
    kernel lets it go when the worker dies, so a pid left behind, perhaps reused by
    another process, stops nothing)."""
    import fcntl

    try:
        fd = open_below(git_dir, "gitmem/observe/worker.lock", os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def start_worker(git_dir: str) -> bool:
    """Start the background worker for ``git_dir`` unless one runs; returns whether it
    started one. The worker is a detached process with no tie to the caller's stdio, so
    a hook's reader never waits for it; a second one started in a race finds the lock
    taken and leaves at once."""
    if worker_running(git_dir):
        return False
    folder = observe_dir(git_dir)
    try:
        out = open_below(
            git_dir, "gitmem/observe/worker.out", os.O_WRONLY | os.O_APPEND | os.O_CREAT
        )
    except OSError as exc:
        log_line(folder, f"the worker could not start: {exc}")
        return False
    try:
        os.posix_spawn(
            sys.executable,
            [sys.executable, "-m", "gitmem.observe.worker", git_dir],
            os.environ,
            file_actions=[  # out first: it may be fd 0 in a caller whose stdin was closed
                (os.POSIX_SPAWN_DUP2, out, 1),
                (os.POSIX_SPAWN_DUP2, out, 2),
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            ],
            setsid=True,
        )
    except OSError as exc:
        log_line(folder, f"the worker could not start: {exc}")
        return False
    finally:
        os.close(out)
    return True


# -- the Claude Code hook ---------------------------------------------------------------

HOOK_EVENTS = {
    "user-prompt-submit": "UserPromptSubmit",
    "post-tool-use": "PostToolUse",
    "stop": "Stop",
    "subagent-stop": "SubagentStop",
    "session-end": "SessionEnd",
}


def _field(value: object, key: str) -> object:
    """``value[key]`` if ``value`` is a JSON object, else ``None``."""
    held: dict[str, object] = value if isinstance(value, dict) else {}  # pyright: ignore[reportUnknownVariableType]
    return held.get(key)


def _assistant_text(entry: object) -> str:
    """The text of a transcript line that is an assistant message ("" otherwise)."""
    message = _field(entry, "message")
    if _field(message, "role") != "assistant":
        return ""
    content = _field(message, "content")
    if isinstance(content, str):
        return content
    items: list[object] = content if isinstance(content, list) else []  # pyright: ignore[reportUnknownVariableType]
    texts: list[str] = []
    for item in items:
        text = _field(item, "text")
        if _field(item, "type") == "text" and isinstance(text, str):
            texts.append(text)
    return "\n".join(texts)


def last_message(path: str) -> str:
    """The last assistant text in a Claude Code transcript (JSON lines), read from its
    last 64 KB only; "" when there is none or the file cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO would never end
    except (OSError, ValueError):  # ValueError: no file name (a NUL, a lone surrogate)
        return ""
    try:
        status = os.fstat(fd)
        if status.st_mode & 0o170000 != 0o100000:  # a regular file only
            return ""
        os.lseek(fd, max(0, status.st_size - TRANSCRIPT_TAIL), os.SEEK_SET)
        tail = os.read(fd, TRANSCRIPT_TAIL)
    except OSError:
        return ""
    finally:
        os.close(fd)
    for line in reversed(tail.splitlines()[-200:]):
        try:
            entry = loads(line)
        except ValueError:
            continue
        found = _assistant_text(entry)
        if found:
            return found
    return ""


def record_hook(event: str, data: dict[str, object], git_dir: str) -> None:
    """Feed one Claude Code hook event (its input JSON as ``data``) to a recorder."""
    session = data.get("session_id")
    if not isinstance(session, str) or not session:
        return
    enabled, skip_tools = observer_settings(git_dir)
    if not enabled:
        return
    agent = data.get("agent_id")
    recorder = Recorder(
        git_dir,
        session,
        agent=agent if isinstance(agent, str) and agent else "main",
        skip_tools=skip_tools,
    )
    try:
        if event == "user-prompt-submit":
            recorder.prompt(_text(data.get("prompt", "")))
        elif event == "post-tool-use":
            recorder.tool(
                _text(data.get("tool_name", "")),
                data.get("tool_input"),
                data.get("tool_response"),
                call_id=_text(data.get("tool_use_id", "")),
            )
        elif event in ("stop", "subagent-stop"):
            message = data.get("last_assistant_message")
            if not isinstance(message, str):
                path = data.get("agent_transcript_path") or data.get("transcript_path")
                message = last_message(path) if isinstance(path, str) else ""
            recorder.final(message)
        elif event == "session-end":
            recorder.end()
    finally:
        recorder.close()


def hook_main(argv: list[str]) -> int:
    """``gitmem capture EVENT``: Claude Code's event JSON on stdin into the spool.

    Always exits 0 with nothing on stdout, so the session goes on; a problem is one
    line on stderr."""
    if os.environ.get(_RUN_MARK) == "1":
        return 0
    if len(argv) != 1 or argv[0] not in HOOK_EVENTS:
        sys.stderr.write(f"gitmem capture: give one event of {', '.join(HOOK_EVENTS)}\n")
        return 0
    try:
        raw = sys.stdin.buffer.read(HOOK_INPUT_MAX + 1)
        if len(raw) > HOOK_INPUT_MAX:
            raise ValueError("the hook input is larger than 4 MB")
        data = loads(raw)
        if not isinstance(data, dict):
            raise ValueError("the hook input is not a JSON object")
        cwd = data.get("cwd")  # pyright: ignore[reportUnknownMemberType,reportUnknownVariableType]
        git_dir = find_git_dir(hook_start(cwd))  # pyright: ignore[reportUnknownArgumentType]
        if git_dir is None:
            return 0
        record_hook(argv[0], data, git_dir)  # pyright: ignore[reportUnknownArgumentType]
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"gitmem capture: {exc}\n".replace("\n", " ").strip() + "\n")
    return 0
