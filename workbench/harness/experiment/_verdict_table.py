"""The experiment's ``[verdict]`` table: how the verdict picks the template to recommend.

```toml
[verdict]
rule = "min-retained-safe"   # or "max-recall", "min-retained", "pareto"
recall_tolerance = 0.02      # min-retained: recall within 2 points of the best mean
```

The rules are described in `workbench.harness.results._recommend`.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_core import PydanticCustomError

from workbench._suggest import did_you_mean
from workbench.errors import ConfigError

DEFAULT_RULE = "min-retained-safe"
"""The fewest retained tokens among templates not significantly worse on recall or failures."""
MAX_RECALL = "max-recall"
MIN_RETAINED = "min-retained"
PARETO = "pareto"
RULES = (DEFAULT_RULE, MAX_RECALL, MIN_RETAINED, PARETO)
"""Every recommendation rule ``[verdict] rule`` accepts."""
DEFAULT_RECALL_TOLERANCE = 0.02


def check_rule(rule: object) -> str:
    """`rule` when it is one of `RULES`.

    Raises:
        ConfigError: naming the allowed values.
    """
    if rule not in RULES:
        raise ConfigError(f"unknown rule {rule!r}{did_you_mean(str(rule), RULES)}; allowed: "
                          f"{', '.join(RULES)}")
    return str(rule)


class VerdictTable(BaseModel):
    """``[verdict]``: the recommendation rule and its recall tolerance."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, frozen=True)

    rule: str = DEFAULT_RULE
    """``min-retained-safe`` (default), ``max-recall``, ``min-retained`` or ``pareto``."""
    recall_tolerance: float = Field(default=DEFAULT_RECALL_TOLERANCE, ge=0, le=1)
    """For ``min-retained``: how far (a fraction, 0.02 = 2 recall points) a template's mean
    recall may fall below the best's and still be eligible."""

    @field_validator("rule")
    @classmethod
    def _known_rule(cls, value: str) -> str:
        try:
            return check_rule(value)
        except ConfigError as exc:
            raise PydanticCustomError("verdict_rule", "{why}", {"why": str(exc)}) from None

    def is_default(self) -> bool:
        """True when nothing differs from the defaults (the spec's TOML leaves it out)."""
        return self.rule == DEFAULT_RULE and self.recall_tolerance == DEFAULT_RECALL_TOLERANCE
