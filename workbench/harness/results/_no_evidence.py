"""What a stratum's cells cannot tell: a metric with no signal, and strata that are one.

- `no_evidence`: a metric ranks nothing in a stratum when at most one session is shared (there
  is no spread to test a difference against) or when every variant scored 0 on a metric where
  higher is better (no template recalled anything: their "tie" is a tie at nothing). The verdict
  says "no evidence" there, never "not significantly worse".
- `real_window`: the window a stratum's cells ran at: the smaller of the nominal cap and the
  model's own context, as each cell stored it (``effective_window``). A 32k cap on a model with
  an 8k context runs at 8k.
- `counted_with`: strata of one model whose cells ran at the same real window are one stratum
  when the run counts its strata; each later one names the first (the others repeat it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from workbench.harness.results._paired import LOWER_IS_BETTER
from workbench.harness.results._table import NO_WINDOW, window_label

__all__ = ["ONE_SESSION", "ZERO_EVERYWHERE", "counted_with", "no_evidence", "real_window"]

ONE_SESSION = "{n} session(s) shared by the {on}s: no spread to test a difference against"
"""Why a metric has no evidence over at most one session (``{n}``, ``{on}`` filled in)."""
ZERO_EVERYWHERE = "every {on} scored 0"
"""Why a higher-is-better metric has no evidence when every variant's mean is 0."""


def no_evidence(metric: str, means: Mapping[str, float], n_sessions: int,
                on: str = "template") -> str:
    """Why `metric` cannot rank the variants of one stratum, or "" when it can.

    Args:
        metric: The metric.
        means: Its mean per variant in the stratum (an empty mapping: no data, not "no
            evidence").
        n_sessions: The sessions its comparisons pair.
        on: The compared column (for the words).
    """
    if len(means) < 2:
        return ""
    if n_sessions <= 1:
        return ONE_SESSION.format(n=n_sessions, on=on)
    if metric not in LOWER_IS_BETTER and all(v == 0 for v in means.values()):
        return ZERO_EVERYWHERE.format(on=on)
    return ""


def real_window(cells: pd.DataFrame) -> int | str:
    """The window the cells of one stratum ran at: the smallest stored ``effective_window``
    (a model's own context below the cap), else the nominal window (``"none"`` without one)."""
    nominal: int | str = (window_label(cells["window"].iloc[0])
                          if "window" in cells and len(cells) else NO_WINDOW)
    if "effective_window" not in cells:
        return nominal
    effective = pd.to_numeric(cells["effective_window"], errors="coerce").dropna()
    if effective.empty:
        return nominal
    smallest = int(effective.min())
    return smallest if not isinstance(nominal, int) or smallest < nominal else nominal


def counted_with(keys: Sequence[tuple[str, int | str | None]]) -> list[int | None]:
    """For each stratum's ``(model, real window)``: None for the first of its key, else the
    index of that first one (the stratum it is counted with)."""
    first: dict[tuple[str, str], int] = {}
    out: list[int | None] = []
    for i, (model, window) in enumerate(keys):
        key = (str(model), str(window))
        out.append(first.get(key))
        first.setdefault(key, i)
    return out
