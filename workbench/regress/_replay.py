"""Forcing an experiment's models into one cache mode, for the gate (replay) and `record` (rw).

The extractive baseline makes no model call and has nothing to record, so it always runs live;
every other model is switched to the mode asked. Model labels drop the cache prefix, so the
cell ids (and the baseline file names) stay those of the spec as written.
"""

from __future__ import annotations

from pathlib import Path

from workbench.errors import AuthenticationError, CacheMiss, ModelTimeout, RateLimited
from workbench.harness import CachePolicy, Experiment, Results
from workbench.harness.results._cell_names import cell_label
from workbench.models import parse_model_spec

PREFIXES = {"replay": "replay:", "rw": "cached:"}


def calls_a_model(model_string: str) -> bool:
    """Whether the model string names a model that answers by calling one (not ``extractive``)."""
    return parse_model_spec(model_string).kind != "extractive"


def force_cache_mode(experiment: Experiment, mode: str) -> Experiment:
    """A copy of `experiment` whose calling models all use cache `mode` (``replay`` or ``rw``),
    the ``[qa]`` models included.

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
    qa = experiment.qa
    if qa is not None:  # the [qa] answerer, judge and author replay (or record) alike
        qa = qa.model_copy(update={
            role: entry.model_copy(update={
                "model": PREFIXES[mode] + parse_model_spec(entry.model).label})
            for role, entry in qa.models().items()})
    return experiment.model_copy(update={"models": models, "cache": cache, "qa": qa})


def recording_path(experiment: Experiment) -> Path:
    """The experiment's own response-cache file (``[cache] path``, else the user cache)."""
    return experiment.cache_file().resolve()


def recording_paths(experiment: Experiment) -> list[Path]:
    """The response-cache files the experiment's calling models read and write (a model's own
    ``cache_path`` or the experiment's file), each once, in model order."""
    paths = [experiment.cache_file(i).resolve() for i, entry in enumerate(experiment.models)
             if calls_a_model(entry.model)]
    return list(dict.fromkeys(paths)) or [recording_path(experiment)]


INFRASTRUCTURE_ERRORS: tuple[type[BaseException], ...] = (
    CacheMiss, AuthenticationError, RateLimited, ModelTimeout)
"""Model errors that mean the run could not be done, for stores that predate ``outcome_kind``."""


def infrastructure_problems(results: Results) -> list[str]:
    """One line per cell of the latest run that hit an infrastructure error (its stored
    ``outcome_kind`` is ``error``: a replay miss, a rejected key, a missing tokenizer or extra):
    its root error class, the cell named, the error text."""
    cells = results.cells
    if cells.empty or "error_class" not in cells or results.runs.empty:
        return []
    latest = results.runs["run_id"].iloc[-1]
    if "outcome_kind" in cells:
        bad_rows = cells["outcome_kind"] == "error"
    else:
        bad_rows = cells["error_class"].isin({cls.__name__ for cls in INFRASTRUCTURE_ERRORS})
    bad = cells[(cells["run_id"] == latest) & bad_rows]
    return [f"{row['error_class']} in cell ({cell_label(row)}): {row['error_message']}"
            for row in bad.to_dict("records")]
