"""Claude Code's own session transcripts, read as the sessions the retain step learns from.

Claude Code keeps each session as JSON lines in
``<config>/projects/<project folder>/<session id>.jsonl``: ``<config>`` is
``$CLAUDE_CONFIG_DIR`` when set, else ``~/.claude``, and the project folder is the
session's working folder with every character other than an ASCII letter or digit
replaced by ``-`` (``/home/ada/app`` is ``-home-ada-app``). A hook's ``transcript_path``
names the file itself, so the plugin hands its folder over rather than guess.

The fields relied on, per line: ``type`` (``user`` and ``assistant``; every other kind,
such as ``summary`` or ``file-history-snapshot``, is passed over) and ``message.content``,
a string or a list of blocks: ``text``, ``tool_use`` (``name``, ``input``) and
``tool_result`` (``content``, a string or text blocks); ``thinking`` is passed over.

A payload is bounded before any model sees it: the last 8 MB of the file, lines over
1 MB passed over, a prompt or a tool's input clamped to 2 KB and a tool's output to
4 KB, anything inside ``<private>…</private>`` removed first (the capture hooks' own
rules, :mod:`gitmem.observe.capture`; a span may cross the blocks of one message, and a
tag never closed hides the rest of it), and the whole kept to :data:`PAYLOAD_MAX`
characters (its start and, mostly, its end).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, cast

from gitmem.observe.capture import INPUT_MAX, OUTPUT_MAX, PROMPT_MAX, clamp, strip_private

__all__ = [
    "PAYLOAD_MAX",
    "SessionFile",
    "json_lines",
    "modified_at",
    "payload",
    "project_folder",
    "projects_root",
    "session_files",
    "session_id",
    "transcript_folder",
]

PAYLOAD_MAX = 48_000
"""The most characters of one session a model is handed (about 12,000 tokens)."""
_FILE_MAX = 8 << 20
_LINE_MAX = 1 << 20
_FILES_MAX = 10_000
_UNSAFE = re.compile(r"[^A-Za-z0-9]")
_SESSION_RE = re.compile(r"[A-Za-z0-9._-]{1,64}")


@dataclass(frozen=True)
class SessionFile:
    """One session's transcript: its id, file, last change and size."""

    session: str
    path: str
    modified: float
    size: int

    @property
    def fingerprint(self) -> str:
        """What changes when the transcript does: its size and modification time
        (``<bytes>-<milliseconds since the epoch>``)."""
        return f"{self.size}-{int(self.modified * 1000)}"


def modified_at(fingerprint: str) -> float:
    """The modification time a fingerprint records (0 for one that records none)."""
    millis = fingerprint.rpartition("-")[2]
    return int(millis) / 1000 if millis.isdigit() and len(millis) < 18 else 0.0


def projects_root(config: str | None = None) -> str:
    """The folder of Claude Code's project folders: ``<config>/projects``."""
    base = config or os.environ.get("CLAUDE_CONFIG_DIR") or os.path.expanduser("~/.claude")
    return os.path.join(base, "projects")


def project_folder(cwd: str, config: str | None = None) -> str:
    """Where Claude Code keeps the transcripts of sessions run in ``cwd``."""
    return os.path.join(projects_root(config), _UNSAFE.sub("-", os.path.abspath(cwd)))


def transcript_folder(path: object) -> str | None:
    """The folder of the transcript ``path`` names (a hook's ``transcript_path``) when
    it is one of Claude Code's own project folders, directly in :func:`projects_root`;
    ``None`` for anything else, which is never read as transcripts."""
    if not isinstance(path, str) or not path.endswith(".jsonl"):
        return None
    try:
        folder = os.path.dirname(os.path.abspath(path))
        root = os.path.realpath(projects_root())
        return folder if os.path.realpath(os.path.dirname(folder)) == root else None
    except (OSError, ValueError):  # a path with a NUL in it
        return None


def session_id(stem: str) -> str:
    """A transcript's session id as a store path segment: itself when it is one (a
    Claude Code session id is a UUID), else ``s-`` and a digest of it."""
    if _SESSION_RE.fullmatch(stem) and stem not in (".", ".."):
        return stem
    return "s-" + hashlib.sha256(stem.encode("utf-8", "replace")).hexdigest()[:32]


def session_files(folder: str) -> list[SessionFile]:
    """Every ``*.jsonl`` regular file directly in ``folder``, newest first (at most
    10,000); none if the folder does not exist."""
    found: list[SessionFile] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    for entry in entries:
        if not entry.name.endswith(".jsonl"):
            continue
        try:
            status = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISREG(status.st_mode):
            stem = entry.name.removesuffix(".jsonl")
            found.append(SessionFile(session_id(stem), entry.path, status.st_mtime, status.st_size))
    found.sort(key=lambda f: (-f.modified, f.session))
    return found[:_FILES_MAX]


def _clamp(text: str, most: int) -> str:
    return clamp(strip_private(text).strip(), most)


def payload(path: str, most: int = PAYLOAD_MAX) -> str:
    """The session in ``path`` as the text a model reads: one line per prompt, answer,
    tool call and tool result, each clamped, the whole at most ``most`` characters."""
    lines: list[str] = []
    for entry in json_lines(path):
        lines.extend(_render(entry))
    text = "\n".join(lines)
    if len(text) <= most:
        return text
    head = most // 4
    tail = most - head
    return text[:head] + f"\n[… {len(text) - most} characters left out …]\n" + text[-tail:]


def _render(entry: dict[str, Any]) -> Iterator[str]:
    kind = entry.get("type")
    if kind not in ("user", "assistant"):
        return
    message = entry.get("message")
    if not isinstance(message, dict):
        return
    content = cast(dict[str, Any], message).get("content")
    who = "User" if kind == "user" else "Assistant"
    if isinstance(content, str):
        said = _clamp(content, PROMPT_MAX)
        if said:
            yield f"{who}: {said}"
        return
    if not isinstance(content, list):
        return
    parts = [_part(who, cast(dict[str, Any], raw)) for raw in cast(list[Any], content)]
    for label, text, most in _unprivate([p for p in parts if p is not None]):
        said = clamp(text.strip(), most)
        if said or label != who:
            yield f"{label}: {said}"


def _part(who: str, block: dict[str, Any]) -> tuple[str, str, int] | None:
    """A content block as ``(label, text, most characters)`` (``None``: not shown)."""
    if not isinstance(block, dict):  # pyright: ignore[reportUnnecessaryIsInstance]
        return None
    what = block.get("type")
    if what == "text" and isinstance(block.get("text"), str):
        return who, block["text"], PROMPT_MAX
    if what == "tool_use":
        name = block.get("name") if isinstance(block.get("name"), str) else "tool"
        args = json.dumps(block.get("input"), ensure_ascii=False, default=str)
        return f"Tool call {name}", args, INPUT_MAX
    if what == "tool_result":
        return "Tool result", _result_text(block.get("content")), OUTPUT_MAX
    return None


_MARK = "\x1e"


def _unprivate(parts: list[tuple[str, str, int]]) -> Iterator[tuple[str, str, int]]:
    """``parts`` (one message's blocks) with their private parts cut as one text: a
    ``<private>`` opened in one block hides what follows up to its closing tag, in any
    later block, or else the rest of the message. What follows a closing tag goes on
    the block the span began in."""
    joined = "".join(
        f"{_MARK}{n}{_MARK}{text.replace(_MARK, ' ')}" for n, (_, text, _) in enumerate(parts)
    )
    pieces = strip_private(joined).split(_MARK)
    for at in range(1, len(pieces) - 1, 2):
        label, _, most = parts[int(pieces[at])]
        yield label, pieces[at + 1], most


def _result_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for raw in cast(list[Any], content):
        if isinstance(raw, dict):
            text = cast(dict[str, Any], raw).get("text")
            if isinstance(text, str):
                parts.append(text)
    return "\n".join(parts)


def json_lines(
    path: object, offset: int = 0, *, seconds: float | None = None
) -> Iterator[dict[str, Any]]:
    """The JSON objects of a transcript's lines from ``offset``: a regular file only (a
    FIFO or ``/dev/zero`` never ends), its last 8 MB at most, lines over 1 MB passed
    over, the file read only as far as its size when opened (it may be growing), and
    with ``seconds`` no more reading once that time is spent."""
    if not isinstance(path, str) or not path:
        return
    deadline = None if seconds is None else time.monotonic() + seconds
    try:
        # non-blocking: opening a FIFO with no writer would wait for ever
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except (OSError, ValueError):  # ValueError: no file name (a NUL, a lone surrogate)
        return
    try:
        with os.fdopen(fd, "rb") as handle:
            status = os.fstat(handle.fileno())
            if not stat.S_ISREG(status.st_mode):
                return
            size = status.st_size
            start = offset if 0 <= offset <= size else 0
            start = max(start, size - _FILE_MAX)
            handle.seek(start)
            if start and start != offset:
                handle.readline(_LINE_MAX)  # a partial line
            left = size - handle.tell()
            while left > 0 and (deadline is None or time.monotonic() < deadline):
                line = handle.readline(min(left, _LINE_MAX + 1))
                if not line:
                    return
                left -= len(line)
                if len(line) > _LINE_MAX:
                    while line and not line.endswith(b"\n") and left > 0:
                        line = handle.readline(min(left, _LINE_MAX + 1))  # the rest of it
                        left -= len(line)
                    continue
                try:
                    entry = json.loads(line)
                except (ValueError, RecursionError):
                    continue
                if isinstance(entry, dict):
                    yield cast(dict[str, Any], entry)
    except OSError:
        return
