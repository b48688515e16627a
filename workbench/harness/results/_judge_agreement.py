"""The judge's agreement with the exact grader, per model x window: data the verdict can read.

A judge model grades the open questions, where no exact ground truth exists; whether to trust
it is measured where one does. With ``[qa] judge_calibration = N`` the judge also grades N exact
questions per cell, and each cell stores how it agreed with the exact grader
(`workbench.probes.CALIBRATION_COUNTS`: both passed, only the judge, only the grader,
neither). `judge_agreement` sums those 2 x 2 tables over the cells of each model x window and
gives Cohen's kappa (agreement beyond what the two graders' pass rates give by chance) with a
95 % cluster-bootstrap interval: whole sessions are resampled, since a session's cells share
their questions (as in `workbench.harness.results.paired_comparison`).

Kappa is undefined (NaN) when chance agreement is total (both graders gave one verdict to every
question); its interval is NaN with fewer than two sessions.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from workbench.probes import CALIBRATION_COUNTS

__all__ = ["AGREEMENT_COLUMNS", "BOOTSTRAP", "cohen_kappa", "judge_agreement", "with_judge_kappa"]

BOOTSTRAP = 2000
"""Bootstrap resamples for the interval."""
AGREEMENT_COLUMNS = ("model", "window", "sessions", "questions", "agreement", "kappa",
                     "kappa_low", "kappa_high")
"""The columns of `judge_agreement`."""


def cohen_kappa(both: float, judge_only: float, grader_only: float, neither: float) -> float:
    """Cohen's kappa of a 2 x 2 table of pass/fail verdicts (NaN when chance agreement is 1).

    Args:
        both: Questions both graders passed.
        judge_only: Passed by the judge only.
        grader_only: Passed by the exact grader only.
        neither: Failed by both.
    """
    n = both + judge_only + grader_only + neither
    if n <= 0:
        return float("nan")
    observed = (both + neither) / n
    judge_yes, grader_yes = (both + judge_only) / n, (both + grader_only) / n
    chance = judge_yes * grader_yes + (1 - judge_yes) * (1 - grader_yes)
    if chance >= 1:
        return float("nan")
    return (observed - chance) / (1 - chance)


def _kappa_rows(tables: np.ndarray) -> np.ndarray:
    """Kappa of each row of summed tables (shape: resamples x 4)."""
    n = tables.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        observed = (tables[:, 0] + tables[:, 3]) / n
        judge_yes = (tables[:, 0] + tables[:, 1]) / n
        grader_yes = (tables[:, 0] + tables[:, 2]) / n
        chance = judge_yes * grader_yes + (1 - judge_yes) * (1 - grader_yes)
        kappa = (observed - chance) / (1 - chance)
    kappa[(chance >= 1) | (n <= 0)] = np.nan
    return kappa


def judge_agreement(cells: pd.DataFrame | None, *, seed: int = 0, resamples: int = BOOTSTRAP,
                    by: Sequence[str] = ("model", "window")) -> pd.DataFrame:
    """Cohen's kappa of the judge against the exact grader, per model x window.

    Args:
        cells: Cells with their metrics as columns (`workbench.harness.Results.cells`); the
            cells without calibration counts (no judge, or nothing sampled) are left out.
        seed: The bootstrap's seed.
        resamples: Bootstrap resamples.
        by: The strata.

    Returns:
        A DataFrame with `AGREEMENT_COLUMNS` (the strata named by `by` first), one row per
        stratum with at least one judged exact question; empty when the run had no judge.
    """
    columns = [*by, *AGREEMENT_COLUMNS[len(("model", "window")):]]
    if cells is None or len(cells) == 0 or not set(CALIBRATION_COUNTS) <= set(cells.columns):
        return pd.DataFrame(columns=columns)
    counts = cells[[*by, "session_id", *CALIBRATION_COUNTS]].copy()
    counts[list(CALIBRATION_COUNTS)] = counts[list(CALIBRATION_COUNTS)].apply(
        pd.to_numeric, errors="coerce")
    counts = counts.dropna(subset=list(CALIBRATION_COUNTS))
    rng = np.random.default_rng(seed)
    rows = []
    for key, group in counts.groupby(list(by), dropna=False, sort=True):
        per_session = group.groupby("session_id")[list(CALIBRATION_COUNTS)].sum().to_numpy(
            dtype=float)
        total = per_session.sum(axis=0)
        n = float(total.sum())
        if n <= 0:
            continue
        kappa = cohen_kappa(*total)
        low = high = float("nan")
        if len(per_session) >= 2:
            picks = rng.integers(0, len(per_session), size=(resamples, len(per_session)))
            draws = _kappa_rows(per_session[picks].sum(axis=1))
            draws = draws[~np.isnan(draws)]
            if len(draws):
                low, high = (float(v) for v in np.percentile(draws, [2.5, 97.5]))
        values = key if isinstance(key, tuple) else (key,)
        rows.append([*values, len(per_session), int(n), (total[0] + total[3]) / n, kappa,
                     low, high])
    return pd.DataFrame(rows, columns=columns)


def with_judge_kappa(table: pd.DataFrame, cells: pd.DataFrame,
                     by: Sequence[str]) -> pd.DataFrame:
    """`table` with a ``judge_kappa`` column: each row's model x window kappa (no interval:
    `judge_agreement` gives it), when the cells have calibration counts and `by` holds both
    model and window; else `table` unchanged. The table's keys must be the cells' own values
    (before any relabelling of windows)."""
    if not {"model", "window"} <= set(by) or not set(CALIBRATION_COUNTS) <= set(cells.columns):
        return table
    kappa = judge_agreement(cells, resamples=0)
    if kappa.empty:
        return table
    # keyed by text: a missing window is NaN on both sides, and NaN is not equal to itself
    found = {(str(m), str(w)): k
             for m, w, k in zip(kappa["model"], kappa["window"], kappa["kappa"], strict=True)}
    table["judge_kappa"] = [found.get((str(m), str(w)), float("nan"))
                            for m, w in zip(table["model"], table["window"], strict=True)]
    return table
