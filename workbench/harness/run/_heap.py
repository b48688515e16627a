"""`still_heap`: the objects alive when a run starts are left out of garbage collection
until it ends.

By the time cells start, the process holds everything it loaded (modules, pandas, the
sessions, the compiled templates): hundreds of thousands of objects that will outlive the run.
CPython's oldest-generation collection walks all of them; on this machine one such pass took
36 ms, long enough to hold up every call that was due (a 200 ms model at concurrency 8 lost a
wave's worth of time to it). `gc.freeze` moves them to a permanent generation that the
collector skips, and `gc.unfreeze` hands them back when the run ends: garbage the run makes is
collected as usual, and nothing is kept after the run.

`fewer_collections`: for a whole run, the youngest generation is collected on every
``RUN_GC_THRESHOLDS[0]`` new objects instead of Python's 700 (the ``workbench run`` command sets
the same for its whole process). A run makes and drops thousands of short-lived containers
(messages, usages, rows, frames); at 700 the collector walks the ones still held nine times in a
40-cell run, about 1 ms of its 20 ms of loop-thread CPU, for nothing: they are freed by
reference counting. The thresholds in force before come back when the run ends.

Runs nest (the tuner's rungs) and may overlap on threads: the heap is unfrozen, and the
thresholds restored, when the last of them ends.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

RUN_GC_THRESHOLDS = (10_000, 20, 20)
"""The collector's thresholds during a run (never lower than those already set)."""

_lock = threading.Lock()
_before: list[tuple[int, int, int]] = []  # the thresholds the outermost run found


class _Outermost:
    """A block that nests (runs inside runs, runs on threads): `first` runs when the first of
    them enters, `last` when the last of them leaves (all under one lock)."""

    def __init__(self, first: Callable[[], None], last: Callable[[], None]) -> None:
        self.first, self.last, self.depth = first, last, 0

    @contextmanager
    def __call__(self) -> Iterator[None]:
        with _lock:
            if self.depth == 0:
                self.first()
            self.depth += 1
        try:
            yield
        finally:
            with _lock:
                self.depth -= 1
                if self.depth == 0:
                    self.last()


def _collect_less() -> None:
    found = gc.get_threshold()
    _before[:] = [found]
    if found[0] != 0:  # 0 turns automatic collection off: left so
        gc.set_threshold(*(max(a, b) for a, b in zip(found, RUN_GC_THRESHOLDS, strict=True)))


def _collect_as_before() -> None:
    gc.set_threshold(*_before.pop())


still_heap = _Outermost(gc.freeze, gc.unfreeze)
"""Freeze the current heap for the duration of the block (see the module docstring)."""

fewer_collections = _Outermost(_collect_less, _collect_as_before)
"""Collect the young generation less often for the duration of the block (see the module
docstring)."""
