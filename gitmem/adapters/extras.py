"""The error an adapter gives when its optional packages are not installed."""

from __future__ import annotations

__all__ = ["missing_extra"]


def missing_extra(extra: str, exc: ImportError) -> ImportError:
    """The error for an adapter whose optional packages are not installed: which extra
    to install, and what was missing."""
    return ImportError(
        f"gitmem's {extra} adapter needs the {extra} extra: "
        f"pip install 'gitmem-agent[{extra}]' ({exc})"
    )
