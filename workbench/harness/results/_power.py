"""What a run could have detected: the minimum detectable effect and the sessions needed.

Both come from the normal approximation for a paired mean difference over n sessions with
standard deviation ``sd`` of the per-session differences (ddof 1):

- minimum detectable effect ``MDE = (z_{1 - alpha/2} + z_{power}) * sd / sqrt(n)``;
- sessions needed for an effect ``delta``: ``ceil(((z_{1 - alpha/2} + z_{power}) * sd / delta)^2)``.

The verdict uses power 0.8 and two-sided alpha 0.05 divided by the number of comparisons with
the best (``alpha / m``: the level of Holm's first step, which a difference must pass to be
named at all), so with four templates (m = 3) ``z_{1 - alpha/(2m)} = 2.394`` and ``z_{0.8} =
0.842``. ``sd`` is the largest of the comparisons' per-session SDs, so the figure holds for
every comparison in the family.

`REFERENCE_EFFECTS` states the difference worth detecting per metric (the issue's 3 recall
points and one-in-six failures; 10 points for the other rates; 10 % of the best mean for
token counts).
"""

from __future__ import annotations

import math
from statistics import NormalDist

POWER = 0.8
"""Power of the minimum detectable effect and of the sessions-needed figure."""
ALPHA = 0.05
"""Two-sided level of every test in the verdict (family-wise, by Holm)."""

REFERENCE_EFFECTS: dict[str, float] = {
    "probe_recall": 0.03,
    "failed": 1 / 6,
    "useful_structured": 0.10,
    "qa_accuracy": 0.10,
    "next_action_match": 0.10,
}
"""Difference worth detecting per metric, in the metric's unit (0.03 = 3 recall points)."""
RELATIVE_EFFECT = 0.10
"""For metrics not in `REFERENCE_EFFECTS` (token counts): this share of the best mean."""


def z_sum(comparisons: int, *, alpha: float = ALPHA, power: float = POWER) -> float:
    """``z_{1 - alpha/(2m)} + z_{power}`` for a family of `comparisons` (m) tests."""
    m = max(1, comparisons)
    normal = NormalDist()
    return normal.inv_cdf(1 - alpha / (2 * m)) + normal.inv_cdf(power)


def minimum_detectable_effect(sd: float, n: int, comparisons: int = 1) -> float:
    """The paired difference detectable with `POWER` at `n` sessions (NaN when n < 2)."""
    if n < 2 or math.isnan(sd):
        return float("nan")
    return z_sum(comparisons) * sd / math.sqrt(n)


def sessions_needed(sd: float, effect: float, comparisons: int = 1, floor: int = 2) -> int | None:
    """Sessions needed to detect `effect` with `POWER`, at least `floor` (the verdict passes
    its `MIN_SESSIONS`: it tests nothing below that); None when sd or effect is unknown or 0."""
    if math.isnan(sd) or math.isnan(effect) or effect == 0 or sd == 0:
        return None
    return max(floor, math.ceil((z_sum(comparisons) * sd / abs(effect)) ** 2))


def reference_effect(metric: str, best_mean: float) -> float:
    """The difference worth detecting for `metric` (`REFERENCE_EFFECTS`, else 10 % of the best)."""
    if metric in REFERENCE_EFFECTS:
        return REFERENCE_EFFECTS[metric]
    return RELATIVE_EFFECT * abs(best_mean) if not math.isnan(best_mean) else float("nan")
