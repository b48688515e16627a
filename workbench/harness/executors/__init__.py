"""Executors: where an experiment's cells run.

Smallest first: `CellJob` and `Executor` (the seam the runner calls), `LocalExecutor` (the
default: asyncio in this process), the Ray executor (``_ray``: cells as Ray tasks, limits and
the response cache behind one coordinator actor; needs the ``ray`` extra), and
`make_executor` (pick one by name).
"""

from workbench.harness.executors._base import (
    RAY_EXTRA_MESSAGE,
    CellJob,
    Executor,
    ExecutorReport,
    make_executor,
)
from workbench.harness.executors._local import LocalExecutor

__all__ = [
    "RAY_EXTRA_MESSAGE",
    "CellJob",
    "Executor",
    "ExecutorReport",
    "LocalExecutor",
    "make_executor",
]
