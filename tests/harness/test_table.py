"""`comparison_table` and `style_table` on hand-made cells."""

from __future__ import annotations

import math

import pandas as pd

from workbench.harness._table import (
    changed_cells,
    comparison_table,
    style_table,
    table_delta,
    window_label,
)


def cell(template, window, status="ok", **kw):
    row = {"session_id": "s", "strategy": "goose", "model": "m", "template": template,
           "window": window, "repeat": 0, "status": status, "retained_tokens": None,
           "summary_tokens": None, "billed_input_tokens": 0, "billed_output_tokens": 0,
           "cost": 0.0, "parse_outcome": None, "attempts": 1, "retries": 0,
           "probe_recall": None, "files_recall": None}
    row.update(kw)
    return row


CELLS = pd.DataFrame([
    cell("goose", None, retained_tokens=1000, summary_tokens=300, billed_input_tokens=5000,
         billed_output_tokens=400, cost=0.01, parse_outcome="structured", probe_recall=0.6,
         files_recall=0.5),
    cell("goose", None, retained_tokens=2000, summary_tokens=500, billed_input_tokens=7000,
         billed_output_tokens=600, cost=0.03, parse_outcome="invalid_json", retries=2,
         attempts=3, probe_recall=0.8, files_recall=1.0),
    cell("goose", None, status="error", billed_input_tokens=9000, billed_output_tokens=0,
         cost=0.02, retries=4, attempts=5),
    cell("goose", 16000, retained_tokens=800, summary_tokens=200, billed_input_tokens=100,
         billed_output_tokens=50, cost=None, parse_outcome="structured", probe_recall=0.4),
    cell("terse", 8000, status="error", cost=None, attempts=0, retries=None),
])


def test_one_row_per_group_with_exact_values_and_error_cells_as_failures() -> None:
    t = comparison_table(CELLS)
    assert t[["template", "model", "window"]].values.tolist() == [
        ["goose", "m", 16000], ["goose", "m", "none"], ["terse", "m", 8000]]
    row = t.iloc[1].to_dict()
    assert row["cells"] == 3 and row["failures"] == 1
    assert row["retained_tokens"] == 1500 and row["summary_tokens"] == 400
    assert row["billed_tokens"] == (5400 + 7600) / 2
    assert math.isclose(row["cost"], 0.06)
    assert math.isclose(row["parse_success_pct"], 100 / 3)
    assert row["retries_mean"] == 2 and row["retries_max"] == 4
    assert math.isclose(row["probe_recall"], 0.7) and row["files_recall"] == 0.75


def test_cost_is_nan_when_a_cell_that_called_the_model_has_unknown_cost() -> None:
    t = comparison_table(CELLS)
    assert math.isnan(t.iloc[0]["cost"])
    assert t.iloc[2]["cost"] == 0.0  # the only cell made no call
    assert t.iloc[2]["failures"] == 1 and t.iloc[2]["parse_success_pct"] == 0.0


def test_the_column_order_is_the_keys_then_the_documented_columns() -> None:
    assert comparison_table(CELLS).columns.tolist() == [
        "template", "model", "window", "cells", "retained_tokens", "summary_tokens",
        "billed_tokens", "cost", "parse_success_pct", "retries_mean", "retries_max",
        "failures", "probe_recall", "files_recall"]


def test_grouping_by_other_columns_works() -> None:
    t = comparison_table(CELLS, by=("model",))
    assert t["model"].tolist() == ["m"] and t["cells"].tolist() == [5]


def test_style_table_formats_percentages_and_thousands() -> None:
    html = style_table(comparison_table(CELLS)).to_html()
    assert "70.0%" in html and "1,500" in html and "33.3%" in html and "none" in html


def test_table_delta_subtracts_per_group_and_marks_groups_on_one_side() -> None:
    a = comparison_table(CELLS)
    b_cells = CELLS.copy()
    b_cells.loc[0, "retained_tokens"] = 1400
    b = comparison_table(b_cells[b_cells["template"] == "goose"])
    d = table_delta(a, b)
    assert d[["template", "window", "present"]].values.tolist() == [
        ["goose", "16000", "both"], ["goose", "none", "both"], ["terse", "8000", "only a"]]
    assert d["retained_tokens"].tolist()[:2] == [0, 200]
    assert math.isnan(d["retained_tokens"].iloc[2])


def test_changed_cells_lists_only_cells_whose_status_or_parse_outcome_changed() -> None:
    a_cells = CELLS.assign(session_id=["s0", "s1", "s2", "s3", "s4"])
    b_cells = a_cells.assign(repeat=[0, 1, 0, 0, 0])  # the second cell has no partner now
    b_cells.loc[3, "parse_outcome"] = "invalid_json"
    b_cells.loc[4, "status"] = "ok"
    changed = changed_cells(a_cells, b_cells)
    assert changed.to_dict("records") == [
        {"session_id": "s3", "strategy": "goose", "model": "m", "template": "goose",
         "window": "16000", "repeat": 0, "status_a": "ok", "status_b": "ok",
         "parse_outcome_a": "structured", "parse_outcome_b": "invalid_json"},
        {"session_id": "s4", "strategy": "goose", "model": "m", "template": "terse",
         "window": "8000", "repeat": 0, "status_a": "error", "status_b": "ok",
         "parse_outcome_a": None, "parse_outcome_b": None},
    ]


def test_window_label_shows_none_for_a_missing_window_and_passes_labels_through() -> None:
    assert [window_label(v) for v in (None, float("nan"), 8000.0, "none", "8000")] == [
        "none", "none", 8000, "none", "8000"]
