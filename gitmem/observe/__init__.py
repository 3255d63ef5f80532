"""Memory that writes itself: an observer watches agent runs and keeps a log.

A harness (or the Claude Code plugin's hooks) feeds a :class:`Recorder` each agent's
events; the recorder appends them to a bounded spool and returns. A background worker
hands each finished run to the model steps (the observer, the summarizer and the
librarian, each a :class:`Model` call with a versioned prompt) and writes what they
answer to the project's observation log, one commit per step. At the next run's start
:func:`panel` gives the agent a compact view of it; :func:`mem_search` and
:func:`mem_read` answer questions about it on demand.

Names are imported when first used, so the capture hook, which imports only
:mod:`gitmem.observe.capture`, stays a small process.
"""

from __future__ import annotations

from gitmem.lazy import on_first_use

TYPE_CHECKING = False  # typing is not loaded at run time: the capture hook loads this module

if TYPE_CHECKING:
    from gitmem.observe.capture import Recorder, strip_private
    from gitmem.observe.config import ObserverConfig, configure, read_config
    from gitmem.observe.entries import Entry
    from gitmem.observe.logbook import ObservationLog
    from gitmem.observe.model import (
        RUN_MARK,
        AnthropicModel,
        CommandModel,
        Model,
        ModelFailed,
        ScriptedModel,
        model_from_config,
        observer_run,
    )
    from gitmem.observe.panel import panel, start_panel
    from gitmem.observe.pipeline import Run, ToolCall, observe_run
    from gitmem.observe.prompts import Prompt, prompt
    from gitmem.observe.search import mem_read, mem_search
    from gitmem.observe.tools import TOOL_NAMES, TOOLS, call_tool
    from gitmem.observe.worker import Worker

_LAZY = {
    "Recorder": "gitmem.observe.capture",
    "strip_private": "gitmem.observe.capture",
    "Entry": "gitmem.observe.entries",
    "ObservationLog": "gitmem.observe.logbook",
    "panel": "gitmem.observe.panel",
    "start_panel": "gitmem.observe.panel",
    "Run": "gitmem.observe.pipeline",
    "ToolCall": "gitmem.observe.pipeline",
    "observe_run": "gitmem.observe.pipeline",
    "mem_read": "gitmem.observe.search",
    "mem_search": "gitmem.observe.search",
    "Worker": "gitmem.observe.worker",
    "TOOLS": "gitmem.observe.tools",
    "TOOL_NAMES": "gitmem.observe.tools",
    "call_tool": "gitmem.observe.tools",
    "ObserverConfig": "gitmem.observe.config",
    "configure": "gitmem.observe.config",
    "read_config": "gitmem.observe.config",
    "RUN_MARK": "gitmem.observe.model",
    "AnthropicModel": "gitmem.observe.model",
    "CommandModel": "gitmem.observe.model",
    "Model": "gitmem.observe.model",
    "ModelFailed": "gitmem.observe.model",
    "ScriptedModel": "gitmem.observe.model",
    "model_from_config": "gitmem.observe.model",
    "observer_run": "gitmem.observe.model",
    "Prompt": "gitmem.observe.prompts",
    "prompt": "gitmem.observe.prompts",
}


__getattr__, __dir__ = on_first_use(globals(), _LAZY)


__all__ = [
    "RUN_MARK",
    "TOOLS",
    "TOOL_NAMES",
    "AnthropicModel",
    "CommandModel",
    "Entry",
    "Model",
    "ModelFailed",
    "ObservationLog",
    "ObserverConfig",
    "Prompt",
    "Recorder",
    "Run",
    "ScriptedModel",
    "ToolCall",
    "Worker",
    "call_tool",
    "configure",
    "mem_read",
    "mem_search",
    "model_from_config",
    "observe_run",
    "observer_run",
    "panel",
    "prompt",
    "read_config",
    "start_panel",
    "strip_private",
]
