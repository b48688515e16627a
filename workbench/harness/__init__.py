"""The harness: experiment spec -> cells -> async runner -> results store -> `Results`.

Smallest first: `Experiment` (the spec, from TOML), `expand_cells` / `Cell` (the matrix),
`ResultsStore` (``results.sqlite`` with named migrations), `run_experiment_async` /
`run_experiment` (the runner, resumable) over an executor (``executors/``: local asyncio, or
Ray per `ExecutorSpec`), `Results` (a run folder as DataFrames), `comparison_table` /
`paired_comparison` / `verdict` (what the run says). `RunLock` keeps one writer per run folder;
`RunBudget` / `BudgetedModel` reserve each call's cost.
"""

from workbench.harness._budget import BudgetedModel, RunBudget
from workbench.harness._cells import Cell, expand_cells
from workbench.harness._estimate import DryRunEstimate
from workbench.harness._experiment import (
    Budget,
    CachePolicy,
    ExecutorSpec,
    Experiment,
    ModelEntry,
    SessionSource,
)
from workbench.harness._lock import RunLock
from workbench.harness._paired import PairedResult, paired_comparison
from workbench.harness._report import write_report
from workbench.harness._results import Results
from workbench.harness._runner import run_experiment, run_experiment_async
from workbench.harness._store import ResultsStore
from workbench.harness._table import comparison_table, style_table
from workbench.harness._verdict import ErrorCount, MetricVerdict, StratumVerdict, Verdict, verdict
from workbench.harness.metrics import compute_forgotten, compute_metrics, metric

__all__ = [
    "Budget",
    "BudgetedModel",
    "RunBudget",
    "RunLock",
    "PairedResult",
    "comparison_table",
    "compute_forgotten",
    "compute_metrics",
    "metric",
    "paired_comparison",
    "style_table",
    "write_report",
    "CachePolicy",
    "Cell",
    "DryRunEstimate",
    "ExecutorSpec",
    "Experiment",
    "ModelEntry",
    "Results",
    "ResultsStore",
    "SessionSource",
    "expand_cells",
    "run_experiment",
    "run_experiment_async",
    "ErrorCount",
    "MetricVerdict",
    "StratumVerdict",
    "Verdict",
    "verdict",
]
