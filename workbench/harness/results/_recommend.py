"""The recommendation: which template to ship, per model x window and for the run as a whole.

The rule is the spec's ``[verdict] rule`` (`VerdictTable`); every rule reads the stratum's
means over the sessions every template completed (the failure rate over every cell with an
outcome) and the comparisons with the best (`compare_with_best`: paired cluster bootstrap,
Holm-adjusted):

- ``min-retained-safe`` (the default): among the templates *not significantly worse* than the
  best on probe recall nor on compaction failures, the one with the fewest retained tokens;
- ``max-recall``: the template with the highest mean recall (its lead is called a tie when no
  comparison with it is significant);
- ``min-retained``: among the templates whose mean recall is within ``recall_tolerance`` (a
  fraction: 0.02 = 2 points) of the best mean, the fewest retained tokens;
- ``pareto``: the templates that no other template matches or beats on recall, retained tokens
  and failure rate at once (the front, by means); the one shipped is the member closest to the
  ideal point (best recall, fewest tokens, fewest failures), each metric scaled by its range
  over the front.

"Significantly worse" includes a gap that is the same in every session (``consistent``).
Whatever the rule, a stratum's line also says where the pick is significantly worse than the
best on a headline metric the rule does not weigh (questions answered, useful summaries...).

A stratum's line states its caveats after its reasons (`Recommendation.caveats`): where the pick
is significantly worse on a headline metric the rule does not weigh, where no template recalled
anything, where too few sessions back it. A metric the stratum's cells cannot rank
(`Evidence.no_evidence`: every template at 0, or one session) is said to have no evidence,
never to be "not significantly worse". The run-level recommendation, which aggregates the
strata, is `workbench.harness.results._run_recommendation`.
"""

from __future__ import annotations

import math

from workbench.harness.experiment._verdict_table import (
    DEFAULT_RULE,
    MAX_RECALL,
    MIN_RETAINED,
    PARETO,
)
from workbench.harness.results._recommend_model import (
    Evidence,
    Interval,
    Recommendation,
)
from workbench.harness.results._verdict_text import fmt_interval, fmt_mean, fmt_p, label
from workbench.harness.results._versus_best import (
    BETTER,
    MIN_SESSIONS,
    WORSE,
    Comparison,
)

__all__ = ["FAILED", "RECALL", "RETAINED", "Evidence", "Interval", "Recommendation",
           "eligible_templates", "rank_eligible", "recommend_stratum"]

RECALL, RETAINED, FAILED = "probe_recall", "retained_tokens", "failed"


def _not_worse(ev: Evidence, metric: str, template: str) -> bool:
    if ev.best.get(metric) is None or template == ev.best[metric]:
        return template in ev.means.get(metric, {})
    cmp = ev.comparisons[metric].get(template)
    return cmp is not None and cmp.status != WORSE


def _cmp_interval(c: Comparison) -> Interval:
    return Interval(c.metric, c.variant, c.best, c.mean_diff, c.ci_low, c.ci_high,
                    c.n_sessions, c.p_adjusted)


_BEST_WORDS = {RECALL: "the best mean recall", FAILED: "the lowest failure rate"}


def _versus_best(ev: Evidence, metric: str, template: str, what: str) -> tuple[str, Interval | None]:
    """A clause comparing `template` with the best on `metric`, and its interval."""
    best = ev.best.get(metric)
    if best is None:
        return f"no {what} data", None
    if ev.no_evidence.get(metric):
        return f"no evidence on {what}: {ev.no_evidence[metric]}", None
    mean = fmt_mean(ev.means[metric][template], metric)
    top = _BEST_WORDS.get(metric, f"the best {what}")
    if template == best:
        ties = [c for c in ev.comparisons[metric].values() if c.status not in (WORSE, BETTER)]
        if not ev.comparisons[metric]:
            return f"{top} ({mean})", None
        if not ties:
            return f"{top} ({mean}), significantly ahead of every other template", None
        closest = min(ties, key=lambda c: abs(c.mean_diff) if not math.isnan(c.mean_diff)
                      else math.inf)
        return (f"{top} ({mean}), not significantly ahead of "
                f"{', '.join(c.variant for c in ties)} ({closest.variant} "
                f"{fmt_interval(closest.mean_diff, closest.ci_low, closest.ci_high, metric)})",
                _cmp_interval(closest))
    c = ev.comparisons[metric][template]
    verb = "not significantly lower" if metric == RECALL else "not significantly higher"
    if c.status == WORSE:
        verb = "significantly worse"
    return (f"{what} {verb} than the best, {best} "
            f"({fmt_interval(c.mean_diff, c.ci_low, c.ci_high, metric)}, Holm p "
            f"{fmt_p(c.p_adjusted)})", _cmp_interval(c))


def _retained_clause(ev: Evidence, pick: str, eligible: list[str], tied: list[str], seed: int,
                     n_boot: int) -> tuple[str, Interval | None]:
    means = ev.means.get(RETAINED, {})
    if pick not in means:
        return "retained tokens unknown", None
    recall_best = ev.best.get(RECALL)
    if recall_best is not None and recall_best not in (pick, *tied) and recall_best in means:
        versus = recall_best
    else:
        rest = [t for t in eligible if t not in (pick, *tied) and t in means] or \
               [t for t in means if t not in (pick, *tied)]
        if not rest:
            return f"{fmt_mean(means[pick], RETAINED)} retained tokens", None
        versus = min(rest, key=lambda t: (means[t], t))
    d = ev.paired[RETAINED].diff(versus, pick, seed=seed, n_boot=n_boot)
    share = (means[pick] - means[versus]) / means[versus] if means[versus] else math.nan
    amount = "fewer" if share <= 0 else "more"
    pct = f"{abs(100 * share):.0f} %" if not math.isnan(share) else "—"
    return (f"{pct} {amount} retained tokens than {versus} "
            f"({fmt_interval(d.mean_diff, d.ci_low, d.ci_high, RETAINED)})",
            Interval(RETAINED, pick, versus, d.mean_diff, d.ci_low, d.ci_high, d.n_sessions))


def eligible_templates(ev: Evidence, rule: str, recall_tolerance: float) -> list[str]:
    """The templates `rule` allows in this stratum (sorted)."""
    recall = ev.means.get(RECALL, {})
    retained = ev.means.get(RETAINED, {})
    have = [t for t in ev.variants if t in recall and t in retained]
    if rule == MAX_RECALL:
        return [t for t in have if _not_worse(ev, RECALL, t)]
    if rule == MIN_RETAINED:
        top = max(recall[t] for t in have) if have else math.nan
        return [t for t in have if recall[t] >= top - recall_tolerance - 1e-12]
    if rule == PARETO:
        return _front(ev, have)
    return [t for t in have if _not_worse(ev, RECALL, t)
            and (not ev.means.get(FAILED) or _not_worse(ev, FAILED, t))]


def _scores(ev: Evidence, t: str) -> tuple[float, float, float]:
    """(recall, -retained, -failure rate): higher is better on each."""
    fail = ev.means.get(FAILED, {}).get(t, 0.0)
    return ev.means[RECALL][t], -ev.means[RETAINED][t], -fail


def _front(ev: Evidence, have: list[str]) -> list[str]:
    scores = {t: _scores(ev, t) for t in have}

    def dominated(t: str) -> bool:
        return any(all(a >= b for a, b in zip(scores[o], scores[t], strict=True))
                   and scores[o] != scores[t] for o in have if o != t)

    return [t for t in have if not dominated(t)]


def _knee_distance(ev: Evidence, front: list[str], t: str) -> float:
    columns = list(zip(*(_scores(ev, f) for f in front), strict=True))
    total = 0.0
    for value, column in zip(_scores(ev, t), columns, strict=True):
        span = max(column) - min(column)
        if span > 0:
            total += ((max(column) - value) / span) ** 2
    return math.sqrt(total)


def _keys(ev: Evidence, rule: str, eligible: list[str]) -> dict[str, tuple[float, ...]]:
    recall, retained = ev.means[RECALL], ev.means[RETAINED]
    fail = ev.means.get(FAILED, {})
    if rule == MAX_RECALL:
        return {t: (-recall[t], retained[t], fail.get(t, 0.0)) for t in eligible}
    if rule == PARETO:
        return {t: (_knee_distance(ev, eligible, t), -recall[t], retained[t]) for t in eligible}
    return {t: (retained[t], -recall[t], fail.get(t, 0.0)) for t in eligible}


def rank_eligible(ev: Evidence, rule: str, eligible: list[str]) -> list[str]:
    """`eligible` in the order `rule` prefers them (the first is the pick; equal keys by name)."""
    key = _keys(ev, rule, eligible)
    return sorted(eligible, key=lambda t: (key[t], t))


def _choose(ev: Evidence, rule: str, eligible: list[str]) -> tuple[str, list[str]]:
    key = _keys(ev, rule, eligible)
    ranked = rank_eligible(ev, rule, eligible)
    pick = ranked[0]
    return pick, [t for t in ranked[1:] if key[t] == key[pick]]


def recommend_stratum(ev: Evidence, rule: str = DEFAULT_RULE, recall_tolerance: float = 0.02,
                      *, seed: int = 0, n_boot: int = 2000) -> Recommendation:
    """The stratum's recommendation under `rule` (see the module docstring)."""
    if not ev.any_ok:
        return Recommendation(None, rule, [f"no template produced a summary in {ev.title}"],
                              scope=ev.title)
    if not ev.means.get(RECALL) or not ev.means.get(RETAINED):
        return Recommendation(None, rule, ["no session was completed by every template, so "
                                           "recall and retained tokens cannot be compared"],
                              scope=ev.title)
    eligible = eligible_templates(ev, rule, recall_tolerance)
    if not eligible:
        worse = sorted({c.variant for m in (RECALL, FAILED)
                        for c in ev.comparisons.get(m, {}).values() if c.status == WORSE})
        return Recommendation(None, rule, [
            "every template is significantly worse than the best on recall or on failures "
            f"({', '.join(worse)})"], scope=ev.title)
    pick, tied = _choose(ev, rule, eligible)
    reasons: list[str] = []
    intervals: list[Interval] = []

    def add(clause: str, interval: Interval | None) -> None:
        reasons.append(clause)
        if interval is not None:
            intervals.append(interval)

    if rule == MIN_RETAINED:
        gap = ev.means[RECALL][pick] - max(ev.means[RECALL].values())
        add(f"mean recall within {100 * recall_tolerance:.1f} pts of the best "
            f"({100 * gap:+.1f} pts)", None)
    elif rule == PARETO:
        front = ", ".join(eligible)
        add(f"on the Pareto front of recall, retained tokens and failures ({front}), "
            "closest to the ideal point", None)
    add(*_versus_best(ev, RECALL, pick, "recall"))
    if rule in (DEFAULT_RULE, PARETO) and ev.means.get(FAILED):
        add(*_versus_best(ev, FAILED, pick, "failures"))
    retained_clause, retained_interval = _retained_clause(ev, pick, eligible, tied, seed,
                                                          n_boot)
    if rule in (DEFAULT_RULE, MIN_RETAINED):
        retained_clause = f"the fewest retained tokens of the {len(eligible)} eligible, " \
                          + retained_clause.replace(" retained tokens than", " than", 1)
    add(retained_clause, retained_interval)
    caveats = []
    for clause, interval in _caveats(ev, pick):
        caveats.append(clause)
        intervals.append(interval)
    if max(ev.means[RECALL].values()) == 0:
        caveats.append("no template recalled a single probe item here: the choice rests on "
                       "tokens alone")
    if ev.n_common < MIN_SESSIONS:
        caveats.append(f"only {ev.n_common} session(s) completed by every template, below the "
                       f"{MIN_SESSIONS} a significance test needs: provisional")
    return Recommendation(pick, rule, reasons, intervals, eligible, tied, ev.title,
                          caveats=caveats)


def _caveats(ev: Evidence, pick: str) -> list[tuple[str, Interval]]:
    """Where the pick is significantly worse than the best on a metric the rule does not weigh
    (questions answered, useful summaries...): said, so the line never hides a known cost."""
    out = []
    for metric, by_variant in ev.comparisons.items():
        c = by_variant.get(pick)
        if metric in (RECALL, FAILED, RETAINED) or c is None or c.status != WORSE \
                or ev.no_evidence.get(metric):
            continue
        out.append((f"but significantly worse than the best, {c.best}, on {label(metric)} "
                    f"({fmt_interval(c.mean_diff, c.ci_low, c.ci_high, metric)}, Holm p "
                    f"{fmt_p(c.p_adjusted)})", _cmp_interval(c)))
    return out
