"""`ScoreMemo`: a cell's scores computed once per distinct summary of a session.

A cell's metrics, probes and forgotten items are a pure function of the session, the summary
text, the reply it was parsed from and two token counts. Cells that differ only in what does
not reach the summary produce the same text: repeats answered alike, render-only template
parameters beyond what the summary holds (an intent limit of 7 on a summary of 3 intents),
models that agree. A render-only tune of 528 points over 6 sessions scores 62 distinct
summaries, not 3,168. The memo hands those cells the scores already computed.

Entries live as long as their session object (a weak reference): a run's sessions take their
entries with them, and an entry never outlives the session it was computed from.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

PER_SESSION = 256
"""Distinct summaries remembered per session (least recently used go first)."""


class ScoreMemo:
    """Remembers `compute`'s result per (session object, key); thread-safe."""

    def __init__(self, per_session: int = PER_SESSION) -> None:
        self.per_session = per_session
        self.hits = 0
        self.misses = 0
        self._lock = threading.RLock()  # a weakref callback may run inside the lock
        self._tables: dict[int, tuple[weakref.ref[Any], OrderedDict[Any, Any]]] = {}

    def get(self, session: Any, key: Any, compute: Callable[[], Any]) -> Any:
        """The remembered value for `key` of `session`, else `compute()` (then remembered).

        Two threads missing the same key both compute it (the result is the same); the
        memo never holds its lock while computing.
        """
        with self._lock:
            table = self._table(session)
            if key in table:
                table.move_to_end(key)
                self.hits += 1
                return table[key]
            self.misses += 1
        value = compute()
        with self._lock:
            table = self._table(session)
            table[key] = value
            while len(table) > self.per_session:
                table.popitem(last=False)
        return value

    def _table(self, session: Any) -> OrderedDict[Any, Any]:
        sid = id(session)
        found = self._tables.get(sid)
        if found is not None and found[0]() is session:
            return found[1]
        table: OrderedDict[Any, Any] = OrderedDict()

        def forget(_: Any, sid: int = sid) -> None:
            with self._lock:
                current = self._tables.get(sid)
                if current is not None and current[0]() is None:
                    del self._tables[sid]

        self._tables[sid] = (weakref.ref(session, forget), table)
        return table


SCORES = ScoreMemo()
"""The process's memo of cell scores (`_cell_run` uses it)."""
