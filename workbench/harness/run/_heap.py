"""`still_heap`: the objects alive when a run starts are left out of garbage collection
until it ends.

By the time cells start, the process holds everything it loaded (modules, pandas, the
sessions, the compiled templates): hundreds of thousands of objects that will outlive the run.
CPython's oldest-generation collection walks all of them; on this machine one such pass took
36 ms, long enough to hold up every call that was due (a 200 ms model at concurrency 8 lost a
wave's worth of time to it). `gc.freeze` moves them to a permanent generation that the
collector skips, and `gc.unfreeze` hands them back when the run ends: garbage the run makes is
collected as usual, and nothing is kept after the run.

Runs nest (the tuner's rungs) and may overlap on threads: the heap is unfrozen when the last
of them ends.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = [0]


@contextmanager
def still_heap() -> Iterator[None]:
    """Freeze the current heap for the duration of the block (see the module docstring)."""
    with _lock:
        if _depth[0] == 0:
            gc.freeze()
        _depth[0] += 1
    try:
        yield
    finally:
        with _lock:
            _depth[0] -= 1
            if _depth[0] == 0:
                gc.unfreeze()
