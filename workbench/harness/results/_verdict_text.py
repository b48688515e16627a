"""How the verdict writes numbers: metric labels, means, signed differences and intervals.

Rates (recall, failures, useful summaries, answers) are written in percent and their
differences in percentage points (``-3.1 pts``); token counts as whole numbers (``-166``).
"""

from __future__ import annotations

import math

METRIC_LABELS = {
    "probe_recall": "probe recall",
    "useful_structured": "useful structured summaries",
    "retained_tokens": "retained tokens",
    "failed": "compaction failures",
    "qa_accuracy": "questions answered (exact)",
    "next_action_match": "next action agreement",
    "judge_score": "judge score (0-5)",
}
"""The verdict's name for each headline metric."""
PERCENT = frozenset({"probe_recall", "useful_structured", "failed", "qa_accuracy",
                     "next_action_match"})
"""Metrics that are rates (written in percent, differences in points)."""
SCORES = frozenset({"judge_score"})
"""Metrics on a small scale (0-5), written to two decimals."""


def label(metric: str) -> str:
    """The metric's readable name."""
    return METRIC_LABELS.get(metric, metric)


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def fmt_mean(value: float | None, metric: str) -> str:
    """A mean: ``85.5%`` for rates, ``1,216`` for counts, ``—`` when missing."""
    if value is None or _missing(value):
        return "—"
    if metric in SCORES:
        return f"{value:.2f}"
    return f"{100 * value:.1f}%" if metric in PERCENT else f"{value:,.0f}"


def fmt_diff(value: float | None, metric: str, unit: bool = True) -> str:
    """A signed difference: ``-3.1 pts`` for rates (``-3.1`` without `unit`), ``+14`` for counts."""
    if value is None or _missing(value):
        return "—"
    if metric in PERCENT:
        return f"{100 * value:+.1f}" + (" pts" if unit else "")
    if metric in SCORES:
        return f"{value:+.2f}"
    return f"{value:+,.0f}" if abs(value) >= 1 or value == 0 else f"{value:+.2g}"


def fmt_interval(mean: float | None, low: float | None, high: float | None,
                 metric: str) -> str:
    """``-3.1 pts [-4.0, -2.2]``: a difference and its 95 % interval."""
    return (f"{fmt_diff(mean, metric)} [{fmt_diff(low, metric, False)}, "
            f"{fmt_diff(high, metric, False)}]")


def fmt_p(value: float | None) -> str:
    """A p-value to three decimals (``<0.001`` below that)."""
    if value is None or _missing(value):
        return "—"
    return "<0.001" if value < 0.001 else f"{value:.3f}"
