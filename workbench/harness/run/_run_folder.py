"""Which run folder a run may use: the recorded spec must define the same cells.

A run folder holds the cells of one experiment. Re-running the same spec resumes it; but a
different spec under the same ``name`` (hence the same ``runs/<name>``) would mix two
experiments' cells in one store and one report. `check_run_folder` compares the fields that
define cells (sessions, models, templates, strategies, windows, repeats, ``manual_compact``)
with the folder's recorded ``spec.toml`` and refuses a difference; fields that do not change
cells (budget, concurrency, cache mode or path, seed) may change between runs, so raising the
budget and running again still resumes. `fresh_folder` picks ``<out>-2``, ``<out>-3``... for
``workbench run --new``.
"""

from __future__ import annotations

import sqlite3
import tomllib
from pathlib import Path

from workbench.errors import ConfigError
from workbench.harness.experiment._cells import DATASET_PREFIX, read_manifest
from workbench.harness.experiment._spec import CACHE_PREFIXES, Experiment
from workbench.harness.experiment._spec_tables import ModelEntry, SessionSource
from workbench.harness.results._results import DB_FILE, SPEC_FILE

__all__ = ["check_run_folder", "fresh_folder"]

CELL_FIELDS = ("sessions", "limit", "models", "templates", "strategies", "windows", "repeats",
               "manual_compact")
"""Experiment fields that decide which cells exist."""


def _holds_cells(out: Path) -> bool:
    db = out / DB_FILE
    if not db.is_file():
        return False
    try:
        conn = sqlite3.connect(db.resolve().as_uri() + "?mode=ro", uri=True)
        try:
            return conn.execute("SELECT 1 FROM cells LIMIT 1").fetchone() is not None
        finally:
            conn.close()
    except sqlite3.Error:
        return True  # unreadable: do not assume it is safe to mix into


def _as_recorded(experiment: Experiment) -> Experiment:
    # Through TOML and back, as ``spec.toml`` is written, with base_dir made absolute: both
    # sides of the comparison then went through the same serialisation.
    base = str(Path(experiment.base_dir or ".").resolve())
    text = experiment.model_copy(update={"base_dir": base}).to_toml()
    return Experiment.from_dict(tomllib.loads(text), source=SPEC_FILE)


def _model_key(entry: ModelEntry) -> tuple[object, ...]:
    model = entry.model
    for prefix in CACHE_PREFIXES:  # a replay and a live run of one model share cells
        if model.startswith(prefix):
            model = model[len(prefix):]
    key: tuple[object, ...] = (model, entry.label,
                            sorted((k, repr(v)) for k, v in entry.params.items()))
    sessions = getattr(entry, "sessions", None)
    key = key if sessions is None else (*key, sorted(set(sessions)))
    templates = getattr(entry, "templates", None)
    return key if templates is None else (*key, ("templates", sorted(set(templates))))


def _source_key(source: SessionSource, experiment: Experiment,
                datasets: set[str]) -> tuple[object, ...]:
    path = source.path
    if not path.startswith(DATASET_PREFIX) and path not in datasets:  # a file or glob: absolute
        path = str(experiment.resolve_path(path))
    return (path, source.format, sorted((k, repr(v)) for k, v in source.selection().items()))


def cell_fields(experiment: Experiment) -> dict[str, object]:
    """The cell-defining fields of `experiment` in a comparable form."""
    exp = _as_recorded(experiment)
    return {
        "sessions": [_source_key(s, exp, set(read_manifest())) for s in exp.sessions],
        "limit": exp.limit,
        "models": [_model_key(m) for m in exp.models],
        "templates": list(exp.templates),
        "strategies": list(exp.strategies),
        "windows": list(exp.windows),
        "repeats": exp.repeats,
        "manual_compact": exp.manual_compact,
    }


def check_run_folder(experiment: Experiment, out: Path) -> None:
    """Refuse to run `experiment` into `out` when `out` holds cells of a different experiment.

    Raises:
        ConfigError: naming the fields that differ and the two ways out (``--new``, ``--out``).
    """
    spec_path = out / SPEC_FILE
    if not spec_path.is_file() or not _holds_cells(out):
        return
    try:
        recorded = Experiment.from_toml(spec_path)
    except ConfigError as exc:
        raise ConfigError(f"{out} holds a run whose {SPEC_FILE} cannot be read ({exc}); pass "
                          "--new for a fresh folder or --out another folder") from None
    mine, theirs = cell_fields(experiment), cell_fields(recorded)
    differ = [name for name in CELL_FIELDS if mine[name] != theirs[name]]
    if differ:
        raise ConfigError(
            f"{out} holds the cells of a different experiment (its {SPEC_FILE} differs in: "
            f"{', '.join(differ)}); pass --new to start a fresh folder beside it, or --out "
            "another folder (resuming needs the same sessions, models, templates, windows and "
            "repeats)")


def fresh_folder(out: Path) -> Path:
    """`out` when it holds no run yet, else the first free ``<out>-2``, ``<out>-3``..."""
    def used(folder: Path) -> bool:
        return folder.exists() and any(folder.iterdir()) if folder.is_dir() else folder.exists()

    if not used(out):
        return out
    n = 2
    while used(out.with_name(f"{out.name}-{n}")):
        n += 1
    return out.with_name(f"{out.name}-{n}")
