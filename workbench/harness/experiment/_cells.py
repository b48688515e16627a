"""Cells: one (session, strategy, model, template, window, repeat) combination of an experiment.

`expand_cells` loads the sessions an experiment names (files, globs, shipped datasets) and
returns the cells in a fixed order with ids that depend only on the cell key, so a re-run of the
same spec finds the same ids in the results store.

A session file that cannot be read need not stop a run: `load_experiment_sessions` can collect
it as an `UnreadableSession` instead, with a placeholder session (no messages, an id starting
with `UNREADABLE_PREFIX`) standing in its place, so its cells exist and become error rows that
name the file's error. Before any cell is built, `check_cell_count` refuses an experiment
past `MAX_CELLS`, so a typo such as ``repeats = 1000000000`` fails at once.
"""

from __future__ import annotations

import glob as globlib
import hashlib
import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from workbench._resources import shipped
from workbench.errors import ConfigError, SessionFormatError
from workbench.harness.experiment._checks import MAX_CELLS
from workbench.harness.experiment._spec import Experiment, SessionSource
from workbench.harness.experiment._subsets import (
    check_model_sessions,
    limit_sessions,
    model_templates,
)
from workbench.harness.experiment._validate import counted
from workbench.harness.experiment._windows import format_window
from workbench.sessions import Session, load_sessions
from workbench.strategies import strategy_class

MANIFEST = "datasets/manifest.json"
"""The shipped datasets' manifest, in the package data."""
ALL_DATASETS = "dataset:all"
DATASET_PREFIX = "dataset:"
"""``dataset:all`` is the shipped set; ``dataset:NAME`` every session of the set in
``datasets/NAME/`` (its own manifest, never part of ``dataset:all``: ``dataset:memory``)."""
ALL_TEMPLATES = "all"
DEFAULT_TEMPLATE = "default"
NO_MODEL = "none"
"""Model label of cells whose strategy calls no model (masking, truncation...)."""
UNREADABLE_PREFIX = "unreadable:"
"""Session ids of the placeholders standing for session files that could not be read."""


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
    params: dict[str, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)
    strategy_name: str = "goose"
    strategy_settings: dict[str, Any] = field(default_factory=dict, compare=False, hash=False,
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


def read_manifest(root: Path | None = None) -> dict[str, tuple[Path, str | None]]:
    """Shipped dataset names -> (file, format), from ``datasets/manifest.json``.

    Reads the ``sessions`` (or ``datasets``) list of ``{name, file|path, format}`` objects; a
    missing file name means ``<name>.json`` beside the manifest.

    Args:
        root: A folder holding ``datasets/manifest.json``; default: the shipped data.
    """
    return read_manifest_file((root / MANIFEST) if root is not None
                              else shipped(*MANIFEST.split("/")))


def read_manifest_file(base: Path) -> dict[str, tuple[Path, str | None]]:
    """Dataset names -> (file, format) of one manifest file (empty when it is missing)."""
    if not base.is_file():
        return {}
    # Parsed once per content: a spec names many datasets, and the manifest (with every
    # session's ground truth) takes milliseconds to parse but a fraction of one to read.
    raw = base.read_bytes()
    cached = _MANIFESTS.get(base)
    if cached is None or cached[0] != raw:
        cached = _MANIFESTS[base] = (raw, _parse_manifest(base, raw))
    return dict(cached[1])


_MANIFESTS: dict[Path, tuple[bytes, dict[str, tuple[Path, str | None]]]] = {}


def _parse_manifest(base: Path, raw: bytes) -> dict[str, tuple[Path, str | None]]:
    data = json.loads(raw.decode("utf-8"))
    if isinstance(data, dict):
        data = data.get("sessions", data.get("datasets", []))
    out: dict[str, tuple[Path, str | None]] = {}
    for entry in data if isinstance(data, list) else []:
        if isinstance(entry, dict) and "name" in entry:
            name = str(entry["name"])
            rel = entry.get("file") or entry.get("path") or f"{name}.json"
            out[name] = ((base.parent / rel).resolve(), entry.get("format"))
    return out


def resolve_source(source: SessionSource,
                   experiment: Experiment) -> list[tuple[Path, str | None]]:
    """The files (with a known format, if any) one ``sessions`` entry stands for, in order.

    Raises:
        ConfigError: the entry matches nothing; the message lists the shipped dataset names.
    """
    text = source.path
    manifest = read_manifest()
    if text == ALL_DATASETS:
        if not manifest:
            raise ConfigError(f"sessions: {ALL_DATASETS!r} needs the shipped {MANIFEST}, which "
                              "is missing from the installed workbench; reinstall the package")
        return [manifest[name] for name in sorted(manifest)]
    if text.startswith(DATASET_PREFIX):
        name = text[len(DATASET_PREFIX):]
        named = read_manifest_file(shipped("datasets", name, "manifest.json"))
        if not named:
            sets = sorted(p.parent.name for p in shipped("datasets").glob("*/manifest.json"))
            raise ConfigError(f"sessions: {text!r} names no shipped dataset set (no "
                              f"datasets/{name}/manifest.json); known: {ALL_DATASETS}"
                              + "".join(f", {DATASET_PREFIX}{n}" for n in sets))
        return [named[n] for n in sorted(named)]
    if text in manifest:
        return [manifest[text]]
    path = experiment.resolve_path(text)
    if any(ch in text for ch in "*?["):
        found = sorted(Path(p) for p in globlib.glob(str(path), recursive=True))
        files: list[tuple[Path, str | None]] = [(p, None) for p in found if p.is_file()]
        if not files:
            raise ConfigError(f"sessions: glob {text!r} matched no files (looked in {path.parent})")
        return files
    if not path.exists():
        from workbench._suggest import did_you_mean

        known = ", ".join(sorted(manifest)) or "none shipped"
        raise ConfigError(f"sessions: {text!r} is neither a file ({path}) nor a dataset name"
                          f"{did_you_mean(text, manifest)} (known: {known}, or "
                          f"{ALL_DATASETS!r})")
    return [(path, None)]


class SessionCache:
    """Loads each (file, format, selection) once per run (a file's read error is kept too)."""

    def __init__(self) -> None:
        self._loaded: dict[tuple[str, str | None, str], list[Session] | SessionFormatError] = {}

    def load(self, path: Path, source: SessionSource, format: str | None = None) -> list[Session]:
        """Sessions of `path` selected by `source` (cached); `source.format` wins over `format`.

        Raises:
            SessionFormatError: the file cannot be read (the same error on every call).
        """
        select = source.selection()
        fmt = source.format or format
        key = (str(path), fmt, json.dumps(select, sort_keys=True, default=str))
        if key not in self._loaded:
            try:
                self._loaded[key] = load_sessions(path, format=fmt, **select)
            except SessionFormatError as exc:
                self._loaded[key] = exc
        loaded = self._loaded[key]
        if isinstance(loaded, SessionFormatError):
            raise loaded
        return loaded


@dataclass(frozen=True)
class UnreadableSession:
    """A session file of the experiment that could not be read.

    Attributes:
        path: The file.
        error: Why it could not be read (names the file and line).
        session: The placeholder standing in its place: no messages, the id
            ``unreadable:<path>`` (plus the selection, if any), so its cells exist.
    """

    path: Path
    error: SessionFormatError
    session: Session


def _shown(path: Path, experiment: Experiment) -> str:
    """`path` relative to the experiment's folder (POSIX separators), else as given."""
    base = Path(experiment.base_dir or ".").resolve()
    try:
        return path.resolve().relative_to(base).as_posix()
    except ValueError:
        return str(path)


def _placeholder(path: Path, source: SessionSource, fmt: str | None, error: SessionFormatError,
                 experiment: Experiment) -> Session:
    shown = _shown(path, experiment)
    select = source.selection()
    if select:
        shown += "[" + ",".join(f"{k}={v}" for k, v in sorted(select.items())) + "]"
    return Session(id=UNREADABLE_PREFIX + shown, format=source.format or fmt or "unknown",
                   path=str(path), messages=[], meta={"unreadable": str(error)})


def load_experiment_sessions(experiment: Experiment, cache: SessionCache | None = None,
                             unreadable: list[UnreadableSession] | None = None) -> list[Session]:
    """Every session the experiment names, in spec order, each once (a file named twice is read
    once); sessions of different files that share an id are kept apart as ``<id>@<file>``.

    Args:
        experiment: The spec.
        cache: Loaded files, shared with other callers in the same run.
        unreadable: When given, a file that cannot be read (`SessionFormatError`) is appended
            here and its placeholder session takes its place in the returned list, instead of
            the error being raised.

    Raises:
        SessionFormatError: a file cannot be read and `unreadable` is None.
        ConfigError: an entry matches no file, or a selection the file cannot satisfy.
    """
    cache = cache or SessionCache()
    found: list[Session] = []
    for source in experiment.sessions:
        for path, fmt in resolve_source(source, experiment):
            try:
                loaded = cache.load(path, source, fmt)
            except SessionFormatError as exc:
                if unreadable is None:
                    raise
                placeholder = _placeholder(path, source, fmt, exc, experiment)
                unreadable.append(UnreadableSession(path, exc, placeholder))
                loaded = [placeholder]
            found.extend(loaded)
    return _kept_apart(found, experiment)


def _kept_apart(found: list[Session], experiment: Experiment) -> list[Session]:
    """`found` with each id once; an id that sessions from different files share becomes
    ``<id>@<file>`` for each of them (the recorded id kept in ``meta["recorded_id"]``), so
    none is dropped and each says where it came from."""
    files: dict[str, set[Path]] = {}
    for session in found:
        files.setdefault(session.id, set()).add(Path(session.path).resolve())
    seen: set[str] = set()
    out: list[Session] = []
    for session in found:
        if len(files[session.id]) > 1:
            session = replace(session, id=f"{session.id}@{_shown(Path(session.path), experiment)}",
                              meta={**session.meta, "recorded_id": session.id})
        if session.id not in seen:
            seen.add(session.id)
            out.append(session)
    return out


def template_names(experiment: Experiment) -> list[str]:
    """The experiment's template variants with ``all`` expanded to every ``prompts/`` folder."""
    names: list[str] = []
    for name in experiment.templates:
        if name == ALL_TEMPLATES:
            from workbench.harness.experiment._variants import known_variants

            expanded = known_variants(experiment) or [DEFAULT_TEMPLATE]
        elif "{" in name:
            from workbench.harness.experiment._variants import canonical_name

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
    from workbench.harness.experiment._params import expand_points, point_label
    from workbench.harness.experiment._variants import read_variant_params, variant_folder

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
