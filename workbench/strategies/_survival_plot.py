"""The survival curve drawn: recall after the 1st, 2nd, ... compaction, one line per strategy.

In: a `survival_curve` DataFrame (`workbench.strategies._detectors`). Out: a matplotlib
figure, with the cliff's level (half the planted facts) drawn across and each curve's cliff
marked; a line stops at the last round at least half its sessions reached. The report's replay section shows it; a notebook can call it on
``Results.replay_survival()``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench.strategies._detectors import CLIFF_RECALL
from workbench.strategies._replay_table import threshold_label

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = ["plot_survival"]


def _name(strategy: object, window: int, threshold: float | None, several: bool) -> str:
    if not several:
        return str(strategy)
    from workbench.models._identity import format_window  # light start: only when drawn

    return f"{strategy} @{format_window(int(window))} x{threshold_label(threshold)}"


def plot_survival(curve: pd.DataFrame | None, *, title: str | None = None) -> Figure:
    """Recall after the k-th compaction per strategy (x window x threshold when several).

    Args:
        curve: A `survival_curve` (``strategy``, ``window``, ``threshold``, ``round``,
            ``recall``, ``sessions``, ``cliff``).
        title: The axes title.

    Returns:
        A `matplotlib.figure.Figure` (no pyplot, no backend needed).
    """
    from matplotlib.figure import Figure  # light start: matplotlib loads when a plot is drawn

    fig = Figure(figsize=(9, 4.5), layout="constrained")
    ax = fig.add_subplot()
    if curve is None or curve.empty:
        ax.text(0.5, 0.5, "no compaction was probed", ha="center", va="center",
                transform=ax.transAxes)
        ax.set_axis_off()
        return fig
    keys = ["strategy", "window", "threshold"]
    groups = list(curve.groupby(keys, sort=False, dropna=False))
    several = len({(w, threshold_label(t)) for (_, w, t), _ in groups}) > 1
    for (strategy, window, threshold), g in groups:
        g = g.sort_values("round")
        # A late round reached by few sessions is a mean of one or two: the line stops where
        # fewer than half of the curve's sessions (n at round 1) got to.
        g = g[g["sessions"] * 2 >= g["sessions"].iloc[0]]
        (line,) = ax.plot(g["round"], 100 * g["recall"], marker="o", markersize=3,
                          linewidth=1.2, label=_name(strategy, window, threshold, several))
        cliff = g["cliff"].iloc[0]
        if cliff is not None and cliff == cliff:
            at = g[g["round"] == cliff]
            ax.scatter(at["round"], 100 * at["recall"], marker="x", s=50,
                       color=line.get_color(), zorder=5)
    ax.axhline(100 * CLIFF_RECALL, color="grey", linewidth=0.8, linestyle=":")
    ax.set_ylim(0, 105)
    ax.set_xlabel("compaction (k-th of the session)")
    ax.set_ylabel("planted facts kept (%)")
    ax.set_title(title or "Survival: facts kept after each compaction (x: the cliff)")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig
