"""Forcing an experiment's models into one cache mode, for the gate (replay) and `record` (rw).

The extractive baseline makes no model call and has nothing to record, so it always runs live;
every other model is switched to the mode asked. Model labels drop the cache prefix, so the
cell ids (and the baseline file names) stay those of the spec as written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from workbench.errors import AuthenticationError, CacheMiss, ModelTimeout, RateLimited
from workbench.harness import CachePolicy, Cell, Experiment
from workbench.models import parse_model_spec
from workbench.regress._snapshot import cell_label

PREFIXES = {"replay": "replay:", "rw": "cached:"}


def calls_a_model(model_string: str) -> bool:
    """Whether the model string names a model that answers by calling one (not ``extractive``)."""
    return parse_model_spec(model_string).kind != "extractive"


def force_cache_mode(experiment: Experiment, mode: str) -> Experiment:
    """A copy of `experiment` whose calling models all use cache `mode` (``replay`` or ``rw``).

    Raises:
        ConfigError: a model string cannot be read.
    """
    models = []
    for entry in experiment.models:
        parsed = parse_model_spec(entry.model)
        bare = parsed.label
        string = bare if parsed.kind == "extractive" else PREFIXES[mode] + bare
        models.append(entry.model_copy(update={"model": string}))
    cache = CachePolicy(mode=None, path=experiment.cache.path)
    return experiment.model_copy(update={"models": models, "cache": cache})


def recording_path(experiment: Experiment) -> Path:
    """The response-cache file the experiment's recorded models read and write."""
    from workbench._paths import cache_path

    if experiment.cache.path:
        return experiment.resolve_path(experiment.cache.path).resolve()
    return cache_path()


INFRASTRUCTURE_ERRORS: tuple[type[BaseException], ...] = (
    CacheMiss, AuthenticationError, RateLimited, ModelTimeout)
"""Model errors that mean the run could not be done (as opposed to a compaction outcome)."""


class InfrastructureWatch:
    """A model factory for the runner that notes which cell hit an infrastructure error.

    The summarizer wraps such errors (``CompactionCallFailed``, the original as its cause), so
    the cell's stored error type does not say "cache miss"; watching the model calls does.

    Args:
        experiment: The experiment being run (models are built as the runner builds them).

    Attributes:
        failures: ``(cell, error)`` in the order they happened.
    """

    def __init__(self, experiment: Experiment) -> None:
        self.experiment = experiment
        self.failures: list[tuple[Cell, BaseException]] = []
        self._models: dict[tuple[int, int | None], Any] = {}

    def __call__(self, cell: Cell) -> Any:
        """The model of `cell` (shared per model and window), watched for this cell."""
        from workbench.harness._runner import _load_model

        key = (cell.model_index, cell.window)
        if key not in self._models:
            self._models[key] = _load_model(self.experiment, cell)
        return _Watched(self._models[key], cell, self.failures)

    def problems(self) -> list[str]:
        """One line per failed cell: the error class, the cell named, the error text."""
        return [f"{type(exc).__name__} in cell ({cell_label(_cell_fields(cell))}): {exc}"
                for cell, exc in self.failures]


class _Watched:
    def __init__(self, inner: Any, cell: Cell, failures: list[tuple[Cell, BaseException]]) -> None:
        self.inner = inner
        self._cell = cell
        self._failures = failures

    async def complete(self, system: str, messages: list[Any]) -> Any:
        try:
            return await self.inner.complete(system, messages)
        except INFRASTRUCTURE_ERRORS as exc:
            self._failures.append((self._cell, exc))
            raise

    def __getattr__(self, name: str) -> Any:
        # Everything else (identity, window, label) is the wrapped model's.
        return getattr(self.inner, name)


def _cell_fields(cell: Cell) -> dict[str, Any]:
    return {"session_id": cell.session_id, "model": cell.model, "template": cell.template,
            "window": cell.window, "strategy": cell.strategy, "repeat": cell.repeat}
