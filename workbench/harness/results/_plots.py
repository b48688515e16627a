"""Plots of a run's cells, as matplotlib Figures.

Every plot has one panel per model x window (never pooling them), a distinct colour per template
(the same in every panel) and a distinct marker per model, the legend outside the data, and each
panel names the sessions it compares. Values are means over the sessions every template
completed in that panel (like the comparison table); intervals are 95 % normal intervals of
those means (1.96 standard errors; a proportion's Wilson interval), clipped to the metric's range.

The report draws `REPORT_PLOTS`: one metric per figure (so per panel), its unit on the axis.
Figures are `FIGURE_WIDTH` inches wide, `PNG_DPI` pixels per inch as written, and no text is
smaller than `MIN_FONT_PT`: shown at their own width on a 1,400 px page, every label is at least
11 px tall (`smallest_text_pt` says what a figure holds).

Figures are built with `matplotlib.figure.Figure` directly, never through pyplot: no backend is
selected, nothing needs a display, and figures made in a loop are freed with their last reference.
Jupyter shows a returned Figure inline; `Figure.savefig` writes it (the report does).
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Callable
from typing import Protocol, TypeAlias

import pandas as pd
from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.text import Text

from workbench.errors import ConfigError
from workbench.harness.experiment._windows import format_window
from workbench.harness.results._table import NO_WINDOW, mark_common, prepare_cells, window_label

_Colour: TypeAlias = tuple[float, float, float, float]
"""An RGBA colour, as a colormap gives it."""


class HasCells(Protocol):
    """What `plot_results` reads of a `Results` (which imports this module): its cells."""

    @property
    def cells(self) -> pd.DataFrame: ...


_MARKERS = "osD^v<>PX*h"
MAX_SESSION_NAMES = 4
"""Session ids named under a panel before "(+N more)"."""
PNG_DPI = 100
"""Pixels per inch of the PNGs the report writes."""
FIGURE_WIDTH = 13.5
"""Inches: 1,350 px at `PNG_DPI`, the width of the report's content on a 1,400 px page."""
MIN_FONT_PT = 9.0
"""The smallest text on a plot, in points: 12.5 px at `PNG_DPI`."""
TITLE_PT, LABEL_PT = 11.0, 10.0
PANEL_COLUMNS = 4
"""Panels per row (a model x window each)."""
PANEL_HEIGHT = 2.9
"""Inches per row of panels."""

METRIC_AXES: dict[str, tuple[str, str, float]] = {
    "probe_recall": ("probe recall: % of probe items the summary kept", "recall (%)", 100.0),
    "retained_tokens": ("retained tokens per cell", "retained (tokens)", 1.0),
    "failed": ("compaction failures: % of cells with an outcome", "failures (%)", 100.0),
    "qa_accuracy": ("questions answered exactly: % of questions", "answered (%)", 100.0),
    "useful_structured": ("useful structured summaries: % of cells", "useful (%)", 100.0),
}
"""Per metric a report plot draws: the figure's title, each panel's axis label with the unit,
and the factor from the stored value to that unit (a rate of 0.85 is drawn as 85 %)."""

METRIC_RANGES: dict[str, tuple[float, float]] = {
    "probe_recall": (0.0, 1.0), "files_recall": (0.0, 1.0), "errors_recall": (0.0, 1.0),
    "requests_recall": (0.0, 1.0), "facts_recall": (0.0, 1.0), "fill_rate": (0.0, 1.0),
    "template_echo": (0.0, 1.0), "parse_success_pct": (0.0, 100.0),
    "retries": (0.0, 4.0),
}
"""Bounds intervals are clipped to; other metrics are clipped at 0 below only."""


def _empty(fig: Figure, ax: Axes, what: str) -> Figure:
    ax.text(0.5, 0.5, f"no cells with {what}", ha="center", va="center",
            transform=ax.transAxes)
    ax.set_axis_off()
    return fig


def _clip(metric: str, low: float, high: float) -> tuple[float, float]:
    lo, hi = METRIC_RANGES.get(metric, (0.0, math.inf))
    return max(low, lo), min(high, hi)


def _mean_interval(values: pd.Series, metric: str) -> tuple[float, float, float]:
    v = pd.to_numeric(values, errors="coerce").dropna()
    if v.empty:
        return math.nan, math.nan, math.nan
    mean = float(v.mean())
    if len(v) < 2:
        return mean, mean, mean
    half = 1.96 * float(v.std(ddof=1)) / math.sqrt(len(v))
    low, high = _clip(metric, mean - half, mean + half)
    # A mean at (or, by rounding, just past) the edge of the range keeps a zero-length bar.
    return mean, min(low, mean), max(high, mean)


def _wilson(successes: int, n: int) -> tuple[float, float, float]:
    if n == 0:
        return math.nan, math.nan, math.nan
    p, z = successes / n, 1.96
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    low, high = 100 * max(centre - half, 0.0), 100 * min(centre + half, 1.0)
    # Rounding can put an end a hair past the estimate at p = 0 or 1; the bar is never negative.
    return 100 * p, min(low, 100 * p), max(high, 100 * p)


def _prepared(cells: pd.DataFrame) -> pd.DataFrame:
    df = prepare_cells(cells)
    if "strategy" in df and df["strategy"].nunique() > 1:
        # Several strategies: each (strategy, template) is its own series, like a template.
        df["template"] = df["strategy"].astype(str) + " / " + df["template"].astype(str)
    df["_common"] = mark_common(df, ("template", "model", "window"), "template")
    df["_window"] = df["window"].map(window_label).astype(object)
    return df


def _panels(df: pd.DataFrame) -> list[tuple[str, str | int, pd.DataFrame]]:
    def order(item: tuple[str, str | int, pd.DataFrame]) -> tuple[str, float]:
        w = item[1]
        return item[0], (math.inf if w == NO_WINDOW else float(w))

    out = [(str(m), w, g) for (m, w), g in df.groupby(["model", "_window"], sort=False)]
    return sorted(out, key=order)


def _styles(df: pd.DataFrame) -> tuple[dict[str, _Colour], dict[str, str]]:
    templates = sorted(df["template"].dropna().astype(str).unique())
    models = sorted(df["model"].dropna().astype(str).unique())
    cmap = colormaps["tab10" if len(templates) <= 10 else "tab20"]
    colours = {t: cmap(i % cmap.N) for i, t in enumerate(templates)}
    markers = {m: _MARKERS[i % len(_MARKERS)] for i, m in enumerate(models)}
    return colours, markers


def _grid(n: int, title: str) -> tuple[Figure, list[Axes]]:
    cols = max(min(n, PANEL_COLUMNS), 1)
    rows = max(math.ceil(n / cols), 1)
    fig = Figure(figsize=(FIGURE_WIDTH, PANEL_HEIGHT * rows + 0.9), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).ravel().tolist()
    for ax in axes[n:]:
        ax.set_axis_off()
    for ax in axes:
        ax.tick_params(labelsize=MIN_FONT_PT)
    fig.suptitle(title, fontsize=TITLE_PT)
    return fig, axes[:max(n, 1)]


def _panel_title(ax: Axes, model: str, window: str | int, g: pd.DataFrame) -> None:
    sessions = sorted(g.loc[g["_common"], "session_id"].astype(str).unique())
    shown = ", ".join(sessions[:MAX_SESSION_NAMES])
    if len(sessions) > MAX_SESSION_NAMES:
        shown += f" (+{len(sessions) - MAX_SESSION_NAMES} more)"
    label = window if isinstance(window, str) else format_window(int(window))
    # A panel is a quarter of the figure: the session list wraps instead of running into the
    # next panel's title.
    names = textwrap.fill(f"n={len(sessions)}: {shown or 'no common session'}", width=38,
                          break_on_hyphens=False)
    ax.set_title(f"{model} @ {label}\n{names}", fontsize=MIN_FONT_PT)


def _legend(fig: Figure, colours: dict[str, _Colour], markers: dict[str, str]) -> None:
    handles = [Line2D([], [], color=c, marker="s", linestyle="", label=t)
               for t, c in colours.items()]
    handles += [Line2D([], [], color="0.3", marker=m, linestyle="", label=f"model: {name}")
                for name, m in markers.items()]
    # Below the panels, across the figure: beside them it would take a panel's width.
    fig.legend(handles=handles, loc="outside lower center", fontsize=MIN_FONT_PT,
               title="template", title_fontsize=LABEL_PT, ncols=min(len(handles), 5))


def smallest_text_pt(fig: Figure) -> float:
    """The size in points of the smallest visible text on `fig` (titles, labels, ticks,
    legend); ``inf`` when it holds none."""
    fig.canvas.draw_idle()
    sizes = [t.get_fontsize() for t in fig.findobj(Text)
             if t.get_visible() and t.get_text().strip()]
    return float(min(sizes)) if sizes else math.inf


def plot_tradeoff(cells: pd.DataFrame, *, x: str = "retained_tokens",
                  y: str = "probe_recall") -> Figure:
    """Retained tokens against probe recall, one panel per model x window.

    Each template is a point at its means over the panel's common sessions, with 95 % intervals
    on both axes clipped to each metric's range. Up and to the left is better.

    Args:
        cells: One row per cell (`Results.cells`).
        x: Column for the horizontal axis.
        y: Column for the vertical axis.

    Returns:
        The Figure.
    """
    if cells.empty or x not in cells or y not in cells:
        fig = Figure(figsize=(7, 4.5), layout="constrained")
        return _empty(fig, fig.add_subplot(), f"{x} and {y}")
    df = _prepared(cells)
    colours, markers = _styles(df)
    panels = _panels(df)
    fig, axes = _grid(len(panels), f"{y} against {x} (means over common sessions, 95% CI)")
    for ax, (model, window, g) in zip(axes, panels, strict=False):
        common = g[g["_common"]]
        for template, t in common.groupby("template", sort=True):
            mx, xlo, xhi = _mean_interval(t[x], x)
            my, ylo, yhi = _mean_interval(t[y], y)
            if math.isnan(mx) or math.isnan(my):
                continue
            ax.errorbar(mx, my, xerr=[[mx - xlo], [xhi - mx]], yerr=[[my - ylo], [yhi - my]],
                        fmt=markers[model], color=colours[str(template)], capsize=3,
                        markersize=7)
        _panel_title(ax, model, window, g)
        ax.set_xlabel(x, fontsize=LABEL_PT)
        ax.set_ylabel(y, fontsize=LABEL_PT)
        if y in METRIC_RANGES:
            lo, hi = METRIC_RANGES[y]
            ax.set_ylim(lo - 0.05 * (hi - lo), hi + 0.05 * (hi - lo))
        ax.grid(True, alpha=0.3)
    _legend(fig, colours, markers)
    return fig


def _bars(cells: pd.DataFrame, metric: str, title: str, ylabel: str,
          value: Callable[[pd.DataFrame], tuple[float, float, float]],
          limits: tuple[float, float | None] | None = None) -> Figure:
    if cells.empty:
        fig = Figure(figsize=(7, 4.5), layout="constrained")
        return _empty(fig, fig.add_subplot(), metric)
    df = _prepared(cells)
    colours, markers = _styles(df)
    panels = _panels(df)
    fig, axes = _grid(len(panels), title)
    for ax, (model, window, g) in zip(axes, panels, strict=False):
        templates = sorted(g["template"].astype(str).unique())
        for i, template in enumerate(templates):
            mean, low, high = value(g[g["template"].astype(str) == template])
            if math.isnan(mean):
                continue
            ax.bar(i, mean, color=colours[template], width=0.7)
            ax.errorbar(i, mean, yerr=[[mean - low], [high - mean]], fmt=markers[model],
                        color="0.15", capsize=3, markersize=5)
        ax.set_xticks(range(len(templates)), templates, rotation=25, ha="right",
                      fontsize=MIN_FONT_PT)
        lo, hi = limits if limits is not None else METRIC_RANGES.get(metric, (0.0, None))
        ax.set_ylim(lo, None if hi is None else hi * 1.05)
        ax.set_ylabel(ylabel, fontsize=LABEL_PT)
        ax.grid(True, axis="y", alpha=0.3)
        _panel_title(ax, model, window, g)
    _legend(fig, colours, markers)
    return fig


def plot_retries(cells: pd.DataFrame) -> Figure:
    """Mean removal-ladder retries per template, one panel per model x window.

    Means over the panel's common sessions with 95 % intervals clipped to 0-4 (the ladder's
    five steps).

    Args:
        cells: One row per cell (`Results.cells`).

    Returns:
        The Figure.
    """
    if cells.empty or "retries" not in cells:
        fig = Figure(figsize=(7, 4.5), layout="constrained")
        return _empty(fig, fig.add_subplot(), "retries")
    return _bars(cells, "retries", "removal-ladder retries per cell (means over common sessions, "
                 "95% CI)",
                 "retries (per cell)",
                 lambda t: _mean_interval(t.loc[t["_common"], "retries"], "retries"))


def plot_parse_success(cells: pd.DataFrame) -> Figure:
    """Parse success per template (% of replies that parsed), one panel per model x window.

    Over the panel's common sessions (each got a reply from every template), with a Wilson
    95 % interval (inside 0-100 %).

    Args:
        cells: One row per cell (`Results.cells`).

    Returns:
        The Figure.
    """
    def value(t: pd.DataFrame) -> tuple[float, float, float]:
        replies = t[t["_common"]]
        return _wilson(int(replies["parse_success"].sum()), len(replies))

    return _bars(cells, "parse_success_pct",
                 "structured parse success: % of replies (over common sessions, Wilson 95% CI)",
                 "parsed (% of replies)", value)


def plot_metric(cells: pd.DataFrame, metric: str = "probe_recall") -> Figure:
    """One metric per template, one panel per model x window, its unit on the axis.

    Bars are means over the panel's common sessions with 95 % intervals; ``failed`` is the
    failure rate over every cell with an outcome (infrastructure errors apart), with a Wilson
    interval. Rates are drawn in percent (`METRIC_AXES`).

    Args:
        cells: One row per cell (`Results.cells`).
        metric: A cell column; `METRIC_AXES` names its unit.

    Returns:
        The Figure.
    """
    what, axis, factor = METRIC_AXES.get(metric, (metric, metric, 1.0))
    if cells.empty or (metric != "failed" and metric not in cells):
        fig = Figure(figsize=(7, 4.5), layout="constrained")
        return _empty(fig, fig.add_subplot(), metric)

    def value(t: pd.DataFrame) -> tuple[float, float, float]:
        if metric == "failed":
            kinds = t["outcome_kind"] if "outcome_kind" in t else t["status"].where(
                t["status"] == "ok", "failed")
            outcomes = kinds[kinds != "error"]
            return _wilson(int((outcomes == "failed").sum()), len(outcomes))
        mean, low, high = _mean_interval(t.loc[t["_common"], metric], metric)
        return factor * mean, factor * low, factor * high

    title = f"{what} (means over common sessions, 95% CI)"
    return _bars(cells, metric, title, axis, value,
                 limits=(0.0, 100.0) if factor == 100.0 else (0.0, None))


def plot_recall(cells: pd.DataFrame) -> Figure:
    """`plot_metric` of probe recall (percent of probe items the summary kept)."""
    return plot_metric(cells, "probe_recall")


def plot_retained(cells: pd.DataFrame) -> Figure:
    """`plot_metric` of retained tokens (tokens per cell)."""
    return plot_metric(cells, "retained_tokens")


def plot_failures(cells: pd.DataFrame) -> Figure:
    """`plot_metric` of the compaction failure rate (percent of cells with an outcome)."""
    return plot_metric(cells, "failed")


PLOTS = {"tradeoff": plot_tradeoff, "retries": plot_retries, "parse_success": plot_parse_success,
         "recall": plot_recall, "retained_tokens": plot_retained, "failures": plot_failures}
"""Every plot `Results.plot` draws, by name."""
REPORT_PLOTS = ("recall", "retained_tokens", "failures", "parse_success", "retries")
"""The plots the report draws, in order: one metric each (the tradeoff, two metrics on one
panel, stays for notebooks)."""


def plot_results(results: HasCells | pd.DataFrame, kind: str = "tradeoff",
                 **kwargs: object) -> Figure:
    """Draw one of `PLOTS` for a `Results` (or a cells DataFrame); what `Results.plot` calls.

    Args:
        results: A `Results` or a cells DataFrame.
        kind: A name in `PLOTS` (``tradeoff``, ``recall``, ``retained_tokens``, ``failures``,
            ``parse_success``, ``retries``).
        **kwargs: Passed to the plot function.

    Returns:
        The Figure.

    Raises:
        ConfigError: `kind` is not a known plot.
    """
    fn = PLOTS.get(kind)
    if fn is None:
        raise ConfigError(f"unknown plot {kind!r}; choose one of: {', '.join(PLOTS)}")
    cells = results if isinstance(results, pd.DataFrame) else results.cells
    return fn(cells, **kwargs)
