"""The verdict as data: `Verdict` and its parts, their plain-data form and their terminal text.

`workbench.harness.results.verdict` computes a `Verdict` from cell rows; this module holds what
it returns. The terminal text (`Verdict.to_text`, what `workbench run`, ``report`` and
``compare`` print), the JSON (`Verdict.to_json`: `Verdict.to_dict` serialised) and the report's
Markdown and HTML sections (`workbench.harness.report`) are all renderings of one object, so
they cannot disagree.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import numpy as np

from workbench.harness.experiment._verdict_table import DEFAULT_RECALL_TOLERANCE, DEFAULT_RULE
from workbench.harness.results._judge_gate import JudgeTrust
from workbench.harness.results._outcomes import ERROR
from workbench.harness.results._policy_verdict_model import PolicyVerdict
from workbench.harness.results._power import POWER
from workbench.harness.results._recommend import Recommendation
from workbench.harness.results._run_caveats import fmt_window
from workbench.harness.results._verdict_text import (
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
)
from workbench.probes import GRADING_AUDIT

__all__ = ["ERROR_LABELS", "ErrorCount", "MetricVerdict", "StratumVerdict", "Verdict"]

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
        no_evidence: Why the metric cannot rank the variants here ("" when it can): every
            variant at 0, or one session (`no_evidence`).
        not_ranked: Why the verdict leaves the metric out here ("" when it does not): the
            judge's figures where its agreement with the exact grader is too low.
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
    no_evidence: str = ""
    not_ranked: str = ""

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
        if self.not_ranked:
            return [f"{name}: not ranked: {self.not_ranked}"]
        if self.best is None:
            return [f"{name}: no data"]
        if self.no_evidence:
            return [f"{name} ({self.n_sessions} sessions): no evidence: {self.no_evidence}"]
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

    def to_dict(self) -> dict[str, object]:
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
        real_window: The window the cells ran at (`real_window`): below `window` when the
            model's own context is smaller than the cap.
        counted_with: The title of the stratum of the same model and real window that the
            run counts instead of this one (None: this one is counted).
        judge: The judge's agreement with the exact grader here (`JudgeTrust`; None without
            a judge).
        qa_reference: Per `QA_REFERENCE` metric the cells have, its mean per variant over the
            common sessions that fit the window (the split losses and the gain).
    """

    model: str
    window: int | str
    variants: list[str]
    n_common: int
    metrics: list[MetricVerdict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    recommendation: Recommendation | None = None
    real_window: int | str | None = None
    counted_with: str | None = None
    judge: JudgeTrust | None = None
    qa_reference: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def title(self) -> str:
        """``model @ window``, with ``(ran at <real window>)`` when the cells ran below it."""
        title = f"{self.model} @ {fmt_window(self.window)}"
        if self.real_window is not None and self.real_window != self.window:
            title += f" (ran at {fmt_window(self.real_window)})"
        return title


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
        policies: The policy verdict of the run's replays (`PolicyVerdict`), when the run
            reports one (its ``[replay]`` asks for ``detectors``); None otherwise.
    """

    on: str
    strata: list[StratumVerdict]
    errors: list[ErrorCount]
    cells: int
    rule: str = DEFAULT_RULE
    recall_tolerance: float = DEFAULT_RECALL_TOLERANCE
    recommendation: Recommendation | None = None
    policies: PolicyVerdict | None = None

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
            counted = sum(s.counted_with is None for s in self.strata)
            real = (f", {counted} by the window each ran at" if counted < len(self.strata)
                    else "")
            out.append(f"Run as a whole ({len(self.strata)} model x window{real}, rule "
                       f"{self.rule}):")
            out += [f"  {line}" for line in self.recommendation.to_text().splitlines()]
        out.append("Errors and failures:")
        if not self.errors:
            out.append("  none: every cell produced a summary")
        out += [f"  {e.to_text()}" for e in self.errors]
        if self.infrastructure_errors:
            out.append(f"  {self.infrastructure_errors} cell(s) hit infrastructure errors: "
                       "their results are missing, not measured")
        if self.policies is not None:
            out += ["", self.policies.to_text()]
        return "\n".join(out)

    def to_json(self) -> str:
        """`to_dict` as JSON (the verdict a program reads)."""
        return json.dumps(self.to_dict(), ensure_ascii=False, sort_keys=True, default=str)

    def to_dict(self) -> dict[str, object]:
        """Plain data for HTML and JSON (NaN as None): the rule, the recommendation, strata
        (with metrics, comparisons, warnings, their recommendation, real window, the judge's
        agreement and the QA figures against the full history), errors, the graders' audit
        (`GRADING_AUDIT`) and the policy verdict (``policies``: `PolicyVerdict.to_dict`, or
        None)."""
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
                        "metrics": [m.to_dict() for m in s.metrics],
                        "real_window": s.real_window, "counted_with": s.counted_with,
                        "judge": s.judge.to_dict() if s.judge is not None else None,
                        "qa_reference": {m: {v: _plain(x) for v, x in by.items()}
                                         for m, by in s.qa_reference.items()}}
                       for s in self.strata],
            "grading": dict(GRADING_AUDIT),
            "errors": [{**e.__dict__, "label": e.label, "text": e.to_text()}
                       for e in self.errors],
            "policies": self.policies.to_dict() if self.policies is not None else None,
        }

    def __str__(self) -> str:
        return self.to_text()


def _plain(value: object) -> object:
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(value) else float(value)
    if isinstance(value, np.integer):
        return int(value)
    return value
