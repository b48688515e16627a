"""The local executor: every cell on this process's event loop, with bounded concurrency.

The default. Cells run as asyncio tasks; a global semaphore and optional per-model semaphores
bound how many are in flight; the budget is checked when a cell gets its slot.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from typing import Any

from workbench.harness.run._cell_run import run_cell
from workbench.harness.run.executors._base import CellJob, ExecutorReport


class LocalExecutor:
    """Runs cells concurrently on the current event loop (see the module docstring)."""

    kind = "local"

    def start(self) -> dict[str, Any]:
        """Nothing to connect to; describes this host."""
        return {"host": socket.gethostname()}

    async def run(self, job: CellJob) -> ExecutorReport:
        """Run every cell of `job`, recording each as it finishes."""
        experiment = job.experiment
        global_sem = asyncio.Semaphore(job.concurrency)
        model_sems = {i: asyncio.Semaphore(m.concurrency) for i, m in enumerate(experiment.models)
                      if m.concurrency}
        report = ExecutorReport()

        async def one(cell: Any) -> None:
            sem = model_sems.get(cell.model_index)
            async with sem if sem is not None else contextlib.nullcontext():
                async with global_sem:
                    reason = job.budget_reached()
                    if reason is not None:
                        report.stopped = report.stopped or reason
                        report.skipped += 1
                        return
                    outcome = await run_cell(cell, job.sessions[cell.session_id],
                                             job.variants[cell.template], job.model_for,
                                             experiment, job.out, job.run_id, job.qa_bank)
            job.record(outcome)

        await asyncio.gather(*(one(c) for c in job.cells))
        return report

    def close(self) -> None:
        """Nothing to release."""
