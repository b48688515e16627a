"""`CellWriter`: the run's finished cells written to the run folder from one thread.

The event loop hands a finished cell (`CellResult`) over and goes on: that is the one thread
hand-off a cell makes. On a running loop the cells finished within `HAND_OVER_SECONDS` go over
together (one wake-up of the writer thread, one wait for the interpreter lock, one
transaction for all of them, rather than one of each per cell); `flush` and `close` hand over
what is still waiting at once. The writer thread, with its own connection, writes the cells in the
order they were handed over: each cell's summary file (``summaries/<digest>.md``), then its
row, attempts and kept texts, all the cells waiting when it comes round in one transaction (one
commit for a wave of cells that finished together; never part of a cell). File and SQLite
work (and the wait for the interpreter lock after each system call) then never holds up the
calls of the cells in flight.

A new run folder's store is made here too: given a `prelude`, the thread creates and migrates
the store and runs the prelude (the run's own rows) before the first cell. The runner makes its
writer unstarted (``start=False``) and starts the thread (`start`) once the loop first waits
for replies: the local executor's `CellJob.calls_out` hook, when the first wave's calls are
out, so neither the thread's start nor the store's creation holds up a first call. Under the
local executor the writer holds the cells put to it until then (``hold_cells``): with replies
that come back at once the loop never waits, the hook comes late or not at all, and the thread
starts at `finish`, alone with the interpreter lock. Otherwise the first `put` starts it, and
`finish`, `flush` or `close` always do.

The run's last write goes the same way: `finish` hands over the cells still waiting and then
a last step (the run's final status, and the runner's read of the tables it returns),
written after them; the thread then closes its store, which folds the log into the database
file (the last connection's checkpoint, with its fsyncs), while the runner makes its results
of what was read. When the thread has not started by then (every cell held), the new
folder's store is made in memory instead (`ResultsStore` with ``whole``): the prelude, the
cells and the last step fill it there, and its close writes the file in one piece, with one
sync, where a store on disk takes its creation, a log and the fold of that log, each synced
(`whole` says so: the runner keeps the folder's lock until that close).

Nothing is lost on the way out: `close` writes every cell handed over before it returns. A
killed process loses the cells still queued, as it loses the cells in flight; they run again
on resume (a cached or recorded reply answers them without billing again). A write that fails
is raised to the runner on the next `put` or at `close`, and stops the run as a failed write
on the loop did.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import hashlib
import queue
import sqlite3
import threading
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TypeAlias

from workbench._storage import write_atomic
from workbench.harness.results._cell_result import CellResult
from workbench.harness.results._outcomes import error_class, outcome_kind
from workbench.harness.results._results import SUMMARIES_DIR
from workbench.harness.results._rows import RowsSoFar
from workbench.harness.results._store import ResultsStore


class _Stop:
    """The sentinel `close` queues: the writer stops after the items before it."""


_STOP = _Stop()


class _Last:
    """What `CellWriter.finish` runs after the cells handed over before it."""

    def __init__(self, run: Callable[[ResultsStore], None]) -> None:
        self.run = run


_Item: TypeAlias = CellResult | list[CellResult] | _Stop | _Last
"""What the queue carries: a cell, the cells a loop turn finished, the last step, or the stop."""

HAND_OVER_SECONDS = 0.002
"""How long a cell finished on the event loop waits for others to go to the writer with it (a
killed process loses them as it loses the cells still queued: they run again on resume).

A wave of replies is scored within about a millisecond, so its cells go over together, once
the next wave's calls are out: the writer thread's turns at the interpreter lock then fall in
the wait for replies, not between the calls of a wave. Measured on 40 cells at 200 ms and
concurrency 8: handed over at the loop's next turn, the writer woke between a wave's calls and
spread them over 2-3 ms (0.1 ms now); after 20 ms, as before, the last wave's cells all went
over at the run's end."""


class CellWriter:
    """Writes cells to the store at `path` on a background thread (see the module docstring).

    Args:
        path: The ``results.sqlite`` file (created and migrated here when missing).
        prelude: Called with the open store before any cell is written (a new folder's run
            row, its executor and its error rows); a failure is raised like a failed write.
        start: Start the thread now; else on `start`, or the first `put`, `finish`, `flush`
            or `close`.
        hold_cells: An unstarted writer's `put` keeps the cell for the thread without
            starting it (it starts on `start`, `finish`, `flush` or `close`).
        rows: A new folder's rows as written (`RowsSoFar`), read by the thread after each
            write that left nothing queued (while the calls are out), so that the read after
            the last write is short.

    Attributes:
        ready: Set once the store is open and the prelude written.
        last_written: True once `finish`'s last step ran.
        whole: True when `finish` found the thread not started, every cell at hand and a new
            folder's store to make: then the rows are on disk once the writer is closed.
    """

    def __init__(self, path: str | Path,
                 prelude: Callable[[ResultsStore], None] | None = None, *,
                 start: bool = True, hold_cells: bool = False,
                 rows: RowsSoFar | None = None) -> None:
        self.path = Path(path)
        self.prelude = prelude
        self.ready = threading.Event()
        self.flushed = threading.Event()
        self.written = 0
        self.last_written = False
        self.whole = False
        self.rows = rows
        self._queue: queue.SimpleQueue[_Item] = queue.SimpleQueue()
        self._waiting: list[CellResult] = []  # finished on the loop, not yet handed over
        self._summaries: set[str] = set()  # the summary files this run wrote
        self._timer: asyncio.TimerHandle | None = None
        self._error: BaseException | None = None
        # In the run's context: what it derives (redacted texts) is the run's memo's.
        self._thread = threading.Thread(target=contextvars.copy_context().run,
                                        args=(self._write_all,), name="workbench-store-writer",
                                        daemon=True)
        self._started = False
        self._hold_cells = hold_cells
        if start:
            self.start()

    def start(self) -> None:
        """Start the writer thread, if it has not started yet."""
        if not self._started:
            self._started = True
            self._thread.start()

    def put(self, result: CellResult) -> None:
        """Queue a finished cell for writing.

        Raises:
            Exception: an earlier write failed (the store's own error).
        """
        self._raise_failure()
        if not self._hold_cells:
            self.start()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop: straight to the writer
            self._queue.put(result)
            return
        self._waiting.append(result)
        if self._timer is None:
            self._timer = loop.call_later(HAND_OVER_SECONDS, self._hand_over)

    def _hand_over(self) -> None:
        """Hand the cells waiting on the loop to the writer thread, as one item."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        waiting, self._waiting = self._waiting, []
        if waiting:
            self._queue.put(waiting)

    def finish(self, last: Callable[[ResultsStore], None] | None) -> None:
        """Write everything queued, then run `last` on the writer's store (the run's final
        status; `last_written` says it ran), and stop taking cells, as `flush` does: the
        writer thread's close then folds the log into the database file while the caller
        reads the results. Raises a write (or `last`) that failed. None: `flush`."""
        self._hand_over()
        if last is not None and self.prelude is not None and self._hold_cells and \
                not self._started:
            self.whole = True
        self.start()
        if last is not None and self._thread.is_alive() and not self.flushed.is_set():
            self._queue.put(_Last(last))
        self.flush()

    def close(self) -> None:
        """Write everything queued, stop the thread, and raise a write that failed."""
        self.flush()
        self._thread.join()
        self._raise_failure()

    def flush(self) -> None:
        """Write everything queued and stop taking cells; raise a write that failed. The
        thread then closes its store, folding its log into the database file (a checkpoint:
        the slow part of closing a store), while the caller reads the results; `close` waits
        for it."""
        self._hand_over()
        self.start()
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
            store = ResultsStore(self.path, whole=self.whole)
        except BaseException as exc:  # noqa: BLE001 - handed to the runner
            self._error = exc
            self.flushed.set()  # a `flush` that saw the thread alive waits for this
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
                last = [item for item in batch if isinstance(item, _Last)]
                cells = [c for item in batch if isinstance(item, (CellResult, list))
                         for c in (item if isinstance(item, list) else [item])]
                if self._error is None and cells:
                    self._write(store, cells)
                    if not stopping and self._queue.empty() and not store.whole:
                        _fold(store)  # while the calls are out: the end has little to fold
                        if self.rows is not None:  # a failure: `tables` reads them all
                            with contextlib.suppress(sqlite3.Error):
                                self.rows.catch_up(store.db)
                for item in last:
                    if self._error is None:
                        try:
                            item.run(store)
                            self.last_written = True
                        except BaseException as exc:  # noqa: BLE001 - handed to the runner
                            self._error = exc
        finally:
            # A whole store's file is written by its close (a failure there is the run's, as a
            # failed write): after a failure, the caller is let go only once it is written, as
            # the runner then opens the store itself to mark the run.
            if not (store.whole and self._error is not None):
                self.flushed.set()
            # The last connection's close folds the log into the file and removes it: one
            # step for this thread, not a checkpoint and then a close (each a wait for the
            # interpreter lock while the loop makes the results): 0.6 ms less a run.
            try:
                store.close()
            except BaseException as exc:  # noqa: BLE001 - handed to the runner
                self._error = self._error or exc
            self.flushed.set()

    def _write(self, store: ResultsStore, batch: list[CellResult]) -> None:
        try:
            for result in batch:
                write_summary(self.path.parent, result, self._summaries)
            store.record_results(batch)
            self.written += len(batch)
            return
        except BaseException as exc:  # noqa: BLE001 - handed to the runner
            if len(batch) == 1:
                self._error = exc
                return
        # One at a time: every cell before the failing one is kept, and the failure (a
        # summary file the disk had no room for, a row SQLite refused) stops the writer.
        for result in batch:
            try:
                write_summary(self.path.parent, result, self._summaries)  # not written again
                store.record_results([result])
                self.written += 1
            except BaseException as exc:  # noqa: BLE001 - handed to the runner
                self._error = exc
                return


def _fold(store: ResultsStore) -> None:
    """Checkpoint between writes, so the log the end must fold stays one wave long, and start
    the log over at once (`ResultsStore.restart_log`), so the next cells' write (the last
    wave's is on the run's critical path) does not wait for the log header's sync. A failure
    here loses nothing (the rows are in the log) and is not the run's: the next write, or the
    close at the end, meets a real fault again."""
    with contextlib.suppress(sqlite3.Error, OSError):
        store.checkpoint()
        store.restart_log()


def write_summary(folder: Path, result: CellResult,
                  written: set[str] | None = None) -> None:
    """Write the cell's summary to ``summaries/<digest>.md`` (ending in a newline; the name is
    a digest of the text) and name it in its row; nothing for a cell without one. A file that
    cannot be written makes the cell an error (its row says why, and names no file); a full
    disk or a folder that may not be written raises `StorageError` instead, which stops the
    run (the cell runs on resume).

    Cells whose summaries are alike (repeats answered alike, a tune's points that render the
    same summary) name one file, whichever cell came first: the rows do not depend on the
    order cells finish in. With `written` (the files the run wrote so far), such a file is
    written once per run (the render-only tune of ``bench/bench_tune.py``'s whole grid makes
    25,344 cells over the shipped sessions and writes 762 files, not 25,344).
    """
    text = result.texts.summary
    if text is None or result.summary_path is not None:
        return
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=10).hexdigest()
    rel = f"{SUMMARIES_DIR}/{digest}.md"
    if written is not None and rel in written:
        result.summary_path = rel
        return
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
    if written is not None:
        written.add(rel)


def write_file(path: Path, text: str) -> None:
    """Write `text` to `path` as UTF-8, as it is (no newline translation), replacing it
    atomically (`write_atomic`: a temporary sibling, then a rename) in a few system calls and
    no Python file object.

    Raises:
        StorageError: the disk is full or the folder may not be written (the run stops, and
            the cell runs again on resume).
    """
    write_atomic(path, text)
