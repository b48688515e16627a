"""How far a render would walk a value: a list holding its parts many times over is found at once.

In the immutable sandbox a template cannot build a cycle, but it can build a list that holds
its previous value twice, again and again (``{% set n.a = [n.a, n.a] %}`` in a loop): 64 steps
make a value of a few kilobytes that is 2**64 items long when printed, joined, serialised,
sorted or hashed. Those walks run in C, where nothing inside the render can stop them; only the
render process's time limit would, after the whole time limit and gigabytes. `walk_exceeds`
counts the items a walk would visit (a shared part counted each time it is reached), stopping
as soon as the count passes the limit, so the check costs at most the limit's steps.
"""

from __future__ import annotations

__all__ = ["MAX_WALK", "walk_exceeds"]

MAX_WALK = 1_000_000
"""Most items (nested ones included, a shared part counted each time it is reached) a value
handed to a filter or printed may hold."""

_CONTAINERS = (list, tuple, dict, set, frozenset)


def walk_exceeds(value: object, limit: int = MAX_WALK) -> bool:
    """True when walking `value` would visit more than `limit` items (nothing is walked for a
    string or a number)."""
    if not isinstance(value, _CONTAINERS):
        return False
    stack: list[object] = [value]
    seen = 0
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            parts: list[object] = [*item.keys(), *item.values()]
        elif isinstance(item, _CONTAINERS):
            parts = list(item)
        else:
            continue
        seen += len(parts)
        if seen > limit:
            return True
        stack.extend(parts)
    return False
