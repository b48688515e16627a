"""Whether the verdict may rank on a judge's scores: its agreement with the exact grader.

A judge model scores the open questions, where no exact ground truth exists. Where a run also
had it grade exact questions (``[qa] judge_calibration``), its Cohen's kappa against the exact
grader says how far to trust it (`judge_agreement`). In a stratum whose kappa is below
`KAPPA_FLOOR`, or was not measured, the verdict does not rank on the judge's figures
(`is_judge_metric`) and says why in the stratum's recommendation, which the run-level
recommendation carries.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from workbench.harness.results._judge_agreement import BOOTSTRAP, judge_agreement
from workbench.probes import CALIBRATION_COUNTS

__all__ = ["KAPPA_FLOOR", "JudgeTrust", "is_judge_metric", "judge_trust"]

KAPPA_FLOOR = 0.6
"""The least Cohen's kappa against the exact grader at which the judge's scores are ranked on
(Landis and Koch's "substantial" agreement starts here)."""


def is_judge_metric(metric: str) -> bool:
    """True for a figure the judge gives: ``judge_score`` and its ``judge_<dimension>``
    columns (the calibration counts are the grader's comparison, not the judge's figure)."""
    return metric.startswith("judge_") and metric not in CALIBRATION_COUNTS


def _fmt(value: float) -> str:
    return f"{value:.2f}"


@dataclass
class JudgeTrust:
    """The judge's agreement with the exact grader in one stratum, and what the verdict does.

    Attributes:
        kappa: Cohen's kappa (NaN: not measured, or one verdict for every question).
        kappa_low: Lower end of its 95 % cluster-bootstrap interval (NaN below two sessions).
        kappa_high: Upper end.
        sessions: Sessions with a judged exact question.
        questions: Exact questions the judge graded.
        agreement: The share of them both graders passed or both failed.
    """

    kappa: float
    kappa_low: float
    kappa_high: float
    sessions: int
    questions: int
    agreement: float

    @property
    def trusted(self) -> bool:
        """The verdict ranks on the judge's figures: kappa is at least `KAPPA_FLOOR`."""
        return not math.isnan(self.kappa) and self.kappa >= KAPPA_FLOOR

    @property
    def reason(self) -> str:
        """Why the judge's figures are not ranked on ("" when they are)."""
        if self.trusted:
            return ""
        head = "the judge's figures are not ranked on: "
        if self.questions == 0:
            return head + ("its agreement with the exact grader was not measured (set [qa] "
                           "judge_calibration above 0)")
        if math.isnan(self.kappa):
            return head + (f"its Cohen's kappa against the exact grader is undefined over "
                           f"{self.questions} exact questions (one verdict for every question)")
        interval = (f" [{_fmt(self.kappa_low)}, {_fmt(self.kappa_high)}]"
                    if not math.isnan(self.kappa_low) else "")
        return head + (f"it agrees with the exact grader at Cohen's kappa {_fmt(self.kappa)}"
                       f"{interval} over {self.questions} exact questions, below "
                       f"{KAPPA_FLOOR}")

    def to_dict(self) -> dict[str, float | int | bool | str | None]:
        """Plain data (NaN as None), with ``trusted`` and ``reason``."""
        out: dict[str, float | int | bool | str | None] = {k: (None if isinstance(v, float) and math.isnan(v) else v)
                               for k, v in self.__dict__.items()}
        out.update(trusted=self.trusted, reason=self.reason, floor=KAPPA_FLOOR)
        return out


def judge_trust(cells: pd.DataFrame, *, seed: int = 0,
                resamples: int = BOOTSTRAP) -> JudgeTrust | None:
    """The judge's agreement in the cells of one stratum, or None when no cell has a judge's
    score (no judge: nothing to gate).

    Args:
        cells: The stratum's cells, metrics as columns.
        seed: The bootstrap's seed.
        resamples: Bootstrap resamples for the interval.
    """
    if "judge_score" not in cells or pd.to_numeric(cells["judge_score"],
                                                   errors="coerce").isna().all():
        return None
    rows = judge_agreement(cells.assign(_one=""), seed=seed, resamples=resamples, by=("_one",))
    if rows.empty:
        return JudgeTrust(math.nan, math.nan, math.nan, 0, 0, math.nan)
    row = rows.iloc[0]
    return JudgeTrust(float(row["kappa"]), float(row["kappa_low"]), float(row["kappa_high"]),
                      int(row["sessions"]), int(row["questions"]), float(row["agreement"]))
