"""The shapes of a slug and an op, checked with ``str`` methods alone: a process that
reads commits (a push hook, a quick command) never loads ``re`` for them.
``gitmem.types`` keeps the same rules as patterns (``SLUG_RE``, ``OP_RE``) for callers
that want one, and a test holds both to the same answers."""

from __future__ import annotations

__all__ = ["SLUG_CHARS", "op_shape", "slug_shape"]

SLUG_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
_OP_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz-")


def slug_shape(slug: str) -> bool:
    """Whether ``slug`` has a slug's characters and length (1-64)."""
    return 0 < len(slug) <= 64 and SLUG_CHARS.issuperset(slug)


def op_shape(op: str) -> bool:
    """Whether ``op`` has an op's shape: a lower-case letter, then up to 31 more
    letters and ``-``."""
    return 0 < len(op) <= 32 and "a" <= op[0] <= "z" and _OP_CHARS.issuperset(op)
