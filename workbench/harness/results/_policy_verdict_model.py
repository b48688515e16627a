"""The policy verdict as data: `PolicyVerdict`, its strata and rows, their text and plain data.

`workbench.harness.results._policy_verdict.policy_verdict` computes a `PolicyVerdict` from
replay rows; this module holds what it returns. The terminal text (`PolicyVerdict.to_text`,
what ``workbench run`` prints after a replay), the plain data (`PolicyVerdict.to_dict`, for
JSON) and the report's Markdown and HTML sections are renderings of this one object.
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass, field

import pandas as pd

from workbench.harness.experiment._windows import format_window
from workbench.harness.results._verdict_text import fmt_diff, fmt_interval, fmt_mean, fmt_p
from workbench.harness.results._versus_best import MIN_SESSIONS, Comparison

__all__ = ["BILLED", "POLICY_METRICS", "POLICY_RULE", "RECALL", "RETRIGGER", "PolicyRow",
           "PolicyStratum", "PolicyVerdict"]

RECALL = "facts_recall_last"
"""Recall after the last compaction: the planted facts the context holds after a session's last
compaction (`ReplayResult.summary`; 1.0 for a session the policy never compacted)."""
BILLED = "billed_tokens"
"""Lifetime billed tokens of the replayed session: every prompt, reply and compaction call."""
RETRIGGER = "retrigger_rate"
"""The share of rounds followed by another within 3 turns (`workbench.strategies._detectors`)."""
POLICY_METRICS = (RECALL, BILLED, RETRIGGER)
"""The metrics every feasible policy is compared on with the best, in display order."""
POLICY_RULE = ("the fewest billed tokens among the feasible policies not significantly worse "
               "than the best on recall after the last compaction")
"""The rule the pick follows (the template verdict's ``min-retained-safe``, on replays)."""

LABELS = {RECALL: "recall after the last compaction", BILLED: "billed tokens",
          RETRIGGER: "re-trigger rate"}
"""The verdict's name for each metric."""
_WRITTEN_AS = {RECALL: "probe_recall", BILLED: "retained_tokens", RETRIGGER: "failed"}
# Each metric is written the way the template verdict writes a metric of its kind: rates in
# percent with differences in points, token counts as whole numbers.
WIDTH = 120


def _plain(value: object) -> object:
    """NaN as None, numpy scalars as Python numbers (plain data for JSON)."""
    item = getattr(value, "item", None)
    if callable(item) and not isinstance(value, (str, bytes)):
        value = item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _mean(value: float | None, metric: str) -> str:
    return fmt_mean(value, _WRITTEN_AS[metric])


def _versus(c: Comparison | None, metric: str, best: str | None, name: str, *,
            ci: bool) -> str:
    """The ``vs best`` cell: ``best``, or the difference (with its interval when `ci`) and its
    status."""
    if name == best:
        return "best"
    if c is None or c.n_sessions == 0:
        return "—"
    kind = _WRITTEN_AS[metric]
    shown = fmt_interval(c.mean_diff, c.ci_low, c.ci_high, kind) if ci \
        else fmt_diff(c.mean_diff, kind)
    return f"{shown} {c.status}"


@dataclass
class PolicyRow:
    """One policy in one window x threshold.

    Attributes:
        strategy: The policy's label.
        replays: Its replays in this window x threshold (one per session).
        feasible: Every replay ran and kept every prompt within the window.
        reason: Why the row is unranked (None when feasible): the ``n/a`` reason, the error,
            or the prompts over the window.
        means: Metric -> mean over the sessions every feasible policy replayed (feasible rows).
        comparisons: Metric -> its comparison with that metric's best (absent for the best).
        eligible: Not significantly worse than the best on recall (feasible rows only).
        rank: 1-based place among the eligible by billed tokens (1 is the pick); None otherwise.
    """

    strategy: str
    replays: int
    feasible: bool
    reason: str | None = None
    means: dict[str, float] = field(default_factory=dict)
    comparisons: dict[str, Comparison] = field(default_factory=dict)
    eligible: bool = False
    rank: int | None = None

    @property
    def verdict(self) -> str:
        """``pick``, ``eligible``, ``worse on recall``, ``no recall`` (feasible, but no session
        of it measured recall where others did) or ``unranked``."""
        if not self.feasible:
            return "unranked"
        if self.rank == 1:
            return "pick"
        if self.eligible:
            return "eligible"
        return "worse on recall" if RECALL in self.comparisons else "no recall"

    def to_dict(self) -> dict[str, object]:
        """Plain data (NaN as None), with each comparison's fields."""
        return {"strategy": self.strategy, "replays": self.replays, "feasible": self.feasible,
                "reason": self.reason, "eligible": self.eligible, "rank": self.rank,
                "verdict": self.verdict,
                "means": {k: _plain(v) for k, v in self.means.items()},
                "comparisons": {m: {k: _plain(v) for k, v in c.__dict__.items()}
                                for m, c in self.comparisons.items()}}


@dataclass
class PolicyStratum:
    """The policy verdict for one window x threshold.

    Attributes:
        window: The window in tokens.
        threshold: The trigger as a share of the window; None runs each policy at its own.
        n_sessions: Sessions every feasible policy replayed (the means and pairs are over them).
        best: Metric -> the feasible policy with the best mean (None without data).
        rows: The eligible policies by billed tokens, then those worse on recall by billed
            tokens, then the unranked ones in replay order.
        pick: The policy the rule picks, or None.
        tied: Other eligible policies with exactly the pick's billed tokens.
        reasons: Why the pick, as short clauses (or why there is none).
    """

    window: int
    threshold: float | None
    n_sessions: int
    best: dict[str, str | None] = field(default_factory=dict)
    rows: list[PolicyRow] = field(default_factory=list)
    pick: str | None = None
    tied: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)

    @property
    def title(self) -> str:
        """``8k, each policy at its own trigger`` or ``8k, at 0.8 of the window``."""
        at = ("each policy at its own trigger" if self.threshold is None
              else f"at {self.threshold:g} of the window")
        return f"{format_window(int(self.window))}, {at}"

    @property
    def ranked(self) -> list[PolicyRow]:
        """The feasible rows."""
        return [r for r in self.rows if r.feasible]

    @property
    def unranked(self) -> list[PolicyRow]:
        """The infeasible rows, each with its reason."""
        return [r for r in self.rows if not r.feasible]

    def recommendation(self) -> str:
        """``Recommendation: <policy> — <reasons>`` (``none — <why>`` without a pick)."""
        name = self.pick if self.pick is not None else "none"
        if self.tied:
            name += f" (tie with {', '.join(self.tied)}: either can run)"
        return f"Recommendation: {name} — " + "; ".join(self.reasons)

    def table_rows(self) -> list[dict[str, str]]:
        """The feasible rows as the text table shows them (column header -> cell)."""
        out = []
        for r in self.ranked:
            row = {"policy": r.strategy}
            for metric, head in ((RECALL, "recall"), (BILLED, "billed tok"),
                                 (RETRIGGER, "retrig")):
                row[head] = _mean(r.means.get(metric), metric)
                # The rule's criterion gets its interval and Holm p; the rest their status.
                row[f"{head} vs best"] = _versus(r.comparisons.get(metric), metric,
                                                 self.best.get(metric), r.strategy,
                                                 ci=metric == RECALL)
                if metric == RECALL:
                    c = r.comparisons.get(RECALL)
                    row["Holm p"] = fmt_p(c.p_adjusted) if c is not None else "—"
            row["verdict"] = r.verdict if r.rank is None else f"{r.rank}. {r.verdict}"
            out.append(row)
        return out

    def to_lines(self) -> list[str]:
        """The stratum's block: title, the table, the unranked rows, the recommendation."""
        feasible = len(self.ranked)
        lines = [f"{self.title} ({self.n_sessions} sessions replayed by every feasible policy, "
                 f"{feasible} of {len(self.rows)} policies feasible):"]
        if feasible:
            table = pd.DataFrame(self.table_rows())
            lines += ["  " + line for line in table.to_string(index=False).splitlines()]
        for r in self.unranked:
            lines += textwrap.wrap(f"{r.strategy}: unranked, {r.reason}", width=WIDTH,
                                   initial_indent="  ", subsequent_indent="      ")
        lines += textwrap.wrap(self.recommendation(), width=WIDTH, initial_indent="  ",
                               subsequent_indent="    ", break_on_hyphens=False)
        return lines

    def to_dict(self) -> dict[str, object]:
        """Plain data: the stratum's key, best per metric, rows, pick and reasons."""
        return {"window": self.window, "threshold": _plain(self.threshold), "title": self.title,
                "n_sessions": self.n_sessions, "best": dict(self.best),
                "rows": [r.to_dict() for r in self.rows], "pick": self.pick,
                "tied": list(self.tied), "reasons": list(self.reasons),
                "recommendation": self.recommendation()}


@dataclass
class PolicyVerdict:
    """Which compaction policy to run, per window x threshold of a run's replays.

    Attributes:
        strata: One `PolicyStratum` per window x threshold with at least one policy.
        rule: The rule the picks follow (`POLICY_RULE`).
        metrics: The compared metrics (`POLICY_METRICS`).
    """

    strata: list[PolicyStratum]
    rule: str = POLICY_RULE
    metrics: tuple[str, ...] = POLICY_METRICS

    HEADER = ("Policy verdict: which compaction policy to run, per window x threshold of the "
              "replays (every feasible policy against the best, paired by session, a cluster "
              "bootstrap over sessions, Holm-adjusted p-values, 95 % intervals unadjusted; "
              "means over the sessions every feasible policy replayed; recall = planted facts "
              "kept after the last compaction, retrig = rounds followed by another within 3 "
              "turns; an infeasible policy is unranked, with its reason)")

    def recommendation_lines(self) -> list[str]:
        """Each stratum's ``Recommendation:`` line, prefixed by its title."""
        return [f"{s.title}: {s.recommendation()}" for s in self.strata]

    def to_text(self) -> str:
        """The verdict as ``workbench run`` prints it."""
        lines = textwrap.wrap(self.HEADER, width=WIDTH, break_on_hyphens=False)
        lines += textwrap.wrap(f"Rule: {self.rule}.", width=WIDTH)
        if not self.strata:
            lines.append("  nothing to compare: no replay ran")
        for s in self.strata:
            lines += ["  " + line for line in s.to_lines()]
        few = [s.title for s in self.strata if 0 < s.n_sessions < MIN_SESSIONS]
        if few:
            lines += textwrap.wrap(
                f"({'; '.join(few)}: fewer than {MIN_SESSIONS} sessions, too few for a "
                "significance test: only a gap that is the same in every session is called "
                "worse)", width=WIDTH, initial_indent="  ", subsequent_indent="   ")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, object]:
        """Plain data for JSON and HTML (NaN as None)."""
        return {"rule": self.rule, "metrics": list(self.metrics),
                "labels": {m: LABELS[m] for m in self.metrics},
                "strata": [s.to_dict() for s in self.strata], "text": self.to_text()}

    def __str__(self) -> str:
        return self.to_text()


def diff_words(c: Comparison, metric: str) -> str:
    """``-22.6 pts [-40.1, +5.0], Holm p 0.062``: a comparison as the reasons quote it."""
    return (f"{fmt_interval(c.mean_diff, c.ci_low, c.ci_high, _WRITTEN_AS[metric])}, Holm p "
            f"{fmt_p(c.p_adjusted)}")


def amount(value: float, metric: str) -> str:
    """A mean as the verdict writes it (``72.6%``, ``314,611``)."""
    return _mean(value, metric)


def interval(mean: float, low: float, high: float, metric: str) -> str:
    """``-126,867 [-200,000, -50,000]``: a difference and its 95 % interval."""
    return fmt_interval(mean, low, high, _WRITTEN_AS[metric])
