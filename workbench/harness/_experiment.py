"""`Experiment`: what to run, as data (sessions x strategies x models x templates x windows).

Read from TOML with `Experiment.from_toml`; every field is documented below and unknown keys
are rejected, so a typo fails with the key path instead of being silently ignored.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import PydanticCustomError

from workbench.errors import ConfigError
from workbench.harness._toml import dumps_toml
from workbench.models._identity import format_window as format_model_window

STRATEGIES: tuple[str, ...] = ("goose",)
"""Strategies the runner knows: ``goose`` = Goose's summarize through ``compact_messages``."""

CACHE_PREFIXES = ("cached:", "replay:")
"""Cache-mode prefixes of model strings; not part of a model's label."""

SECRET_PARAMS = frozenset({"api_key"})
"""Model parameters never written to a spec file, a database row or a log."""

DEFAULT_SPEC = "experiments/default.toml"
_WINDOW = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmM]?)\s*$")
_NO_WINDOW = frozenset({"none", "off", "uncapped", ""})


def project_root() -> Path:
    """The project folder holding ``prompts/``, ``datasets/`` and ``experiments/``."""
    return Path(__file__).resolve().parents[2]


def parse_window(value: Any) -> int | None:
    """``8000``, ``"8k"`` (k = 1024, as in model strings), or ``"none"`` -> tokens (None = no cap)."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise PydanticCustomError("window", "a window is a token count like 8000 or '8k', not a boolean")
    if isinstance(value, int):
        if value <= 0:
            raise PydanticCustomError("window", "a window must be a positive token count, not {v}",
                                      {"v": value})
        return value
    if isinstance(value, str):
        if value.strip().lower() in _NO_WINDOW:
            return None
        m = _WINDOW.match(value)
        if m:
            scale = {"": 1, "k": 1024, "m": 1024 * 1024}[m.group(2).lower()]
            tokens = int(float(m.group(1)) * scale)
            if tokens > 0:
                return tokens
        raise PydanticCustomError(
            "window", "cannot read window {v}: write a token count like 8000, '8k' or '1m', "
            "or 'none' for no cap", {"v": repr(value)})
    raise PydanticCustomError("window", "a window is a token count like 8000 or '8k', not {t}",
                              {"t": type(value).__name__})


def format_window(window: int | None) -> str:
    """The inverse of `parse_window` for display: 8192 -> ``"8k"``, None -> ``"none"``."""
    return "none" if window is None else format_model_window(window)


Window = Annotated[int | None, BeforeValidator(parse_window)]
"""A context window in tokens (None = no cap); accepts the shorthands of `parse_window`."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class SessionSource(_Strict):
    """One ``sessions`` entry: a file, a glob, a shipped dataset name, or ``dataset:all``."""

    path: str
    """Path or glob (relative to the spec file), a name from ``datasets/manifest.json``, or
    ``dataset:all`` for every shipped dataset."""
    format: str | None = None
    """Importer name; auto-detected when omitted."""
    index: int | None = Field(default=None, ge=0)
    """Pick one session of a multi-session file by position."""
    session_id: str | None = None
    """Pick one session of a multi-session file by id."""
    select: dict[str, Any] = Field(default_factory=dict)
    """Other importer-specific selection keywords."""

    def selection(self) -> dict[str, Any]:
        """The keywords passed to `load_sessions` besides the path and format."""
        sel = dict(self.select)
        if self.index is not None:
            sel["index"] = self.index
        if self.session_id is not None:
            sel["session_id"] = self.session_id
        return sel


class ModelEntry(_Strict):
    """One ``models`` entry: a model string and its parameters."""

    model: str = Field(min_length=1)
    """Model string for `workbench.models.load_model`: ``[cached:|replay:]model[@8k]``."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Extra keyword arguments for the model (temperature, max_tokens...). ``api_key`` is
    accepted but never written anywhere."""
    concurrency: int | None = Field(default=None, gt=0)
    """At most this many cells of this model at once (the global limit still applies)."""
    name: str | None = Field(default=None, min_length=1)
    """Short name for tables and cell keys; default: the model string plus its public params."""

    @property
    def label(self) -> str:
        """How the model is named in cell keys and tables: the string without its cache prefix
        (a recorded and a live run of one model share rows), plus public params; or `name`."""
        if self.name:
            return self.name
        name = self.model
        for prefix in CACHE_PREFIXES:
            if name.startswith(prefix):
                name = name[len(prefix):]
        public = {k: v for k, v in sorted(self.params.items()) if k not in SECRET_PARAMS}
        if not public:
            return name
        inner = ",".join(f"{k}={v}" for k, v in public.items())
        return f"{name}[{inner}]"


class Budget(_Strict):
    """Spending limits; the runner stops scheduling cells once one is reached."""

    max_cost: float | None = Field(default=None, gt=0)
    """US dollars summed over every billed attempt of the run folder."""
    max_tokens: int | None = Field(default=None, gt=0)
    """Billed input + output tokens summed over every attempt of the run folder."""


class CachePolicy(_Strict):
    """The model response cache."""

    mode: Literal["off", "rw", "replay"] | None = None
    """Overrides every model string's cache prefix: ``off``; ``rw`` = read and record;
    ``replay`` = read only, a miss is an error. Omitted: each model string decides
    (``cached:``/``replay:`` prefixes)."""
    path: str | None = None
    """Cache file or folder (relative to the spec file); default: the user cache dir."""


class Experiment(_Strict):
    """An experiment: the matrix of cells to run and how to run them."""

    name: str = Field(default="experiment", min_length=1)
    """Names the run folder (``runs/<name>``) and the report."""
    sessions: list[SessionSource] = Field(min_length=1)
    """Where the recorded sessions come from."""
    models: list[ModelEntry] = Field(min_length=1)
    """Models to summarize with."""
    templates: list[str] = Field(default_factory=lambda: ["default"], min_length=1)
    """Template variants: folder names under the project's ``prompts/``, paths, ``default``
    (the built-in templates), or ``all`` (every folder under ``prompts/``)."""
    strategies: list[Literal["goose"]] = Field(default_factory=lambda: ["goose"],  # type: ignore[arg-type]
                                               min_length=1)
    """Compaction strategies; ``goose`` runs Goose's ``compact_messages``."""
    windows: list[Window] = Field(default_factory=lambda: [None],  # type: ignore[arg-type]
                                  min_length=1)
    """Context windows to simulate: token counts, ``"8k"``, or ``"none"`` for no cap."""
    repeats: int = Field(default=1, ge=1)
    """How many times each cell runs (repeat index is part of the cell key)."""
    concurrency: int = Field(default=4, gt=0)
    """At most this many cells in flight at once."""
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

    @field_validator("sessions", mode="before")
    @classmethod
    def _session_shorthand(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [{"path": v} if isinstance(v, str) else v for v in value]
        return value

    @field_validator("models", mode="before")
    @classmethod
    def _model_shorthand(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [{"model": v} if isinstance(v, str) else v for v in value]
        return value

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
            text = p.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ConfigError(f"{path}: no such experiment file") from None
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: invalid TOML: {exc}") from exc
        data.setdefault("base_dir", str(p.resolve().parent))
        return cls.from_dict(data, source=str(path))

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "experiment") -> Experiment:
        """Validate a mapping; errors are `ConfigError` prefixed with `source`."""
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(_describe(exc, source)) from None

    @classmethod
    def default(cls) -> Experiment:
        """The shipped default experiment (``experiments/default.toml``)."""
        return cls.from_toml(project_root() / DEFAULT_SPEC)

    def to_dict(self, *, secrets: bool = False) -> dict[str, Any]:
        """A plain mapping in TOML shape; ``api_key`` params are dropped unless `secrets`."""
        data = self.model_dump(mode="python")
        data["windows"] = [w if w is not None else "none" for w in self.windows]
        for entry in data["models"]:
            if not secrets:
                entry["params"] = {k: v for k, v in entry["params"].items()
                                   if k not in SECRET_PARAMS}
            if not entry["params"]:
                del entry["params"]
        data["sessions"] = [_compact_source(s) for s in data["sessions"]]
        for m in data["models"]:
            for key in ("concurrency", "name"):
                if m.get(key) is None:
                    m.pop(key, None)
        data["models"] = [m["model"] if set(m) == {"model"} else m for m in data["models"]]
        return data

    def to_toml(self) -> str:
        """The experiment as TOML text (no secrets); `from_toml` reads it back."""
        return dumps_toml(self.to_dict())

    def resolve_path(self, path: str | Path) -> Path:
        """`path` made absolute against `base_dir` (or the working directory)."""
        p = Path(path).expanduser()
        if p.is_absolute():
            return p
        return Path(self.base_dir or ".").resolve() / p


def _compact_source(entry: dict[str, Any]) -> Any:
    entry = {k: v for k, v in entry.items() if v is not None and v != {}}
    return entry["path"] if set(entry) == {"path"} else entry


def _describe(exc: ValidationError, source: str) -> str:
    lines = []
    for err in exc.errors(include_url=False):
        lines.append(f"{source}: {_loc_path(list(err['loc']))}: {err['msg']}")
    return "\n".join(lines)


def _loc_path(loc: list[Any]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"
