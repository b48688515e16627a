"""Plots: one panel per model x window, legend outside, colour per template, marker per model,
intervals clipped to the metric's range, compared sessions named."""

from __future__ import annotations

import re

import pandas as pd
import pytest
from matplotlib.colors import to_hex

from workbench.harness.results._plots import (
    MIN_FONT_PT,
    PLOTS,
    PNG_DPI,
    REPORT_PLOTS,
    plot_metric,
    plot_parse_success,
    plot_retries,
    plot_tradeoff,
    smallest_text_pt,
)


def cells() -> pd.DataFrame:
    rows = []
    recall = {"a": [1.0, 1.0, 0.5], "b": [0.2, 0.4, 0.3]}
    for model in ("m1", "m2"):
        for window in (8000, None):
            for template in ("a", "b"):
                for i, session in enumerate(("s1", "s2", "s3")):
                    failed = model == "m2" and window == 8000 and template == "b" and i == 2
                    rows.append({
                        "session_id": session, "strategy": "goose", "model": model,
                        "template": template, "window": window, "repeat": 0,
                        "status": "error" if failed else "ok",
                        "outcome_kind": "failed" if failed else "ok",
                        "retained_tokens": None if failed else 100 * (i + 1),
                        "summary_tokens": 50, "parse_outcome": None if failed else "structured",
                        "retries": 3 if failed else 4 * (i == 0), "attempts": 1,
                        "probe_recall": None if failed else recall[template][i]})
    return pd.DataFrame(rows)


def visible_axes(fig):
    return [ax for ax in fig.axes if ax.axison]


@pytest.mark.parametrize("kind", sorted(PLOTS))
def test_every_plot_has_one_panel_per_model_and_window_and_its_legend_outside(kind) -> None:
    fig = PLOTS[kind](cells())
    axes = visible_axes(fig)
    titles = [ax.get_title().splitlines()[0] for ax in axes]
    assert titles == ["m1 @ 8000", "m1 @ none", "m2 @ 8000", "m2 @ none"]
    assert all(ax.get_legend() is None for ax in axes)  # no legend over the data
    (legend,) = fig.legends
    labels = [t.get_text() for t in legend.get_texts()]
    assert labels == ["a", "b", "model: m1", "model: m2"]


def test_panels_name_the_sessions_every_template_completed() -> None:
    fig = plot_tradeoff(cells())
    titles = {ax.get_title().splitlines()[0]: ax.get_title().splitlines()[1]
              for ax in visible_axes(fig)}
    assert titles["m1 @ 8000"] == "n=3: s1, s2, s3"
    assert titles["m2 @ 8000"] == "n=2: s1, s2"  # template b failed on s3 there


def test_each_template_keeps_its_colour_and_each_model_its_marker() -> None:
    fig = plot_tradeoff(cells())
    seen: dict[str, set[str]] = {}
    markers: dict[str, set[str]] = {}
    for ax in visible_axes(fig):
        model = ax.get_title().split(" @ ")[0]
        for line in ax.get_lines():
            if line.get_marker() in ("None", "", None, "_", "|") or len(line.get_xdata()) != 1:
                continue
            seen.setdefault(to_hex(line.get_color()), set()).add(model)
            markers.setdefault(model, set()).add(line.get_marker())
    assert len(seen) == 2  # two templates, two colours, shared by every panel
    assert all(models == {"m1", "m2"} for models in seen.values())
    assert markers["m1"] != markers["m2"] and all(len(m) == 1 for m in markers.values())


def test_intervals_are_clipped_to_the_metric_range() -> None:
    fig = plot_tradeoff(cells())
    ax = visible_axes(fig)[0]
    tops = []
    for collection in ax.collections:  # error bar segments
        for seg in collection.get_segments():
            tops.append(max(seg[:, 1]))
    assert tops and max(tops) <= 1.0  # recall a: mean 0.83, 1.96 SE would pass 1.0
    retries = visible_axes(plot_retries(cells()))[0]
    highs = [max(seg[:, 1]) for c in retries.collections for seg in c.get_segments()]
    assert highs and max(highs) <= 4.0
    lows = [min(seg[:, 1]) for c in retries.collections for seg in c.get_segments()]
    assert min(lows) >= 0.0


def test_parse_success_bars_are_percentages_of_replies() -> None:
    fig = plot_parse_success(cells())
    ax = visible_axes(fig)[0]
    assert [round(p.get_height(), 6) for p in ax.patches] == [100.0, 100.0]


@pytest.mark.parametrize("kind", REPORT_PLOTS)
def test_a_report_plot_draws_one_metric_with_its_unit_and_no_text_under_9_points(kind) -> None:
    fig = PLOTS[kind](cells())
    labels = {ax.get_ylabel() for ax in visible_axes(fig)}
    assert len(labels) == 1, labels  # one metric: every panel the same axis
    (label,) = labels
    assert re.search(r"\((%|tokens|per cell)[^)]*\)$", label), label  # its unit
    assert smallest_text_pt(fig) >= MIN_FONT_PT == 9.0
    assert fig.get_size_inches()[0] * PNG_DPI == 1350  # shown at its own size on 1,400 px


def test_rates_are_drawn_in_percent_and_the_failure_rate_counts_every_outcome_cell() -> None:
    recall = visible_axes(plot_metric(cells(), "probe_recall"))[0]  # m1 @ 8000
    assert [round(p.get_height(), 4) for p in recall.patches] == [83.3333, 30.0]
    failures = {ax.get_title().splitlines()[0]: [round(p.get_height(), 4) for p in ax.patches]
                for ax in visible_axes(plot_metric(cells(), "failed"))}
    assert failures["m2 @ 8000"] == [0.0, 33.3333]  # b failed once in 3 cells
    assert failures["m1 @ 8000"] == [0.0, 0.0]
