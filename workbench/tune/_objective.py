"""The winner rule: one rule for the tune, ``workbench export --from-run`` and the verdict.

A rule is one of the verdict's recommendation rules (``[verdict] rule``, `RULES`), by the same
names everywhere (``[tune] objective``, ``workbench export --rule``):

- ``min-retained-safe`` (the default): the fewest retained tokens among the templates not
  significantly (or consistently) worse than the best on probe recall nor on compaction
  failures;
- ``max-recall``: the highest mean recall;
- ``min-retained``: the fewest retained tokens among those within ``recall_tolerance`` of the
  best mean recall;
- ``pareto``: the member of the recall / retained tokens / failures front nearest the ideal.

`Objective.pick` reads the cells through the verdict itself (`workbench.harness.verdict`:
paired cluster bootstrap per model x window, Holm-adjusted), restricted to the points and
sessions given (for a tune: the points scored on its final rung), so a tune's winner, an
export's and the run's ``Recommendation:`` line cannot disagree. `variant_scores` and
`pareto_mask` are the per-point means and the front the tune prints and plots.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from workbench._suggest import did_you_mean
from workbench.errors import ConfigError
from workbench.harness.experiment._verdict_table import (
    DEFAULT_RECALL_TOLERANCE,
    DEFAULT_RULE,
    RULES,
    check_rule,
)
from workbench.harness.results._recommend import Evidence, rank_eligible
from workbench.harness.results._verdict import verdict
from workbench.harness.results._verdict_model import Verdict

RECALL, RETAINED, FAILED = "probe_recall", "retained_tokens", "failed"
_WORDS = {
    "min-retained-safe": "the fewest retained tokens among the points not significantly worse "
                         "than the best on probe recall nor on compaction failures",
    "max-recall": "the highest mean probe recall",
    "min-retained": "the fewest retained tokens among the points whose mean probe recall is "
                    "within {tolerance:.1f} pts of the best",
    "pareto": "the point of the probe recall / retained tokens / failures front nearest the "
              "ideal point",
}


@dataclass
class Pick:
    """What a rule picked from a set of cells.

    Attributes:
        winner: The template to ship, or None when the rule can recommend none.
        ranking: Every compared template, the rule's preference first (eligible ones in the
            rule's order, then the others by recall).
        tied: Templates the rule cannot tell from the winner.
        reasons: The verdict's ``Recommendation:`` line for the winner.
        verdict: The verdict the pick was read from.
    """

    winner: str | None
    ranking: list[str]
    tied: list[str] = field(default_factory=list)
    reasons: str = ""
    verdict: Verdict | None = None


@dataclass(frozen=True)
class Objective:
    """A winner rule by name, with ``min-retained``'s recall tolerance."""

    rule: str = DEFAULT_RULE
    recall_tolerance: float = DEFAULT_RECALL_TOLERANCE
    metric: str = RECALL

    @classmethod
    def parse(cls, rule: str | None, recall_tolerance: float = DEFAULT_RECALL_TOLERANCE
              ) -> Objective:
        """The objective named `rule` (None: the default, ``min-retained-safe``).

        Raises:
            ConfigError: an unknown rule, naming the closest one and every allowed one.
        """
        return cls(check_rule(rule or DEFAULT_RULE), float(recall_tolerance))

    @property
    def kind(self) -> str:
        """The rule's name (as written in specs and on the command line)."""
        return self.rule

    def describe(self) -> str:
        """The rule in words: ``min-retained-safe: the fewest retained tokens among ...``."""
        words = _WORDS[self.rule].format(tolerance=100 * self.recall_tolerance)
        return f"{self.rule}: {words}"

    def pick(self, cells: pd.DataFrame, *, templates: list[str] | None = None,
             sessions: list[str] | None = None, seed: int = 0, n_boot: int = 2000) -> Pick:
        """The winner of `cells` by this rule: the verdict's run-level recommendation over
        the cells of `templates` on `sessions` (all when None)."""
        df = cells
        if templates is not None:
            df = df[df["template"].isin(templates)]
        if sessions is not None:
            df = df[df["session_id"].isin(sessions)]
        found = verdict(df, seed=seed, n_boot=n_boot, rule=self.rule,
                        recall_tolerance=self.recall_tolerance,
                        metrics=(RECALL, "useful_structured", RETAINED, FAILED))
        names = sorted(df["template"].dropna().astype(str).unique())
        if len(names) == 1:  # nothing to compare: the one point is the pick
            return Pick(names[0], names, verdict=found, reasons="the only point scored")
        rec = found.recommendation
        ranking = _ranking(found, self.rule, names)
        winner = rec.template if rec is not None else None
        if winner is not None:
            ranking = [winner, *[t for t in ranking if t != winner]]
        # one model x window: its own line, which quotes the intervals
        line = found.strata[0].recommendation if len(found.strata) == 1 else rec
        return Pick(winner, ranking, list(rec.tied) if rec is not None else [],
                    line.to_text() if line is not None else "", found)


def _ranking(found: Verdict, rule: str, names: list[str]) -> list[str]:
    """Every template by its mean position over the strata: the rule's order among the
    eligible, then the rest by mean recall (successive halving keeps the front of this)."""
    positions: dict[str, list[float]] = {t: [] for t in names}
    for stratum in found.strata:
        means = {m.metric: m.means for m in stratum.metrics}
        if not means.get(RECALL) or not means.get(RETAINED) or stratum.recommendation is None:
            continue
        ev = Evidence(stratum.title, stratum.variants, stratum.n_common, True, means,
                      {m.metric: m.best for m in stratum.metrics}, {}, {})
        eligible = [t for t in stratum.recommendation.eligible
                    if t in means[RECALL] and t in means[RETAINED]]
        order = rank_eligible(ev, rule, eligible) if eligible else []
        rest = sorted((t for t in stratum.variants if t not in order),
                      key=lambda t: (-means[RECALL].get(t, -math.inf),
                                     means[RETAINED].get(t, math.inf), t))
        for position, name in enumerate(order + rest):
            positions.setdefault(name, []).append(position)
    return sorted(names, key=lambda t: (sum(positions[t]) / len(positions[t])
                                        if positions[t] else math.inf, t))


def variant_scores(cells: pd.DataFrame, metric: str = RECALL,
                   templates: list[str] | None = None,
                   sessions: list[str] | None = None) -> pd.DataFrame:
    """One row per template: mean retained tokens, mean `metric` (as ``recall``), parse success.

    Args:
        cells: Cells of a run (`Results.cells`).
        metric: The recall column.
        templates: Only these templates (all when None).
        sessions: Only cells of these sessions (all when None).

    Returns:
        Columns ``template``, ``cells``, ``retained_tokens``, ``recall``, ``parse_success_pct``,
        ``calls_made``, ``calls_shared``, sorted by template.
    """
    df = cells
    if templates is not None:
        df = df[df["template"].isin(templates)]
    if sessions is not None:
        df = df[df["session_id"].isin(sessions)]
    if metric not in df.columns:
        raise ConfigError(f"no metric {metric!r} in the cells{did_you_mean(metric, df.columns)}")
    # Each column converted once, then sliced per template: the same values, in the same
    # order, as converting every template's rows apart (one point of a 96-point grid used to
    # cost six conversions).
    codes, templates_found = pd.factorize(df["template"], sort=True)
    ok = df["status"].eq("ok").to_numpy()
    retained = pd.to_numeric(df[RETAINED], errors="coerce").to_numpy()
    recall = pd.to_numeric(df[metric], errors="coerce").to_numpy()
    parsed = df["parse_outcome"].eq("structured").to_numpy()
    made, shared = _counts(df, "calls_made"), _counts(df, "calls_shared")
    rows = []
    for code, template in enumerate(templates_found):
        rows_of = np.flatnonzero(codes == code)
        kept = rows_of[ok[rows_of]]
        rows.append({
            "template": template,
            "cells": len(rows_of),
            "retained_tokens": pd.Series(retained[kept]).mean(),
            "recall": pd.Series(recall[kept]).mean(),
            "parse_success_pct": 100.0 * parsed[rows_of].sum() / len(rows_of),
            "calls_made": int(made[rows_of].sum()),
            "calls_shared": int(shared[rows_of].sum()),
        })
    return pd.DataFrame(rows, columns=["template", "cells", "retained_tokens", "recall",
                                       "parse_success_pct", "calls_made", "calls_shared"])


def _counts(df: pd.DataFrame, column: str) -> np.ndarray:
    """`column` as numbers, a missing value (or column) counted as 0."""
    if column not in df:
        return np.zeros(len(df))
    return pd.to_numeric(df[column], errors="coerce").fillna(0).to_numpy()


def pareto_mask(scores: pd.DataFrame) -> pd.Series:
    """True for rows no other row dominates (retained lower-or-equal, recall and parse
    higher-or-equal, one strictly better)."""
    retained = scores["retained_tokens"].fillna(math.inf).to_numpy()
    recall = scores["recall"].fillna(-math.inf).to_numpy()
    parse = scores["parse_success_pct"].fillna(-math.inf).to_numpy()
    keep = []
    for i in range(len(scores)):
        dominated = any(
            retained[j] <= retained[i] and recall[j] >= recall[i] and parse[j] >= parse[i]
            and (retained[j] < retained[i] or recall[j] > recall[i] or parse[j] > parse[i])
            for j in range(len(scores)) if j != i)
        keep.append(not dominated)
    return pd.Series(keep, index=scores.index)


__all__ = ["RULES", "Objective", "Pick", "pareto_mask", "variant_scores"]
