"""What a run is asked to do: the spec (an `Experiment`, or the path of its TOML), the run
folder (``runs/<name>`` by default, with the spec copied into it as run) and the keyword
options of `run_experiment_async` beside ``dry_run``."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import TypedDict

from workbench._redact import redact
from workbench._storage import write_atomic
from workbench.harness.experiment._spec import Experiment
from workbench.harness.results._results import SPEC_FILE
from workbench.harness.run._run_models import ModelFactory, QAModelFactory
from workbench.models._shared import SharedCalls

__all__ = ["RunOptions", "SpecArg", "as_experiment", "default_out", "write_spec"]

SpecArg = Experiment | str | Path
"""A run's spec: an `Experiment`, or the path of its TOML file."""


class RunOptions(TypedDict, total=False):
    """The keyword options of `run_experiment_async` beside ``dry_run`` (documented there)."""

    retry_errors: bool
    progress: bool
    model_factory: ModelFactory | None
    concurrency: int | None
    new: bool
    share_calls: bool | SharedCalls
    only_sessions: Collection[str] | None
    check_folder: bool
    executor: str | None
    address: str | None
    qa_model_factory: QAModelFactory | None


def as_experiment(spec: SpecArg) -> Experiment:
    """`spec` itself, or the experiment its TOML file holds."""
    return spec if isinstance(spec, Experiment) else Experiment.from_toml(spec)


def write_spec(experiment: Experiment, out: Path) -> Path:
    """Write the experiment as run to ``<out>/spec.toml`` (no secrets, absolute base_dir)."""
    base = str(Path(experiment.base_dir or ".").resolve())
    as_run = experiment.model_copy(update={"base_dir": base})
    path = out / SPEC_FILE
    write_atomic(path, redact(as_run.to_toml()))
    return path


def default_out(experiment: Experiment) -> Path:
    """``runs/<name>`` under the working directory: re-running the same command resumes."""
    return Path("runs") / experiment.name
