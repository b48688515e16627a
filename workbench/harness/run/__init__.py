"""Stage 2 of the harness, the run: cells in, rows out.

In: an `Experiment` and its cells (`workbench.harness.experiment`). Out: one row per cell and
per model attempt in the run folder's results store, each cell's rendered summary, and the
whole-session replays. ``_runner`` owns the folder (one writer: ``_lock``; what it may hold:
``_run_folder``; the per-call budget: ``_budget``; ``--dry-run``: ``_estimate``);
``_cell_run`` runs one cell (``_strategy_run`` for strategies beside Goose's summary,
``_replay_run`` for the ``[replay]`` table); ``executors/`` decide where cells run (local
asyncio or Ray). Imports the experiment stage and writes through the results stage's store.
"""

from workbench.harness.run._budget import BudgetedModel, RunBudget
from workbench.harness.run._estimate import DryRunEstimate
from workbench.harness.run._lock import RunLock
from workbench.harness.run._run_request import default_out
from workbench.harness.run._run_sync import run_experiment
from workbench.harness.run._runner import run_experiment_async

__all__ = ["BudgetedModel", "DryRunEstimate", "RunBudget", "RunLock", "default_out",
           "run_experiment", "run_experiment_async"]
