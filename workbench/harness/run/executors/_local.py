"""The local executor: every cell on this process's event loop, with bounded concurrency.

The default. Cells run as asyncio tasks; a global semaphore and optional per-model semaphores
bound how many are calling models at once; the budget is checked when a cell gets its slot.
A cell frees its slot when its calls are done, and scores (metrics, probes, files) in the
scoring pool while the next cell calls.
"""

from __future__ import annotations

import asyncio
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
            held: list[asyncio.Semaphore] = []

            def free() -> None:  # the global slot first, as leaving the `async with`s did
                while held:
                    held.pop().release()

            try:
                if sem is not None:
                    await sem.acquire()
                    held.append(sem)
                await global_sem.acquire()
                held.append(global_sem)
                reason = job.budget_reached()
                if reason is not None:
                    report.stopped = report.stopped or reason
                    report.skipped += 1
                    return
                # The slots bound the cells calling models: this cell frees its own once its
                # calls are done (`calls_done`), while it scores off the loop.
                outcome = await run_cell(cell, job.sessions[cell.session_id],
                                         job.variants[cell.template], job.model_for,
                                         experiment, job.out, job.run_id, job.qa_bank,
                                         calls_done=free)
            finally:
                free()
            job.record(outcome)

        await asyncio.gather(*(one(c) for c in job.cells))
        return report

    def close(self) -> None:
        """Nothing to release."""
