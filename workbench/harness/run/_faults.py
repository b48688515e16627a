"""Storage faults of a run: named, and never the end of what was already done.

A run writes into its folder (``results.sqlite``, the spec copy, summaries, question sets). When
the disk fills, the folder may not be written, or the store is damaged, the run stops with a
`StorageError` that names the path, the cause and what to do (`storage_faults` wraps the
runner), instead of a raw SQLite or ``OSError`` traceback. What was written stays written: cells
are stored whole or not at all, and files are replaced atomically (`workbench._storage`). A
cell whose own file could not be written is stored as a ``StorageError`` row, and such rows run
again on resume (`RERUN_ERROR_TYPES`), as cells the budget stopped do; their replies come from
the response cache when it recorded them, so nothing is billed twice.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import ParamSpec, TypeVar

from workbench._storage import storage_errors
from workbench.errors import StorageError
from workbench.harness.results._results import DB_FILE

__all__ = ["STORAGE_ERROR", "HeldFaults", "storage_faults"]

STORAGE_ERROR = "StorageError"
"""``error_type`` of a cell whose files could not be written: run again on resume."""

T = TypeVar("T")
P = ParamSpec("P")


class HeldFaults:
    """Cells that met a storage fault in a run: held back from the store (they run again on
    resume), they stop new cells from starting, and the first is raised once the cells in
    flight are done."""

    def __init__(self) -> None:
        self.first: StorageError | None = None
        self.held = 0

    def hold(self, error_type: str | None, message: str | None) -> bool:
        """True (and remembered) when a finished cell with this error met a storage fault."""
        if error_type != STORAGE_ERROR:
            return False
        self.held += 1
        if self.first is None:
            # The cell keeps the error's text only: "<path>: <cause and fix>".
            path, _, rest = str(message or "").partition(": ")
            kind = ("full" if "disk is full" in rest
                    else "denied" if "cannot write" in rest else "damaged")
            self.first = StorageError(path, rest, kind)
        return True

    def stop_reason(self) -> str | None:
        """Why no new cell should start, or None."""
        return str(self.first) if self.first is not None else None

    def raise_first(self) -> None:
        """Raise the first fault held, if any."""
        if self.first is not None:
            raise self.first


def storage_faults(run: Callable[P, Coroutine[object, object, T]]
                   ) -> Callable[P, Coroutine[object, object, T]]:
    """`run` (called as ``run(spec, out, ...)``) with storage faults raised as `StorageError`;
    a fault that names no file (SQLite's) names ``<out>/results.sqlite``."""

    @functools.wraps(run)
    async def guarded(*args: P.args, **kwargs: P.kwargs) -> T:
        out = kwargs["out"] if "out" in kwargs else args[1]
        with storage_errors(Path(str(out)) / DB_FILE):
            return await run(*args, **kwargs)

    return guarded
