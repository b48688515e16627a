"""The scratch folder a Ray worker runs each cell in, and the sweep of those its dead peers left.

A Ray worker runs a cell in a temporary folder (the cell's summary file lands there) and ships
the files to the driver, which writes them into the run folder. A worker killed in the middle
of a cell (a node lost, a task cancelled, ``ray.shutdown`` with work in flight) never removes
its folder; on a machine that runs many such runs (a test suite, a CI box) they pile up in the
temporary directory. Each folder is named after its worker's process id
(``workbench-cell-<pid>-<random>``), and each worker process, before its first cell, removes
those of this host whose process is gone and which nobody has touched for `STALE_SECONDS`
(the age keeps a folder whose owner lives in another process namespace sharing the directory:
a container's id may look dead from here).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from workbench.harness.run._lock import pid_alive

__all__ = ["PREFIX", "STALE_SECONDS", "cell_folder", "sweep_stale"]

PREFIX = "workbench-cell-"
"""The start of every cell folder's name; the worker's process id and a dash follow."""

STALE_SECONDS = 3600.0
"""How long a dead worker's folder is left alone (a cell never runs this long)."""

_swept_in = 0
"""The process that swept already (a forked child has another id, and sweeps again)."""


def sweep_stale(root: str | Path | None = None, now: float | None = None) -> int:
    """Remove the cell folders under `root` (the temporary directory) whose worker process is
    gone and that were last changed `STALE_SECONDS` or more before `now`; return how many.
    Anything else (another name, a live or unreadable owner, a file, a folder that vanishes
    meanwhile) is left as it is."""
    folder = Path(root if root is not None else tempfile.gettempdir())
    moment = time.time() if now is None else now
    removed = 0
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0
    for entry in entries:
        pid_text, dash, _ = entry.name.removeprefix(PREFIX).partition("-")
        if not entry.name.startswith(PREFIX) or not dash or not pid_text.isdigit():
            continue
        try:
            if not entry.is_dir(follow_symlinks=False) or \
                    moment - entry.stat(follow_symlinks=False).st_mtime < STALE_SECONDS:
                continue
        except OSError:
            continue
        if pid_alive(int(pid_text)):
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        removed += not os.path.lexists(entry.path)
    return removed


@contextmanager
def cell_folder() -> Iterator[Path]:
    """A new temporary folder for one cell, removed when the block ends; the first call in a
    process sweeps the stale folders of dead workers first (`sweep_stale`)."""
    global _swept_in
    pid = os.getpid()
    if _swept_in != pid:
        _swept_in = pid
        sweep_stale()
    with tempfile.TemporaryDirectory(prefix=f"{PREFIX}{pid}-") as tmp:
        yield Path(tmp)
