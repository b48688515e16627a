"""The executor seam: what the runner hands an executor, and what an executor promises back.

The runner (``workbench.harness.run._runner``) owns the run folder: it expands the cells, opens the
results store, keeps the budget and the progress bar. An executor only decides *where* cells
run. It gets a `CellJob` and calls ``job.record(result)`` on the driver with each finished cell's
`CellResult`, in completion order; the runner's callback hands it to the store's writer. Nothing
else writes the run folder.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from workbench._json_types import JSONObject
from workbench.harness.experiment._cells import Cell
from workbench.harness.experiment._spec import Experiment
from workbench.harness.experiment._variants import Variant
from workbench.harness.results._cell_result import CellResult
from workbench.harness.run._qa_bank import QuestionBank
from workbench.harness.run._run_models import ModelFactory, ModelFor, QAModelFactory
from workbench.models._shared import SharedCalls
from workbench.sessions import Session


@dataclass
class CellJob:
    """Everything an executor needs to run the cells of one runner invocation.

    Attributes:
        experiment: The experiment being run.
        out: The run folder (only the driver writes under it).
        run_id: The current run's id (goes into every cell row).
        cells: The cells to run, in expansion order.
        sessions: Session id -> loaded `Session`.
        variants: Template variant name -> resolved `Variant`.
        concurrency: The global limit: model calls in flight (local), cells in flight (Ray).
        model_for: Driver-side ``(cell, role=None, *, record=None, slot=None) ->
            CompactionModel``: the cell's model pipeline (the summarizer, or with a role a
            ``[qa]`` model), with the cell's record step and the executor's slot step.
        model_factory: The user's factory, when one was given (shipped to Ray workers).
        shared: The run's `SharedCalls` table (``model_for`` already wraps models with it; a
            remote executor shares calls the same way through its own copy, then merges it
            back), or None.
        record: Called on the driver with each finished `CellResult`.
        budget_reached: Returns the reason the budget stops new cells, or None.
        qa_bank: The run's `QuestionBank` when the experiment has a ``[qa]`` table.
        qa_model_factory: The user's ``(cell, role) -> model`` for ``[qa]`` models, if given.
        calls_out: Called once on the loop, at its next turn after the first wave's calls are
            all out (every slot held), or `CALLS_OUT_FALLBACK_SECONDS` after the first call
            when the slots never all fill (the runner starts its writer thread there: its work
            then falls in the loop's waits for replies, and neither its start nor the new
            store holds up a first call); the local executor's only (the writer starts with
            the first cell done otherwise).
    """

    experiment: Experiment
    out: Path
    run_id: str
    cells: list[Cell]
    sessions: dict[str, Session]
    variants: dict[str, Variant]
    concurrency: int
    model_for: ModelFor
    record: Callable[[CellResult], None]
    budget_reached: Callable[[], str | None]
    model_factory: ModelFactory | None = None
    shared: SharedCalls | None = None
    qa_bank: QuestionBank | None = None
    qa_model_factory: QAModelFactory | None = None
    calls_out: Callable[[], None] | None = None


@dataclass
class ExecutorReport:
    """How an executor's pass over a `CellJob` ended.

    Attributes:
        stopped: Why new cells stopped being started (the budget), or None.
        skipped: Cells not run because of `stopped`.
    """

    stopped: str | None = None
    skipped: int = 0


class Executor(Protocol):
    """Runs cells somewhere and reports each finished one to the driver."""

    kind: str

    def start(self) -> JSONObject:
        """Connect to (or start) the compute; return a description for the runs table."""
        ...

    async def run(self, job: CellJob) -> ExecutorReport:
        """Run `job`'s cells, calling ``job.record`` for each finished one."""
        ...

    def close(self) -> None:
        """Release what `start` acquired."""
        ...
