"""The models a run loads: each cell's summarizer (its model string at its window, through the
experiment's response cache) and the ``[qa]`` models by role, loaded the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypedDict

from workbench.compaction._model import CompactionModel
from workbench.errors import ConfigError
from workbench.harness.experiment._cells import Cell
from workbench.harness.experiment._qa_table import QAModel
from workbench.harness.experiment._spec import Experiment
from workbench.models._spec import load_model_with

__all__ = ["CacheArgs", "ModelFactory", "ModelFor", "QAModelFactory", "load_cell_model",
           "load_qa_model", "qa_entry"]

ModelFor = Callable[..., CompactionModel]
"""``(cell, role=None, **steps) -> CompactionModel``: the runner's pipeline for a cell (with a
role, a ``[qa]`` model; `steps` adds pipeline steps, such as the cell's ``record``)."""

ModelFactory = Callable[[Cell], CompactionModel]
"""A user's ``cell -> model``, used instead of ``load_model`` (tests, custom models)."""
QAModelFactory = Callable[[Cell, str], CompactionModel]
"""A user's ``(cell, role) -> model`` for the ``[qa]`` models."""


class CacheArgs(TypedDict, total=False):
    """The response-cache arguments of ``load_model`` an experiment sets (none: the model's)."""

    cache: str
    cache_path: Path


def load_cell_model(experiment: Experiment, cell: Cell) -> CompactionModel:
    """The summarizer of `cell`: its model string at its window, with the experiment's cache."""
    cache = experiment.cache
    kwargs: CacheArgs = {}
    if cache.mode is not None:
        kwargs["cache"] = cache.mode
    if cache.path or experiment.models[cell.model_index].cache_path:
        kwargs["cache_path"] = experiment.cache_file(cell.model_index)
    return load_model_with(cell.model_string, cell.params, window=cell.window, **kwargs)


def qa_entry(experiment: Experiment, role: str) -> QAModel:
    """The ``[qa]`` model entry of `role` (``answerer``, ``judge``, ``probe_author``).

    Raises:
        ConfigError: the experiment names no model for that role.
    """
    entry = experiment.qa.models().get(role) if experiment.qa is not None else None
    if entry is None:
        raise ConfigError(f"the experiment's [qa] table names no {role} model")
    return entry


def load_qa_model(experiment: Experiment, role: str) -> CompactionModel:
    """The ``[qa]`` model of `role`, loaded like a summarizer (the experiment's cache)."""
    entry = qa_entry(experiment, role)
    cache = experiment.cache
    kwargs: CacheArgs = {}
    if cache.mode is not None:
        kwargs["cache"] = cache.mode
    if cache.path:
        kwargs["cache_path"] = experiment.resolve_path(cache.path)
    return load_model_with(entry.model, entry.params, **kwargs)
