"""The replay's failure detectors, survival curves and ``n/a`` strategies as terminal text.

In: `Results` (its ``replays``: the detector table, the survival curve, the rows stored
``n/a``). Out: the lines ``workbench run`` prints after the replay table when the experiment's
``[replay]`` asks for ``detectors`` (`experiments/agents.toml` does). Every figure is a column
of ``Results.replay_detectors()`` or a row of ``Results.replay_survival()``; the glossary
defines them.
"""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Protocol, SupportsFloat, SupportsInt, cast

from workbench.harness.experiment._windows import format_window
from workbench.strategies import threshold_label

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from workbench.harness.results._results import Results

__all__ = ["DETECTOR_SHOWN", "detector_shown", "detector_text", "survival_shown"]

DETECTOR_SHOWN = {"strategy": "strategy", "window": "window", "threshold": "threshold",
                  "sessions": "n", "retrigger_rate": "retrig", "post_fill_mean": "fill",
                  "post_fill_max": "fill max", "growth": "growth", "loops": "loops",
                  "last_request_kept": "req kept", "done_redone": "redone",
                  "stale_kept_mean": "stale", "cliff": "cliff"}
"""Detector columns printed, with their short headers (the replay table above holds the
compactions, billed tokens, overflow and facts kept)."""
WIDTH = 120
SHARES = ("retrigger_rate", "post_fill_mean", "post_fill_max", "last_request_kept",
          "facts_recall_mean")
DECIMALS = ("growth", "loops", "done_redone", "stale_kept_mean")
HEADER = ("failure detectors per strategy (means per session; retrig = rounds followed by "
          "another within 3 turns,\nfill = the context's share of the window after a round "
          "(mean, max), growth = compactions larger than\nwhat they replaced, loops = rounds "
          "with no turn since the last, req kept = the last request survives,\nredone = finished "
          "tasks a summary lists as pending, stale = replaced values still held, cliff = the "
          "first\ncompaction after which recall falls below half):")
SURVIVAL_HEADER = ("survival: planted facts kept after the k-th compaction (mean over the "
                   "sessions that reached it; n at round 1):")
MAX_ROUNDS = 8


def _missing(value: object) -> bool:
    return value is None or value != value


class _Number(SupportsInt, SupportsFloat, Protocol):
    """A Python or numpy number, as a table cell holds it."""


def _cell(column: str, value: object) -> str:
    # Every column but the strategy (and a threshold's "policy") holds a number, NaN if missing.
    number = cast(_Number, value)
    if column == "window":
        return format_window(int(number))
    if column == "threshold":
        return threshold_label(None if value is None or isinstance(value, str) else float(number))
    if column == "strategy":
        return str(value)
    if column == "cliff":
        return "none" if _missing(value) else f"round {int(number)}"
    if _missing(value):
        return "—"
    if column in SHARES:
        return f"{float(number):.0%}"
    if column in DECIMALS:
        return f"{float(number):.1f}"
    return f"{float(number):,.0f}"


def _unavailable(results: Results) -> list[str]:
    frame = results.replays
    if frame.empty or "status" not in frame.columns:
        return []
    lines = []
    na = frame[frame["status"] == "n/a"]
    for (strategy, reason), g in na.groupby(["strategy", "error_message"], sort=False):
        lines.append(textwrap.fill(f"{strategy}: n/a ({len(g)} replays): {reason}", width=WIDTH,
                                   initial_indent="  ", subsequent_indent="    "))
    return lines


def detector_shown(table: pd.DataFrame) -> pd.DataFrame:
    """A `detector_table` as the text shows it: short headers, every value a string."""
    import pandas as pd  # light start: pandas loads when a replay is shown

    return pd.DataFrame({DETECTOR_SHOWN[c]: [_cell(c, v) for v in table[c]]
                         for c in DETECTOR_SHOWN if c in table.columns})


def survival_shown(curve: pd.DataFrame, max_rounds: int = MAX_ROUNDS) -> pd.DataFrame:
    """A `survival_curve` as the text shows it: one row per strategy x window x threshold,
    recall after rounds 1..`max_rounds` (``—`` where no session got there), then the cliff."""
    import pandas as pd  # light start: pandas loads when a replay is shown

    rows = []
    for (strategy, window, threshold), g in curve.groupby(
            ["strategy", "window", "threshold"], sort=False, dropna=False):
        points = dict(zip(g["round"], g["recall"], strict=True))
        first = g[g["round"] == 1]["sessions"]
        row = {"strategy": strategy, "window": _cell("window", window),
               "threshold": _cell("threshold", threshold),
               "n": int(first.iloc[0]) if len(first) else 0}
        row.update({str(k): f"{points[k]:.0%}" if k in points else "—"  # type: ignore[index]
                    for k in range(1, max_rounds + 1)})
        row["cliff"] = _cell("cliff", g["cliff"].iloc[0])
        rows.append(row)
    return pd.DataFrame(rows)


def detector_text(results: Results, max_rounds: int = MAX_ROUNDS) -> str:
    """The detectors table, the survival curve per strategy (rounds 1..`max_rounds`, then the
    cliff) and the ``n/a`` strategies with their reasons."""
    table = results.replay_detectors()
    out = [HEADER]
    if table.empty:
        out.append("  (no replay ran)")
    else:
        out.append(detector_shown(table).to_string(index=False))
    curve = results.replay_survival()  # the cliff may lie past the rounds shown
    if not curve.empty:
        out += ["", SURVIVAL_HEADER, survival_shown(curve, max_rounds).to_string(index=False)]
    missing = _unavailable(results)
    if missing:
        out += ["", "not run (n/a):", *missing]
    return "\n".join(out)
