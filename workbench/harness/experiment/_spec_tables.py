"""The tables of an experiment spec beside its top level: a session source, a model entry, the
budget, the cache policy and the executor (`workbench.harness.experiment._spec` puts them
together as an `Experiment`). Unknown keys are rejected in every table.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from workbench._redact import public_params
from workbench.errors import ConfigError
from workbench.harness.experiment._checks import (
    MAX_CONCURRENCY,
    MAX_CPUS_PER_CELL,
    MAX_EXECUTOR_RETRIES,
    strict_boolean,
)
from workbench.harness.experiment._validate import clean_name, clean_names
from workbench.models._spec import CACHE_PREFIXES as MODEL_CACHE_PREFIXES
from workbench.models._spec import check_model_string

__all__ = ["Budget", "CACHE_PREFIXES", "CachePolicy", "ExecutorSpec", "ModelEntry",
           "SessionSource"]

CACHE_PREFIXES = tuple(MODEL_CACHE_PREFIXES)
"""Cache-mode prefixes of model strings; not part of a model's label."""
_SAFE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+=@,-]{0,99}$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    @field_validator("*", mode="before")
    @classmethod
    def _strict_booleans(cls, value: object, info: ValidationInfo) -> object:
        # Every boolean of every spec table, including ones added later.
        return strict_boolean(cls, info.field_name, value)


class SessionSource(_Strict):
    """One ``sessions`` entry: a file, a glob, a shipped dataset name, ``dataset:all`` or
    ``dataset:NAME``."""

    path: str
    """Path or glob (relative to the spec file), a name from ``datasets/manifest.json``,
    ``dataset:all`` for every shipped dataset, or ``dataset:NAME`` for every session of the set
    in ``datasets/NAME/`` (``dataset:memory``; never part of ``dataset:all``)."""
    format: str | None = None
    """Importer name; auto-detected when omitted."""
    index: int | None = Field(default=None, ge=0)
    """Pick one session of a multi-session file by position."""
    session_id: str | None = None
    """Pick one session of a multi-session file by id."""
    select: dict[str, JsonValue] = Field(default_factory=dict)
    """Other importer-specific selection keywords."""
    encoding_errors: Literal["strict", "replace"] = "strict"
    """Invalid UTF-8 in the file: ``strict`` fails naming the byte offset; ``replace``
    substitutes U+FFFD and counts the replacements in the session's meta."""

    def selection(self) -> dict[str, JsonValue]:
        """The keywords passed to `load_sessions` besides the path and format."""
        sel = dict(self.select)
        if self.encoding_errors != "strict":
            sel["encoding_errors"] = self.encoding_errors
        if self.index is not None:
            sel["index"] = self.index
        if self.session_id is not None:
            sel["session_id"] = self.session_id
        return sel


class ModelEntry(_Strict):
    """One ``models`` entry: a model string and its parameters."""

    model: str = Field(min_length=1)
    """Model string for `workbench.models.load_model`: ``[cached:|replay:]model[@8k]``."""
    params: dict[str, JsonValue] = Field(default_factory=dict)
    """Extra keyword arguments for the model (temperature, max_tokens...). ``api_key`` is
    accepted but never written anywhere."""
    concurrency: int | None = Field(default=None, gt=0, le=MAX_CONCURRENCY)
    """At most this many cells of this model at once (the global limit still applies)."""
    name: str | None = Field(default=None, min_length=1)
    """Short name for tables and cell keys; default: the model string plus its public params."""
    cache_path: str | None = Field(default=None, min_length=1)
    """This model's own response-cache file (relative to the spec file), e.g. one committed
    recording per local model; default: the experiment's ``[cache] path``."""
    sessions: list[str] | None = Field(default=None, min_length=1)
    """Run this model on these sessions only: session ids (a shipped dataset's name is its
    id), a subset of the experiment's ``sessions``; default: every session. A name that is
    not one of the experiment's sessions is a `ConfigError` naming it (checked when the
    cells are expanded, once the sessions are read)."""
    templates: list[str] | None = Field(default=None, min_length=1)
    """Run this model on these template variants only (names as in the experiment's
    ``templates``); default: every one. A replayed model names the variants it was recorded
    with, so a variant added later runs on the other models and is reported as not recorded
    for this one, instead of failing every cell with a cache miss."""

    @field_validator("name")
    @classmethod
    def _clean_name(cls, value: str | None) -> str | None:
        return None if value is None else clean_name(value)

    @field_validator("templates")
    @classmethod
    def _clean_templates(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else clean_names(value)

    @model_validator(mode="after")
    def _known_model(self) -> ModelEntry:
        # A typo in a model string fails the spec now, not every cell of the model later.
        try:
            check_model_string(self.model, self.params)
        except ConfigError as exc:
            raise PydanticCustomError("model_string", "{message}", {"message": str(exc)}) from None
        return self

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
        public = dict(sorted(public_params(self.params).items()))
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
    """The recording file (relative to the spec file); default: the user dir's
    ``cache/responses.db``. A folder or a system path is refused."""


class ExecutorSpec(_Strict):
    """Where the cells run: ``executor = { kind = "ray", address = "auto" }``."""

    kind: Literal["local", "ray"] = "local"
    """``local``: asyncio in this process (the default); ``ray``: Ray tasks (``[ray]`` extra)."""
    address: str | None = None
    """Ray only: omitted starts a private local instance; ``auto`` joins this machine's
    cluster; ``ray://host:port`` connects to a remote cluster's client server."""
    cpus_per_cell: float = Field(default=1.0, gt=0, le=MAX_CPUS_PER_CELL)
    """Ray only: CPUs reserved per cell task; below 1 packs more I/O-bound cells per core."""
    max_retries: int = Field(default=3, ge=0, le=MAX_EXECUTOR_RETRIES)
    """Ray only: how often a cell whose worker died is run again."""

    @model_validator(mode="after")
    def _address_needs_ray(self) -> ExecutorSpec:
        if self.address is not None and self.kind != "ray":
            raise PydanticCustomError("executor", "an address needs kind = \"ray\"")
        return self
