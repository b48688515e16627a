"""Paired comparison of two variants (two templates, two models, two runs) on one metric.

Cells are paired when they share every other part of the cell key: the same session, strategy,
window and repeat, and the same template or model (whichever is not being compared). Pairs where
either value is missing (an error cell has no recall) are dropped. The statistic is the mean of
``b - a`` over pairs, with a percentile bootstrap 95% interval (resampling pairs, seeded numpy).
A winner is named only when the interval excludes zero and there are at least two pairs; for the
metrics in `LOWER_IS_BETTER` the lower value wins.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from workbench.errors import ConfigError
from workbench.harness._table import CELL_KEYS, prepare_cells

LOWER_IS_BETTER = frozenset({
    "retained_tokens", "summary_tokens", "billed_tokens", "billed_input_tokens",
    "billed_output_tokens", "cost", "retries", "attempts", "latency_ms", "compression_ratio",
    "stale_mentioned", "stale_failures", "tool_responses_removed", "max_removal_percent",
})
"""Metrics where a smaller value is better; every other metric is higher-is-better."""

_NO_KEY = "\x00none"  # stands in for a missing key value so pairs with no window still join
_CHUNK = 256


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

    def __str__(self) -> str:
        verdict = f"winner: {self.winner}" if self.winner is not None else "no clear winner"
        return (f"{self.metric}: {self.b} - {self.a} = {self.mean_diff:+.4g} "
                f"[95% CI {self.ci_low:+.4g}, {self.ci_high:+.4g}] over {self.n_pairs} pairs; "
                f"{verdict}")

    def to_dict(self) -> dict[str, Any]:
        """The scalar fields (no pairs), for tables and JSON."""
        return {"a": self.a, "b": self.b, "metric": self.metric, "n_pairs": self.n_pairs,
                "mean_diff": self.mean_diff, "ci_low": self.ci_low, "ci_high": self.ci_high,
                "winner": self.winner}


def bootstrap_mean_ci(diffs: np.ndarray, *, n_boot: int = 2000, seed: int = 0,
                      level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of `diffs`.

    Args:
        diffs: One value per pair.
        n_boot: Bootstrap resamples.
        seed: Seed of the numpy generator (same seed, same interval).
        level: Coverage of the interval.

    Returns:
        ``(low, high)``; NaNs when `diffs` is empty.
    """
    n = len(diffs)
    if n == 0:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    means = np.empty(n_boot)
    for start in range(0, n_boot, _CHUNK):  # chunks keep memory flat for many pairs
        size = min(_CHUNK, n_boot - start)
        means[start:start + size] = diffs[rng.integers(0, n, size=(size, n))].mean(axis=1)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(low), float(high)


def paired_comparison(cells: pd.DataFrame, a: str, b: str, *, on: str = "template",
                      metric: str = "probe_recall", n_boot: int = 2000,
                      seed: int = 0) -> PairedResult:
    """Compare variant `b` against `a` of column `on`, pairing cells that share the rest of the key.

    Args:
        cells: One row per cell (`Results.cells`); may hold several runs when `on` is a run label.
        a: The baseline value of `on`.
        b: The challenger value of `on`.
        on: The column that tells the variants apart (``template``, ``model``, or any label).
        metric: The column to compare (``billed_tokens`` is derived when absent).
        n_boot: Bootstrap resamples.
        seed: Bootstrap seed.

    Returns:
        A `PairedResult`.

    Raises:
        ConfigError: `on` or `metric` is not a column, or `a`/`b` has no cells.
    """
    df = prepare_cells(cells)
    for col in (on, metric):
        if col not in df.columns:
            raise ConfigError(f"no column {col!r} in the cells; known: {', '.join(df.columns)}")
    values = set(df[on].dropna().astype(str))
    for v in (a, b):
        if str(v) not in values:
            raise ConfigError(f"no cells with {on}={v!r}; known: {', '.join(sorted(values))}")
    keys = [k for k in CELL_KEYS if k != on and k in df.columns]
    df = df.assign(**{k: df[k].astype(object).where(df[k].notna(), _NO_KEY) for k in keys})
    df["_value"] = pd.to_numeric(df[metric], errors="coerce")
    side_a = df[df[on].astype(str) == str(a)][keys + ["_value"]].rename(columns={"_value": "a"})
    side_b = df[df[on].astype(str) == str(b)][keys + ["_value"]].rename(columns={"_value": "b"})
    pairs = side_a.merge(side_b, on=keys, how="inner").dropna(subset=["a", "b"])
    pairs = pairs.replace({_NO_KEY: None}).reset_index(drop=True)
    pairs["diff"] = pairs["b"] - pairs["a"]
    diffs = pairs["diff"].to_numpy(dtype=float)
    mean = float(diffs.mean()) if len(diffs) else float("nan")
    low, high = bootstrap_mean_ci(diffs, n_boot=n_boot, seed=seed)
    winner = None
    if len(diffs) >= 2 and (low > 0 or high < 0):
        b_higher = low > 0
        winner = b if b_higher != (metric in LOWER_IS_BETTER) else a
    return PairedResult(a=a, b=b, metric=metric, n_pairs=len(diffs), mean_diff=mean,
                        ci_low=low, ci_high=high, winner=winner, pairs=pairs)
