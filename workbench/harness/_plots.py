"""Plots of a run's cells, as matplotlib Figures.

Figures are built with `matplotlib.figure.Figure` directly, never through pyplot: no backend is
selected, nothing needs a display, and figures made in a loop are freed with their last reference.
Jupyter shows a returned Figure inline; `Figure.savefig` writes it (the report does).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from workbench.harness._table import comparison_table, prepare_cells, window_label

_MARKERS = "osD^v<>PX*h"


def _empty(fig: Figure, ax: Any, what: str) -> Figure:
    ax.text(0.5, 0.5, f"no cells with {what}", ha="center", va="center",
            transform=ax.transAxes)
    ax.set_axis_off()
    return fig


def plot_tradeoff(cells: pd.DataFrame, *, x: str = "retained_tokens",
                  y: str = "probe_recall") -> Figure:
    """Retained tokens against probe recall: one marker per template/model (per strategy too,
    when the cells hold several).

    Markers sit at the mean over ok cells; error bars are 1.96 standard errors of each mean
    (absent for a single cell). Up and to the left is better.

    Args:
        cells: One row per cell (`Results.cells`).
        x: Column for the horizontal axis.
        y: Column for the vertical axis.

    Returns:
        The Figure.
    """
    df = prepare_cells(cells)
    fig = Figure(figsize=(7, 4.5), layout="constrained")
    ax = fig.add_subplot()
    if x not in df or y not in df:
        return _empty(fig, ax, f"{x} and {y}")
    df = df[df["ok"]].assign(**{x: pd.to_numeric(df[x], errors="coerce"),
                                y: pd.to_numeric(df[y], errors="coerce")}).dropna(subset=[x, y])
    if df.empty:
        return _empty(fig, ax, f"{x} and {y}")
    keys = (["strategy"] if "strategy" in df and df["strategy"].nunique() > 1 else []) + [
        "template", "model"]
    for i, (key, g) in enumerate(df.groupby(keys, sort=True)):
        n = len(g)
        xe = 1.96 * g[x].std(ddof=1) / np.sqrt(n) if n > 1 else None
        ye = 1.96 * g[y].std(ddof=1) / np.sqrt(n) if n > 1 else None
        ax.errorbar(g[x].mean(), g[y].mean(), xerr=xe, yerr=ye, fmt=_MARKERS[i % len(_MARKERS)],
                    capsize=3, markersize=8, label=f"{' / '.join(map(str, key))} (n={n})")
    ax.set_xlabel(f"{x} (mean)")
    ax.set_ylabel(f"{y} (mean)")
    ax.set_title("Retention against size")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small", loc="best")
    return fig


def plot_retries(cells: pd.DataFrame) -> Figure:
    """Mean retries (removal-ladder steps) by context window, one line per model.

    Windows are shown as categories in numeric order, with "none" (no cap) last.

    Args:
        cells: One row per cell (`Results.cells`).

    Returns:
        The Figure.
    """
    fig = Figure(figsize=(7, 4.5), layout="constrained")
    ax = fig.add_subplot()
    if cells.empty or "retries" not in cells or "window" not in cells:
        return _empty(fig, ax, "retries")
    table = comparison_table(cells, by=("model", "window"))
    order = list(dict.fromkeys(table["window"]))
    positions = {w: i for i, w in enumerate(order)}
    for i, (model, g) in enumerate(table.groupby("model", sort=True)):
        ax.plot([positions[w] for w in g["window"]], g["retries_mean"],
                marker=_MARKERS[i % len(_MARKERS)], label=str(model))
    ax.set_xticks(range(len(order)), [str(w) for w in order])
    ax.set_xlabel("context window (tokens)")
    ax.set_ylabel("retries per cell (mean)")
    ax.set_title("Removal-ladder retries by window")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    return fig


def plot_parse_success(cells: pd.DataFrame, *, by: str = "template",
                       hue: str = "model") -> Figure:
    """Parse success (% of cells whose reply parsed as structured JSON) as grouped bars.

    Args:
        cells: One row per cell (`Results.cells`).
        by: Column along the horizontal axis.
        hue: Column that splits each group into bars.

    Returns:
        The Figure.
    """
    fig = Figure(figsize=(7, 4.5), layout="constrained")
    ax = fig.add_subplot()
    if cells.empty:
        return _empty(fig, ax, "a parse outcome")
    table = comparison_table(cells, by=(by, hue))
    groups = list(dict.fromkeys(table[by]))
    hues = list(dict.fromkeys(table[hue]))
    width = min(0.8 / max(len(hues), 1), 0.4)
    for j, h in enumerate(hues):
        sub = table[table[hue] == h].set_index(by)["parse_success_pct"]
        xs = np.arange(len(groups)) + (j - (len(hues) - 1) / 2) * width
        ax.bar(xs, [sub.get(g, np.nan) for g in groups], width=width, label=str(h))
    ax.set_xticks(range(len(groups)), [str(window_label(g)) if by == "window" else str(g)
                                       for g in groups])
    ax.set_ylim(0, 105)
    ax.set_ylabel("parse success (%)")
    ax.set_title(f"Structured parse success by {by}")
    ax.legend(fontsize="small", title=hue)
    return fig


PLOTS = {"tradeoff": plot_tradeoff, "retries": plot_retries, "parse_success": plot_parse_success}
"""The plots a report draws, by file stem."""


def plot_results(results: Any, kind: str = "tradeoff", **kwargs: Any) -> Figure:
    """Draw one of `PLOTS` for a `Results` (or a cells DataFrame); what `Results.plot` calls.

    Args:
        results: A `Results` or a cells DataFrame.
        kind: ``tradeoff``, ``retries`` or ``parse_success``.
        **kwargs: Passed to the plot function.

    Returns:
        The Figure.

    Raises:
        ConfigError: `kind` is not a known plot.
    """
    from workbench.errors import ConfigError

    fn = PLOTS.get(kind)
    if fn is None:
        raise ConfigError(f"unknown plot {kind!r}; choose one of: {', '.join(PLOTS)}")
    cells = results if isinstance(results, pd.DataFrame) else results.cells
    return fn(cells, **kwargs)
