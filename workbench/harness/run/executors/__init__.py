"""Executors: where an experiment's cells run.

Smallest first: `CellJob` and `Executor` (the seam the runner calls, ``_base``), `LocalExecutor`
(the default: asyncio in this process), the Ray executor (``_ray``: cells as Ray tasks, limits
and the response cache behind one coordinator actor on the head node, the recording read and
written by the driver alone: ``_ray_recording``; needs the ``ray`` extra), and
`make_executor` (``_registry``: pick one by name).
"""

from workbench.harness.run.executors._base import CellJob, Executor, ExecutorReport
from workbench.harness.run.executors._local import LocalExecutor
from workbench.harness.run.executors._registry import (
    EXECUTOR_KINDS,
    RAY_EXTRA_MESSAGE,
    make_executor,
)

__all__ = [
    "EXECUTOR_KINDS",
    "RAY_EXTRA_MESSAGE",
    "CellJob",
    "Executor",
    "ExecutorReport",
    "LocalExecutor",
    "make_executor",
]
