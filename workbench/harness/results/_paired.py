"""Paired comparison of two variants (two templates, two models, two runs) on one metric.

Cells are paired when they share every other part of the cell key: the same session, strategy,
window and repeat, and the same template or model (whichever is not being compared). The
statistic is the mean of ``b - a`` over pairs.

The interval is a cluster bootstrap: the cells of one session are not independent (the same
conversation, the same difficulty), so whole sessions are resampled, with replacement, within
each stratum (model x window by default, minus the compared column), keeping each stratum's
session count fixed. Resampling single pairs instead treats a session's repeats, windows or
strategies as independent evidence and gives intervals that are too narrow. ``cluster=None``
does exactly that, for comparison; ``stratify=()`` pools the strata.

Failures are not silently dropped: the ``failed`` metric (1 for a compaction failure, 0 for a
summary, from `prepare_cells`) compares failure rates with the same machinery, and every result
counts the pairs lost because one side failed (``failed_a``, ``failed_b``). Infrastructure
errors have no value on any metric.

A winner is named only when the interval excludes zero and the pairs come from at least two
clusters (one session resampled is always the same session); for the
metrics in `LOWER_IS_BETTER` the lower value wins. ``by_stratum`` repeats the comparison inside
each stratum (the verdict reads it: it never pools models or windows).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypedDict

import numpy as np
import pandas as pd

from workbench._suggest import did_you_mean
from workbench.errors import ConfigError
from workbench.harness.results._table import CELL_KEYS, prepare_cells

LOWER_IS_BETTER = frozenset({
    "retained_tokens", "summary_tokens", "billed_tokens", "billed_input_tokens",
    "billed_output_tokens", "cost", "retries", "attempts", "latency_ms", "compression_ratio",
    "stale_mentioned", "stale_failures", "tool_responses_removed", "max_removal_percent",
    "failed", "failure_rate", "template_echo", "http_retries", "billed_reported",
    "billed_estimated", "qa_loss_exact", "qa_loss_open", "qa_billed_tokens", "qa_cost",
    "retrigger_rate",  # the policy verdict's: compaction firing again within a few turns
})
"""Metrics where a smaller value is better; every other metric is higher-is-better."""

_NO_KEY = "\x00none"  # stands in for a missing key value so pairs with no window still join
_CHUNK = 256
Draws = dict[tuple[int, int, tuple[int, ...]], list[np.ndarray]]
"""Bootstrap draws kept by (seed, resamples, stratum sizes): the cluster indices, chunk by chunk."""
DEFAULT_STRATA = ("model", "window")
"""Columns that define strata (minus the compared column): never mixed by resampling."""
DEFAULT_CLUSTER = "session_id"


@dataclass
class PairedResult:
    """The outcome of `paired_comparison`.

    Attributes:
        a: The baseline variant.
        b: The challenger; differences are ``b - a``.
        metric: The compared column.
        n_pairs: Pairs with a value on both sides.
        mean_diff: Mean of ``b - a`` (NaN without pairs).
        ci_low: Lower end of the bootstrap 95% interval.
        ci_high: Upper end.
        winner: `a` or `b` when the interval excludes zero, else None.
        pairs: One row per pair: the key columns, ``a``, ``b`` and ``diff``.
        n_clusters: Sessions (clusters, per stratum) the pairs come from.
        failed_a: Pairs with no value because `a`'s cell failed (context exhausted).
        failed_b: Likewise for `b`.
        by_stratum: One row per stratum: its key columns and the fields of `to_dict`.
    """

    a: str
    b: str
    metric: str
    n_pairs: int
    mean_diff: float
    ci_low: float
    ci_high: float
    winner: str | None
    pairs: pd.DataFrame
    n_clusters: int = 0
    failed_a: int = 0
    failed_b: int = 0
    by_stratum: pd.DataFrame = field(default_factory=pd.DataFrame)

    def __str__(self) -> str:
        verdict = f"winner: {self.winner}" if self.winner is not None else "no clear winner"
        return (f"{self.metric}: {self.b} - {self.a} = {self.mean_diff:+.4g} "
                f"[95% CI {self.ci_low:+.4g}, {self.ci_high:+.4g}] over {self.n_pairs} pairs; "
                f"{verdict}")

    def to_dict(self) -> dict[str, object]:
        """The scalar fields (no pairs), for tables and JSON."""
        return {"a": self.a, "b": self.b, "metric": self.metric, "n_pairs": self.n_pairs,
                "mean_diff": self.mean_diff, "ci_low": self.ci_low, "ci_high": self.ci_high,
                "winner": self.winner, "n_clusters": self.n_clusters,
                "failed_a": self.failed_a, "failed_b": self.failed_b}


def cluster_bootstrap_means(diffs: np.ndarray, clusters: np.ndarray, strata: np.ndarray, *,
                            n_boot: int = 2000, seed: int = 0,
                            draws: Draws | None = None) -> np.ndarray:
    """The bootstrap distribution of the mean of `diffs`: one resampled mean per resample.

    Each resample draws, in every stratum, as many clusters as the stratum has (with
    replacement; clusters in sorted order, so the same seed gives the same draws) and takes the
    mean over every pair of the drawn clusters. `cluster_bootstrap_ci` takes its percentiles;
    the verdict also reads a p-value from it (`workbench.harness.results._holm`).

    Args:
        diffs: One value per pair (non-empty).
        clusters: The cluster (session) of each pair.
        strata: The stratum of each pair; clusters are resampled within their stratum.
        n_boot: Bootstrap resamples.
        seed: Seed of the numpy generator.
        draws: A table the draws are kept in and read from (the verdict compares many
            variants over the same sessions with one seed: the draws are the same each time).

    Returns:
        An array of `n_boot` resampled means.
    """
    parts = _cluster_sums(diffs, clusters, strata)
    chunks = iter(_draws(seed, n_boot, tuple(len(c_sum) for c_sum, _ in parts), draws))
    sums = np.zeros(n_boot)
    counts = np.zeros(n_boot)
    for c_sum, c_cnt in parts:
        for start in range(0, n_boot, _CHUNK):  # chunks keep memory flat for many sessions
            idx = next(chunks)
            sums[start:start + len(idx)] += c_sum[idx].sum(axis=1)
            counts[start:start + len(idx)] += c_cnt[idx].sum(axis=1)
    return sums / counts


def _draws(seed: int, n_boot: int, sizes: tuple[int, ...],
           kept: Draws | None) -> list[np.ndarray]:
    """The resamples' cluster indices, chunk by chunk, stratum after stratum (`kept` keeps
    them by seed, resamples and stratum sizes)."""
    key = (seed, n_boot, sizes)
    if kept is not None and key in kept:
        return kept[key]
    rng = np.random.default_rng(seed)
    out = [rng.integers(0, k, size=(min(_CHUNK, n_boot - start), k))
           for k in sizes for start in range(0, n_boot, _CHUNK)]
    if kept is not None:
        kept[key] = out
    return out


def _cluster_sums(diffs: np.ndarray, clusters: np.ndarray,
                  strata: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per stratum (in sorted order), each cluster's sum and count of `diffs`, clusters in
    sorted order. One pair per cluster in one stratum (a run's usual comparison) needs no
    grouping: each sum is its one value, exactly as the grouped sum would be."""
    if len(diffs) and (strata == strata[0]).all() and len(set(clusters.tolist())) == len(diffs):
        try:
            order = np.argsort(clusters, kind="stable")
        except TypeError:  # clusters that do not sort among themselves: grouped below
            order = None
        if order is not None:
            values = np.asarray(diffs, float)[order]
            return [(values, np.ones(len(values)))]
    frame = pd.DataFrame({"d": diffs, "c": clusters, "s": strata})
    out = []
    for _, part in frame.groupby("s", sort=True):
        per = part.groupby("c", sort=True)["d"].agg(["sum", "count"])
        out.append((per["sum"].to_numpy(float), per["count"].to_numpy(float)))
    return out


def cluster_bootstrap_ci(diffs: np.ndarray, clusters: np.ndarray, strata: np.ndarray, *,
                         n_boot: int = 2000, seed: int = 0,
                         level: float = 0.95) -> tuple[float, float]:
    """Stratified cluster bootstrap interval of the mean of `diffs` over pairs.

    The percentiles of `cluster_bootstrap_means` (each resample draws, in every stratum, as
    many clusters as the stratum has, with replacement).

    Args:
        diffs: One value per pair.
        clusters: The cluster (session) of each pair.
        strata: The stratum of each pair; clusters are resampled within their stratum.
        n_boot: Bootstrap resamples.
        seed: Seed of the numpy generator (same seed, same interval).
        level: Coverage of the interval.

    Returns:
        ``(low, high)``; NaNs when `diffs` is empty.
    """
    if len(diffs) == 0:
        return float("nan"), float("nan")
    means = cluster_bootstrap_means(diffs, clusters, strata, n_boot=n_boot, seed=seed)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(low), float(high)


def _winner(a: str, b: str, metric: str, n: int, low: float, high: float) -> str | None:
    if n >= 2 and (low > 0 or high < 0):
        return b if (low > 0) != (metric in LOWER_IS_BETTER) else a
    return None


def _stats(pairs: pd.DataFrame, strata: list[str], cluster: str | None, n_boot: int,
           seed: int) -> tuple[float, float, float, int]:
    diffs = pairs["diff"].to_numpy(dtype=float)
    if cluster is not None and cluster in pairs.columns:
        clusters = pairs[cluster].astype(str).to_numpy()
    else:
        clusters = np.arange(len(pairs)).astype(str)
    if strata and len(pairs):
        stratum = pairs[strata].map(str).agg("\x1f".join, axis=1).to_numpy()
    else:
        stratum = np.full(len(pairs), "")
    mean = float(diffs.mean()) if len(diffs) else float("nan")
    low, high = cluster_bootstrap_ci(diffs, clusters, stratum, n_boot=n_boot, seed=seed)
    n_clusters = len(set(zip(stratum, clusters, strict=True)))
    return mean, low, high, n_clusters


def _lost_to_failure(lost: pd.DataFrame, side: str) -> int:
    return int((lost[side].isna() & lost[f"_failed_{side}"].eq(1.0)).sum())


class PairedOptions(TypedDict, total=False):
    """The keywords of `paired_comparison` after the variants (what `Results.compare` passes on)."""

    n_boot: int
    seed: int
    stratify: Sequence[str]
    cluster: str | None


def paired_comparison(cells: pd.DataFrame, a: str, b: str, *, on: str = "template",
                      metric: str = "probe_recall", n_boot: int = 2000, seed: int = 0,
                      stratify: Sequence[str] = DEFAULT_STRATA,
                      cluster: str | None = DEFAULT_CLUSTER) -> PairedResult:
    """Compare variant `b` against `a` of column `on`, pairing cells that share the rest of the key.

    Args:
        cells: One row per cell (`Results.cells`); may hold several runs when `on` is a run label.
        a: The baseline value of `on`.
        b: The challenger value of `on`.
        on: The column that tells the variants apart (``template``, ``model``, or any label).
        metric: The column to compare (``billed_tokens``, ``failed`` and ``useful_structured``
            are derived when absent).
        n_boot: Bootstrap resamples.
        seed: Bootstrap seed.
        stratify: Strata for the bootstrap and for ``by_stratum`` (`on` is left out); ``()``
            pools everything.
        cluster: The column whose values are resampled as whole clusters; None resamples single
            pairs (overconfident when a session contributes several pairs).

    Returns:
        A `PairedResult`.

    Raises:
        ConfigError: `on` or `metric` is not a column, or `a`/`b` has no cells.
    """
    df = prepare_cells(cells)
    for col in (on, metric):
        if col not in df.columns:
            raise ConfigError(f"no column {col!r} in the cells{did_you_mean(col, df.columns)}; "
                              f"known: {', '.join(df.columns)}")
    values = set(df[on].dropna().astype(str))
    for v in (a, b):
        if str(v) not in values:
            raise ConfigError(f"no cells with {on}={v!r}; known: {', '.join(sorted(values))}")
    keys = [k for k in CELL_KEYS if k != on and k in df.columns]
    strata = [s for s in stratify if s != on and s in keys]
    df = df.assign(**{k: df[k].astype(object).where(df[k].notna(), _NO_KEY) for k in keys})
    df["_value"] = pd.to_numeric(df[metric], errors="coerce")

    def side(value: str, name: str) -> pd.DataFrame:
        part = df[df[on].astype(str) == str(value)][keys + ["_value", "failed"]]
        return part.rename(columns={"_value": name, "failed": f"_failed_{name}"})

    joined = side(a, "a").merge(side(b, "b"), on=keys, how="inner")
    lost = joined[joined["a"].isna() | joined["b"].isna()]
    pairs = joined.dropna(subset=["a", "b"])[keys + ["a", "b"]].reset_index(drop=True)
    pairs["diff"] = pairs["b"] - pairs["a"]
    mean, low, high, n_clusters = _stats(pairs, strata, cluster, n_boot, seed)
    rows = []
    for key, part in (pairs.groupby(strata, sort=True) if strata and len(pairs) else ()):
        key = key if isinstance(key, tuple) else (key,)
        m, lo, hi, nc = _stats(part, [], cluster, n_boot, seed)
        lost_part = lost
        for col, val in zip(strata, key, strict=True):
            lost_part = lost_part[lost_part[col].astype(str) == str(val)]
        rows.append({**{c: (None if v == _NO_KEY else v) for c, v in zip(strata, key, strict=True)},
                     "a": a, "b": b, "metric": metric, "n_pairs": len(part), "mean_diff": m,
                     "ci_low": lo, "ci_high": hi,
                     "winner": _winner(a, b, metric, nc, lo, hi), "n_clusters": nc,
                     "failed_a": _lost_to_failure(lost_part, "a"),
                     "failed_b": _lost_to_failure(lost_part, "b")})
    pairs = pairs.replace({_NO_KEY: None})
    return PairedResult(a=a, b=b, metric=metric, n_pairs=len(pairs), mean_diff=mean,
                        ci_low=low, ci_high=high,
                        winner=_winner(a, b, metric, n_clusters, low, high), pairs=pairs,
                        n_clusters=n_clusters, failed_a=_lost_to_failure(lost, "a"),
                        failed_b=_lost_to_failure(lost, "b"), by_stratum=pd.DataFrame(rows))
