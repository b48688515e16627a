"""The harness: an experiment run as a pipeline of four stages, each a package.

``experiment/`` (spec, variants, parameters, cells) -> ``run/`` (runner, cell run, executors,
lock, budget, run folder, estimate) -> ``results/`` (store, migrations, `Results`, outcomes,
table, paired comparisons, verdict, plots) -> ``report/`` (Markdown, HTML, drill-down). Each
stage's docstring says what comes in and what goes out. Imports run one way: ``experiment``
imports no other stage, ``results`` only ``experiment``, ``run`` both (it writes through the
results store), ``report`` ``results`` and ``experiment``; the probes and metrics every stage
scores with live below, in `workbench.metrics` (tests/test_layering.py holds the rule).

Smallest first, the public names: `Experiment` (the spec, from TOML), `expand_cells` / `Cell`
(the matrix), `ResultsStore` (``results.sqlite`` with named migrations),
`run_experiment_async` / `run_experiment` (the runner, resumable) over an executor (local
asyncio, or Ray per `ExecutorSpec`), `Results` (a run folder as DataFrames),
`comparison_table` / `paired_comparison` / `verdict` (what the run says), `write_report`.
`RunLock` keeps one writer per run folder; `RunBudget` / `BudgetedModel` reserve each call's
cost.
"""

from workbench.harness.experiment import (
    Budget,
    CachePolicy,
    Cell,
    ExecutorSpec,
    Experiment,
    ModelEntry,
    SessionSource,
    expand_cells,
)
from workbench.harness.report import write_report
from workbench.harness.results import (
    ErrorCount,
    MetricVerdict,
    PairedResult,
    Recommendation,
    Results,
    ResultsStore,
    StratumVerdict,
    Verdict,
    comparison_table,
    paired_comparison,
    style_table,
    verdict,
)
from workbench.harness.run import (
    BudgetedModel,
    DryRunEstimate,
    RunBudget,
    RunLock,
    run_experiment,
    run_experiment_async,
)
from workbench.metrics import compute_forgotten, compute_metrics, metric

__all__ = [
    "Budget",
    "BudgetedModel",
    "CachePolicy",
    "Cell",
    "DryRunEstimate",
    "ErrorCount",
    "ExecutorSpec",
    "Experiment",
    "MetricVerdict",
    "ModelEntry",
    "PairedResult",
    "Recommendation",
    "Results",
    "ResultsStore",
    "RunBudget",
    "RunLock",
    "SessionSource",
    "StratumVerdict",
    "Verdict",
    "comparison_table",
    "compute_forgotten",
    "compute_metrics",
    "expand_cells",
    "metric",
    "paired_comparison",
    "run_experiment",
    "run_experiment_async",
    "style_table",
    "verdict",
    "write_report",
]
