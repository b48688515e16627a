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

Warnings say when the run cannot tell variants apart: every variant wrote the same summaries,
or every parsed reply merely copies the template's schema example. The error summary counts
cells by error class, compaction failures (outcomes) apart from infrastructure errors, each
with a plain-language cause. `verdict` is public: the CLI, the report and the notebook call it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from workbench.harness.experiment._verdict_table import (
    DEFAULT_RECALL_TOLERANCE,
    DEFAULT_RULE,
    check_rule,
)
from workbench.harness.experiment._windows import format_window
from workbench.harness.results._cell_names import cell_labels
from workbench.harness.results._outcomes import ERROR, FAILED, error_cause, error_details
from workbench.harness.results._paired import LOWER_IS_BETTER
from workbench.harness.results._power import (
    POWER,
    minimum_detectable_effect,
    reference_effect,
    sessions_needed,
)
from workbench.harness.results._recommend import (
    Evidence,
    Recommendation,
    recommend_run,
    recommend_stratum,
)
from workbench.harness.results._table import (
    CELL_KEYS,
    ECHO_THRESHOLD,
    NO_WINDOW,
    mark_common,
    prepare_cells,
    window_label,
)
from workbench.harness.results._verdict_text import (
    METRIC_LABELS,
    fmt_diff,
    fmt_interval,
    fmt_mean,
    fmt_p,
    label,
)
from workbench.harness.results._versus_best import (
    BETTER,
    IDENTICAL,
    MIN_SESSIONS,
    WORSE,
    Comparison,
    PairedValues,
    compare_with_best,
)

HEADLINE_METRICS = ("probe_recall", "useful_structured", "retained_tokens", "failed",
                    "qa_accuracy", "next_action_match")
"""Metrics the verdict decides, in display order."""

__all__ = ["HEADLINE_METRICS", "METRIC_LABELS", "MIN_SESSIONS", "ErrorCount", "MetricVerdict",
           "Recommendation", "StratumVerdict", "Verdict", "run_verdict", "verdict"]

ERROR_LABELS = {
    "ContextLengthExceeded": "context exhausted",
    "CacheMiss": "cache miss",
    "AuthenticationError": "authentication",
    "RateLimited": "rate limited",
    "ModelTimeout": "timeout",
    "TransientModelError": "network / server error",
    "SessionFormatError": "unreadable session",
    "TemplateError": "template error",
    "ReplyFormatError": "malformed judge or author reply",
}


@dataclass
class MetricVerdict:
    """One headline metric in one stratum: every variant against the best.

    Attributes:
        metric: The metric (a cell column).
        best: The variant with the best mean, or None without data (equal means: the first by
            name is the reference, and the others tie with it).
        runner_up: The second best variant by mean.
        winner: `best` when it is significantly better than every other variant, else None.
        mean_diff: Mean paired difference ``best - runner_up``.
        ci_low: Lower end of its 95 % cluster-bootstrap interval.
        ci_high: Upper end.
        n_sessions: Sessions (clusters) in the comparisons (the most any comparison has).
        means: Mean per variant (over the common sessions; failure rate for ``failed``).
        comparisons: One `Comparison` per other variant (``variant - best``), Holm-adjusted.
        identical_basis: What "identical" was judged on (summary text, or sizes and recall).
        mde: When nothing is significant: the minimum detectable difference at this n (80 %
            power, two-sided 5 % at Holm's first step), from the largest per-session SD.
        sd: That SD.
        reference_effect: The difference worth detecting for this metric (`_power`).
        sessions_needed: Sessions needed to detect `reference_effect` (None when unknown).
    """

    metric: str
    best: str | None
    runner_up: str | None
    winner: str | None
    mean_diff: float
    ci_low: float
    ci_high: float
    n_sessions: int
    means: dict[str, float] = field(default_factory=dict)
    comparisons: list[Comparison] = field(default_factory=list)
    identical_basis: str = "summary text"
    mde: float = math.nan
    sd: float = math.nan
    reference_effect: float = math.nan
    sessions_needed: int | None = None

    @property
    def worse(self) -> list[str]:
        """Variants significantly (or consistently) worse than the best."""
        return [c.variant for c in self.comparisons if c.status == WORSE]

    @property
    def ties(self) -> list[str]:
        """Variants not significantly different from the best (identical ones apart)."""
        return [c.variant for c in self.comparisons if c.status not in (WORSE, BETTER, IDENTICAL)]

    @property
    def identical(self) -> list[str]:
        """Variants whose summaries equal the best's on every common session."""
        return [c.variant for c in self.comparisons if c.status == IDENTICAL]

    @property
    def tested(self) -> bool:
        """Every comparison with the best rests on at least `MIN_SESSIONS` sessions."""
        return all(c.n_sessions >= MIN_SESSIONS for c in self.comparisons)

    @property
    def nothing_significant(self) -> bool:
        """No comparison with the best is decided."""
        return bool(self.comparisons) and not any(c.decided for c in self.comparisons)

    def _comparison_line(self, c: Comparison) -> str:
        m = self.metric
        if c.status == IDENTICAL:
            return (f"{c.variant}: identical to {c.best} (the same {self.identical_basis} on "
                    f"every common session)")
        if c.n_sessions == 0:
            return f"{c.variant}: no session shared with {c.best}"
        diff = fmt_interval(c.mean_diff, c.ci_low, c.ci_high, m)
        if c.consistent:
            what = "worse than best" if c.status == WORSE else "better than best"
            tail = ("; too few sessions for a p-value: a fact about these sessions, not a test"
                    if c.n_sessions < MIN_SESSIONS else f", Holm p {fmt_p(c.p_adjusted)}")
            return (f"{c.variant}: consistently {what}: {fmt_diff(c.mean_diff, m)} in every one "
                    f"of {c.n_sessions} sessions{tail}")
        if c.status == WORSE:
            return f"{c.variant}: worse than best, {diff}, Holm p {fmt_p(c.p_adjusted)}"
        if c.status == BETTER:
            return f"{c.variant}: better than best on paired sessions, {diff}, Holm p {fmt_p(c.p_adjusted)}"
        few = f" ({c.n_sessions} sessions: too few to test)" if c.n_sessions < MIN_SESSIONS \
            else f", Holm p {fmt_p(c.p_adjusted)}"
        return f"{c.variant}: tie with best, {diff}{few}"

    def _power_line(self) -> str:
        m = self.metric
        if math.isnan(self.sd):
            return (f"no significant difference: {self.n_sessions} session(s), too few to "
                    "estimate the spread of the differences")
        if self.sd == 0:
            return (f"no significant difference: every paired difference is 0 on these "
                    f"{self.n_sessions} sessions")
        effect = self.reference_effect
        need = (f"{self.sessions_needed} sessions needed to detect {fmt_diff(effect, m)[1:]}"
                if self.sessions_needed is not None else "sessions needed unknown")
        return (f"no significant difference: at {self.n_sessions} sessions the smallest "
                f"detectable difference is {fmt_diff(self.mde, m)[1:]} ({POWER:.0%} power, "
                f"two-sided 5 % after Holm, paired SD {fmt_diff(self.sd, m)[1:]}); {need}")

    def to_lines(self) -> list[str]:
        """The metric's block: the best, then one line per other variant, then the power line."""
        name = label(self.metric)
        if self.best is None:
            return [f"{name}: no data"]
        head = f"{name} ({self.n_sessions} sessions): best {self.best} " \
               f"({fmt_mean(self.means.get(self.best), self.metric)})"
        if self.winner is not None:
            head += (", better than every other variant in every session (too few sessions "
                     "for a test)" if not self.tested else
                     ", significantly better than every other variant")
        lines = [head] + [f"  {self._comparison_line(c)}" for c in self.comparisons]
        if self.nothing_significant:
            lines.append(f"  {self._power_line()}")
        return lines

    def to_text(self) -> str:
        """The metric's block as text (`to_lines` joined)."""
        return "\n".join(self.to_lines())

    def to_dict(self) -> dict[str, Any]:
        """Plain data (NaN as None), with the comparisons and the text."""
        out = {k: _plain(v) for k, v in self.__dict__.items() if k != "comparisons"}
        out["means"] = {k: _plain(v) for k, v in self.means.items()}
        out["comparisons"] = [{k: _plain(v) for k, v in c.__dict__.items()}
                              for c in self.comparisons]
        out.update(worse=self.worse, ties=self.ties, identical=self.identical,
                   text=self.to_text())
        return out


@dataclass
class StratumVerdict:
    """The verdict for one model x window.

    Attributes:
        model: The model label.
        window: The window (int, or "none").
        variants: The compared variants, sorted.
        n_common: Sessions every variant completed.
        metrics: One `MetricVerdict` per headline metric.
        warnings: Why this stratum cannot tell variants apart, when it cannot.
        recommendation: The template to ship here (`Recommendation`).
    """

    model: str
    window: Any
    variants: list[str]
    n_common: int
    metrics: list[MetricVerdict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    recommendation: Recommendation | None = None

    @property
    def title(self) -> str:
        """``model @ window``."""
        window = self.window if isinstance(self.window, str) else format_window(int(self.window))
        return f"{self.model} @ {window}"


@dataclass
class ErrorCount:
    """Cells that did not produce a summary, for one error class.

    Attributes:
        error_class: The root error's class name.
        kind: ``failed`` (a compaction outcome) or ``error`` (infrastructure).
        count: How many cells.
        cause: The plain-language cause (naming the key variables to set, for credentials).
        details: The distinct errors quoted for the classes whose message says what to fix
            (the unreadable session file and line, the template and its limit).
    """

    error_class: str
    kind: str
    count: int
    cause: str
    details: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        """A readable name for the class (``context exhausted``, ``cache miss``...)."""
        return ERROR_LABELS.get(self.error_class, self.error_class)

    def to_text(self) -> str:
        """``80 x context exhausted (failed): <cause>``, then one line per quoted error."""
        head = f"{self.count} x {self.label} ({self.kind}): {self.cause}"
        return "\n".join([head, *(f"    {d}" for d in self.details)])


@dataclass
class Verdict:
    """What `verdict` returns: per-stratum verdicts, the recommendation, warnings and errors.

    Attributes:
        on: The compared column (``template``).
        strata: One `StratumVerdict` per model x window with at least two variants.
        errors: Cells without a summary, by error class (most frequent first).
        cells: Cells considered.
        rule: The recommendation rule (``[verdict] rule``).
        recall_tolerance: Its recall tolerance (``min-retained``).
        recommendation: The run's recommendation, aggregated over the strata.
    """

    on: str
    strata: list[StratumVerdict]
    errors: list[ErrorCount]
    cells: int
    rule: str = DEFAULT_RULE
    recall_tolerance: float = DEFAULT_RECALL_TOLERANCE
    recommendation: Recommendation | None = None

    @property
    def infrastructure_errors(self) -> int:
        """Cells that hit an infrastructure error (the run's exit code is non-zero then)."""
        return sum(e.count for e in self.errors if e.kind == ERROR)

    @property
    def warnings(self) -> list[str]:
        """Every stratum's warnings, prefixed by the stratum."""
        return [f"{s.title}: {w}" for s in self.strata for w in s.warnings]

    def recommendation_lines(self) -> list[str]:
        """The run's ``Recommendation:`` line, then each stratum's (prefixed by its title)."""
        out = []
        if self.recommendation is not None:
            out.append(self.recommendation.to_text())
        for s in self.strata:
            if s.recommendation is not None:
                out.append(f"{s.title}: {s.recommendation.to_text()}")
        return out

    def to_text(self) -> str:
        """The verdict block and the error summary, as printed at the end of a run."""
        out = [f"Verdict: which {self.on} wins, per model x window (every {self.on} against "
               "the best by a paired cluster bootstrap over sessions, Holm-adjusted p-values "
               "across each stratum's comparisons with the best, 95 % intervals unadjusted; "
               f"means over the sessions every variant completed; rule {self.rule})"]
        if not self.strata:
            out.append(f"  nothing to compare: no model x window has two {self.on}s with cells")
        for s in self.strata:
            out.append(f"  {s.title} ({len(s.variants)} {self.on}s, {s.n_common} sessions "
                       "completed by all):")
            out += [f"    {line}" for m in s.metrics for line in m.to_lines()]
            out += [f"    warning: {w}" for w in s.warnings]
            if s.recommendation is not None:
                out.append(f"    {s.recommendation.to_text()}")
        if self.recommendation is not None:
            out.append(f"Run as a whole ({len(self.strata)} model x window, rule {self.rule}):")
            out.append(f"  {self.recommendation.to_text()}")
        out.append("Errors and failures:")
        if not self.errors:
            out.append("  none: every cell produced a summary")
        out += [f"  {e.to_text()}" for e in self.errors]
        if self.infrastructure_errors:
            out.append(f"  {self.infrastructure_errors} cell(s) hit infrastructure errors: "
                       "their results are missing, not measured")
        return "\n".join(out)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for HTML and JSON (NaN as None): the rule, the recommendation, strata
        (with metrics, comparisons, warnings and their recommendation) and errors."""
        return {
            "on": self.on,
            "cells": self.cells,
            "rule": self.rule,
            "recall_tolerance": self.recall_tolerance,
            "infrastructure_errors": self.infrastructure_errors,
            "recommendation": (self.recommendation.to_dict()
                               if self.recommendation is not None else None),
            "strata": [{"model": s.model, "window": s.window, "title": s.title,
                        "variants": s.variants, "n_common": s.n_common,
                        "warnings": list(s.warnings),
                        "recommendation": (s.recommendation.to_dict()
                                           if s.recommendation is not None else None),
                        "metrics": [m.to_dict() for m in s.metrics]}
                       for s in self.strata],
            "errors": [{**e.__dict__, "label": e.label, "text": e.to_text()}
                       for e in self.errors],
        }

    def __str__(self) -> str:
        return self.to_text()


def _plain(value: Any) -> Any:
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(value) else float(value)
    if isinstance(value, np.integer):
        return int(value)
    return value


def _variant_means(df: pd.DataFrame, on: str, metric: str) -> dict[str, float]:
    if metric == "failed":
        rows = df[df["outcome_kind"] != ERROR]
    else:
        rows = df[df["_common"]]
    values = pd.to_numeric(rows[metric], errors="coerce") if metric in rows else None
    if values is None:
        return {}
    means = values.groupby(rows[on].astype(str)).mean().dropna()
    return {str(k): float(v) for k, v in means.items()}


def _decide(df: pd.DataFrame, on: str, metric: str, seed: int, n_boot: int,
            same: dict[str, dict[str, bool]], basis: str) -> tuple[MetricVerdict, PairedValues]:
    means = _variant_means(df, on, metric)
    rows = df[df["outcome_kind"] != ERROR] if metric == "failed" else df[df["_common"]]
    values = PairedValues(rows, on, metric)
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


def _summary_texts(df: pd.DataFrame, run_dir: Path | None) -> pd.Series | None:
    if run_dir is None or "summary_path" not in df:
        return None
    texts = []
    for rel in df["summary_path"]:
        path = run_dir / rel if isinstance(rel, str) and rel else None
        try:
            texts.append(path.read_text(encoding="utf-8") if path is not None else None)
        except OSError:
            return None
    return pd.Series(texts, index=df.index)


def _summary_keys(common: pd.DataFrame, run_dir: Path | None) -> tuple[pd.Series, str]:
    """What two variants' summaries are compared on: the text when the files exist, else sizes
    and recall; and the words for it."""
    texts = _summary_texts(common, run_dir)
    if texts is not None:
        return texts, "summary text"
    cols = [c for c in ("summary_tokens", "retained_tokens", "probe_recall") if c in common]
    return common[cols].map(str).agg("|".join, axis=1), "summary sizes and recall"


def _same_summaries(common: pd.DataFrame, on: str,
                    keys: pd.Series) -> dict[str, dict[str, bool]]:
    """Variant -> variant -> True when the two wrote the same summary on every common unit."""
    if common.empty:
        return {}
    table = pd.DataFrame({"u": common["_pair"], "v": common[on].astype(str), "k": keys})
    wide = table.groupby(["u", "v"], sort=True)["k"].first().unstack("v")
    names = list(wide.columns)
    out: dict[str, dict[str, bool]] = {a: {} for a in names}
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            both = wide[[a, b]]
            same = bool(both.notna().all(axis=1).all() and (both[a] == both[b]).all())
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


def _spec_rule(results: Any) -> tuple[str, float]:
    table = getattr(getattr(results, "spec", None), "verdict", None)
    if table is None:
        return DEFAULT_RULE, DEFAULT_RECALL_TOLERANCE
    return str(table.rule), float(table.recall_tolerance)


def verdict(results: Any, *, on: str = "template", metrics: tuple[str, ...] = HEADLINE_METRICS,
            seed: int | None = None, n_boot: int = 2000, rule: str | None = None,
            recall_tolerance: float | None = None) -> Verdict:
    """The verdict of a run: every variant against the best per model x window, the
    recommendation, warnings and the error summary.

    Args:
        results: A `Results` (summaries are read from its folder to detect identical outputs;
            its spec's ``[verdict]`` table gives the rule) or a cells DataFrame.
        on: The compared column (``template``; ``model`` compares models per window).
        metrics: Headline metrics to decide (the recommendation reads probe recall, retained
            tokens and failures whether or not they are listed).
        seed: Bootstrap seed (default: the run's spec seed, else 0).
        n_boot: Bootstrap resamples.
        rule: Recommendation rule (`RULES`); default: the spec's, else ``min-retained-safe``.
        recall_tolerance: For ``min-retained``: the recall tolerance (a fraction).

    Returns:
        A `Verdict`; ``to_text()`` is what `workbench run`, `report` and `compare` print.

    Raises:
        ConfigError: `rule` is not one of the allowed rules (the message lists them).
    """
    spec_rule, spec_tolerance = _spec_rule(results)
    rule = check_rule(rule if rule is not None else spec_rule)
    tolerance = float(recall_tolerance if recall_tolerance is not None else spec_tolerance)
    run_dir = getattr(results, "run_dir", None)
    cells = results.cells if hasattr(results, "cells") else results
    if seed is None:
        spec = getattr(results, "spec", None)
        seed = int(getattr(spec, "seed", 0) or 0)
    if cells is None or len(cells) == 0:
        return Verdict(on, [], [], 0, rule, tolerance, recommend_run([], rule, tolerance))
    df = prepare_cells(cells)
    strata_cols = [c for c in ("model", "window") if c != on and c in df.columns]
    by = strata_cols + [on]
    df["_common"] = mark_common(df, by, on)
    units = [k for k in CELL_KEYS if k not in by and k in df.columns]
    df["_unit"] = (df[units].astype(object).where(df[units].notna(), NO_WINDOW).map(str)
                   .agg("|".join, axis=1)) if units else ""
    df["_pair"] = df["_unit"]
    key = df[strata_cols].astype(object).where(df[strata_cols].notna(), NO_WINDOW)
    decided = list(metrics) + [m for m in ("probe_recall", "retained_tokens", "failed")
                               if m not in metrics]
    strata: list[StratumVerdict] = []
    evidence: list[tuple[Evidence, Recommendation]] = []
    folder = Path(run_dir) if run_dir is not None else None
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
                                 variants=variants, n_common=n_common)
        part = part.copy()
        part[on] = part[on].astype(str)
        common = part[part["_common"]]
        keys, basis = _summary_keys(common, folder)
        same = _same_summaries(common, on, keys)
        found = {m: _decide(part, on, m, seed, n_boot, same, basis) for m in decided
                 if m in part.columns}
        stratum.metrics = [found[m][0] for m in metrics if m in found]
        stratum.warnings = _warnings(part, on, same, basis)
        ev = Evidence(stratum.title, variants, n_common, bool(part["ok"].any()),
                      means={m: v.means for m, (v, _) in found.items()},
                      best={m: v.best for m, (v, _) in found.items()},
                      comparisons={m: {c.variant: c for c in v.comparisons}
                                   for m, (v, _) in found.items()},
                      paired={m: pv for m, (_, pv) in found.items()})
        stratum.recommendation = recommend_stratum(ev, rule, tolerance, seed=seed, n_boot=n_boot)
        strata.append(stratum)
        evidence.append((ev, stratum.recommendation))
    order = sorted(range(len(strata)), key=lambda i: (
        strata[i].model, strata[i].window if isinstance(strata[i].window, int) else 1 << 62))
    strata = [strata[i] for i in order]
    evidence = [evidence[i] for i in order]
    return Verdict(on, strata, _error_counts(df), len(df), rule, tolerance,
                   recommend_run(evidence, rule, tolerance))


def run_verdict(results: Any) -> Verdict:
    """The default verdict of `results`, computed once when it is a `Results` (which caches it)."""
    cached = getattr(results, "verdict", None)
    return cached() if callable(cached) else verdict(results)
