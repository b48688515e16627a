"""The verdict's comparison rule: every variant against the best, paired, with Holm's adjustment.

In one stratum (model x window) and for one metric, the best variant is the one with the best
mean. Every other variant is compared with it by a paired cluster bootstrap over sessions
(`cluster_bootstrap_means`, the same resampling as `paired_comparison` with the stratum fixed):
the difference is ``variant - best`` over the cells the two share, its 95 % percentile interval
is reported unadjusted, and a two-sided bootstrap p-value (`bootstrap_p_value`) enters Holm's
step-down adjustment (`holm_adjust`). The family is the m = k - 1 comparisons with the best of
that stratum and metric; decisions read the adjusted p-values.

Each comparison gets a status:

- ``identical``: the variant wrote the same summary text as the best on every common session
  (checked from the run folder's summary files, else from summary sizes and recall) and every
  paired difference is zero;
- ``worse`` (or, rarely, ``better``): the Holm-adjusted p-value is below `ALPHA` and at least
  `MIN_SESSIONS` sessions back it; or every paired difference is the same non-zero number
  (``consistent``), which is a fact about these sessions however few they are (a bootstrap over
  fewer than five sessions cannot give a meaningful p-value, but an identical gap in every
  session needs none);
- ``tie``: anything else. A best whose lead is a tie with someone is not a winner: ties are
  never broken by name.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from workbench.harness.results._holm import bootstrap_p_value, holm_adjust
from workbench.harness.results._paired import (
    LOWER_IS_BETTER,
    Draws,
    cluster_bootstrap_means,
)
from workbench.harness.results._power import ALPHA

MIN_SESSIONS = 5
"""Fewest sessions for a bootstrap decision: over fewer clusters a resample has too few distinct
draws for its percentiles or p-value to mean anything (two sessions that agree always "win").
A constant gap in every session is reported as consistent below it."""

TIE, WORSE, BETTER, IDENTICAL = "tie", "worse", "better", "identical"
"""Comparison statuses (see the module docstring)."""


@dataclass
class Comparison:
    """One variant against the best of its stratum on one metric.

    Attributes:
        variant: The compared variant.
        best: The stratum's best variant on this metric.
        metric: The metric.
        n_sessions: Sessions (clusters) with a value on both sides.
        mean_diff: Mean paired difference ``variant - best``.
        ci_low: Lower end of its 95 % cluster-bootstrap interval (not adjusted).
        ci_high: Upper end.
        p_value: Two-sided bootstrap p-value (NaN without pairs).
        p_adjusted: Holm-adjusted p-value across the stratum's comparisons with the best.
        status: ``tie``, ``worse``, ``better`` or ``identical``.
        consistent: Every paired difference is the same non-zero number.
        sd: SD (ddof 1) of the per-session differences (NaN below two sessions).
    """

    variant: str
    best: str
    metric: str
    n_sessions: int
    mean_diff: float
    ci_low: float
    ci_high: float
    p_value: float
    p_adjusted: float
    status: str
    consistent: bool
    sd: float

    @property
    def decided(self) -> bool:
        """True when the difference is named (worse or better), not a tie."""
        return self.status in (WORSE, BETTER)


@dataclass
class PairedDiff:
    """A paired difference ``b - a`` in one stratum and its bootstrap (see `PairedValues.diff`)."""

    n_sessions: int
    mean_diff: float
    ci_low: float
    ci_high: float
    p_value: float
    consistent: bool
    all_zero: bool
    sd: float


RowParts = tuple[np.ndarray, np.ndarray, "pd.Series | None"]
"""A stratum's rows as `PairedValues` reads them whatever the metric: the pairing units, the
compared variants (as text) and each unit's cluster (None without a cluster column)."""


class PairedValues:
    """One metric's values in one stratum, one row per pairing unit and one column per variant.

    Args:
        rows: The stratum's cells to compare (prepared; the rows the metric is judged on).
        on: The compared column.
        metric: The metric column.
        unit: Column naming the pairing unit (the cell key without `on` and the stratum).
        cluster: Column resampled as a whole (the session).
        shared: What does not depend on the metric (the units, variants and clusters of
            `rows`), kept here by the caller for the next metric judged on the same rows.
    """

    def __init__(self, rows: pd.DataFrame, on: str, metric: str, unit: str = "_pair",
                 cluster: str = "session_id",
                 shared: dict[tuple[str, str, str], RowParts] | None = None) -> None:
        parts = shared.get((unit, on, cluster)) if shared is not None else None
        if parts is None:
            parts = (rows[unit].to_numpy(), rows[on].astype(str).to_numpy(),
                     rows.groupby(unit, sort=True)[cluster].first().astype(str)
                     if cluster in rows else None)
            if shared is not None:
                shared[(unit, on, cluster)] = parts
        units, variants, clusters = parts
        values = pd.to_numeric(rows[metric], errors="coerce") if metric in rows else None
        frame = pd.DataFrame({"u": units, "v": variants,
                              "x": values.to_numpy(float) if values is not None else np.nan})
        self.metric = metric
        self.table = frame.groupby(["u", "v"], sort=True)["x"].first().unstack("v")
        self.clusters = clusters if clusters is not None else \
            pd.Series(self.table.index, index=self.table.index)
        # The table as arrays: every comparison reads two columns of it.
        self._values = self.table.to_numpy(float)
        self._column = {str(v): i for i, v in enumerate(self.table.columns)}
        self._clusters = self.clusters.reindex(self.table.index).to_numpy()
        self._draws: Draws = {}  # every comparison resamples alike
        # A diff is a function of its differences and their sessions: variants that differ
        # from the best by the same numbers (every point of a grid that never fails, on
        # ``failed``) share one bootstrap.
        self._diffs: dict[tuple[bytes, tuple[str, ...], int, int], PairedDiff] = {}

    def diff(self, a: str, b: str, *, seed: int, n_boot: int) -> PairedDiff:
        """The paired difference ``b - a`` over the units where both have a value."""
        if a not in self._column or b not in self._column:
            return PairedDiff(0, math.nan, math.nan, math.nan, math.nan, False, False, math.nan)
        first, second = self._values[:, self._column[a]], self._values[:, self._column[b]]
        both = ~(np.isnan(first) | np.isnan(second))
        d = second[both] - first[both]
        if len(d) == 0:
            return PairedDiff(0, math.nan, math.nan, math.nan, math.nan, False, False, math.nan)
        clusters = self._clusters[both]
        key = (d.tobytes(), tuple(clusters.tolist()), seed, n_boot)
        found = self._diffs.get(key)
        if found is None:
            found = self._diffs[key] = self._bootstrap(d, clusters, seed, n_boot)
        return replace(found)

    def _bootstrap(self, d: np.ndarray, clusters: np.ndarray, seed: int,
                   n_boot: int) -> PairedDiff:
        per_session = _per_session(d, clusters)
        n = len(per_session)
        means = cluster_bootstrap_means(d, clusters, np.zeros(len(d)), n_boot=n_boot, seed=seed,
                                        draws=self._draws)
        low, high = np.percentile(means, [2.5, 97.5])
        scale = max(1.0, float(np.abs(d).max()))
        flat = float(d.max() - d.min()) <= 1e-9 * scale
        all_zero = flat and abs(float(d[0])) <= 1e-12 * scale
        return PairedDiff(
            n_sessions=n, mean_diff=float(d.mean()), ci_low=float(low), ci_high=float(high),
            p_value=bootstrap_p_value(means), consistent=flat and not all_zero and n >= 2,
            all_zero=all_zero, sd=_sd(per_session) if n >= 2 else math.nan)


def _per_session(d: np.ndarray, clusters: np.ndarray) -> np.ndarray:
    """The mean difference of each session, sessions in sorted order."""
    if len(set(clusters.tolist())) == len(d):  # one pair per session: its own mean
        try:
            return d[np.argsort(clusters, kind="stable")]
        except TypeError:  # sessions that do not sort among themselves: grouped below
            pass
    return pd.Series(d).groupby(clusters).mean().to_numpy(float)


def _sd(values: np.ndarray) -> float:
    """The SD (ddof 1) of `values`, summed in the order and way pandas' ``std`` sums them (so
    a figure is the same whichever path made it)."""
    count = np.float64(len(values))
    mean = values.sum(dtype=np.float64) / count
    return float(np.sqrt(((mean - values) ** 2).sum(dtype=np.float64) / (count - 1)))


def _direction(metric: str, diff: float) -> str:
    lower = metric in LOWER_IS_BETTER
    return WORSE if (diff > 0) == lower else BETTER


def compare_with_best(values: PairedValues, best: str, others: Iterable[str], *, seed: int,
                      n_boot: int, identical: frozenset[str] = frozenset()) -> list[Comparison]:
    """Compare each of `others` with `best` (Holm across them); see the module docstring.

    Args:
        values: The metric's paired values in the stratum.
        best: The best variant.
        others: The other variants, in display order.
        seed: Bootstrap seed (every comparison uses it: same seed, same intervals).
        n_boot: Bootstrap resamples.
        identical: Variants whose summaries equal the best's on every common session.

    Returns:
        One `Comparison` per variant of `others`, in their order.
    """
    others = list(others)
    diffs = [values.diff(best, v, seed=seed, n_boot=n_boot) for v in others]
    adjusted = holm_adjust([d.p_value for d in diffs])
    out = []
    for variant, d, p_adj in zip(others, diffs, adjusted, strict=True):
        if variant in identical and d.all_zero:
            status = IDENTICAL
        elif d.consistent or (d.n_sessions >= MIN_SESSIONS and p_adj < ALPHA):
            status = _direction(values.metric, d.mean_diff)
        else:
            status = TIE
        out.append(Comparison(variant, best, values.metric, d.n_sessions, d.mean_diff,
                              d.ci_low, d.ci_high, d.p_value, p_adj, status, d.consistent,
                              d.sd))
    return out
