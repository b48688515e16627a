"""The metric registry: `@metric(name)` adds a function that scores one finished cell.

A metric function takes a `MetricInput` and returns a flat mapping of metric names to numbers
(or None when the metric does not apply). `compute_metrics` calls every registered metric in
registration order and merges their mappings, so a user's own metric is one decorated function:

```python
from workbench.metrics import metric

@metric("mentions_tests")
def mentions_tests(inp):
    return {"mentions_tests": int("pytest" in inp.summary_text)}
```
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from workbench.errors import ConfigError
from workbench.sessions import Session

if TYPE_CHECKING:  # a name for annotations only: compaction's modules load when a cell parses
    from workbench.compaction import StructuredSummary

MetricValue = float | int | None
MetricFn = Callable[["MetricInput"], Mapping[str, MetricValue]]

METRICS: dict[str, MetricFn] = {}
"""Registered metric functions by name, in registration order."""


@dataclass(frozen=True)
class MetricInput:
    """Everything a metric may look at for one cell.

    Attributes:
        session: The session that was compacted (the original messages).
        summary_text: The rendered summary message text.
        structured: The parsed `StructuredSummary`, or None when the reply did not parse.
        original_tokens: Tokens of the agent-visible conversation before compaction.
        summary_tokens: Tokens of the summary message text.
    """

    session: Session
    summary_text: str
    structured: StructuredSummary | None
    original_tokens: int
    summary_tokens: int


def metric(name: str, *, replace: bool = False) -> Callable[[MetricFn], MetricFn]:
    """Register a metric function under `name`.

    Args:
        name: The registry name (also how `unregister_metric` finds it).
        replace: Allow replacing an already registered metric of the same name.

    Returns:
        A decorator that registers the function and returns it unchanged.

    Raises:
        ConfigError: `name` is already registered and `replace` is false.
    """

    def register(fn: MetricFn) -> MetricFn:
        if name in METRICS and not replace and METRICS[name] is not fn:
            raise ConfigError(f"metric {name!r} is already registered; pass replace=True "
                              "to @metric to override it")
        METRICS[name] = fn
        return fn

    return register


def unregister_metric(name: str) -> None:
    """Remove a registered metric (no error when it is not registered)."""
    METRICS.pop(name, None)
