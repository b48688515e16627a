"""The verdict: per model x window, how every variant compares with the best, and what to ship.

For every stratum (model x window) with at least two variants (templates by default), each
headline metric names the best variant by its mean over the sessions every variant completed
(the failure rate over every cell with an outcome) and compares *every* other variant with it
(`compare_with_best`): a paired cluster bootstrap over sessions, a bootstrap p-value, and
Holm's step-down adjustment across that stratum's and metric's comparisons with the best (the
family; decisions read the adjusted p-values, the printed 95 % intervals are unadjusted). Each
variant is then a tie with the best, significantly worse (named), identical to it (the same
summary text on every common session), or consistently worse (the same non-zero gap in every
session, said as such even below `MIN_SESSIONS`). The best is a winner only when it is
significantly better than every other variant; ties are never broken by name. When nothing
is significant, the metric's line gives the minimum detectable effect at this n and the
sessions needed for the metric's reference effect (`workbench.harness.results._power`).
Models and windows are never pooled.

Each stratum, and the run as a whole, ends with a ``Recommendation:`` line: the template to
ship under the spec's ``[verdict] rule`` and why, with its intervals
(`workbench.harness.results._recommend`).

Given the run's replay rows, the `Verdict` also carries the policy verdict over them
(``policies``: `workbench.harness.results._policy_verdict`), which its renderers show last.

Warnings say when the run cannot tell variants apart: every variant wrote the same summaries,
or every parsed reply merely copies the template's schema example. The error summary counts
cells by error class, compaction failures (outcomes) apart from infrastructure errors, each
with a plain-language cause. `verdict` is public: the CLI, the report and the notebook call it.
"""

from __future__ import annotations

import math
from typing import Protocol, TypedDict, Unpack, runtime_checkable

import numpy as np
import pandas as pd

from workbench.harness.experiment._verdict_table import (
    DEFAULT_RECALL_TOLERANCE,
    DEFAULT_RULE,
    check_rule,
)
from workbench.harness.results._cell_names import cell_labels
from workbench.harness.results._no_evidence import real_window
from workbench.harness.results._outcomes import ERROR, FAILED, error_cause, error_details
from workbench.harness.results._paired import LOWER_IS_BETTER
from workbench.harness.results._policy_verdict import policy_verdict
from workbench.harness.results._power import (
    minimum_detectable_effect,
    reference_effect,
    sessions_needed,
)
from workbench.harness.results._recommend import Evidence, Recommendation, recommend_stratum
from workbench.harness.results._run_recommendation import recommend_run
from workbench.harness.results._table import (
    CELL_KEYS,
    ECHO_THRESHOLD,
    NO_WINDOW,
    mark_common,
    prepare_cells,
    window_label,
)
from workbench.harness.results._verdict_checks import check_stratum, count_strata, qa_reference
from workbench.harness.results._verdict_model import (
    ErrorCount,
    MetricVerdict,
    StratumVerdict,
    Verdict,
)
from workbench.harness.results._verdict_text import METRIC_LABELS
from workbench.harness.results._versus_best import (
    MIN_SESSIONS,
    WORSE,
    PairedValues,
    RowParts,
    compare_with_best,
)

HEADLINE_METRICS = ("probe_recall", "useful_structured", "retained_tokens", "failed",
                    "qa_accuracy", "next_action_match", "judge_score")
"""Metrics the verdict decides, in display order (one the cells lack is left out; the judge's
score only where the judge's agreement with the exact grader allows, `judge_trust`)."""
QA_REFERENCE = ("qa_loss_exact", "qa_loss_open", "qa_gain")
"""The QA figures against the full history each stratum reports per variant (not decided)."""

__all__ = ["HEADLINE_METRICS", "METRIC_LABELS", "MIN_SESSIONS", "SUMMARY_KEY", "ErrorCount",
           "MetricVerdict", "Recommendation", "StratumVerdict", "Verdict", "run_verdict",
           "verdict"]

SUMMARY_KEY = "summary_key"
"""An optional column of the cell rows naming each cell's summary text (equal texts, equal
keys): when present, two variants whose summaries are equal on every common session are
called identical; without it, sizes and recall are compared instead."""


class _Judged:
    """A stratum's rows each metric is judged on, selected once for all its metrics: the
    common sessions' cells, or for ``failed`` every cell that was not an error."""

    def __init__(self, part: pd.DataFrame) -> None:
        self.part = part
        self._rows: dict[bool, pd.DataFrame] = {}
        self.shared: dict[bool, dict[tuple[str, str, str], RowParts]] = {False: {}, True: {}}

    def rows(self, metric: str) -> pd.DataFrame:
        failed = metric == "failed"
        if failed not in self._rows:
            part = self.part
            self._rows[failed] = part[part["outcome_kind"] != ERROR] if failed \
                else part[part["_common"]]
        return self._rows[failed]


def _variant_means(rows: pd.DataFrame, on: str, metric: str) -> dict[str, float]:
    values = pd.to_numeric(rows[metric], errors="coerce") if metric in rows else None
    if values is None:
        return {}
    means = values.groupby(rows[on].astype(str)).mean().dropna()
    return {str(k): float(v) for k, v in means.items()}


def _decide(judged: _Judged, on: str, metric: str, seed: int, n_boot: int,
            same: dict[str, dict[str, bool]], basis: str) -> tuple[MetricVerdict, PairedValues]:
    rows = judged.rows(metric)
    means = _variant_means(rows, on, metric)
    values = PairedValues(rows, on, metric, shared=judged.shared[metric == "failed"])
    if len(means) < 2:
        return MetricVerdict(metric, None, None, None, np.nan, np.nan, np.nan, 0, means), values
    lower = metric in LOWER_IS_BETTER
    ranked = sorted(means, key=lambda v: (means[v] if lower else -means[v], v))
    best, runner_up = ranked[0], ranked[1]
    identical = frozenset(v for v in ranked[1:] if same.get(best, {}).get(v, False))
    comparisons = compare_with_best(values, best, ranked[1:], seed=seed, n_boot=n_boot,
                                    identical=identical)
    second = comparisons[0]
    winner = best if all(c.status == WORSE for c in comparisons) else None
    found = MetricVerdict(metric, best, runner_up, winner, -second.mean_diff, -second.ci_high,
                          -second.ci_low, max(c.n_sessions for c in comparisons), means,
                          comparisons, basis)
    if found.nothing_significant:
        spread = [c for c in comparisons if not math.isnan(c.sd)]
        if spread:
            widest = max(spread, key=lambda c: c.sd)
            found.sd = widest.sd
            found.n_sessions = widest.n_sessions
            found.mde = minimum_detectable_effect(widest.sd, widest.n_sessions,
                                                  len(comparisons))
            found.reference_effect = reference_effect(metric, means[best])
            found.sessions_needed = sessions_needed(widest.sd, found.reference_effect,
                                                    len(comparisons), floor=MIN_SESSIONS)
    return found, values


def _summary_keys(common: pd.DataFrame) -> tuple[pd.Series, str]:
    """What two variants' summaries are compared on: their texts' keys when the rows carry
    them (`SUMMARY_KEY`), else sizes and recall; and the words for it."""
    if SUMMARY_KEY in common and common[SUMMARY_KEY].notna().all():
        return common[SUMMARY_KEY], "summary text"
    cols = [c for c in ("summary_tokens", "retained_tokens", "probe_recall") if c in common]
    return _joined(common[cols]), "summary sizes and recall"


def _joined(frame: pd.DataFrame) -> pd.Series:
    """Each row's values as text, joined by ``|`` (column by column: a row-wise ``agg`` calls
    Python once per row, 10 ms for a 96-point tune's cells)."""
    if frame.empty or not len(frame.columns):
        return frame.map(str).agg("|".join, axis=1)
    columns = [frame[c].map(str).tolist() for c in frame.columns]
    return pd.Series(["|".join(parts) for parts in zip(*columns, strict=True)], index=frame.index)


def _same_summaries(common: pd.DataFrame, on: str,
                    keys: pd.Series) -> dict[str, dict[str, bool]]:
    """Variant -> variant -> True when the two wrote the same summary on every common unit."""
    if common.empty:
        return {}
    table = pd.DataFrame({"u": common["_pair"], "v": common[on].astype(str), "k": keys})
    wide = table.groupby(["u", "v"], sort=True)["k"].first().unstack("v")
    # A variant's summaries over every unit, or None when it misses one: two variants wrote
    # the same summaries when their signatures are equal (one pass, not one per pair).
    missing = wide.isna().any(axis=0)
    signature = {str(v): None if missing[v] else tuple(wide[v].tolist()) for v in wide.columns}
    names = list(signature)
    out: dict[str, dict[str, bool]] = {a: {} for a in names}
    for i, a in enumerate(names):
        mine = signature[a]
        for b in names[i + 1:]:
            same = mine is not None and mine == signature[b]
            out[a][b] = out[b][a] = same
    return out


def _warnings(df: pd.DataFrame, on: str, same: dict[str, dict[str, bool]],
              basis: str) -> list[str]:
    out: list[str] = []
    ok = df[df["ok"]]
    if ok.empty:
        return [f"no {on} produced a summary here: nothing to compare"]
    common = df[df["_common"]]
    if not common.empty and common[on].nunique() > 1:
        if all(all(row.values()) for row in same.values()):
            out.append(f"every {on} gave the same {basis} on every common session: the variants "
                       "are indistinguishable here")
    parsed = ok[ok["parse_outcome"].eq("structured")] if "parse_outcome" in ok else ok.iloc[:0]
    if "template_echo" in ok and len(parsed):
        echo = pd.to_numeric(parsed["template_echo"], errors="coerce")
        if (echo >= ECHO_THRESHOLD).all():
            out.append(f"all {len(parsed)} parsed replies copy the template's schema example "
                       "(template echo): parse success says nothing about summary quality here")
    return out


def _error_counts(df: pd.DataFrame) -> list[ErrorCount]:
    bad = df[df["outcome_kind"].isin([FAILED, ERROR])]
    if bad.empty:
        return []
    stored = bad["error_class"] if "error_class" in bad else pd.Series(None, index=bad.index)
    fallback = bad["error_type"] if "error_type" in bad else pd.Series(None, index=bad.index)
    names = []
    for cls, kind, etype in zip(stored, bad["outcome_kind"], fallback, strict=True):
        if isinstance(cls, str) and cls:
            names.append(cls)
        elif kind == FAILED:
            names.append("ContextLengthExceeded")
        else:
            names.append(etype if isinstance(etype, str) and etype else "unknown")
    messages = bad["error_message"].to_list() if "error_message" in bad else [None] * len(bad)
    counts = pd.DataFrame({"cls": names, "kind": bad["outcome_kind"].to_list(),
                           "message": messages, "cell": cell_labels(bad)})
    grouped = counts.groupby(["cls", "kind"]).agg(n=("message", "size"),
                                                  messages=("message", list),
                                                  cells=("cell", list)).reset_index()
    grouped = grouped.sort_values(["n", "cls"], ascending=[False, True])
    return [ErrorCount(str(r.cls), str(r.kind), int(r.n), error_cause(str(r.cls), r.messages),
                       error_details(str(r.cls), r.messages, r.cells))
            for r in grouped.itertuples()]


class VerdictOptions(TypedDict, total=False):
    """The keywords of `verdict` after the cells (what `Results.verdict` passes on)."""

    on: str
    metrics: tuple[str, ...]
    seed: int | None
    n_boot: int
    rule: str | None
    recall_tolerance: float | None
    replays: pd.DataFrame | None


@runtime_checkable
class VerdictSource(Protocol):
    """What `verdict` takes for a `Results` (its cells and its own `Results.verdict`): the
    check is by these two names, as `Results` lives in a module that imports this one."""

    cells: pd.DataFrame

    def verdict(self, **kwargs: Unpack[VerdictOptions]) -> Verdict: ...


def verdict(cells: pd.DataFrame | VerdictSource | None, *, on: str = "template", metrics: tuple[str, ...] = HEADLINE_METRICS,
            seed: int | None = None, n_boot: int = 2000, rule: str | None = None,
            recall_tolerance: float | None = None,
            replays: pd.DataFrame | None = None) -> Verdict:
    """The verdict of cell rows: every variant against the best per model x window, the
    recommendation, warnings and the error summary. A pure function of its arguments.

    Args:
        cells: The cell rows (a DataFrame with the store's columns, metrics expanded, and
            optionally `SUMMARY_KEY`); a `Results` stands for ``results.verdict(...)``, which
            adds the keys of its summaries and its spec's rule and seed.
        on: The compared column (``template``; ``model`` compares models per window).
        metrics: Headline metrics to decide (the recommendation reads probe recall, retained
            tokens and failures whether or not they are listed).
        seed: Bootstrap seed (default 0).
        n_boot: Bootstrap resamples.
        rule: Recommendation rule (`RULES`); default ``min-retained-safe``.
        recall_tolerance: For ``min-retained``: the recall tolerance (a fraction).
        replays: Replay rows (`policy_rows`): the `Verdict` then carries their policy verdict
            (``policies``, `policy_verdict` with the same seed and resamples).

    Returns:
        A `Verdict`; ``to_text()`` is what `workbench run`, `report` and `compare` print.

    Raises:
        ConfigError: `rule` is not one of the allowed rules (the message lists them).
    """
    if isinstance(cells, VerdictSource):  # a Results
        given: VerdictOptions = {"on": on, "metrics": metrics, "n_boot": n_boot}
        if seed is not None:
            given["seed"] = seed
        if rule is not None:
            given["rule"] = rule
        if recall_tolerance is not None:
            given["recall_tolerance"] = recall_tolerance
        if replays is not None:
            given["replays"] = replays
        return cells.verdict(**given)
    rule = check_rule(rule if rule is not None else DEFAULT_RULE)
    tolerance = float(recall_tolerance if recall_tolerance is not None
                      else DEFAULT_RECALL_TOLERANCE)
    seed = int(seed or 0)
    policies = policy_verdict(replays, seed=seed, n_boot=n_boot) if replays is not None else None
    if cells is None or len(cells) == 0:
        return Verdict(on, [], [], 0, rule, tolerance, recommend_run([], rule, tolerance),
                       policies)
    df = prepare_cells(cells)
    strata_cols = [c for c in ("model", "window") if c != on and c in df.columns]
    by = strata_cols + [on]
    df["_common"] = mark_common(df, by, on)
    units = [k for k in CELL_KEYS if k not in by and k in df.columns]
    df["_unit"] = _joined(df[units].astype(object).where(df[units].notna(), NO_WINDOW)) \
        if units else ""
    df["_pair"] = df["_unit"]
    key = df[strata_cols].astype(object).where(df[strata_cols].notna(), NO_WINDOW)
    decided = list(metrics) + [m for m in ("probe_recall", "retained_tokens", "failed")
                               if m not in metrics]
    strata: list[StratumVerdict] = []
    evidence: list[tuple[Evidence, Recommendation]] = []
    for values, part in df.groupby([key[c] for c in strata_cols], sort=True):
        values = values if isinstance(values, tuple) else (values,)
        variants = sorted(part[on].dropna().astype(str).unique())
        if len(variants) < 2:
            continue
        labels = dict(zip(strata_cols, values, strict=True))
        session = "session_id" if "session_id" in part else "_unit"
        n_common = int(part.loc[part["_common"], session].nunique())
        stratum = StratumVerdict(model=str(labels.get("model", "all")),
                                 window=window_label(labels.get("window", NO_WINDOW)),
                                 variants=variants, n_common=n_common,
                                 real_window=real_window(part))
        part = part.copy()
        part[on] = part[on].astype(str)
        common = part[part["_common"]]
        keys, basis = _summary_keys(common)
        same = _same_summaries(common, on, keys)
        judged = _Judged(part)
        found = {m: _decide(judged, on, m, seed, n_boot, same, basis) for m in decided
                 if m in part.columns}
        stratum.judge, caveats = check_stratum(part, found, on=on, seed=seed, n_boot=n_boot)
        stratum.qa_reference = qa_reference(part, on, QA_REFERENCE)
        stratum.metrics = [found[m][0] for m in metrics if m in found]
        stratum.warnings = _warnings(part, on, same, basis)
        ranked = {m: vp for m, vp in found.items() if not vp[0].not_ranked}
        ev = Evidence(stratum.title, variants, n_common, bool(part["ok"].any()),
                      means={m: v.means for m, (v, _) in ranked.items()},
                      best={m: v.best for m, (v, _) in ranked.items()},
                      comparisons={m: {c.variant: c for c in v.comparisons}
                                   for m, (v, _) in ranked.items()},
                      paired={m: pv for m, (_, pv) in ranked.items()},
                      no_evidence={m: v.no_evidence for m, (v, _) in ranked.items()
                                   if v.no_evidence})
        stratum.recommendation = recommend_stratum(ev, rule, tolerance, seed=seed, n_boot=n_boot)
        stratum.recommendation.caveats += caveats
        strata.append(stratum)
        evidence.append((ev, stratum.recommendation))
    order = sorted(range(len(strata)), key=lambda i: (
        strata[i].model, strata[i].window if isinstance(strata[i].window, int) else 1 << 62))
    strata = [strata[i] for i in order]
    counted, notes = count_strata(strata, [evidence[i] for i in order])
    return Verdict(on, strata, _error_counts(df), len(df), rule, tolerance,
                   recommend_run(counted, rule, tolerance, notes=notes), policies)


def run_verdict(results: pd.DataFrame | VerdictSource) -> Verdict:
    """The default verdict of `results`, computed once when it is a `Results` (which caches it)."""
    cached = getattr(results, "verdict", None)
    return cached() if callable(cached) else verdict(results)  # type: ignore[no-any-return]
