"""The verdict: per model x window, which variant wins each headline metric, and what went wrong.

For every stratum (model x window) with at least two variants (templates by default), each
headline metric names the best variant by its mean over the sessions every variant completed
(the failure rate over every cell with an outcome), then compares it with the runner-up by a
paired cluster bootstrap over sessions (`paired_comparison`). The best variant is the winner
only when that interval excludes zero and at least `MIN_SESSIONS` sessions back it; otherwise the stratum reads "no significant difference
(n sessions)". Models and windows are never pooled.

Warnings say when the run cannot tell variants apart: every variant wrote the same summaries,
or every parsed reply merely copies the template's schema example. The error summary counts
cells by error class, compaction failures (outcomes) apart from infrastructure errors, each
with a plain-language cause. `verdict` is public: the CLI, the report and the notebook call it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from workbench.harness.experiment._windows import format_window
from workbench.harness.results._outcomes import ERROR, FAILED, error_cause, error_details
from workbench.harness.results._paired import LOWER_IS_BETTER, paired_comparison
from workbench.harness.results._table import (
    ECHO_THRESHOLD,
    NO_WINDOW,
    mark_common,
    prepare_cells,
    window_label,
)

HEADLINE_METRICS = ("probe_recall", "useful_structured", "retained_tokens", "failed",
                    "qa_accuracy", "next_action_match")
"""Metrics the verdict decides, in display order."""

METRIC_LABELS = {
    "probe_recall": "probe recall",
    "useful_structured": "useful structured summaries",
    "retained_tokens": "retained tokens",
    "failed": "compaction failures",
    "qa_accuracy": "questions answered (exact)",
    "next_action_match": "next action agreement",
}
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
MIN_SESSIONS = 5
"""Fewest sessions for a winner: a bootstrap over fewer clusters has too few distinct
resamples for its percentiles to mean anything (two sessions that agree always "win")."""
_PERCENT = frozenset({"probe_recall", "useful_structured", "failed", "qa_accuracy",
                      "next_action_match"})
_NO_DIFF = "no significant difference"


@dataclass
class MetricVerdict:
    """One headline metric in one stratum.

    Attributes:
        metric: The metric (a cell column).
        best: The variant with the best mean, or None without data.
        runner_up: The second best variant (the comparison's baseline).
        winner: `best` when the interval of ``best - runner_up`` excludes zero, else None.
        mean_diff: Mean paired difference ``best - runner_up``.
        ci_low: Lower end of its 95 % cluster-bootstrap interval.
        ci_high: Upper end.
        n_sessions: Sessions (clusters) in the comparison.
        means: Mean per variant (over the common sessions; failure rate for ``failed``).
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

    def to_text(self) -> str:
        """One line: the winner with its interval, or "no significant difference (n sessions)"."""
        label = METRIC_LABELS.get(self.metric, self.metric)
        if self.best is None:
            return f"{label}: no data"
        if self.winner is None:
            few = (f"; at least {MIN_SESSIONS} needed for a verdict"
                   if self.n_sessions < MIN_SESSIONS else "")
            return f"{label}: {_NO_DIFF} ({self.n_sessions} sessions{few})"
        fmt = _fmt_pct if self.metric in _PERCENT else _fmt_num
        return (f"{label}: {self.winner} ({fmt(self.means.get(self.winner))}) beats "
                f"{self.runner_up} ({fmt(self.means.get(self.runner_up or ''))}), difference "
                f"{_signed(self.mean_diff, self.metric)} [95% CI {_signed(self.ci_low, self.metric)}, "
                f"{_signed(self.ci_high, self.metric)}] over {self.n_sessions} sessions")


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
    """

    model: str
    window: Any
    variants: list[str]
    n_common: int
    metrics: list[MetricVerdict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

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
    """What `verdict` returns: per-stratum verdicts, warnings and the error summary.

    Attributes:
        on: The compared column (``template``).
        strata: One `StratumVerdict` per model x window with at least two variants.
        errors: Cells without a summary, by error class (most frequent first).
        cells: Cells considered.
    """

    on: str
    strata: list[StratumVerdict]
    errors: list[ErrorCount]
    cells: int

    @property
    def infrastructure_errors(self) -> int:
        """Cells that hit an infrastructure error (the run's exit code is non-zero then)."""
        return sum(e.count for e in self.errors if e.kind == ERROR)

    @property
    def warnings(self) -> list[str]:
        """Every stratum's warnings, prefixed by the stratum."""
        return [f"{s.title}: {w}" for s in self.strata for w in s.warnings]

    def to_text(self) -> str:
        """The verdict block and the error summary, as printed at the end of a run."""
        out = [f"Verdict: which {self.on} wins, per model x window (paired cluster bootstrap "
               "over sessions, 95 % intervals; means over the sessions every variant completed)"]
        if not self.strata:
            out.append(f"  nothing to compare: no model x window has two {self.on}s with cells")
        for s in self.strata:
            out.append(f"  {s.title} ({len(s.variants)} {self.on}s, {s.n_common} sessions "
                       "completed by all):")
            out += [f"    {m.to_text()}" for m in s.metrics]
            out += [f"    warning: {w}" for w in s.warnings]
        out.append("Errors and failures:")
        if not self.errors:
            out.append("  none: every cell produced a summary")
        out += [f"  {e.to_text()}" for e in self.errors]
        if self.infrastructure_errors:
            out.append(f"  {self.infrastructure_errors} cell(s) hit infrastructure errors: "
                       "their results are missing, not measured")
        return "\n".join(out)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for HTML and JSON: strata (with metrics and warnings) and errors."""
        return {
            "on": self.on,
            "cells": self.cells,
            "infrastructure_errors": self.infrastructure_errors,
            "strata": [{"model": s.model, "window": s.window, "title": s.title,
                        "variants": s.variants, "n_common": s.n_common,
                        "warnings": list(s.warnings),
                        "metrics": [{**m.__dict__, "text": m.to_text()} for m in s.metrics]}
                       for s in self.strata],
            "errors": [{**e.__dict__, "label": e.label, "text": e.to_text()}
                       for e in self.errors],
        }

    def __str__(self) -> str:
        return self.to_text()


def _fmt_pct(value: Any) -> str:
    return "—" if value is None or np.isnan(value) else f"{100 * value:.1f}%"


def _fmt_num(value: Any) -> str:
    return "—" if value is None or np.isnan(value) else f"{value:,.0f}"


def _signed(value: float, metric: str) -> str:
    if metric in _PERCENT:
        return f"{100 * value:+.1f} pts"
    return f"{value:+,.0f}"


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


def _decide(df: pd.DataFrame, on: str, metric: str, seed: int, n_boot: int) -> MetricVerdict:
    means = _variant_means(df, on, metric)
    if len(means) < 2:
        return MetricVerdict(metric, None, None, None, np.nan, np.nan, np.nan, 0, means)
    lower = metric in LOWER_IS_BETTER
    ranked = sorted(means, key=lambda v: (means[v] if lower else -means[v], v))
    best, runner_up = ranked[0], ranked[1]
    rows = df if metric == "failed" else df[df["_common"]]
    result = paired_comparison(rows, runner_up, best, on=on, metric=metric, seed=seed,
                               n_boot=n_boot, stratify=())
    winner = result.winner if result.winner == best else None
    if result.n_clusters < MIN_SESSIONS:
        winner = None
    return MetricVerdict(metric, best, runner_up, winner, result.mean_diff, result.ci_low,
                         result.ci_high, result.n_clusters, means)


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


def _warnings(df: pd.DataFrame, on: str, run_dir: Path | None) -> list[str]:
    out: list[str] = []
    ok = df[df["ok"]]
    if ok.empty:
        return [f"no {on} produced a summary here: nothing to compare"]
    common = df[df["_common"]]
    if not common.empty and common[on].nunique() > 1:
        texts = _summary_texts(common, run_dir)
        if texts is not None:
            same = (texts.groupby(common["_unit"]).nunique(dropna=False) == 1).all()
            what = "the same summary text"
        else:
            cols = [c for c in ("summary_tokens", "retained_tokens", "probe_recall")
                    if c in common]
            keyed = common[cols].map(str).agg("|".join, axis=1)
            same = (keyed.groupby(common["_unit"]).nunique() == 1).all()
            what = "the same summary sizes and recall"
        if same:
            out.append(f"every {on} gave {what} on every common session: the variants "
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
                           "message": messages})
    grouped = counts.groupby(["cls", "kind"]).agg(n=("message", "size"),
                                                  messages=("message", list)).reset_index()
    grouped = grouped.sort_values(["n", "cls"], ascending=[False, True])
    return [ErrorCount(str(r.cls), str(r.kind), int(r.n), error_cause(str(r.cls), r.messages),
                       error_details(str(r.cls), r.messages))
            for r in grouped.itertuples()]


def verdict(results: Any, *, on: str = "template", metrics: tuple[str, ...] = HEADLINE_METRICS,
            seed: int | None = None, n_boot: int = 2000) -> Verdict:
    """The verdict of a run: winners per model x window, warnings and the error summary.

    Args:
        results: A `Results` (summaries are read from its folder to detect identical outputs)
            or a cells DataFrame.
        on: The compared column (``template``; ``model`` compares models per window).
        metrics: Headline metrics to decide.
        seed: Bootstrap seed (default: the run's spec seed, else 0).
        n_boot: Bootstrap resamples.

    Returns:
        A `Verdict`; ``to_text()`` is what `workbench run`, `report` and `compare` print.
    """
    run_dir = getattr(results, "run_dir", None)
    cells = results.cells if hasattr(results, "cells") else results
    if seed is None:
        spec = getattr(results, "spec", None)
        seed = int(getattr(spec, "seed", 0) or 0)
    if cells is None or len(cells) == 0:
        return Verdict(on, [], [], 0)
    df = prepare_cells(cells)
    strata_cols = [c for c in ("model", "window") if c != on and c in df.columns]
    by = strata_cols + [on]
    df["_common"] = mark_common(df, by, on)
    units = [k for k in ("session_id", "strategy", "repeat") if k in df.columns]
    df["_unit"] = df[units].map(str).agg("|".join, axis=1) if units else ""
    key = df[strata_cols].astype(object).where(df[strata_cols].notna(), NO_WINDOW)
    strata: list[StratumVerdict] = []
    for values, part in df.groupby([key[c] for c in strata_cols], sort=True):
        values = values if isinstance(values, tuple) else (values,)
        variants = sorted(part[on].dropna().astype(str).unique())
        if len(variants) < 2:
            continue
        labels = dict(zip(strata_cols, values, strict=True))
        n_common = int(part.loc[part["_common"], "_unit"].nunique())
        stratum = StratumVerdict(model=str(labels.get("model", "all")),
                                 window=window_label(labels.get("window", NO_WINDOW)),
                                 variants=variants, n_common=n_common)
        part = part.copy()
        part[on] = part[on].astype(str)
        stratum.metrics = [_decide(part, on, m, seed, n_boot) for m in metrics
                           if m in part.columns]
        stratum.warnings = _warnings(part, on, Path(run_dir) if run_dir is not None else None)
        strata.append(stratum)
    strata.sort(key=lambda s: (s.model, s.window if isinstance(s.window, int) else 1 << 62))
    return Verdict(on, strata, _error_counts(df), len(df))


def run_verdict(results: Any) -> Verdict:
    """The default verdict of `results`, computed once when it is a `Results` (which caches it)."""
    cached = getattr(results, "verdict", None)
    return cached() if callable(cached) else verdict(results)
