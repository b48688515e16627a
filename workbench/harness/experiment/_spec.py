"""`Experiment`: what to run, as data (sessions x strategies x models x templates x windows).

Read from TOML with `Experiment.from_toml`; every field is documented below and unknown keys
are rejected, so a typo fails with the key path instead of being silently ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import tomli_w
from pydantic import (
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from workbench._paths import cache_path
from workbench._redact import public_params
from workbench._resources import shipped_experiment
from workbench.errors import ConfigError
from workbench.harness.experiment._checks import (
    MAX_CELLS,
    MAX_CONCURRENCY,
    MAX_REPEATS,
    check_cache_file,
    distinct_models,
    maskable_secrets,
)
from workbench.harness.experiment._qa_table import QATable
from workbench.harness.experiment._spec_tables import (
    _SAFE_NAME,
    CACHE_PREFIXES,
    Budget,
    CachePolicy,
    ExecutorSpec,
    ModelEntry,
    SessionSource,
    _Strict,
)
from workbench.harness.experiment._strategy_spec import ReplaySpec, StrategyEntry
from workbench.harness.experiment._tolerance import parse_tolerance
from workbench.harness.experiment._toml import loads_toml
from workbench.harness.experiment._tune_table import TuneTable
from workbench.harness.experiment._validate import check_list_bounds, check_spec, clean_names
from workbench.harness.experiment._validation import describe_errors
from workbench.harness.experiment._verdict_table import VerdictTable
from workbench.harness.experiment._windows import Window

__all__ = ["Budget", "CACHE_PREFIXES", "CachePolicy", "DEFAULT_SPEC", "ExecutorSpec", "Experiment",
           "ModelEntry", "SessionSource"]


DEFAULT_SPEC = "experiments/default.toml"
"""The default experiment, in the working folder (a clone, or a `workbench init` project) or
else the shipped one."""


class Experiment(_Strict):
    """An experiment: the matrix of cells to run and how to run them."""

    name: str = Field(default="experiment", min_length=1)
    """Names the run folder (``runs/<name>``) and the report."""
    sessions: list[SessionSource] = Field(min_length=1)
    """Where the recorded sessions come from."""
    limit: int | None = Field(default=None, gt=0)
    """Keep only the first N sessions, in the order ``sessions`` gives them (before each
    model's own ``sessions`` subset applies); ``workbench run --limit N`` sets it."""
    models: list[ModelEntry] = Field(min_length=1)
    """Models to summarize with."""
    templates: list[str] = Field(default_factory=lambda: ["default"], min_length=1)
    """Template variants: folder names under ``prompts_dir``, paths, ``default`` (the built-in
    templates), or ``all`` (every folder under ``prompts_dir``)."""
    prompts_dir: str | None = None
    """The folder of template variant folders (relative to the spec file); default: the
    variants the workbench ships. ``workbench init`` points it at the project's ``prompts/``."""
    strategies: list[StrategyEntry] = Field(
        default_factory=lambda: [StrategyEntry(name="goose")], min_length=1)
    """Compaction strategies: names or ``{name = "mask", keep_last = 3, label = "mask3"}``
    tables (see `workbench.strategies`); ``goose`` runs Goose's ``compact_messages``."""
    replay: ReplaySpec | None = None
    """Whole-session replay run after the cells (``[replay]``); none when omitted."""
    windows: list[Window] = Field(default_factory=lambda: [None],  # type: ignore[arg-type]
                                  min_length=1)
    """Context windows to simulate: token counts, ``"8k"``, or ``"none"`` for no cap."""
    repeats: int = Field(default=1, ge=1, le=MAX_REPEATS)
    """How many times each cell runs (repeat index is part of the cell key)."""
    concurrency: int = Field(default=4, gt=0, le=MAX_CONCURRENCY)
    """At most this many cells calling models at once (a cell frees its slot when its calls are
    done, before it is scored)."""
    regress: dict[str, str] = Field(default_factory=dict)
    """The regression gate's metric rules (``workbench regress``): metric name (a column of
    `Results.table()`) -> tolerance such as ``"not lower"`` or ``"+5%"`` (see
    ``workbench.harness.experiment._tolerance``). Empty: the gate compares rendered summaries only."""
    budget: Budget = Field(default_factory=Budget)
    """Stop scheduling once spending reaches these limits."""
    cache: CachePolicy = Field(default_factory=CachePolicy)
    """Response cache policy for every model."""
    seed: int = 0
    """Seed for anything random (bootstrap intervals, sampling)."""
    manual_compact: bool = False
    """Compact as a manual ``/compact`` (no preserved user message, the manual continuation
    text). False by default: Goose's automatic path, which keeps the latest text-only user
    message after the summary, so retained tokens differ from summary tokens as they do in
    Goose. The summarizer's prompt is the same either way."""
    base_dir: str | None = None
    """Folder that relative paths resolve against; defaults to the spec file's folder."""
    tune: TuneTable | None = None
    """A parameter search over one variant folder: its points join ``templates`` (see
    ``workbench tune``)."""
    executor: ExecutorSpec = Field(default_factory=ExecutorSpec)
    """Where the cells run (``workbench run --executor`` overrides the kind and address)."""
    qa: QATable | None = None
    """Functional probes (``[qa]``): questions about each session answered from every cell's
    compacted context and graded; none when omitted."""
    verdict: VerdictTable = Field(default_factory=VerdictTable)
    """How the verdict recommends a template (``[verdict] rule = ...``; see `VerdictTable`)."""
    allow_short_secrets: bool = False
    """Accept model secrets (keys, header and query values, URL passwords, credential fields)
    shorter than 6 characters: they are masked where the spec stores them, but cannot be
    masked in free text, so a provider that echoes one back leaks it. Refused by default."""

    @model_validator(mode="before")
    @classmethod
    def _bounded_lists(cls, value: object) -> object:
        # Before any item is validated: a million thresholds must not be a million checks.
        check_list_bounds(value)
        return value

    @field_validator("templates")
    @classmethod
    def _clean_templates(cls, value: list[str]) -> list[str]:
        return clean_names(value)

    @field_validator("sessions", mode="before")
    @classmethod
    def _session_shorthand(cls, value: object) -> object:
        if isinstance(value, list):
            return [{"path": v} if isinstance(v, str) else v for v in value]
        return value

    @field_validator("regress")
    @classmethod
    def _tolerances(cls, value: dict[str, str]) -> dict[str, str]:
        for metric, rule in value.items():
            try:
                parse_tolerance(rule)
            except ConfigError as exc:
                raise PydanticCustomError("tolerance", "{metric}: {why}",
                                          {"metric": metric, "why": str(exc)}) from None
        return value

    @field_validator("models", mode="before")
    @classmethod
    def _model_shorthand(cls, value: object) -> object:
        if isinstance(value, list):
            return [{"model": v} if isinstance(v, str) else v for v in value]
        return value

    @field_validator("name")
    @classmethod
    def _safe_name(cls, value: str) -> str:
        # The name becomes a folder (runs/<name>): one plain path component, nothing that
        # climbs out of runs/ or points elsewhere.
        if not _SAFE_NAME.fullmatch(value):  # match() would let a trailing newline in
            raise PydanticCustomError(
                "experiment_name", "{name} is not a safe run folder name: use up to 100 letters, "
                "digits and . _ - + = @ , starting with a letter, digit or _ (no path separators, "
                "no '..', not absolute)", {"name": repr(value)})
        return value

    @field_validator("models")
    @classmethod
    def _distinct_labels(cls, value: list[ModelEntry]) -> list[ModelEntry]:
        # Cells are keyed by the model label: two entries with one label would share cells.
        distinct_models(value)
        return value

    @model_validator(mode="after")
    def _maskable_secrets(self) -> Experiment:
        if not self.allow_short_secrets:
            qa = self.qa.models() if self.qa is not None else {}
            maskable_secrets({**{f"models[{i}].params": m.params
                                 for i, m in enumerate(self.models)},
                              **{f"qa.{role}.params": m.params for role, m in qa.items()}})
        return self

    @model_validator(mode="after")
    def _bounded(self) -> Experiment:
        caches = {f"models[{i}].cache_path": self.cache_file(i)
                  for i, model in enumerate(self.models) if model.cache_path}
        if self.cache.path:
            caches["cache.path"] = self.cache_file()
        replay = self.replay
        check_spec(self.strategies, caches, self.tune.sample if self.tune else None,
                   (len(replay.strategies or self.strategies), len(replay.windows),
                    len(replay.thresholds)) if replay is not None else None)
        if self.cache.path:
            try:
                check_cache_file(self.cache_file())
            except PydanticCustomError as exc:
                raise PydanticCustomError("cache_path", "cache.path: {why}",
                                          {"why": exc.message()}) from None
        # The sessions are not read yet: a lower bound, refused early (expand_cells checks
        # the full product before building a cell).
        cells = (len(self.models) * len(self.templates) * len(self.windows) * self.repeats
                 * len(self.strategies))
        if cells > MAX_CELLS:
            raise PydanticCustomError(
                "cells", "the experiment would have at least {n} cells (models x templates x "
                "windows x repeats x strategies, before sessions); the limit is {limit} cells",
                {"n": f"{cells:,}", "limit": f"{MAX_CELLS:,}"})
        return self

    # -- files ------------------------------------------------------------------------------

    @classmethod
    def from_toml(cls, path: str | Path) -> Experiment:
        """Read and validate an experiment file.

        Raises:
            ConfigError: missing file, bad TOML, or an invalid value; the message names the
                file, the key path (``models[1].concurrency``) and the problem.
        """
        p = Path(path)
        try:
            data_bytes = p.read_bytes()
        except FileNotFoundError:
            raise ConfigError(f"{path}: no such experiment file") from None
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read the experiment file: {exc.strerror}") from exc
        return cls.from_toml_bytes(data_bytes, p)

    @classmethod
    def from_toml_bytes(cls, data_bytes: bytes, path: str | Path) -> Experiment:
        """Validate an experiment file's bytes, read earlier from `path` (which names it in
        errors, and is its ``base_dir`` unless it says one).

        Raises:
            ConfigError: as `from_toml`, for what the bytes hold.
        """
        p = Path(path)
        try:
            text = data_bytes.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data_bytes.count(b"\n", 0, exc.start) + 1
            raise ConfigError(f"{path}:{line}: not UTF-8 text: invalid byte at offset {exc.start} "
                              f"({exc.reason}); save the file as UTF-8") from None
        data = loads_toml(text, str(path))
        data.setdefault("base_dir", str(p.resolve().parent))
        return cls.from_dict(data, source=str(path))

    @classmethod
    def from_dict(cls, data: Mapping[str, object], source: str = "experiment") -> Experiment:
        """Validate a mapping; errors are `ConfigError` prefixed with `source`."""
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(describe_errors(exc, source, cls)) from None

    @classmethod
    def default(cls) -> Experiment:
        """The shipped default experiment (``experiments/default.toml`` in the package data)."""
        path = shipped_experiment("default")
        if path is None:
            raise ConfigError("the shipped default experiment is missing from the installed "
                              "workbench (experiments/default.toml); reinstall the package")
        return cls.from_toml(path)

    def to_dict(self, *, secrets: bool = False) -> dict[str, object]:
        """A plain mapping in TOML shape, every value left at its default left out; unless
        `secrets`, secret params (``api_key``, secret headers) are dropped and URLs lose their
        user-info, so the copy still runs (with keys from the environment) and gives the same
        cells."""
        data = self.model_dump(mode="python", exclude_defaults=True)
        if "windows" in data:
            data["windows"] = [w if w is not None else "none" for w in self.windows]
        models = []
        for entry in data["models"]:
            params = entry.get("params", {})
            params = params if secrets else public_params(params)
            entry = {k: v for k, v in entry.items() if k != "params"}
            if params:
                entry["params"] = params
            models.append(entry["model"] if set(entry) == {"model"} else entry)
        data["models"] = models
        data["sessions"] = [_compact_source(s) for s in data["sessions"]]
        if "strategies" in data:
            data["strategies"] = [s.to_toml_value() for s in self.strategies]
        if self.replay is not None:
            replay = self.replay.to_toml_value()
            replay["windows"] = [w if w is not None else "none" for w in self.replay.windows]
            data["replay"] = replay
        if self.qa is not None:
            data["qa"] = self.qa.to_toml_value(secrets)
        clean = _without_none(data)
        assert isinstance(clean, dict)  # a dict stays a dict
        return clean

    def to_toml(self) -> str:
        """The experiment as TOML text (no secrets, defaults left out); `from_toml` reads it
        back to an equal experiment."""
        return tomli_w.dumps(self.to_dict())

    def resolve_path(self, path: str | Path) -> Path:
        """`path` made absolute against `base_dir` (or the working directory)."""
        p = Path(path).expanduser()
        if p.is_absolute():
            return p
        return Path(self.base_dir or ".").resolve() / p

    def cache_file(self, model_index: int | None = None) -> Path:
        """The response-cache file a cached model uses: its entry's ``cache_path``, else
        ``[cache] path``, resolved against `base_dir`, else the user's default recording file.

        Args:
            model_index: Position of the model in `models`; None for the experiment's own file.
        """
        if model_index is not None and self.models[model_index].cache_path:
            return self.resolve_path(self.models[model_index].cache_path or "")
        if self.cache.path:
            return self.resolve_path(self.cache.path)
        return cache_path()

    def cache_files(self) -> list[Path]:
        """Every distinct response-cache file the model entries point at, in model order."""
        files = [self.cache_file(i) for i in range(len(self.models))]
        return list(dict.fromkeys(files)) or [self.cache_file()]


def _without_none(value: object) -> object:
    """`value` with every None left out (TOML has no null; None means the default)."""
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_none(v) for v in value if v is not None]
    return value


def _compact_source(entry: dict[str, object]) -> object:
    entry = {k: v for k, v in entry.items()
             if v is not None and v != {} and (k, v) != ("encoding_errors", "strict")}
    return entry["path"] if set(entry) == {"path"} else entry
