"""How many bytes two byte strings share at their start, or at their end: found by
halves, each test a comparison (a memcmp) of only the bytes not known alike yet.

Trees compared by their raw bytes ask it; it loads nothing, so the lean read path may
ask it too.
"""

from __future__ import annotations

__all__ = ["common_head", "common_tail"]


def common_head(a: bytes, b: bytes, most: int) -> int:
    """How many bytes (``most`` at most) ``a`` and ``b`` start with alike: found by
    halves, each test a memcmp of only the bytes not known alike yet."""
    low, high = 0, min(most, len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[low:mid] == b[low:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def common_tail(a: bytes, b: bytes, most: int) -> int:
    """How many bytes (``most`` at most) ``a`` and ``b`` end with alike."""
    low, high = 0, min(most, len(a), len(b))
    size_a, size_b = len(a), len(b)
    while low < high:
        mid = (low + high + 1) // 2
        if a[size_a - mid : size_a - low] == b[size_b - mid : size_b - low]:
            low = mid
        else:
            high = mid - 1
    return low
