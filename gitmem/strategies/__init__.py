"""The memory strategies, registered by name.

A strategy is one module that defines a class meeting :class:`Strategy`; one line in the
registry's built-in list (or a call to :func:`register`) makes it bindable: the
capability, the holder, the CLI and telemetry find it here and nowhere else.
"""

from __future__ import annotations

from gitmem.strategies.base import AgentVoice, Desk, PromptContext, Strategy, Tool
from gitmem.strategies.registry import get, names, register

__all__ = ["AgentVoice", "Desk", "PromptContext", "Strategy", "Tool", "get", "names", "register"]
