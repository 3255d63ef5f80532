"""The memories capability's launch configuration, read exactly as a launcher writes it.

    {"id": "memories", "enabled": true, "implementation": "markdown",
     "params": {"scope": "isolated", "maxCount": 64, "maxLenPerMemory": 0,
                "maxTotalLen": 0, "maxLenIndex": 4096, "maxLenDescription": 256,
                "maxResults": 25},
     "features": {"reviseMemories": true, "review": false}}

With ``review`` on, the holder's writes wait on a proposal of their own until an
operator approves them (see :mod:`gitmem.review`). Every problem in a configuration is collected and refused at once in one
``LaunchRefused``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, cast

from gitmem.errors import LaunchRefused
from gitmem.limits import LIMITS, Limits

if TYPE_CHECKING:
    # the strategies are imported where a capability is checked or used: a command that
    # only reads memories loads none of them (tests/test_cold.py holds this)
    from gitmem.strategies import Strategy

__all__ = ["SCOPES", "Capability", "Scope"]

Scope = Literal["isolated", "shared", "inherited", "read-only"]
SCOPES: tuple[Scope, ...] = ("isolated", "shared", "inherited", "read-only")
_FEATURES = {"reviseMemories", "review"}
_KEYS = {"id", "enabled", "implementation", "params", "features"}


@dataclass(frozen=True)
class Capability:
    """A memories capability as configured for one agent profile."""

    implementation: str
    """The strategy's registered name (``markdown``, ``scratchpad``, ...)."""
    scope: Scope
    limits: Limits
    enabled: bool = True
    revise_memories: bool = True
    review: bool = False
    """Whether the holder's writes await an operator's review on a proposal."""
    raw: Mapping[str, Any] = field(default_factory=lambda: dict[str, Any](), compare=False)

    @classmethod
    def from_json(cls, text: str) -> Capability:
        """Read a configuration from JSON text."""
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise LaunchRefused([f"the configuration is not valid JSON: {exc}"]) from None
        except RecursionError:
            raise LaunchRefused(
                ["the configuration is not valid JSON: it is nested too deeply"]
            ) from None
        return cls.from_dict(data)

    @classmethod
    def from_dict(cls, data: object) -> Capability:
        """Read a configuration; raise ``LaunchRefused`` naming every problem at once."""
        if not isinstance(data, dict):
            raise LaunchRefused(["the configuration must be a JSON object"])
        config = cast(dict[str, Any], data)
        problems: list[str] = []
        enabled = config.get("enabled", True)
        if not isinstance(enabled, bool):
            problems.append(f"enabled must be true or false, not {enabled!r}")
            enabled = True
        if config.get("id", "memories") != "memories":
            problems.append(f'id must be "memories", not {config.get("id")!r}')
        for key in sorted(set(config) - _KEYS):
            problems.append(f"unknown key {key!r}; the keys are {', '.join(sorted(_KEYS))}")

        from gitmem import strategies

        implementation = config.get("implementation")
        known = strategies.names()
        if implementation not in known and enabled:
            named = "no implementation" if implementation is None else repr(implementation)
            problems.append(
                f"{named} is not a memory implementation; name one of {', '.join(known)}"
            )

        raw_params = config.get("params", {})
        if not isinstance(raw_params, dict):
            problems.append("params must be an object")
            raw_params = {}
        params = cast(dict[str, Any], raw_params)
        scope = params.get("scope")
        if scope not in SCOPES and enabled:
            named = "no scope" if scope is None else f"scope {scope!r}"
            problems.append(
                f"{named} is not a scope; use one of isolated, shared, inherited, read-only"
            )
        counts: dict[str, int] = {}
        for name in LIMITS:
            if name not in params:
                if enabled:
                    problems.append(f"param {name} is missing; write all six limits (0 = off)")
                continue
            value = params[name]
            count = _whole(value)
            if count is None:
                problems.append(f"param {name} must be a whole count, not {value!r}")
            elif count < 0:
                problems.append(f"param {name} must not be negative ({count}); 0 turns it off")
            else:
                counts[name] = count
        for name in sorted(set(params) - {"scope", *LIMITS}):
            problems.append(f"unknown param {name!r}; the params are scope and {', '.join(LIMITS)}")

        raw_features = config.get("features", {})
        if not isinstance(raw_features, dict):
            problems.append("features must be an object")
            raw_features = {}
        features = cast(dict[str, Any], raw_features)
        revise = features.get("reviseMemories", True)
        if not isinstance(revise, bool):
            problems.append(f"feature reviseMemories must be true or false, not {revise!r}")
            revise = True
        review = features.get("review", False)
        if not isinstance(review, bool):
            problems.append(f"feature review must be true or false, not {review!r}")
            review = False
        for name in sorted(set(features) - _FEATURES):
            problems.append(f"unknown feature {name!r}; the features are reviseMemories and review")

        if problems:
            raise LaunchRefused(problems)
        return cls(
            implementation=implementation if implementation in known else "markdown",
            scope=scope if scope in SCOPES else "isolated",
            limits=Limits.from_params(counts),
            enabled=enabled,
            revise_memories=revise,
            review=review,
            raw=config,
        )

    @property
    def strategy(self) -> Strategy:
        """The registered strategy this capability names."""
        from gitmem import strategies

        found = strategies.get(self.implementation)
        if found is None:
            raise LaunchRefused(
                [
                    f"{self.implementation!r} is not a memory implementation; name one of "
                    f"{', '.join(strategies.names())}"
                ]
            )
        return found

    def to_dict(self) -> dict[str, Any]:
        """The configuration block, as a launcher writes it."""
        return {
            "id": "memories",
            "enabled": self.enabled,
            "implementation": self.implementation,
            "params": {"scope": self.scope, **self.limits.as_params()},
            "features": {"reviseMemories": self.revise_memories}
            | ({"review": True} if self.review else {}),
        }


def _whole(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None
