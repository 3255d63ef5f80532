"""Searching the observation log: ``mem_search`` and ``mem_read``.

``mem_search`` splits the session files into their blocks (a file over 1 MB is passed
over, and the oldest past the index's bounds; the block index, :mod:`gitmem.observe.blocks`, keeps what it needs of them) and
scores each against the query's words: a word in the title counts 3, in the
keywords 2, anywhere else in the block 1 (at most 5 times); a block holding every word
gets half again. The best blocks then pass a relevance gate: the gate model (the
``gate-model`` setting) rates each from 0 to 1 and those under the threshold (default
0.6) go; with no gate model configured, or one that fails, the score filter keeps the
blocks scoring at least half the best. Results come back as XML::

    <memory_results query="auth token refresh" count="1">
      <result>
        <id>obs-9f3a1b</id>
        <type>bugfix</type>
        <title>Fixed auth token refresh</title>
        <date>2026-10-03T14:28</date>
        <file>2026-10-03.md</file>
        <snippet>The refresh endpoint rejected expired refresh tokens with a 401...</snippet>
      </result>
    </memory_results>

``mem_read(id)`` returns an entry's block exactly as its session file holds it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from xml.sax.saxutils import escape, quoteattr

from gitmem.errors import GitmemError, InvalidArgument, NotFound
from gitmem.observe.blocks import FILE_MAX, index_of
from gitmem.observe.config import ObserverConfig
from gitmem.observe.entries import SUMMARY_FIELDS
from gitmem.observe.logbook import ObservationLog
from gitmem.observe.model import Model
from gitmem.observe.prompts import prompt

__all__ = ["FILE_MAX", "Hit", "gate", "mem_read", "mem_search", "score_filter"]

QUERY_MAX = 500
TERMS_MAX = 16
SNIPPET = 160
_WORD = re.compile(r"[0-9a-z]{2,}")
_ID = re.compile(r"(?:obs|sum)-[0-9a-f]{6}")


@dataclass(frozen=True)
class Hit:
    """One scored block."""

    id: str
    kind: str
    title: str
    date: str
    file: str
    snippet: str
    score: float


def _score(tallies: list[dict[int, list[int]]], block: int) -> float:
    """A block's score: a word in its title counts 3, in its keywords 2, anywhere in it
    once per time it appears (at most 5); every word present gets half again."""
    score = 0.0
    every = True
    for tally in tallies:
        found = tally.get(block)
        if found is None:
            every = False
            continue
        score += min(found[0], 5) + 3 * found[1] + 2 * (found[2] != 0)
    return score * 1.5 if every and score else score


def _hit(file: str, block: str, score: float) -> Hit:
    heading, _, rest = block.partition("\n")
    block_id, _, after_id = heading[3:].partition(" ")
    kind = ""
    if after_id.startswith("["):
        kind, _, after_id = after_id[1:].partition("]")
    title, _, stamp = after_id.strip().rpartition(" — ")
    meta, _, narrative = rest.partition("\n\n")
    if kind == "summary" and not narrative.strip():
        narrative = " ".join(
            line[2:]
            for line in meta.splitlines()
            if line[2:].split(":", 1)[0] in SUMMARY_FIELDS and line.split(":", 1)[-1].strip()
        )
    narrative = " ".join(narrative.split())
    snippet = narrative[:SNIPPET] + ("..." if len(narrative) > SNIPPET else "")
    return Hit(block_id, kind, title or after_id.strip(), stamp[:16], file, snippet, score)


def _terms(query: str) -> list[str]:
    return list(dict.fromkeys(_WORD.findall(query[:QUERY_MAX].lower())))[:TERMS_MAX]


def score_filter(hits: list[Hit]) -> list[Hit]:
    """The hits scoring at least half the best one."""
    if not hits:
        return []
    best = max(h.score for h in hits)
    return [h for h in hits if h.score >= best / 2]


def gate(model: Model, query: str, hits: list[Hit], threshold: float) -> list[Hit]:
    """The hits a gate model rates at ``threshold`` or more (raises if it cannot run)."""
    asked = f"query: {query}\n\n" + "\n".join(
        f"{n}: [{h.kind}] {h.title} — {h.snippet}" for n, h in enumerate(hits, 1)
    )
    rated: dict[int, float] = {}
    for line in model.complete(prompt("gate").text, asked)[:16384].splitlines():
        number, colon, value = line.partition(":")
        if not colon:
            continue
        try:
            rated[int(number.strip())] = float(value.strip().split()[0])
        except (ValueError, IndexError):
            continue
    if not rated:
        raise InvalidArgument("the gate model's answer rated no result")
    return [h for n, h in enumerate(hits, 1) if rated.get(n, 0.0) >= threshold]


def _check_limit(limit: object, config: ObserverConfig) -> int:
    if limit is None:
        return config.max_results
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 10:
        raise InvalidArgument("limit must be a whole number from 1 to 10")
    return limit


def _check_query(query: object) -> str:
    if not isinstance(query, str) or not query.strip():
        raise InvalidArgument("give a query: the words to look for")
    return query


def search_hits(
    log: ObservationLog,
    query: object,
    limit: object = None,
    *,
    config: ObserverConfig | None = None,
    model: Model | None = None,
) -> list[Hit]:
    """The gated hits for ``query``, best first, at most ``limit``."""
    config = config or ObserverConfig.from_settings({})
    count = _check_limit(limit, config)
    query = _check_query(query)
    terms = _terms(query)
    index = index_of(log.repo, log.store) if terms else None
    scored: list[Hit] = []
    if index is not None:
        tallies = [index.tallies(term) for term in terms]
        held = set[int]().union(*tallies)
        found = [(_score(tallies, b), index.name(b), index.block_start[b], b) for b in held]
        found.sort(reverse=True)  # best, then the newest file, then the latest block
        scored = [_hit(name, index.text(b), score) for score, name, _, b in found[: count * 3]]
    if config.gate == "off":
        return scored[:count]
    gate_model = model
    if gate_model is None and config.gate in ("auto", "model") and scored:
        try:
            gate_model = config.gate_model()
        except GitmemError:
            gate_model = None
    if gate_model is not None and config.gate != "score" and scored:
        try:
            return gate(gate_model, query, scored, config.threshold)[:count]
        except GitmemError:
            pass  # the gate cannot run: the score filter instead
    return score_filter(scored)[:count]


_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
"""What XML 1.0 cannot hold (a model, or a hand, may have written it into the log)."""


def results_xml(query: str, hits: list[Hit]) -> str:
    """The XML answer of a search: well-formed whatever the log holds."""
    query = _NOT_XML.sub("", query[:QUERY_MAX])
    lines = [f'<memory_results query={quoteattr(query)} count="{len(hits)}">']
    for hit in hits:
        lines.append("  <result>")
        for tag, value in (
            ("id", hit.id),
            ("type", hit.kind),
            ("title", hit.title),
            ("date", hit.date),
            ("file", hit.file),
            ("snippet", hit.snippet),
        ):
            lines.append(f"    <{tag}>{escape(_NOT_XML.sub('', value))}</{tag}>")
        lines.append("  </result>")
    lines.append("</memory_results>")
    return "\n".join(lines) + "\n"


def mem_search(
    log: ObservationLog,
    query: object,
    limit: object = None,
    *,
    config: ObserverConfig | None = None,
    model: Model | None = None,
) -> str:
    """Search the observation log; the results as XML (see the module's docstring)."""
    checked = _check_query(query)
    return results_xml(checked, search_hits(log, checked, limit, config=config, model=model))


def mem_read(log: ObservationLog, entry_id: object) -> str:
    """The block of entry ``entry_id`` (``obs-`` or ``sum-`` and six hex digits)."""
    if not isinstance(entry_id, str) or not _ID.fullmatch(entry_id):
        raise InvalidArgument("an entry id is obs- or sum- and six hex digits, e.g. obs-9f3a1b")
    found = log.read(entry_id)
    if found is None:
        raise NotFound(f"there is no entry {entry_id} in the observation log")
    return found + "\n"
