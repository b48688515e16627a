"""The experiment's ``[tune]`` table: which parametrised variant to search, how, and for what.

`workbench run` expands it into template points (a grid or a seeded random sample);
`workbench tune` also reads the objective, the baseline and the search settings from it.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_core import PydanticCustomError

from workbench.errors import ConfigError
from workbench.harness.experiment._validate import clean_name, folder_name
from workbench.harness.experiment._verdict_table import check_rule


class TuneTable(BaseModel):
    """``[tune]``: the parameter search over one variant folder."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    variant: str = Field(min_length=1)
    """The parametrised variant (a ``prompts/`` folder name or a path) whose parameters are searched."""
    params: dict[str, object] = Field(default_factory=dict)
    """Parameter -> list of values to try, or ``"all"`` for its declared domain; empty means every
    declared parameter over its whole domain."""
    sample: int | None = Field(default=None, gt=0)
    """Try this many points drawn at random (seeded by the experiment's ``seed``) instead of the
    full grid."""
    objective: str | None = None
    """The rule that picks the winner among the points scored on the final rung, by the
    verdict's names: ``min-retained-safe``, ``max-recall``, ``min-retained`` or ``pareto``;
    default: the spec's ``[verdict] rule`` (``min-retained-safe`` unless it says otherwise)."""
    baseline: str | None = None
    """The variant the winner is compared with; default: the searched variant at its defaults."""
    eta: int = Field(default=2, ge=2)
    """Successive halving keeps the best 1/eta prompt points per rung and multiplies the sessions by eta."""
    min_sessions: int = Field(default=1, ge=1)
    """Sessions in the first rung of successive halving."""
    winner_name: str | None = None
    """The name ``workbench export --from-run RUN --as-variant`` gives the winner's variant
    folder (``prompts/<name>/``); default ``<variant>-tuned``."""
    proposer: str | None = None
    """A model string; when set, it rewrites the compaction prompt from the failure analysis and
    its proposals join the search."""
    proposals: int = Field(default=1, ge=1)
    """How many prompts the proposer writes."""

    @field_validator("variant", "baseline")
    @classmethod
    def _clean_names(cls, value: str | None) -> str | None:
        return None if value is None else clean_name(value)

    @field_validator("winner_name")
    @classmethod
    def _folder_name(cls, value: str | None) -> str | None:
        # It becomes prompts/<name>/ only after the whole tune: checked now, not then.
        return None if value is None else folder_name(value, "winner_name")

    @field_validator("objective")
    @classmethod
    def _known_rule(cls, value: str | None) -> str | None:
        if value is None:
            return value
        try:
            return check_rule(value)
        except ConfigError as exc:
            raise PydanticCustomError("tune_objective", "{why}", {"why": str(exc)}) from None
