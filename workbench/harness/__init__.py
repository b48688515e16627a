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

The names load lazily (PEP 562): ``import workbench.harness`` costs nothing until a name is used,
and using `Experiment` or `run_experiment` does not load the report stage (matplotlib) or
anything else that name does not need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench._lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "Budget": "workbench.harness.experiment",
    "CachePolicy": "workbench.harness.experiment",
    "Cell": "workbench.harness.experiment",
    "ExecutorSpec": "workbench.harness.experiment",
    "Experiment": "workbench.harness.experiment",
    "ModelEntry": "workbench.harness.experiment",
    "SessionSource": "workbench.harness.experiment",
    "expand_cells": "workbench.harness.experiment",
    "write_report": "workbench.harness.report",
    "ErrorCount": "workbench.harness.results",
    "MetricVerdict": "workbench.harness.results",
    "PairedResult": "workbench.harness.results",
    "Recommendation": "workbench.harness.results",
    "Results": "workbench.harness.results",
    "ResultsStore": "workbench.harness.results",
    "StratumVerdict": "workbench.harness.results",
    "Verdict": "workbench.harness.results",
    "comparison_table": "workbench.harness.results",
    "paired_comparison": "workbench.harness.results",
    "style_table": "workbench.harness.results",
    "verdict": "workbench.harness.results",
    "BudgetedModel": "workbench.harness.run",
    "DryRunEstimate": "workbench.harness.run",
    "RunBudget": "workbench.harness.run",
    "RunLock": "workbench.harness.run",
    "run_experiment": "workbench.harness.run",
    "run_experiment_async": "workbench.harness.run",
    "compute_forgotten": "workbench.metrics",
    "compute_metrics": "workbench.metrics",
    "metric": "workbench.metrics",
}


__getattr__, __dir__ = lazy_exports("workbench.harness", _EXPORTS, globals())


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

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
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
    from workbench.harness.report import (
        write_report,
    )
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
    from workbench.metrics import (
        compute_forgotten,
        compute_metrics,
        metric,
    )
