"""Experiment-file entries for strategies and whole-session replay.

``strategies = ["goose", {name = "mask", keep_last = 3}, {name = "awaken", label = "aw"}]``: a
name alone, or a table with ``name``, an optional short ``label`` for tables, and the strategy's
own settings (validated by its pydantic ``Settings``: an unknown key is an error naming it).

``[replay]`` names a whole-session replay comparison run after the cells (see `ReplaySpec`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from workbench.errors import ConfigError
from workbench.harness.experiment._checks import strict_settings
from workbench.harness.experiment._validate import clean_name
from workbench.harness.experiment._windows import Window
from workbench.strategies import Strategy, get_strategy
from workbench.strategies._registry import strategy_class, validate_settings

__all__ = ["ReplaySpec", "StrategyEntry", "strategy_label"]


def strategy_label(name: str, settings: Mapping[str, object]) -> str:
    """The default table label: the name, plus the settings as ``k=v`` in brackets."""
    if not settings:
        return name
    inner = ",".join(f"{k}={v}" for k, v in sorted(settings.items()))
    return f"{name}[{inner}]"


ENTRY_KEYS = ("name", "label", "at")
"""Keys of a strategies table that are not the strategy's own settings."""


class StrategyEntry(BaseModel):
    """One ``strategies`` entry: a registered strategy name with its settings."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    name: str = Field(min_length=1)
    """A registered strategy: ``goose``, ``awaken``, ``mask``, ``truncate``, ``none``,
    ``reference`` (or one a plugin registered)."""
    label: str | None = Field(default=None, min_length=1)
    """Short name for tables and cell keys; default: the name plus its settings."""
    at: Literal["end", "recorded"] = "end"
    """Where the history is compacted: ``end`` (the whole recording) or ``recorded`` (at the
    first compaction the recorded agent made, scored against that prefix, as the ``reference``
    row is; only sessions with a recorded summary get such cells)."""
    settings: dict[str, object] = Field(default_factory=dict)
    """The strategy's settings (in TOML, written beside ``name`` in the same table)."""

    @model_validator(mode="before")
    @classmethod
    def _gather_settings(cls, value: object) -> object:
        if isinstance(value, str):
            return {"name": value}
        if isinstance(value, dict) and "settings" not in value:
            own = {k: v for k, v in value.items() if k in ENTRY_KEYS}
            rest = {k: v for k, v in value.items() if k not in ENTRY_KEYS}
            return {**own, "settings": rest}
        return value

    @field_validator("label")
    @classmethod
    def _clean_label(cls, value: str | None) -> str | None:
        return None if value is None else clean_name(value, "the label")

    @model_validator(mode="after")
    def _check(self) -> StrategyEntry:
        try:
            strict_settings(strategy_class(self.name).Settings, self.settings)
            validated = validate_settings(self.name, self.settings)
        except ConfigError as exc:
            raise PydanticCustomError("strategy", "{problem}", {"problem": str(exc)}) from None
        # Keep only what was written (defaults stay implicit), but as validated values.
        dumped = validated.model_dump()
        self.settings = {k: dumped[k] for k in self.settings}
        return self

    def __eq__(self, other: object) -> bool:
        # A bare name compares equal to the entry it stands for ("goose" == goose entry).
        if isinstance(other, str):
            return (self.label is None and not self.settings and self.at == "end"
                    and self.name == other)
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]

    @property
    def display(self) -> str:
        """How the strategy is named in cell keys and tables (``@recorded`` marks ``at``)."""
        if self.label:
            return self.label
        base = strategy_label(self.name, self.settings)
        return base if self.at == "end" or self.name == "reference" else f"{base}@recorded"

    def build(self) -> Strategy:
        """The `Strategy` instance."""
        return get_strategy(self.name, self.settings)

    def to_toml_value(self) -> str | dict[str, object]:
        """The entry in TOML shape: the bare name when it has no label or settings."""
        if self.label is None and not self.settings and self.at == "end":
            return self.name
        out: dict[str, object] = {"name": self.name}
        if self.label is not None:
            out["label"] = self.label
        if self.at != "end":
            out["at"] = self.at
        out.update(self.settings)
        return out


class ReplaySpec(BaseModel):
    """``[replay]``: replay whole sessions turn by turn under each strategy (after the cells)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    sessions: list[str] = Field(default_factory=list)
    """Session ids (or shipped dataset names) to replay; empty = every session of the run."""
    strategies: list[StrategyEntry] = Field(default_factory=list)
    """Strategies to replay; empty = the experiment's ``strategies`` (``reference`` skipped)."""
    model: str = "extractive"
    """The summarizer for strategies that call one (a model string; ``replay:``/``cached:``
    prefixes work as for cells)."""
    windows: list[Window] = Field(default_factory=lambda: [8192], min_length=1)  # type: ignore[arg-type]
    """Context windows the agent runs under."""
    thresholds: list[float | Literal["policy"]] = Field(
        default_factory=lambda: [0.8], min_length=1)  # type: ignore[arg-type]
    """Compaction triggers: compact before a turn whose prompt reaches threshold x window;
    ``"policy"``: each strategy at its own trigger (a policy's published one, Goose's 0.8
    for a strategy without one)."""
    probes: Literal["facts", "all", "none"] = "facts"
    """What to score after every compaction round: ``facts`` (planted facts still in the
    context, replaced values, the last request, finished tasks listed as pending), ``all``
    (also the files/errors/requests probes: slower) or ``none``."""
    rounds_per_turn: int = Field(default=1, ge=1, le=10)
    """The most compaction rounds before one turn: a strategy whose round changed the context
    but left it over the window (the request would be refused) runs again, up to this many
    rounds (the loops users report)."""
    detectors: bool = False
    """``workbench run`` also prints the failure detectors, the survival curve and the cliff
    per strategy, and the strategies that were ``n/a`` with the reason."""

    @model_validator(mode="after")
    def _check(self) -> ReplaySpec:
        for t in self.thresholds:
            if t != "policy" and not 0 < t <= 1:
                raise ValueError(f"thresholds: {t} is not in (0, 1]")
        if any(w is None for w in self.windows):
            raise ValueError("windows: replay needs a finite window (not 'none')")
        return self

    def to_toml_value(self) -> dict[str, object]:
        """The table in TOML shape."""
        data = self.model_dump(mode="python")
        data["strategies"] = [s.to_toml_value() for s in self.strategies]
        for key in ("sessions", "strategies"):
            if not data[key]:
                del data[key]
        return data
