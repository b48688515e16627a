"""`spread`: an order in which every prefix covers a whole sequence, ends and middles first.

Question builders take facts, files and stretches of a session in this order, so that however
many questions are kept, they come from all over the session rather than from its start.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

__all__ = ["spread"]

T = TypeVar("T")


def spread(items: Sequence[T]) -> list[T]:
    """`items` reordered so that every prefix is spread over the whole sequence: the first,
    the last, the middle, then the middles of the halves, and so on."""
    n = len(items)
    if n <= 2:
        return list(items)
    order = [0, n - 1]
    seen = set(order)
    segments = [(0, n - 1)]
    while len(order) < n:
        nxt = []
        for lo, hi in segments:
            mid = (lo + hi) // 2
            if mid not in seen:
                seen.add(mid)
                order.append(mid)
            if mid - lo > 1:
                nxt.append((lo, mid))
            if hi - mid > 1:
                nxt.append((mid, hi))
        if not nxt:
            order.extend(i for i in range(n) if i not in seen)
            break
        segments = nxt
    return [items[i] for i in order]
