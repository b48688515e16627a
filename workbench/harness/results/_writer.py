"""`CellWriter`: the run's finished cells written to ``results.sqlite`` from one thread.

The event loop hands a finished cell over and goes on; the writer thread, with its own
connection, writes the cells in the order they were handed over, each with its attempts, and
all the cells waiting when it comes round in one transaction (one commit for a wave of cells
that finished together; never part of a cell). SQLite's work (and the wait for the
interpreter lock after each statement) then never holds up the calls of the cells in flight.

A new run folder's store is made here too: given a `prelude`, the thread creates and migrates
the store and runs the prelude (the run's own rows) before the first cell, so the first calls
go out while it does.

Nothing is lost on the way out: `close` writes every cell handed over before it returns. A
killed process loses the cells still queued, as it loses the cells in flight; they run again
on resume (a cached or recorded reply answers them without billing again). A write that fails
is raised to the runner on the next `put` or at `close`, and stops the run as a failed write
on the loop did.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from workbench.harness.results._store import ResultsStore

_STOP = object()


class CellWriter:
    """Writes cells to the store at `path` on a background thread (see the module docstring).

    Args:
        path: The ``results.sqlite`` file (created and migrated here when missing).
        prelude: Called with the open store before any cell is written (a new folder's run
            row, its executor and its error rows); a failure is raised like a failed write.

    Attributes:
        ready: Set once the store is open and the prelude written.
    """

    def __init__(self, path: str | Path,
                 prelude: Callable[[ResultsStore], None] | None = None) -> None:
        self.path = Path(path)
        self.prelude = prelude
        self.ready = threading.Event()
        self.written = 0
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._write_all, name="workbench-store-writer",
                                        daemon=True)
        self._thread.start()

    def put(self, row: dict[str, Any], attempts: Iterable[dict[str, Any]] = ()) -> None:
        """Queue a finished cell (its row and attempt rows) for writing.

        Raises:
            Exception: an earlier write failed (the store's own error).
        """
        self._raise_failure()
        self._queue.put((row, list(attempts)))

    def close(self) -> None:
        """Write everything queued, stop the thread, and raise a write that failed."""
        if self._thread.is_alive():
            self._queue.put(_STOP)
            self._thread.join()
        self._raise_failure()

    def __enter__(self) -> CellWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _raise_failure(self) -> None:
        if self._error is not None:
            raise self._error

    def _write_all(self) -> None:
        try:
            store = ResultsStore(self.path)
        except BaseException as exc:  # noqa: BLE001 - handed to the runner
            self._error = exc
            return
        try:
            if self.prelude is not None:
                try:
                    self.prelude(store)
                except BaseException as exc:  # noqa: BLE001 - handed to the runner
                    self._error = exc
            if self._error is None:
                self.ready.set()
            stopping = False
            while not stopping:
                batch = [self._queue.get()]
                while True:  # and whatever else is queued: one transaction for them all
                    try:
                        batch.append(self._queue.get_nowait())
                    except queue.Empty:
                        break
                stop = next((i for i, item in enumerate(batch) if item is _STOP), None)
                if stop is not None:
                    stopping, batch = True, batch[:stop]
                if self._error is None and batch:
                    self._write(store, batch)
        finally:
            store.close()

    def _write(self, store: ResultsStore, batch: list[Any]) -> None:
        try:
            store.record_cells(batch)
            self.written += len(batch)
            return
        except BaseException as exc:  # noqa: BLE001 - handed to the runner
            if len(batch) == 1:
                self._error = exc
                return
        for item in batch:  # one at a time: every cell before the failing one is kept
            try:
                store.record_cell(*item)
                self.written += 1
            except BaseException as exc:  # noqa: BLE001 - handed to the runner
                self._error = exc
                return
