"""Claude's memory tool backed by git: ``GitMemoryTool`` and ``AsyncGitMemoryTool``.

Needs the optional ``anthropic`` SDK (``pip install 'gitmem-agent[anthropic]'``); the
implementation is :mod:`gitmem.adapters.anthropic`.
"""

from __future__ import annotations

from gitmem.adapters.anthropic import AsyncGitMemoryTool, GitMemoryTool, MemoryToolError

__all__ = ["AsyncGitMemoryTool", "GitMemoryTool", "MemoryToolError"]
