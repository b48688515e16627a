"""What a recommendation is made from and what it is (`workbench.harness.results._recommend`
makes it): a stratum's `Evidence`, the `Interval` s a line quotes, and the `Recommendation`
itself with its text and ``to_dict``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TypedDict

from workbench.harness.results._versus_best import (
    Comparison,
    PairedValues,
)

__all__ = ["RUN", "Evidence", "Interval", "Recommendation", "StratumPick"]

RUN = "run"
"""The scope of the run-level recommendation."""


@dataclass
class Evidence:
    """What a stratum's recommendation reads (built by the verdict).

    Attributes:
        title: ``model @ window``.
        variants: The compared templates.
        n_common: Sessions every template completed.
        any_ok: Some template produced a summary here.
        means: Metric -> template -> mean.
        best: Metric -> the best template (None without data).
        comparisons: Metric -> template -> its `Comparison` with the best.
        paired: Metric -> the paired values (for comparisons between any two templates).
        no_evidence: Metric -> why it cannot rank the templates here (`no_evidence`): its
            clause says "no evidence", never "not significantly worse".
    """

    title: str
    variants: list[str]
    n_common: int
    any_ok: bool
    means: dict[str, dict[str, float]]
    best: dict[str, str | None]
    comparisons: dict[str, dict[str, Comparison]]
    paired: dict[str, PairedValues]
    no_evidence: dict[str, str] = field(default_factory=dict)


@dataclass
class Interval:
    """One piece of evidence: ``template - versus`` on a metric, with its 95 % interval."""

    metric: str
    template: str
    versus: str
    mean_diff: float
    ci_low: float
    ci_high: float
    n_sessions: int
    p_adjusted: float = math.nan

    def to_dict(self) -> dict[str, object]:
        """Plain data (NaN as None)."""
        return {k: _plain(v) for k, v in self.__dict__.items()}


class StratumPick(TypedDict):
    """One stratum's pick, as the run's recommendation lists it."""

    scope: str
    template: str | None
    eligible: list[str]


@dataclass
class Recommendation:
    """The template to ship, by a rule, and why.

    Attributes:
        template: The template to ship, or None when none can be recommended.
        rule: The rule (`RULES`).
        reasons: Why, as short clauses (the line joins them).
        intervals: The differences the reasons quote.
        eligible: Templates the rule allowed.
        tied: Other templates the choice cannot be told from on the rule's criterion.
        scope: The stratum title, or ``run``.
        per_stratum: For the run: one entry per stratum (title, template, eligible).
        caveats: What the choice costs or cannot tell, apart from the rule's reasons: a
            headline metric where the pick is significantly worse, no evidence, too few
            sessions, the judge's figures left out. A stratum's line states them after its
            reasons; the run's carries every counted stratum's, one indented line each.
    """

    template: str | None
    rule: str
    reasons: list[str]
    intervals: list[Interval] = field(default_factory=list)
    eligible: list[str] = field(default_factory=list)
    tied: list[str] = field(default_factory=list)
    scope: str = ""
    per_stratum: list[StratumPick] = field(default_factory=list)
    caveats: list[str] = field(default_factory=list)

    def to_text(self) -> str:
        """``Recommendation: <template> — <reasons>`` (``none — <why>`` without one); a
        stratum's caveats follow its reasons on the line, the run's follow as indented
        ``caveat:`` lines."""
        name = self.template if self.template is not None else "none"
        if self.tied:
            name += f" (tie with {', '.join(self.tied)}: either can ship)"
        if self.scope == RUN:
            return "\n".join([f"Recommendation: {name} — " + "; ".join(self.reasons),
                              *(f"  caveat: {c}" for c in self.caveats)])
        return f"Recommendation: {name} — " + "; ".join([*self.reasons, *self.caveats])

    def to_dict(self) -> dict[str, object]:
        """Structured fields: template, rule, reasons, caveats, intervals, eligible, tied, per
        stratum, and the text."""
        return {"template": self.template, "rule": self.rule, "scope": self.scope,
                "reasons": list(self.reasons), "caveats": list(self.caveats),
                "intervals": [i.to_dict() for i in self.intervals],
                "eligible": list(self.eligible), "tied": list(self.tied),
                "per_stratum": [dict(p) for p in self.per_stratum], "text": self.to_text()}


def _plain(value: object) -> object:
    if isinstance(value, float) and math.isnan(value):
        return None
    return value
