"""Closing a finished run's store while its event loop shuts down (`run_experiment`'s path).

A run's last step on its writer thread closes ``results.sqlite``, which folds the write-ahead
log into it: a checkpoint, whose fsyncs take a few milliseconds. The synchronous
`run_experiment` owns the event loop it runs on, so it lets that fold go on while the loop is
torn down and joins the writer after: it still returns only once the store is closed and
nothing lies beside it, as `run_experiment_async` does. Only the run `run_experiment` started
takes part: a run started inside it (the tuner's rungs), or awaited on a caller's own loop,
closes its store before it returns.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from workbench._storage import storage_errors
from workbench.harness.results._store import ResultsStore
from workbench.harness.results._writer import CellWriter
from workbench.harness.run._lock import RunLock

__all__ = ["Closer", "close_store", "closing_after", "take_close_later"]

Closer = Callable[[], None]

_CLOSE_LATER: ContextVar[list[Closer] | None] = ContextVar("workbench_close_later",
                                                           default=None)


@contextmanager
def closing_after() -> Iterator[None]:
    """Run the closers a run handed over (`take_close_later`) when the block ends, in order,
    each even when one before it raised (the first error is raised after them)."""
    closers: list[Closer] = []
    token = _CLOSE_LATER.set(closers)
    try:
        yield
    finally:
        _CLOSE_LATER.reset(token)
        error: BaseException | None = None
        for close in closers:
            try:
                close()
            except BaseException as exc:  # noqa: BLE001 - raised after the others ran
                error = error or exc
        if error is not None:
            raise error


def take_close_later() -> list[Closer] | None:
    """The list a finished run may hand its store's close to, or None (close it before
    returning). Taken once: runs started from inside this one close their own."""
    closers = _CLOSE_LATER.get()
    if closers is not None:
        _CLOSE_LATER.set(None)
    return closers


def close_store(writer: CellWriter | None, store: ResultsStore | None,
                meanwhile: Callable[[], object] | None = None,
                lock: RunLock | None = None) -> None:
    """Join the run's writer (its close, which folds the log into the file, or writes a whole
    store's file), then close the runner's own connection to the store, if it opened one (a
    resumed folder), and release `lock`, the run folder's, when it is given (the run handed it
    over: `RunLock.hand_over`), even when a step before failed.

    The writer's close (about 1 ms of SQLite work at the end of a 40-cell run here, most of
    it without the interpreter lock) goes on while this thread does first what
    would come right after: it collects the run's young objects (`fewer_collections` put that
    collection off; about 440 at the end of a 40-cell run, about 40 of them garbage, 0.1 ms,
    since a cell's model pipeline holds no reference cycle), then calls `meanwhile`
    (`run_experiment`'s: the cells frame of the `Results` it returns, which every caller
    reads). The writer takes the lock back between its steps, so measured paired, joining it
    first and doing this after comes out the same (80 pairs of 200 ms runs: +0.01 ms).
    """
    try:
        if writer is not None:
            gc.collect(0)
            if meanwhile is not None:
                meanwhile()
            with storage_errors(writer.path):  # a whole store's file is written by this close
                writer.close()
    finally:
        try:
            if store is not None:
                store.close()
        finally:
            if lock is not None:
                lock.release()
