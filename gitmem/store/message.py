"""Commit messages: ``<op> <slug>``, a blank line, then ``Gitmem-*`` trailers.

The trailers carry the slug, op, per-slug revision and the running totals and peaks,
so the head commit alone answers "what is the state and what were the peaks".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gitmem.types import OPS, Op, Totals


@dataclass(frozen=True)
class Facts:
    """What one gitmem commit says about itself."""

    slug: str
    op: Op
    revision: int
    totals: Totals
    peaks: Totals
    extra: Mapping[str, str]


_KEYS = {
    "Gitmem-Slug",
    "Gitmem-Op",
    "Gitmem-Revision",
    "Gitmem-Count",
    "Gitmem-Chars",
    "Gitmem-Lines",
    "Gitmem-Peak-Count",
    "Gitmem-Peak-Chars",
    "Gitmem-Peak-Lines",
}


def format_message(facts: Facts) -> bytes:
    lines = [
        f"{facts.op} {facts.slug}",
        "",
        f"Gitmem-Slug: {facts.slug}",
        f"Gitmem-Op: {facts.op}",
        f"Gitmem-Revision: {facts.revision}",
        f"Gitmem-Count: {facts.totals.count}",
        f"Gitmem-Chars: {facts.totals.chars}",
        f"Gitmem-Lines: {facts.totals.lines}",
        f"Gitmem-Peak-Count: {facts.peaks.count}",
        f"Gitmem-Peak-Chars: {facts.peaks.chars}",
        f"Gitmem-Peak-Lines: {facts.peaks.lines}",
    ]
    for key, value in facts.extra.items():
        lines.append(f"{key}: {' '.join(value.split())}")
    return ("\n".join(lines) + "\n").encode()


def parse_message(message: bytes) -> Facts | None:
    """The facts of a gitmem commit, or ``None`` for a commit gitmem did not make."""
    trailers: dict[str, str] = {}
    for line in message.decode("utf-8", "replace").splitlines():
        key, sep, value = line.partition(": ")
        if sep and key.startswith("Gitmem-"):
            trailers[key] = value
    try:
        op = trailers["Gitmem-Op"]
        if op not in OPS:
            return None
        numbers = [
            int(trailers[k])
            for k in (
                "Gitmem-Revision",
                "Gitmem-Count",
                "Gitmem-Chars",
                "Gitmem-Lines",
                "Gitmem-Peak-Count",
                "Gitmem-Peak-Chars",
                "Gitmem-Peak-Lines",
            )
        ]
        slug = trailers["Gitmem-Slug"]
    except (KeyError, ValueError):
        return None
    return Facts(
        slug=slug,
        op=op,
        revision=numbers[0],
        totals=Totals(*numbers[1:4]),
        peaks=Totals(*numbers[4:7]),
        extra={k: v for k, v in trailers.items() if k not in _KEYS},
    )
