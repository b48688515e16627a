"""Cells: one (session, strategy, model, template, window, repeat) combination of an experiment.

`expand_cells` loads the sessions an experiment names (files, globs, shipped datasets) and
returns the cells in a fixed order with ids that depend only on the cell key, so a re-run of the
same spec finds the same ids in the results store.

The sessions come from `workbench.harness.experiment._session_sources` (shipped datasets, files,
globs; a file that cannot be read stands as an `UnreadableSession`). Before any cell is built,
`check_cell_count` refuses an experiment past `MAX_CELLS`, so a typo such as
``repeats = 1000000000`` fails at once.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from workbench._json_types import JSONValue
from workbench.errors import ConfigError
from workbench.harness.experiment._checks import MAX_CELLS
from workbench.harness.experiment._params import expand_points, point_label
from workbench.harness.experiment._session_sources import (
    ALL_DATASETS,
    DATASET_PREFIX,
    MANIFEST,
    UNREADABLE_PREFIX,
    SessionCache,
    UnreadableSession,
    load_experiment_sessions,
    read_manifest,
    read_manifest_file,
    resolve_source,
)
from workbench.harness.experiment._spec import Experiment
from workbench.harness.experiment._subsets import (
    check_model_sessions,
    limit_sessions,
    model_templates,
)
from workbench.harness.experiment._validate import counted
from workbench.harness.experiment._variants import (
    canonical_name,
    known_variants,
    read_variant_params,
    variant_folder,
)
from workbench.harness.experiment._windows import format_window
from workbench.sessions import Session
from workbench.strategies import strategy_class

__all__ = ["ALL_DATASETS", "ALL_TEMPLATES", "Cell", "DATASET_PREFIX", "DEFAULT_TEMPLATE",
           "MANIFEST", "NO_MODEL", "SessionCache", "UNREADABLE_PREFIX", "UnreadableSession",
           "cell_id_for", "cell_key", "check_cell_count", "expand_cells",
           "load_experiment_sessions", "not_run_templates", "read_manifest", "read_manifest_file",
           "resolve_source", "template_names", "tune_points"]

ALL_TEMPLATES = "all"
DEFAULT_TEMPLATE = "default"
NO_MODEL = "none"
"""Model label of cells whose strategy calls no model (masking, truncation...)."""


@dataclass(frozen=True)
class Cell:
    """One unit of work; its row in the results store is keyed by `cell_id`.

    Attributes:
        cell_id: First 16 hex digits of sha256 over the cell key.
        key: ``session_id|strategy|model|template|window|repeat``.
        session_id: `Session.id` of the session compacted.
        session_path: The file it was read from.
        session_format: The importer that read it.
        strategy: Compaction strategy label (``goose``, ``mask[keep_last=3]``...).
        model: Model label (string plus public params) as shown in tables.
        model_string: The string passed to ``load_model``.
        template: Template variant name.
        window: Simulated context window in tokens, or None for no cap.
        repeat: Repeat index, from 0.
        model_index: Position of the model in ``Experiment.models``.
        strategy_name: The registered strategy name behind `strategy`.
        strategy_settings: Its settings as written in the experiment.
        uses_model: False for strategies that call no model (their model label is ``none``).
        strategy_at: ``end`` (compact the whole recording) or ``recorded`` (at the recorded
            agent's first compaction boundary).
    """

    cell_id: str
    key: str
    session_id: str
    session_path: str
    session_format: str
    strategy: str
    model: str
    model_string: str
    template: str
    window: int | None
    repeat: int
    model_index: int = 0
    params: dict[str, JSONValue] = field(default_factory=dict, compare=False, hash=False, repr=False)
    strategy_name: str = "goose"
    strategy_settings: dict[str, object] = field(default_factory=dict, compare=False, hash=False,
                                              repr=False)
    uses_model: bool = True
    strategy_at: str = "end"


def cell_key(session_id: str, strategy: str, model: str, template: str, window: int | None,
             repeat: int) -> str:
    """The text a cell id is hashed from."""
    return "|".join([session_id, strategy, model, template, format_window(window), str(repeat)])


def cell_id_for(key: str) -> str:
    """sha256 of `key`, first 16 hex digits."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


def template_names(experiment: Experiment) -> list[str]:
    """The experiment's template variants with ``all`` expanded to every ``prompts/`` folder."""
    names: list[str] = []
    for name in experiment.templates:
        if name == ALL_TEMPLATES:
            expanded = known_variants(experiment) or [DEFAULT_TEMPLATE]
        elif "{" in name:
            expanded = [canonical_name(name, experiment)]
        else:
            expanded = [name]
        names.extend(n for n in expanded if n not in names)
    names.extend(n for n in tune_points(experiment) if n not in names)
    return names


def tune_points(experiment: Experiment) -> list[str]:
    """Labels of the points the experiment's ``[tune]`` table spans (empty without one)."""
    tune = experiment.tune
    if tune is None:
        return []
    folder = variant_folder(tune.variant, experiment)
    declared = read_variant_params(folder)
    if not declared:
        raise ConfigError(f"tune: variant {tune.variant!r} declares no [params] in its variant.toml")
    points = expand_points(declared, tune.params, sample=tune.sample, seed=experiment.seed,
                           where="tune.params")
    return [point_label(tune.variant, p, declared) for p in points]


def check_cell_count(experiment: Experiment, sessions: int, templates: int) -> int:
    """The most cells the experiment can have with this many sessions and templates.

    Raises:
        ConfigError: more than `MAX_CELLS`, naming every factor of the product.
    """
    factors = {"sessions": sessions, "strategies": len(experiment.strategies),
               "models": len(experiment.models), "templates": templates,
               "windows": len(experiment.windows), "repeats": experiment.repeats}
    total, product = counted(factors)
    if total > MAX_CELLS:
        raise ConfigError(f"the experiment would have up to {total:,} cells ({product}); the "
                          f"limit is {MAX_CELLS:,} cells: split it into several experiments")
    return total


def not_run_templates(experiment: Experiment) -> dict[str, list[str]]:
    """Model label -> the experiment's templates its entry's ``templates`` leaves out."""
    templates = template_names(experiment)
    runs = model_templates(experiment, templates)
    return {m.label: [t for t in templates if t not in runs[i]]
            for i, m in enumerate(experiment.models) if len(runs[i]) < len(templates)}


def expand_cells(experiment: Experiment, sessions: list[Session] | None = None) -> list[Cell]:
    """All cells of `experiment`: session x strategy x model x template x window x repeat.

    Only the first ``limit`` sessions get cells; a model entry with ``sessions`` gets cells for
    those of them only, and one with ``templates`` for those templates only.

    Args:
        experiment: The spec.
        sessions: Already-loaded sessions (every session the spec names); loaded from the
            spec when None.

    Returns:
        Cells in that nesting order (spec order within each axis).

    Raises:
        ConfigError: too many cells, or a model entry's ``sessions`` names an unknown session
            or its ``templates`` an unknown variant.
    """
    if sessions is None:
        sessions = load_experiment_sessions(experiment)
    templates = template_names(experiment)
    check_model_sessions(experiment, sessions)
    sessions = limit_sessions(experiment, sessions)
    check_cell_count(experiment, len(sessions), len(templates))
    subsets = {i: set(m.sessions) for i, m in enumerate(experiment.models)
               if m.sessions is not None}
    runs = model_templates(experiment, templates)
    cells: list[Cell] = []
    seen: set[str] = set()
    for session in sessions:
        for entry in experiment.strategies:
            kind = strategy_class(entry.name)
            if not kind.applies_to(session) or (
                    entry.at == "recorded" and not strategy_class("reference").applies_to(session)):
                continue
            # A strategy that calls no model runs once, not once per model (or template).
            models = (list(enumerate(experiment.models)) if kind.uses_model
                      else [(0, None)])
            for model_index, spec in models:
                if spec is not None and session.id not in subsets.get(model_index, (session.id,)):
                    continue  # this model runs a subset of the sessions
                model_label = spec.label if spec is not None else NO_MODEL
                mine = runs[model_index] if spec is not None else templates
                for template in mine if kind.uses_template else templates[:1]:
                    for window in experiment.windows:
                        for repeat in range(experiment.repeats):
                            key = cell_key(session.id, entry.display, model_label, template,
                                           window, repeat)
                            if key in seen:  # the same model or window listed twice
                                continue
                            seen.add(key)
                            cells.append(Cell(
                                cell_id=cell_id_for(key), key=key, session_id=session.id,
                                session_path=str(session.path), session_format=session.format,
                                strategy=entry.display, model=model_label,
                                model_string=spec.model if spec is not None else NO_MODEL,
                                template=template, window=window, repeat=repeat,
                                model_index=model_index,
                                params=dict(spec.params) if spec is not None else {},
                                strategy_name=entry.name,
                                strategy_settings=dict(entry.settings),
                                uses_model=kind.uses_model, strategy_at=entry.at))
    return cells
