"""The steps that turn a finished run into the observation log.

A :class:`Run` is what the recorder captured of one agent's run: the user's prompt,
each tool call with its result, the final message. Three model calls follow, each with
its versioned prompt and each written as its own commit:

1. the **observer** distils the tool calls into observations;
2. the **summarizer** writes the run's summary;
3. the **librarian** folds what was new into the four curated files (unless
   consolidation is off), keeping each bullet's source ids; the ``[global]`` lessons its
   answer adds go to the user's own store.

Payloads are clamped again here, before any model call, whatever fed the run. A step
that fails (the model, or a screen refusing its output, such as a secret) is one line
in the log and writes nothing; the steps after it still run.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from gitmem.errors import GitmemError
from gitmem.holder.framing import frame_key
from gitmem.observe import answers
from gitmem.observe.capture import INPUT_MAX, OUTPUT_MAX, PROMPT_MAX, clamp, skipped, strip_private
from gitmem.observe.config import ObserverConfig
from gitmem.observe.entries import Entry
from gitmem.observe.logbook import (
    ObservationLog,
    Trail,
    add_global_lessons,
    clamp_curated,
    global_lessons,
)
from gitmem.observe.model import Model
from gitmem.observe.prompts import prompt
from gitmem.trailers import provenance_value

__all__ = ["Done", "Run", "ToolCall", "observe_run", "payload"]

_IDS = re.compile(r"\b(?:obs|sum)-[0-9a-f]{6}\b")


@dataclass(frozen=True)
class ToolCall:
    """One tool call of a run and its result."""

    name: str
    input: str
    output: str
    id: str = ""


@dataclass
class Run:
    """One agent's finished run."""

    session: str
    agent: str = "main"
    prompt: str = ""
    tools: list[ToolCall] = field(default_factory=lambda: list[ToolCall]())
    final: str = ""
    ended: float = 0.0
    """When it finished (seconds since the epoch; 0: now)."""
    mark: tuple[str, int] | None = field(default=None, compare=False, repr=False)
    """Where a worker took it from: its spool and where it ends there."""

    def stamp(self) -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.ended or time.time()))


@dataclass
class Done:
    """What the steps of one run stored, and what each failure said."""

    observations: list[Entry] = field(default_factory=lambda: list[Entry]())
    summary: Entry | None = None
    curated: list[str] = field(default_factory=lambda: list[str]())
    global_lessons: int = 0
    problems: list[str] = field(default_factory=lambda: list[str]())


def framed(tag: str, text: str, **attributes: str) -> str:
    """``text`` in a ``tag`` frame that nothing inside can end early or pass for: the
    frame's ``key`` is a digest of all it holds (to close it, a text would have to hold
    the digest of itself), and each attribute is a JSON string on one line. What a tool
    printed, or a teammate pushed, is framed so before any model reads it."""
    shown = "".join(f" {name}={json.dumps(value)}" for name, value in attributes.items())
    key = frame_key(tag, shown, text)  # as views' and notices' frames are keyed
    return f'<{tag} key="{key}"{shown}>\n{text}\n</{tag} key="{key}">'


def payload(run: Run) -> str:
    """What the model steps read about ``run``: every part clamped, private parts cut,
    each framed (:func:`framed`)."""
    parts = [f"session: {run.session}\nagent: {run.agent}"]
    if run.prompt:
        parts.append(framed("user_prompt", clamp(strip_private(run.prompt), PROMPT_MAX)))
    for call in run.tools:
        given = framed("input", clamp(strip_private(call.input), INPUT_MAX))
        printed = framed("output", clamp(strip_private(call.output), OUTPUT_MAX))
        parts.append(framed("tool_call", f"{given}\n{printed}", id=call.id, name=call.name))
    if run.final:
        parts.append(framed("final_message", clamp(strip_private(run.final), PROMPT_MAX)))
    return "\n\n".join(parts) + "\n"


def observe_run(
    log: ObservationLog,
    model: Model,
    run: Run,
    config: ObserverConfig,
    *,
    say: Callable[[str], None] = lambda _: None,
    user_repo: str | None = None,
) -> Done:
    """Run the observer, the summarizer and the librarian over ``run``."""
    done = Done()
    # the harness's names for the run: one printable line each, as every trailer holds them
    run.session, run.agent = provenance_value(run.session), provenance_value(run.agent) or "main"
    run.tools = [
        replace(t, name=provenance_value(t.name), id=provenance_value(t.id))
        for t in run.tools
        if not skipped(t.name, config.skip_tools)
    ]
    if not run.tools and not run.prompt:  # a final message alone: nothing was done
        return done
    text = payload(run)
    stamp = run.stamp()
    calls = tuple(t.id for t in run.tools if t.id)

    def step(name: str, work: Callable[[], None]) -> None:
        try:
            work()
        except GitmemError as exc:
            problem = f"{name}: {exc} (session {run.session}); nothing written"
            done.problems.append(problem)
            say(problem)

    def observer() -> None:
        used = prompt("observer")
        found = answers.observations(
            model.complete(used.text, text),
            session=run.session,
            agent=run.agent,
            time=stamp,
            sources=calls,
        )
        sources = tuple(dict.fromkeys(e.source for e in found if e.source))
        trail = Trail(run.session, model.name, used.label, sources)
        done.observations = log.add(found, "observer", trail)

    def summarizer() -> None:
        used = prompt("summarizer")
        found = answers.summary(
            model.complete(used.text, text), session=run.session, agent=run.agent, time=stamp
        )
        if found is not None:
            trail = Trail(run.session, model.name, used.label, calls)
            stored = log.add([found], "summarizer", trail)
            done.summary = stored[0] if stored else None

    def librarian() -> None:
        new = [*done.observations, *([done.summary] if done.summary else [])]
        if not new:
            return
        used = prompt("librarian")
        held = log.curated()
        asked = "".join(framed("file", t, name=n) + "\n" for n, t in held.items())
        asked += "\n" + framed("new_entries", "\n".join(e.block() for e in new)) + "\n"
        files = {  # as they will be written: what a cap cuts is dropped too
            name: clamp_curated(name, text)
            for name, text in answers.curated_files(model.complete(used.text, asked)).items()
        }
        if not files:
            problem = "librarian: the model gave no curated files; they stay as they were"
            done.problems.append(problem)
            say(problem)
            return
        merged = {**held, **files}
        lost = tuple(sorted(_ids("".join(held.values())) - _ids("".join(merged.values()))))
        trail = Trail(run.session, model.name, used.label, tuple(e.id for e in new), lost)
        if lost:
            say(f"librarian: dropped the lines of {', '.join(lost)} (session {run.session})")
        done.curated = log.set_curated(merged, trail)
        # only what this answer taught anew: a lesson the log held already may have come
        # with a teammate's commit, and the user's store is read by every project
        known = set(global_lessons(held.get("lessons.md", "")))
        taught = [ln for ln in global_lessons(files.get("lessons.md", "")) if ln not in known]
        done.global_lessons = add_global_lessons(
            taught, trail, user_repo, project=log.repo.directory
        )

    step("observer", observer)
    step("summarizer", summarizer)
    if config.consolidate:
        step("librarian", librarian)
    return done


def _ids(text: str) -> set[str]:
    return set(_IDS.findall(text))
