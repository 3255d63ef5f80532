"""The ``Gitmem-Capability`` trailer: the strategy and limits a binding wrote under.

Every commit a holder makes records it, so an operator's edit, a console, or a
pre-receive hook can hold later writes to the same limits without a capability file
and without starting a sandbox::

    Gitmem-Capability: markdown maxCount=0 maxLenPerMemory=2000 maxTotalLen=0 ...

The store's own trailers (slug, op, revision, totals, peaks) are ``gitmem.store``'s.
"""

from __future__ import annotations

from collections.abc import Mapping

from gitmem.limits import LIMITS, Limits

__all__ = ["CAPABILITY_TRAILER", "WIDEN_TRAILER", "capability_trailer", "read_capability_trailer"]

CAPABILITY_TRAILER = "Gitmem-Capability"
WIDEN_TRAILER = "Gitmem-Widen"
"""Names the limits an operator loosened on purpose (``gitmem set-limits --widen``)."""


def capability_trailer(implementation: str, limits: Limits) -> dict[str, str]:
    """The trailer recording ``implementation`` and ``limits``, ready for a commit."""
    params = " ".join(f"{k}={v}" for k, v in limits.as_params().items())
    return {CAPABILITY_TRAILER: f"{implementation} {params}"}


def read_capability_trailer(trailers: Mapping[str, str]) -> tuple[str, Limits] | None:
    """The strategy name and limits a commit's trailers record (``None``: none, or odd)."""
    text = trailers.get(CAPABILITY_TRAILER)
    if text is None:
        return None
    name, _, rest = text.partition(" ")
    params: dict[str, int] = {}
    for part in rest.split():
        key, sep, value = part.partition("=")
        if not sep or key not in LIMITS or not value.isdigit() or len(value) > 18:
            return None
        params[key] = int(value)
    if not name:
        return None
    return name, Limits.from_params(params)
