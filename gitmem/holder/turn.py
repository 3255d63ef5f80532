"""One turn as an adapter hands it to the model: the notices delivered before the call,
the call's answer, and the views the turn opened.

The program call (``run_program``) is offered by an adapter that runs agent programs;
its answer is the program's output, then its uncaught error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gitmem.errors import GitmemError, InternalError
from gitmem.holder.framing import frame_view
from gitmem.holder.tools import ToolResult
from gitmem.sandbox import ProgramResult, View

__all__ = ["PROGRAM_CALL", "PROGRAM_TOOL", "Turn", "program_answer", "view_text"]

PROGRAM_CALL = "run_program"
PROGRAM_TOOL: dict[str, Any] = {
    "name": PROGRAM_CALL,
    "description": (
        "Run a TypeScript program in gitmem's sandbox. It may "
        'import { memories, views } from "gitmem" and any loaded code memory; '
        "memories offers your memory calls in camel case. Returns what it printed."
    ),
    "input_schema": {
        "type": "object",
        "properties": {"source": {"type": "string", "description": "The program's source."}},
        "required": ["source"],
        "additionalProperties": False,
    },
}
"""The program call's tool definition, for an adapter that offers it."""
PROGRAM_ARGUMENTS = "run_program takes one argument, `source`: the program's text"


@dataclass(frozen=True)
class Turn:
    """What one turn gave, in the order the model is to see it."""

    notices: str | None
    """What other holders changed since the last turn, delivered once (``None``: nothing)."""
    result: ToolResult | None
    """The call's answer (``None`` for a turn whose calls were made elsewhere)."""
    views: tuple[View, ...] = ()
    """The views the turn opened: load documentation, the program's, the onUse scripts'."""
    program: ProgramResult | None = None
    """A program call's full result, when the program ran."""
    error: GitmemError | None = None
    """What stopped a program call from running (a refusal, or the sandbox's own
    failure); the answer's text says it to the model."""
    defect: InternalError | None = None
    """The sandbox failure that stopped the turn's onUse scripts; never shown to the model."""
    commit: str | None = None
    """The store commit the turn read: the head as its call began (``None`` before the
    store's first commit); a read ``--at`` it sees what the call saw."""
    span: tuple[str | None, str] | None = None
    """The commits the turn's notices cover, ``(from, to)``: those after ``from``
    (``None``: from the first) up to ``to``; ``None`` when there are no notices."""

    def texts(self) -> list[str]:
        """The turn's text blocks: the notices, the call's answer, then each view."""
        texts = [self.notices] if self.notices else []
        if self.result is not None:
            texts.append(self.result.text)
        texts.extend(view_text(v.title, v.text) for v in self.views)
        return texts


def view_text(title: str, text: str) -> str:
    """A view as the model reads it: framed, so no text inside can pass for a notice or
    another view."""
    return frame_view(title, text)


def program_answer(result: ProgramResult) -> ToolResult:
    """A program's run as a call's answer: what it printed, then its uncaught error."""
    text = result.output
    if result.error:
        text += ("" if not text or text.endswith("\n") else "\n") + f"Error: {result.error}"
    kind = "ok" if result.ok else "invalid-argument"
    return ToolResult(result.ok, kind, text or "(the program printed nothing)")


def program_failure(error: GitmemError) -> ToolResult:
    """A program call that could not run, as its answer."""
    if isinstance(error, InternalError):
        text = f"gitmem's sandbox failed (its own defect, not your program): {error}"
        return ToolResult(False, error.kind, text)
    return ToolResult.refusal(error)
