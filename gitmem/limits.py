"""The limits, and the one place a write is held to them: a memory store's six
(``Limits``, ``check_write``) and a file store's three (``FileLimits``).

A memory's are checked in order: the description first, then the body (and the code
halves), then the aggregates the strategy pins. A breach is refused, never truncated,
and the refusal names the limit, the figure the write would reach and the fix.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from gitmem.errors import InvalidArgument, LimitExceeded
from gitmem.types import Memory, Totals

__all__ = [
    "CODE_MAX",
    "LIMITS",
    "Baseline",
    "Excess",
    "FileLimits",
    "Limits",
    "check_write",
    "exceeded",
    "index_size",
]

CODE_MAX = 32_768
"""Characters a code half may hold, whatever the strategy."""
LIMITS = (
    "maxCount",
    "maxLenPerMemory",
    "maxTotalLen",
    "maxLenIndex",
    "maxLenDescription",
    "maxResults",
)
"""The six limit params, under their configuration names."""


@dataclass(frozen=True)
class Limits:
    """The six limits; 0 turns one off."""

    max_count: int = 0
    max_len_per_memory: int = 0
    max_total_len: int = 0
    max_len_index: int = 0
    max_len_description: int = 0
    max_results: int = 0

    def as_params(self) -> dict[str, int]:
        """The limits under their configuration names."""
        return dict(zip(LIMITS, self.values(), strict=True))

    def values(self) -> tuple[int, ...]:
        return (
            self.max_count,
            self.max_len_per_memory,
            self.max_total_len,
            self.max_len_index,
            self.max_len_description,
            self.max_results,
        )

    @classmethod
    def from_params(cls, params: Mapping[str, int]) -> Limits:
        return cls(*(params.get(name, 0) for name in LIMITS))

    def widened(self, new: Limits) -> list[str]:
        """The limits ``new`` loosens against these (turns off, or raises), by name;
        ``maxResults`` bounds a search's answer, not what a store holds, so it never counts."""
        return [
            name
            for name, old, now in zip(LIMITS, self.values(), new.values(), strict=True)
            if name != "maxResults" and old and (not now or now > old)
        ]

    def describe(self, applies: frozenset[str]) -> list[str]:
        """The limits in force under a strategy, as phrases for a prompt."""
        bounds: list[str] = []
        if "maxCount" in applies and self.max_count:
            bounds.append(f"at most {self.max_count} memor{'y' if self.max_count == 1 else 'ies'}")
        if self.max_len_per_memory:
            bounds.append(f"a body at most {self.max_len_per_memory} characters")
        if "maxTotalLen" in applies and self.max_total_len:
            bounds.append(f"all bodies together at most {self.max_total_len} characters")
        if "maxLenIndex" in applies and self.max_len_index:
            bounds.append(f"the index at most {self.max_len_index} characters")
        if self.max_len_description:
            bounds.append(f"a description at most {self.max_len_description} characters")
        return bounds


class Measured(Protocol):
    """What the per-memory limits read of a memory: a ``Memory``, or a listing's row."""

    @property
    def slug(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def chars(self) -> int: ...


@dataclass(frozen=True)
class Excess:
    """A limit a store is over (a merge of two replicas can leave it so): ``value``
    against ``maximum``, for one memory (``slug``) or the whole set."""

    limit: str
    value: int
    maximum: int
    slug: str | None = None

    @property
    def over(self) -> int:
        return self.value - self.maximum

    def to_dict(self) -> dict[str, object]:
        """``{"limit", "value", "maximum", "over", "slug"}`` (slug ``None`` for the set)."""
        return {
            "limit": self.limit,
            "value": self.value,
            "maximum": self.maximum,
            "over": self.over,
            "slug": self.slug,
        }

    def describe(self) -> str:
        where = f" (`{self.slug}`)" if self.slug else ""
        return f"{self.limit}{where} {self.value:,} > {self.maximum:,}, over by {self.over:,}"


def index_size(lines: Iterable[str]) -> int:
    """The length of an index of ``lines``: the lines plus the newlines between them."""
    shown = list(lines)
    return sum(len(line) for line in shown) + max(len(shown) - 1, 0)


def exceeded(
    limits: Limits,
    applies: frozenset[str],
    totals: Totals,
    memories: Iterable[Measured],
    index: Callable[[], Iterable[str]] | None = None,
) -> list[Excess]:
    """Every limit the set is over: the aggregates in ``applies`` (from ``totals``; the
    index from ``index``'s lines, when given), and the per-memory limits of ``memories``."""
    found: list[Excess] = []
    if "maxCount" in applies and limits.max_count and totals.count > limits.max_count:
        found.append(Excess("maxCount", totals.count, limits.max_count))
    if "maxTotalLen" in applies and limits.max_total_len and totals.chars > limits.max_total_len:
        found.append(Excess("maxTotalLen", totals.chars, limits.max_total_len))
    if "maxLenIndex" in applies and limits.max_len_index and index is not None:
        size = index_size(index())
        if size > limits.max_len_index:
            found.append(Excess("maxLenIndex", size, limits.max_len_index))
    for m in memories:
        if limits.max_len_per_memory and m.chars > limits.max_len_per_memory:
            found.append(Excess("maxLenPerMemory", m.chars, limits.max_len_per_memory, m.slug))
        if limits.max_len_description and len(m.description) > limits.max_len_description:
            found.append(
                Excess("maxLenDescription", len(m.description), limits.max_len_description, m.slug)
            )
    return found


@dataclass(frozen=True)
class Baseline:
    """The set's figures before a change: a store already over an aggregate limit (after
    a merge) takes only changes that bring that figure down."""

    count: int
    chars: int
    index: Callable[[], int] | None = None
    """The index length before the change, measured only if needed."""


def _refuse(limit: str, attempted: int, maximum: int, what: str, fix: str) -> LimitExceeded:
    return LimitExceeded(
        f"refused: {what} would be {attempted:,}, over {limit} ({maximum:,}). {fix}",
        limit=limit,
        attempted=attempted,
        maximum=maximum,
    )


def check_write(
    limits: Limits,
    applies: frozenset[str],
    old: Memory | None,
    new: Memory,
    everyone: Callable[[], Iterable[Memory]],
    *,
    count: int,
    total_chars: int,
    index_line: Callable[[Memory], str],
    baseline: Baseline | None = None,
) -> None:
    """Refuse ``new`` (replacing ``old``) if it breaches a limit in ``applies``.

    ``count`` and ``total_chars`` describe the store before the write; ``everyone``
    lists every memory before the write (called only when the index must be measured,
    each memory's line drawn by ``index_line``). An aggregate already over its limit
    before the whole change (``baseline``, default the figures before this write) is
    kept, but a write that leaves it over must bring it down.
    """
    base = baseline or Baseline(count, total_chars)
    slug = new.slug
    if limits.max_len_description and len(new.description) > limits.max_len_description:
        raise _refuse(
            "maxLenDescription",
            len(new.description),
            limits.max_len_description,
            f"the description of `{slug}` in characters",
            "Shorten the description; it is paid for on every turn.",
        )
    if limits.max_len_per_memory and new.chars > limits.max_len_per_memory:
        raise _refuse(
            "maxLenPerMemory",
            new.chars,
            limits.max_len_per_memory,
            f"the body of `{slug}` in characters",
            "Shorten it, or split it into smaller memories.",
        )
    for half, text in (("code", new.code), ("onUse", new.on_use)):
        if len(text) > CODE_MAX:
            raise _refuse(
                "the code limit",
                len(text),
                CODE_MAX,
                f"the {half} of `{slug}` in characters",
                f"Shorten the {half}.",
            )
    after = count + (old is None)
    if (
        "maxCount" in applies
        and limits.max_count
        and after > limits.max_count
        and after >= base.count
    ):
        raise _refuse(
            "maxCount",
            after,
            limits.max_count,
            "the number of memories",
            "Delete or merge a memory you no longer need, then try again.",
        )
    if "maxTotalLen" in applies and limits.max_total_len:
        total = total_chars - (old.chars if old else 0) + new.chars
        if total > limits.max_total_len and total >= base.chars:
            raise _refuse(
                "maxTotalLen",
                total,
                limits.max_total_len,
                "the characters of all pinned memories together",
                "Shorten this or another memory, or delete one you no longer need.",
            )
    if "maxLenIndex" in applies and limits.max_len_index:
        lines = [index_line(m) for m in everyone() if m.slug != slug]
        lines.append(index_line(new))
        size = index_size(lines)
        if size > limits.max_len_index and (base.index is None or size >= base.index()):
            raise _refuse(
                "maxLenIndex",
                size,
                limits.max_len_index,
                "the index in characters",
                "Shorten descriptions, or delete a memory you no longer need.",
            )


@dataclass(frozen=True)
class FileLimits:
    """A file store's three limits; 0 turns one off. Each is a whole number >= 0."""

    max_file_chars: int = 0
    max_total_chars: int = 0
    max_files: int = 0

    def __post_init__(self) -> None:
        for name in ("max_file_chars", "max_total_chars", "max_files"):
            value: object = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidArgument(f"{name} must be a whole number >= 0 (0: no limit)")

    def check(self, totals: Totals, writes: Iterable[tuple[str | None, str]]) -> None:
        """Refuse ``writes`` (each a file's text before, ``None`` for a new file, and
        after) to a store of ``totals`` if they breach a limit and do not reduce what
        they replace. The refusal names the limit (``max_file_chars``,
        ``max_files`` or ``max_total_chars``), the figure reached and the maximum."""
        count, chars = totals.count, totals.chars
        for old, text in writes:
            size = len(text)
            before = len(old) if old is not None else 0
            if self.max_file_chars and size > self.max_file_chars and size >= before:
                raise _refuse(
                    "max_file_chars",
                    size,
                    self.max_file_chars,
                    "the characters of one file",
                    "Shorten the text or split it across several files.",
                )
            count += old is None
            chars += size - before
        if self.max_files and count > self.max_files and count > totals.count:
            raise _refuse(
                "max_files",
                count,
                self.max_files,
                "the number of files",
                "Delete or merge files you no longer need, then try again.",
            )
        if self.max_total_chars and chars > self.max_total_chars and chars >= totals.chars:
            raise _refuse(
                "max_total_chars",
                chars,
                self.max_total_chars,
                "the characters of all files together",
                "Shorten or delete files you no longer need, then try again.",
            )
