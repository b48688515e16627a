"""The local executor: every cell on this process's event loop, with bounded concurrency.

The default. Cells run as asyncio tasks. The run's concurrency (and a model's own
``concurrency``) bounds the model calls in flight: a call holds its slots only while it is out
(the pipeline's slot step, `SlotStep`), so a cell prepares its prompt before it takes one and
frees it the moment the reply is in. At most `LOOKAHEAD` times the concurrency cells are
admitted at once (preparing, waiting for a slot or calling), which bounds memory and keeps a
queue of prompts ready; a cell leaves that count once its calls are done, and is scored on the
loop while the next ones call. The run starts with the concurrency's worth of cells and admits
the rest of the lookahead once their calls hold every slot (or a cell is done): on a fresh loop
every admitted cell prepares before any render answer is read, so the first wave's prompts
would wait for the lookahead's preparation, which may as well happen while that wave is out.
The budget is checked when a cell is admitted (and every call about to be sent reserves its
cost).
"""

from __future__ import annotations

import asyncio
import socket
from collections import Counter

from workbench._json_types import JSONObject
from workbench._memo import memo
from workbench.compaction._model import CompactionModel
from workbench.harness.experiment._cells import Cell
from workbench.harness.run._cell_run import run_cell
from workbench.harness.run.executors._base import CellJob, ExecutorReport
from workbench.harness.run.executors._call_slot import SlotStep
from workbench.models._pipeline import Step

LOOKAHEAD = 2

CALLS_OUT_FALLBACK_SECONDS = 0.05
"""When the slots never all fill (fewer cells than slots, or replies that come back at once),
how long after the first call the runner's `CellJob.calls_out` hook is called all the same.

The hook starts the run's writer thread, which should do its work while the loop waits for
replies. Calls answered at once (a cache, a replay, the benchmark's zero-latency model) never
hold every slot, and the loop never waits: a writer started then took the interpreter lock from
the cells it was to write, and a 40-cell run took 0.8 ms longer than with the writer started at
its end (then alone with the lock). A longer run starts it after this time, so its rows are
written as it goes."""


class LocalExecutor:
    """Runs cells concurrently on the current event loop (see the module docstring)."""

    kind = "local"

    def start(self) -> JSONObject:
        """Nothing to connect to; describes this host."""
        return {"host": socket.gethostname()}

    async def run(self, job: CellJob) -> ExecutorReport:
        """Run every cell of `job`, recording each as it finishes."""
        experiment = job.experiment
        calls = asyncio.Semaphore(job.concurrency)
        # The first wave's cells alone at first: their prompts are made and sent before the
        # lookahead cells prepare theirs (which they do while the first calls are out).
        admitted = asyncio.Semaphore(job.concurrency)
        lookahead = [job.concurrency * (LOOKAHEAD - 1)]

        def widen() -> None:  # the first wave is out, or a cell is done: admit the lookahead
            while lookahead[0]:
                lookahead[0] -= 1
                admitted.release()

        calls_out = [job.calls_out]
        fallback: list[asyncio.TimerHandle] = []

        def first_out() -> None:  # the first wave is out, or the fallback's time has come
            if calls_out[0] is not None:  # the runner's hook, at the loop's next turn
                asyncio.get_running_loop().call_soon(calls_out[0])
                calls_out[0] = None
            while fallback:
                fallback.pop().cancel()

        def holding() -> None:  # a call is about to go out
            if calls.locked():
                widen()
                first_out()
            elif calls_out[0] is not None and not fallback:
                fallback.append(asyncio.get_running_loop().call_later(
                    CALLS_OUT_FALLBACK_SECONDS, first_out))
        model_sems = {i: asyncio.Semaphore(m.concurrency) for i, m in enumerate(experiment.models)
                      if m.concurrency}
        report = ExecutorReport()
        left = Counter(cell.session_id for cell in job.cells)

        def session_done(cell: Cell) -> None:
            # what was derived from its messages is not needed again: drop it now
            left[cell.session_id] -= 1
            if left[cell.session_id] == 0 and cell.session_id in job.sessions:
                memo().messages.forget(job.sessions[cell.session_id].messages)

        def model_for(cell: Cell, role: str | None = None, **steps: Step) -> CompactionModel:
            own = model_sems.get(cell.model_index) if role is None else None
            slots = [own, calls] if own is not None else [calls]
            return job.model_for(cell, role, slot=SlotStep(slots, holding), **steps)

        async def one(cell: Cell) -> None:
            held: list[asyncio.Semaphore] = []

            def leave() -> None:  # the cell's calls are done: admit the next one
                widen()
                while held:
                    held.pop().release()

            try:
                await admitted.acquire()
                held.append(admitted)
                reason = job.budget_reached()
                if reason is not None:
                    report.stopped = report.stopped or reason
                    report.skipped += 1
                    return
                result = await run_cell(cell, job.sessions[cell.session_id],
                                        job.variants[cell.template], model_for,
                                        experiment, job.out, job.run_id, job.qa_bank,
                                        calls_done=leave)
            finally:
                leave()
                session_done(cell)
            job.record(result)

        try:
            await asyncio.gather(*(one(c) for c in job.cells))
        finally:
            while fallback:
                fallback.pop().cancel()
        return report

    def close(self) -> None:
        """Nothing to release."""
