"""Objectives: how a tune (or an export from a run) picks its winner among template variants.

A rule is text, the same in a spec's ``[tune] objective`` and ``workbench export --rule``:

- ``max-recall`` maximise the recall metric; ties: fewer retained tokens, then the label;
- ``max-qa`` the same on ``qa_accuracy`` (the functional probes' exact questions answered
  right, from an experiment's ``[qa]`` table), whatever the recall metric is;
- ``min-retained`` minimise retained tokens; ties: higher recall, then the label;
- ``pareto`` the Pareto front of retained tokens (lower), recall and parse success (higher);
  the winner is the front point with the largest ``recall - retained`` after scaling both to
  0..1 over the front (the knee); ties: the label.

Each may carry constraints after a colon, comma-separated: ``retained<=2000``, ``recall>=0.6``,
``parse>=90`` (parse success in percent). Only variants meeting every constraint can win.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from workbench.errors import ConfigError

KINDS = ("max-recall", "max-qa", "min-retained", "pareto")
QA_METRIC = "qa_accuracy"
"""The metric ``max-qa`` maximises."""
SCORE_COLUMNS = {"retained": "retained_tokens", "recall": "recall", "parse": "parse_success_pct"}
_CONSTRAINT = re.compile(r"^\s*(retained|recall|parse)\s*(<=|>=)\s*([0-9]+(?:\.[0-9]+)?)\s*$")


@dataclass(frozen=True)
class Constraint:
    """One bound on a score column: ``retained <= 2000``."""

    what: str
    op: str
    bound: float

    def holds(self, row: Any) -> bool:
        """True when the row's value meets the bound (a missing value never does)."""
        value = row[SCORE_COLUMNS[self.what]]
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return False
        return value <= self.bound if self.op == "<=" else value >= self.bound

    def text(self, metric: str = "recall") -> str:
        """The bound in words, naming the recall column `metric`."""
        column = metric if self.what == "recall" else SCORE_COLUMNS[self.what]
        return f"{column} {self.op} {self.bound:g}"

    def __str__(self) -> str:
        return self.text()


@dataclass(frozen=True)
class Objective:
    """A parsed rule (see the module docstring).

    Attributes:
        kind: ``max-recall``, ``max-qa``, ``min-retained`` or ``pareto``.
        metric: The recall column (``probe_recall`` by default; ``qa_accuracy`` for ``max-qa``).
        constraints: Bounds a winner must meet.
    """

    kind: str
    metric: str = "probe_recall"
    constraints: tuple[Constraint, ...] = field(default_factory=tuple)

    @classmethod
    def parse(cls, text: str, metric: str = "probe_recall") -> Objective:
        """Read a rule such as ``"max-recall:retained<=2000,parse>=90"``.

        Raises:
            ConfigError: an unknown kind or a constraint that does not read; the message
                shows the accepted forms.
        """
        kind, _, rest = text.strip().partition(":")
        kind = kind.strip()
        if kind not in KINDS:
            raise ConfigError(f"objective {text!r}: unknown rule {kind!r}; use one of "
                              f"{', '.join(KINDS)}, optionally with constraints such as "
                              "max-recall:retained<=2000,parse>=90")
        constraints = []
        for part in (p for p in rest.split(",") if p.strip()):
            match = _CONSTRAINT.match(part)
            if match is None:
                raise ConfigError(f"objective {text!r}: cannot read constraint {part.strip()!r}; "
                                  "write retained<=N, recall>=X or parse>=P")
            constraints.append(Constraint(match[1], match[2], float(match[3])))
        if kind == "max-qa":
            metric = QA_METRIC
        return cls(kind, metric, tuple(constraints))

    def describe(self) -> str:
        """The rule in words, as reports and READMEs state it."""
        if self.kind in ("max-recall", "max-qa"):
            text = (f"maximise {self.metric}; ties: fewer retained tokens, then the label")
        elif self.kind == "min-retained":
            text = (f"minimise retained_tokens; ties: higher {self.metric}, then the label")
        else:
            text = (f"Pareto front of retained_tokens (lower), {self.metric} and parse success "
                    "(higher); winner: the front point with the largest scaled "
                    f"{self.metric} minus scaled retained_tokens")
        if self.constraints:
            text += "; subject to " + " and ".join(c.text(self.metric) for c in self.constraints)
        return text

    def feasible(self, scores: pd.DataFrame) -> pd.Series:
        """Which rows of `scores` meet every constraint."""
        ok = pd.Series(True, index=scores.index)
        for c in self.constraints:
            ok &= scores.apply(c.holds, axis=1).astype(bool)
        return ok

    def rank(self, scores: pd.DataFrame) -> pd.DataFrame:
        """Feasible rows of `scores`, best first (the winner is the first row)."""
        rows = scores[self.feasible(scores)].copy()
        if rows.empty:
            return rows
        if self.kind == "pareto":
            front = rows[pareto_mask(rows)].copy()
            front["_knee"] = _scaled(front["recall"]) - _scaled(front["retained_tokens"])
            rest = rows.drop(front.index).copy()
            rest["_knee"] = -math.inf
            rows = pd.concat([front, rest])
            rows = rows.sort_values(["_knee", "template"], ascending=[False, True],
                                    kind="mergesort")
            return rows.drop(columns="_knee")
        recall = rows["recall"].fillna(-math.inf)
        retained = rows["retained_tokens"].fillna(math.inf)
        rows = rows.assign(_recall=recall, _retained=retained)
        if self.kind in ("max-recall", "max-qa"):
            order, asc = ["_recall", "_retained", "template"], [False, True, True]
        else:
            order, asc = ["_retained", "_recall", "template"], [True, False, True]
        return rows.sort_values(order, ascending=asc, kind="mergesort").drop(
            columns=["_recall", "_retained"])

    def winner(self, scores: pd.DataFrame) -> str:
        """The winning label.

        Raises:
            ConfigError: no row meets the constraints (the message names them).
        """
        ranked = self.rank(scores)
        if ranked.empty:
            raise ConfigError(f"no variant satisfies the objective ({self.describe()}); relax "
                              "a constraint or widen the search")
        return str(ranked["template"].iloc[0])


def _scaled(values: pd.Series) -> pd.Series:
    lo, hi = values.min(), values.max()
    if not hi > lo:
        return pd.Series(0.0, index=values.index)
    return (values - lo) / (hi - lo)


def variant_scores(cells: pd.DataFrame, metric: str = "probe_recall",
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
    rows = []
    for template, g in df.groupby("template", sort=True):
        ok = g["status"].eq("ok")
        values = pd.to_numeric(g[metric], errors="coerce") if metric in g else \
            pd.Series(float("nan"), index=g.index)
        rows.append({
            "template": template,
            "cells": len(g),
            "retained_tokens": pd.to_numeric(g["retained_tokens"], errors="coerce")[ok].mean(),
            "recall": values[ok].mean(),
            "parse_success_pct": 100.0 * g["parse_outcome"].eq("structured").sum() / len(g),
            "calls_made": int(pd.to_numeric(g.get("calls_made"), errors="coerce").fillna(0).sum())
            if "calls_made" in g else 0,
            "calls_shared": int(pd.to_numeric(g.get("calls_shared"),
                                              errors="coerce").fillna(0).sum())
            if "calls_shared" in g else 0,
        })
    return pd.DataFrame(rows, columns=["template", "cells", "retained_tokens", "recall",
                                       "parse_success_pct", "calls_made", "calls_shared"])


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
