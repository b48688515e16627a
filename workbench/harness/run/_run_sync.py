"""`run_experiment`: the runner for code that is not async (a script, a notebook cell)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Unpack, overload

from workbench._sync import run_sync
from workbench.harness.experiment._spec import Experiment
from workbench.harness.results._results import Results
from workbench.harness.run._close_later import closing_after
from workbench.harness.run._estimate import DryRunEstimate
from workbench.harness.run._heap import fewer_collections
from workbench.harness.run._run_request import RunOptions, SpecArg, as_experiment, default_out
from workbench.harness.run._runner import run_experiment_async

__all__ = ["run_experiment"]


@overload
def run_experiment(spec: SpecArg | None = None, out: str | Path | None = None, *,
                   dry_run: Literal[False] = False, **kwargs: Unpack[RunOptions]) -> Results: ...
@overload
def run_experiment(spec: SpecArg | None = None, out: str | Path | None = None, *,
                   dry_run: Literal[True], **kwargs: Unpack[RunOptions]) -> DryRunEstimate: ...
@overload
def run_experiment(spec: SpecArg | None = None, out: str | Path | None = None, *,
                   dry_run: bool, **kwargs: Unpack[RunOptions]) -> Results | DryRunEstimate: ...
def run_experiment(spec: SpecArg | None = None, out: str | Path | None = None, *,
                   dry_run: bool = False, **kwargs: Unpack[RunOptions]
                   ) -> Results | DryRunEstimate:
    """Synchronous `run_experiment_async`; works inside a running event loop (Jupyter).

    Args:
        spec: An `Experiment`, a TOML path, or None for `Experiment.default()`.
        out: The run folder; default ``runs/<name>``.
        dry_run: Only estimate (see `run_experiment_async`).
        **kwargs: See `run_experiment_async`.

    Returns:
        `Results`, or a `DryRunEstimate` with ``dry_run=True``.
    """
    experiment = Experiment.default() if spec is None else as_experiment(spec)
    folder = Path(out) if out is not None else default_out(experiment)
    # The store's last fold overlaps the loop's shutdown, and the run's young objects are
    # collected while the writer thread closes the store (`close_store`), not before.
    with fewer_collections(), closing_after():
        return run_sync(run_experiment_async(experiment, folder, dry_run=dry_run, **kwargs))
