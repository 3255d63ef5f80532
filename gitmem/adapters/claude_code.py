"""``gitmem hook claude-code <event>``: a holder's moments in Claude Code's life cycle.

Each hook is a short process: it reads Claude Code's event JSON on stdin and writes
what the event takes on stdout. The fields relied on (Claude Code's hook input):
``session_id``, ``hook_event_name``, ``cwd``, ``transcript_path``; ``source``
(``startup``, ``resume``, ``clear``, ``compact``) for SessionStart, ``prompt`` for
UserPromptSubmit, ``trigger`` (``manual``, ``auto``) for PreCompact.

- ``session-start``: the first turn, or (source ``compact``) the compaction boundary:
  the pinned block is (re)built, pending notices are swept, and the system-prompt
  section, the block and the names of the memory tools go out as ``additionalContext``
  (views waiting from the last turn too, and, after a memory compaction, the request),
  followed by what each of :data:`CONTEXT_PROVIDERS` adds (the observation log's
  panel, then the recall block of :mod:`gitmem.observe.recall`).
- ``user-prompt-submit``: views waiting since the last Stop, then pending notices,
  once, as ``additionalContext``.
- ``pre-compact``: when the profile is configured for memory compaction, the
  memory-compaction request as plain stdout, which Claude Code hands the compaction as its instructions
  (PreCompact accepts no ``hookSpecificOutput``); it is said again after the boundary.
- ``stop``: the end of the turn: the code memories the turn read (found in the
  transcript since the prompt) have their onUse run; the views wait for the next turn.
- ``session-end``: a retain run is started in the background (when recall is enabled)
  and the hook returns at once (see :mod:`gitmem.observe.retain`).

State kept between hook processes lives in the repository, one small JSON file per
session under ``gitmem/claude-code/`` (see :class:`Session`). The notice watermark is
the holder's own marker ref, shared with the MCP server of the same instance, so a
notice reaches the model once, through whichever comes first.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from gitmem import Provenance, observe
from gitmem.adapters.sessions import (
    INPUT_MAX,
    capability_digest,
    encode_session,
    parse_input,
    session_path,
    transcript_size,
    write_session,
)
from gitmem.adapters.startup import Launch, open_holder
from gitmem.errors import GitmemError, InvalidArgument
from gitmem.holder import Holder, framed
from gitmem.observe.transcripts import json_lines
from gitmem.repository import Repository

__all__ = ["CONTEXT_PROVIDERS", "EVENTS", "ContextProvider", "Session", "hook", "parse_input"]

EVENTS = {
    "session-start": "SessionStart",
    "user-prompt-submit": "UserPromptSubmit",
    "pre-compact": "PreCompact",
    "stop": "Stop",
    "session-end": "SessionEnd",
}
_TRANSCRIPT_SECONDS = 5.0
"""How long a hook may spend reading the transcript."""
CLIENT = "claude-code"
"""The client a hook's writes record, with the session id the hook was handed."""

ContextProvider = Callable[[Repository, dict[str, Any]], str]
"""A part of the session-start context beside the holder's: given the repository and
Claude Code's event, its text ("" for none)."""


def _observer_panel(repo: Repository, data: dict[str, Any]) -> str:
    return observe.start_panel(repo)


def _recall_block(repo: Repository, data: dict[str, Any]) -> str:
    # loaded at session start only: the hooks of every prompt never need it
    from gitmem.observe import recall

    return recall.session_start_block(repo)


CONTEXT_PROVIDERS: list[ContextProvider] = [_observer_panel, _recall_block]
"""What session-start adds after the holder's context, in order; a provider that fails
adds nothing and the others still run."""


def _provided(repo: Repository, data: dict[str, Any]) -> list[str]:
    parts: list[str] = []
    for provider in CONTEXT_PROVIDERS:
        try:
            text = provider(repo, data)
        except GitmemError:
            continue
        if text.strip():
            parts.append(text.rstrip("\n"))
    return parts


@dataclass
class Session:
    """What one Claude Code session's hooks hand each other, kept in
    ``<repository>/gitmem/claude-code/<sha256(session_id)>.json``.

    ``launch``: the options the session bound with (so every hook binds the same
    holder); ``views``: views opened at the last Stop, for the next prompt;
    ``started``: whether the pinned block has been emitted; ``offset``: where the
    transcript stood when the turn's prompt arrived; ``compacting``: a memory
    compaction was asked for and the boundary has not been crossed yet.
    """

    session_id: str
    launch: Launch
    views: list[tuple[str, str]] = field(default_factory=lambda: list[tuple[str, str]]())
    started: bool = False
    offset: int = 0
    compacting: bool = False

    bound: dict[str, str] | None = None
    """What the last hook bound: the repository's folder, the store, the instance and a
    digest of the capability's text (see :mod:`gitmem.adapters.sessions`); ``None`` when
    the launch names no capability, or names a store."""

    @staticmethod
    def path(repo: Repository, session_id: str) -> str:
        return session_path(repo.directory, session_id)

    @classmethod
    def load(cls, repo: Repository, session_id: str, launch: Launch) -> Session:
        """The session's state, or a fresh one bound with ``launch``."""
        try:
            with open(cls.path(repo, session_id), "rb") as handle:
                data = json.loads(handle.read(INPUT_MAX))
        except (OSError, ValueError, RecursionError):
            return cls(session_id, launch)
        if not isinstance(data, dict):
            return cls(session_id, launch)
        kept = cast(dict[str, Any], data)
        views: list[tuple[str, str]] = []
        for item in cast(list[Any], kept.get("views") or []):
            pair = cast(list[Any], item) if isinstance(item, list) else []
            if len(pair) == 2:
                views.append((str(pair[0]), str(pair[1])))
        raw_launch = kept.get("launch")
        return cls(
            session_id,
            Launch.from_dict(cast(dict[str, Any], raw_launch))
            if isinstance(raw_launch, dict)
            else launch,
            views,
            kept.get("started") is True,
            offset if isinstance(offset := kept.get("offset"), int) else 0,
            kept.get("compacting") is True,
        )

    def save(self, repo: Repository) -> None:
        """Write the state atomically (a hook killed mid-write leaves the old one)."""
        write_session(
            self.path(repo, self.session_id),
            encode_session(
                self.session_id,
                self.launch.to_dict(),
                [list(v) for v in self.views],
                self.started,
                self.offset,
                self.compacting,
                self.bound,
            ),
        )


def _context(event_name: str, text: str) -> str:
    return json.dumps(
        {"hookSpecificOutput": {"hookEventName": event_name, "additionalContext": text}},
        ensure_ascii=False,
    )


def _tools_line(holder: Holder) -> str:
    offered = holder.offered()
    if not offered:
        return ""
    # Claude Code may defer an MCP server's tools until the agent searches for them
    return (
        "Your memory tools come from the gitmem MCP server: "
        + ", ".join(offered)
        + " (search your tools for these names if they are not listed)."
    )


def _views_text(views: list[tuple[str, str]]) -> str:
    return framed(views)


def _start_text(holder: Holder, session: Session) -> str:
    """The first turn's (or a boundary's) context: prompt section, block, tools."""
    holder.compact()  # build the block, then sweep: what notices announced is in it
    parts = [holder.system_prompt().rstrip("\n")]
    block = holder.pinned_block()
    if block:
        parts.append(block.rstrip("\n"))
    tools = _tools_line(holder)
    if tools:
        parts.append(tools)
    if session.views:
        parts.append(_views_text(session.views))
        session.views = []
    session.started = True
    return "\n\n".join(parts)


def hook(event: str, text: str, repo: Repository, launch: Launch) -> str:
    """Run one hook: ``text`` is its stdin; returns its stdout ("" for nothing)."""
    name = EVENTS.get(event)
    if name is None:
        raise InvalidArgument(f"unknown event {event!r}; use one of {', '.join(EVENTS)}")
    data = parse_input(text)
    if event == "session-end":
        from gitmem.observe import retain

        retain.session_end(repo, data.get("transcript_path"), data.get("cwd"))
        return ""  # the run goes on in the background; the session's end never waits
    session = Session.load(repo, data["session_id"], launch)
    if event == "session-start" and data.get("source") in ("startup", "clear", None):
        session = Session(session.session_id, launch)
    digest = capability_digest(session.launch.capability)
    holder = open_holder(repo, session.launch, Provenance(session.session_id, CLIENT))
    try:
        out = _run(event, name, data, session, holder, repo)
    finally:
        holder.close()
    session.bound = _bound(repo, session.launch, holder, digest)
    session.save(repo)
    return out


def _bound(
    repo: Repository, launch: Launch, holder: Holder, digest: str | None
) -> dict[str, str] | None:
    """What ``holder`` was bound with, for the next prompt to see unchanged: ``None`` if
    the capability's text changed while it bound (or there is none), or the launch
    names a store."""
    if digest is None or launch.store is not None or capability_digest(launch.capability) != digest:
        return None
    return {
        "directory": repo.directory,
        "store": holder.store_id,
        "instance": holder.agent.instance,
        "capability": digest,
    }


def _run(
    event: str, name: str, data: dict[str, Any], session: Session, holder: Holder, repo: Repository
) -> str:
    if event == "session-start":
        text = "\n\n".join([_start_text(holder, session), *_provided(repo, data)])
        if session.compacting and data.get("source") == "compact":
            text += "\n\n" + holder.memory_compaction_prompt()
        session.compacting = False
        return _context(name, text)
    if event == "user-prompt-submit":
        parts: list[str] = []
        if not session.started:  # installed mid-session: this is its first turn
            parts.append(_start_text(holder, session))
        if session.views:
            parts.append(_views_text(session.views))
            session.views = []
        notice = holder.notices()
        if notice:
            parts.append(framed(notices=[(notice, holder.notice_span)]))
        session.offset = transcript_size(data.get("transcript_path"))
        return _context(name, "\n\n".join(parts)) if parts else ""
    if event == "pre-compact":
        if session.launch.compaction != "memory":
            return ""
        session.compacting = True
        return holder.memory_compaction_prompt() + "\n"
    # stop: the end of the turn
    for slug in _read_slugs(data.get("transcript_path"), session.offset):
        if "read_memory" in holder.offered():
            holder.call("read_memory", {"name": slug})
    holder.take_views()  # load documentation: the agent saw the memory when it read it
    turn = holder.turn(notices=False)  # their notices wait for the next prompt
    if turn.defect is not None:
        raise turn.defect
    session.views.extend((v.title, v.text) for v in turn.views)
    session.offset = transcript_size(data.get("transcript_path"))
    return ""


def _read_slugs(path: object, offset: int) -> list[str]:
    """The memories the turn read: ``read_memory`` calls in the transcript since
    ``offset`` (tool names end in ``read_memory``, MCP-prefixed or not)."""
    slugs: dict[str, None] = {}
    for entry in json_lines(path, offset, seconds=_TRANSCRIPT_SECONDS):
        message = entry.get("message")
        if not isinstance(message, dict):
            continue
        content = cast(dict[str, Any], message).get("content")
        if not isinstance(content, list):
            continue
        for item in cast(list[Any], content):
            if not isinstance(item, dict):
                continue
            use = cast(dict[str, Any], item)
            tool = use.get("name")
            args = use.get("input")
            if (
                use.get("type") == "tool_use"
                and isinstance(tool, str)
                and (tool == "read_memory" or tool.endswith("__read_memory"))
                and isinstance(args, dict)
            ):
                slug = cast(dict[str, Any], args).get("name")
                if isinstance(slug, str):
                    slugs[slug] = None
    return list(slugs)
