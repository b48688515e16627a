"""`CellWriter`: the run's finished cells written to the run folder from one thread.

The event loop hands a finished cell (`CellResult`) over and goes on: that is the one thread
hand-off a cell makes. The writer thread, with its own connection, writes the cells in the
order they were handed over: each cell's summary file (``summaries/<cell_id>.md``), then its
row, attempts and kept texts, all the cells waiting when it comes round in one transaction (one
commit for a wave of cells that finished together; never part of a cell). File and SQLite
work (and the wait for the interpreter lock after each system call) then never holds up the
calls of the cells in flight.

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

import os
import queue
import threading
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from workbench.harness.results._cell_result import CellResult
from workbench.harness.results._outcomes import error_class, outcome_kind
from workbench.harness.results._results import SUMMARIES_DIR
from workbench.harness.results._store import ResultsStore

_STOP = object()
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0) \
    | getattr(os, "O_BINARY", 0)


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
        self.flushed = threading.Event()
        self.written = 0
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._write_all, name="workbench-store-writer",
                                        daemon=True)
        self._thread.start()

    def put(self, result: CellResult) -> None:
        """Queue a finished cell for writing.

        Raises:
            Exception: an earlier write failed (the store's own error).
        """
        self._raise_failure()
        self._queue.put(result)

    def close(self) -> None:
        """Write everything queued, stop the thread, and raise a write that failed."""
        self.flush()
        self._thread.join()
        self._raise_failure()

    def flush(self) -> None:
        """Write everything queued and stop taking cells; raise a write that failed. The
        thread then folds its log into the database file (a checkpoint: the slow part of
        closing a store) while the caller reads the results; `close` waits for it."""
        if self._thread.is_alive() and not self.flushed.is_set():
            self._queue.put(_STOP)
            self.flushed.wait()
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
            self.flushed.set()
            store.checkpoint()
        finally:
            self.flushed.set()
            store.close()

    def _write(self, store: ResultsStore, batch: list[CellResult]) -> None:
        try:
            for result in batch:
                write_summary(self.path.parent, result)
            store.record_results(batch)
            self.written += len(batch)
            return
        except BaseException as exc:  # noqa: BLE001 - handed to the runner
            if len(batch) == 1:
                self._error = exc
                return
        for result in batch:  # one at a time: every cell before the failing one is kept
            try:
                store.record_results([result])
                self.written += 1
            except BaseException as exc:  # noqa: BLE001 - handed to the runner
                self._error = exc
                return


def write_summary(folder: Path, result: CellResult) -> None:
    """Write the cell's summary to ``summaries/<cell_id>.md`` (ending in a newline) and name
    it in its row; nothing for a cell without one. A file that cannot be written makes the
    cell an error (its row says why, and names no file)."""
    text = result.texts.summary
    if text is None or result.summary_path is not None:
        return
    rel = f"{SUMMARIES_DIR}/{result.cell_id}.md"
    try:
        write_file(folder / rel, text if text.endswith("\n") else text + "\n")
    except OSError as exc:
        result.status, result.error_type, result.error_message = ("error", type(exc).__name__,
                                                                  str(exc))
        result.outcome_kind, result.error_class = outcome_kind(exc), error_class(exc)
        result.traceback = "".join(traceback.format_exception(exc))
        result.metrics_json = result.parse_outcome = result.structured = None
        return
    result.summary_path = rel


def write_file(path: Path, text: str) -> None:
    """Write `text` to `path` as UTF-8, as it is (no newline translation), replacing it: what
    ``Path.write_text`` does, in three system calls and no Python file object. A short write
    (rare on a local file) goes on from where it stopped."""
    data = memoryview(text.encode("utf-8"))
    fd = os.open(path, _WRITE_FLAGS, 0o666)
    try:
        while data:
            data = data[os.write(fd, data):]
    finally:
        os.close(fd)
