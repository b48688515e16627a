"""What the verdict checks in a stratum before it ranks, and how the run counts its strata.

`check_stratum` marks each decided metric that cannot rank the variants (`no_evidence`), leaves
the judge's figures out where its agreement with the exact grader is too low (`judge_trust`),
and returns the caveat that says so; `qa_reference` gives the QA figures against the full
history per variant; `count_strata` keeps one stratum per model x real window for the run's
recommendation and says which others it counted with them. All are pure functions of a
stratum's cell rows and of the metric verdicts computed from them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeVar

import pandas as pd

from workbench.harness.results._judge_gate import JudgeTrust, is_judge_metric, judge_trust
from workbench.harness.results._no_evidence import counted_with, no_evidence
from workbench.harness.results._run_caveats import same_window_line
from workbench.harness.results._verdict_model import MetricVerdict, StratumVerdict

__all__ = ["check_stratum", "count_strata", "qa_reference"]

T = TypeVar("T")


def check_stratum(part: pd.DataFrame, found: Mapping[str, tuple[MetricVerdict, object]], *,
                  on: str, seed: int, n_boot: int) -> tuple[JudgeTrust | None, list[str]]:
    """Mark the stratum's metric verdicts in place and return the judge's trust and the caveats.

    Args:
        part: The stratum's cells (prepared, with ``_common``).
        found: Metric -> ``(MetricVerdict, PairedValues)`` as the verdict decided them; the
            judge's metrics it may not rank on lose their best, winner and comparisons and
            say why (``not_ranked``).
        on: The compared column.
        seed: The bootstrap's seed (the judge's kappa interval).
        n_boot: Bootstrap resamples.

    Returns:
        ``(judge trust or None, caveats for the stratum's recommendation)``.
    """
    for verdict, _ in found.values():
        verdict.no_evidence = no_evidence(verdict.metric, verdict.means, verdict.n_sessions, on)
    trust = judge_trust(part, seed=seed, resamples=n_boot)
    if trust is None or trust.trusted:
        return trust, []
    for metric, (verdict, _) in found.items():
        if is_judge_metric(metric):
            verdict.best = verdict.runner_up = verdict.winner = None
            verdict.mean_diff = verdict.ci_low = verdict.ci_high = float("nan")
            verdict.comparisons = []
            verdict.not_ranked = trust.reason
    return trust, [trust.reason]


def qa_reference(part: pd.DataFrame, on: str,
                 metrics: Sequence[str]) -> dict[str, dict[str, float]]:
    """Metric -> variant -> mean over the stratum's common cells that have it (a cell whose
    session does not fit its window has no full-history reference, so no value)."""
    common = part[part["_common"]]
    out: dict[str, dict[str, float]] = {}
    for metric in metrics:
        if metric not in common:
            continue
        means = pd.to_numeric(common[metric], errors="coerce").groupby(
            common[on].astype(str)).mean().dropna()
        if len(means):
            out[metric] = {str(k): float(v) for k, v in means.items()}
    return out


def count_strata(strata: Sequence[StratumVerdict],
                 evidence: Sequence[T]) -> tuple[list[T], list[str]]:
    """The evidence of the strata the run counts, one per model x real window, and a note for
    each stratum counted with another. Sets each stratum's ``counted_with``.

    Args:
        strata: `StratumVerdict` objects in display order (``real_window`` set).
        evidence: The matching ``(Evidence, Recommendation)`` pairs.
    """
    firsts = counted_with([(s.model, s.real_window) for s in strata])
    kept: list[T] = []
    notes: list[str] = []
    for stratum, ev, first in zip(strata, evidence, firsts, strict=True):
        if first is None:
            kept.append(ev)
            continue
        stratum.counted_with = strata[first].title
        notes.append(same_window_line(stratum.model, stratum.window, stratum.real_window,
                                      stratum.counted_with))
    return kept, notes
