"""The harness: experiment spec -> cells -> async runner -> results store -> `Results`.

Smallest first: `Experiment` (the spec, from TOML), `expand_cells` / `Cell` (the matrix),
`ResultsStore` (``results.sqlite`` with named migrations), `run_experiment_async` /
`run_experiment` (the runner, resumable), `Results` (a run folder as DataFrames).
"""

from workbench.harness._cells import Cell, expand_cells
from workbench.harness._estimate import DryRunEstimate
from workbench.harness._experiment import Budget, CachePolicy, Experiment, ModelEntry, SessionSource
from workbench.harness._results import Results
from workbench.harness._runner import run_experiment, run_experiment_async
from workbench.harness._store import ResultsStore

__all__ = [
    "Budget",
    "CachePolicy",
    "Cell",
    "DryRunEstimate",
    "Experiment",
    "ModelEntry",
    "Results",
    "ResultsStore",
    "SessionSource",
    "expand_cells",
    "run_experiment",
    "run_experiment_async",
]
