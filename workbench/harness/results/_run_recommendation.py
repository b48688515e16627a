"""The run-level recommendation: one template for the run, from the strata's recommendations.

It aggregates the strata that could recommend something, each counted once by the window its
cells ran at (the verdict passes one stratum per model x real window, `counted_with`): the
template *eligible* under the rule in every one of them (for the default rule, never
significantly worse on recall or failures anywhere) and recommended in the most of them; equal
counts are settled by the mean rank of retained tokens over those strata, and an exact tie is
said as a tie. When no template is eligible everywhere, the most often recommended one is named
with the strata that exclude it. When no stratum can recommend anything (every template failed
everywhere, or no session was completed by every template), the line says so.

A stratum whose recall has no evidence (`Evidence.no_evidence`: every template at 0, or one
session) is counted apart: the line never calls a template "not significantly worse" there.
Under the line, one indented caveat line each: the strata counted with another (same model,
same real window), the strata that could recommend nothing, and every caveat a counted
stratum's recommendation carries (`caveat_lines`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from workbench.harness.experiment._verdict_table import (
    DEFAULT_RULE,
    MAX_RECALL,
    MIN_RETAINED,
    PARETO,
)
from workbench.harness.results._recommend import RECALL, RETAINED
from workbench.harness.results._recommend_model import (
    RUN,
    Evidence,
    Interval,
    Recommendation,
    StratumPick,
)
from workbench.harness.results._run_caveats import caveat_lines
from workbench.harness.results._verdict_text import fmt_interval

__all__ = ["recommend_run"]

_ELIGIBLE_WORDS = {
    DEFAULT_RULE: "not significantly worse on recall or failures",
    MAX_RECALL: "recall not significantly below the best",
    MIN_RETAINED: "recall within the tolerance of the best",
    PARETO: "on the Pareto front",
}


def _count_clause(pick: str, count: int, decided: list[tuple[Evidence, Recommendation]],
                  everywhere: bool, words: str) -> str:
    n = len(decided)
    blind = sum(1 for ev, _ in decided if ev.no_evidence.get(RECALL))
    if not everywhere:
        excluded = [ev.title for ev, rec in decided if pick not in rec.eligible]
        clause = (f"no template is {words} in every model x window; {pick} is recommended in "
                  f"{count} of {n}, and not eligible in {', '.join(excluded)}")
        return clause + (f"; no evidence on recall in {blind} of them" if blind else "")
    head = f"recommended in {count} of {n} model x window strata"
    if not blind:
        return f"{head} and {words} in all of them"
    if blind == n:
        return f"{head}; no evidence on recall in any of them"
    return (f"{head} and {words} in the {n - blind} with evidence on recall; no evidence on "
            f"recall in the other {blind}")


def recommend_run(strata: list[tuple[Evidence, Recommendation]], rule: str = DEFAULT_RULE,
                  recall_tolerance: float = 0.02, *,
                  notes: Sequence[str] = ()) -> Recommendation:
    """The run's recommendation from the strata's (see the module docstring).

    Args:
        strata: One ``(evidence, recommendation)`` per counted stratum.
        rule: The rule the strata were recommended by.
        recall_tolerance: Its recall tolerance (kept for the callers' symmetry).
        notes: The run's own caveats, first under the line (the strata counted with another).
    """
    per: list[StratumPick] = [{"scope": ev.title, "template": rec.template,
                               "eligible": list(rec.eligible)}
                              for ev, rec in strata]
    decided = [(ev, rec) for ev, rec in strata if rec.template is not None]
    if not decided:
        why = "no model x window could recommend a template" if strata else \
            "no model x window has two templates to compare"
        return Recommendation(None, rule, [why], scope=RUN, per_stratum=per,
                              caveats=list(notes))
    counts: dict[str, int] = {}
    for _, rec in decided:
        for t in [str(rec.template), *rec.tied]:
            counts[t] = counts.get(t, 0) + 1
    everywhere = [t for t in sorted({t for ev, _ in decided for t in ev.variants})
                  if all(t in rec.eligible for _, rec in decided)]
    pool = everywhere or sorted(counts)

    def rank(t: str) -> float:
        ranks = []
        for ev, _ in decided:
            means = ev.means.get(RETAINED, {})
            if t in means:
                ranks.append(1 + sum(v < means[t] for v in means.values()))
        return sum(ranks) / len(ranks) if ranks else math.inf

    key = {t: (-counts.get(t, 0), rank(t)) for t in pool}
    ranked = sorted(pool, key=lambda t: (key[t], t))
    pick = ranked[0]
    tied = [t for t in ranked[1:] if key[t] == key[pick]]
    reasons = [_count_clause(pick, counts.get(pick, 0), decided, bool(everywhere),
                             _ELIGIBLE_WORDS.get(rule, "eligible"))]
    intervals: list[Interval] = []
    shown = []
    for ev, _ in decided:
        if ev.no_evidence.get(RECALL):
            shown.append(f"{ev.title} no evidence")
            continue
        c = ev.comparisons.get(RECALL, {}).get(pick)
        if c is not None:
            intervals.append(Interval(c.metric, c.variant, c.best, c.mean_diff, c.ci_low,
                                      c.ci_high, c.n_sessions, c.p_adjusted))
            shown.append(f"{ev.title} {fmt_interval(c.mean_diff, c.ci_low, c.ci_high, RECALL)}")
    if shown:
        reasons.append("recall against each stratum's best: " + ", ".join(shown))
    caveats = [*notes,
               *(f"{ev.title}: no recommendation: {'; '.join(rec.reasons)}"
                 for ev, rec in strata if rec.template is None),
               *caveat_lines([(ev.title, rec.caveats) for ev, rec in decided])]
    return Recommendation(pick, rule, reasons, intervals, everywhere, tied, RUN, per,
                          caveats=caveats)
