"""`comparison_table` and `style_table` on hand-made cells."""

from __future__ import annotations

import math

import pandas as pd

from workbench.harness.results._table import comparison_table, window_label
from workbench.harness.results._table_delta import changed_cells, table_delta
from workbench.harness.results._table_format import style_table


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


def test_one_row_per_group_with_exact_values_and_error_cells_counted_apart() -> None:
    t = comparison_table(CELLS)
    assert t[["template", "model", "window"]].values.tolist() == [
        ["goose", "m", 16000], ["goose", "m", "none"], ["terse", "m", 8000]]
    row = t.iloc[1].to_dict()
    assert (row["cells"], row["replies"], row["failed"], row["errors"], row["failures"]) == (
        3, 2, 0, 1, 1)
    assert row["retained_tokens"] == 1500 and row["summary_tokens"] == 400
    assert row["billed_tokens"] == (5400 + 7600) / 2
    assert math.isclose(row["cost"], 0.02)  # a mean per cell, like the tokens
    # Stored without spent columns (before m015): what a cell was billed is what it paid.
    assert math.isclose(row["cost_total"], 0.06)  # every cell's spending, the error's too
    assert row["spent_tokens"] == 5400 + 7600 + 9000
    assert row["parse_success_pct"] == 50.0  # over the two cells of the common sessions
    # The most ladder steps of a cell in the common sessions (the error cell's 4 is not one).
    assert row["retries_mean"] == 1 and row["retries_max"] == 2
    assert math.isclose(row["probe_recall"], 0.7) and row["files_recall"] == 0.75
    assert (row["n"], row["mean_over"]) == (2, "common")


def test_cost_is_nan_when_a_cell_that_called_the_model_has_unknown_cost() -> None:
    t = comparison_table(CELLS)
    assert math.isnan(t.iloc[0]["cost"]) and math.isnan(t.iloc[0]["cost_total"])
    assert t.iloc[2]["cost_total"] == 0.0  # the only cell made no call
    assert t.iloc[2]["failures"] == 1 and math.isnan(t.iloc[2]["parse_success_pct"])


def test_the_column_order_is_the_keys_then_the_documented_columns() -> None:
    assert comparison_table(CELLS).columns.tolist() == [
        "template", "model", "window", "effective_window", "window_tokenizer", "cells",
        "replies", "failed", "errors", "failures", "failure_rate", "n", "mean_over",
        "parse_success_pct", "useful_structured_pct", "retained_tokens", "summary_tokens",
        "billed_tokens", "billed_reported", "billed_estimated", "cost", "retries_mean",
        "retries_max", "spent_tokens", "cost_total", "http_retries_total", "probe_recall",
        "files_recall"]


def run_cells(rows) -> pd.DataFrame:
    """Cells of a constructed run: (session, template, window, kind, retained, extra)."""
    out = []
    for session, template, window, kind, retained, extra in rows:
        status = "ok" if kind == "ok" else "error"
        error_type = {"ok": None, "failed": "CompactionContextExceeded",
                      "error": "CompactionCallFailed"}[kind]
        out.append({"session_id": session, "strategy": "goose", "model": "m",
                    "template": template, "window": window, "repeat": 0, "status": status,
                    "outcome_kind": kind, "error_type": error_type,
                    "retained_tokens": retained, "summary_tokens": None,
                    "billed_input_tokens": 0, "billed_output_tokens": 0, "cost": 0.0,
                    "parse_outcome": None if kind != "ok" else "structured", "attempts": 1,
                    "retries": 0, **extra})
    return pd.DataFrame(out)


def test_means_use_only_the_sessions_every_template_completed_and_say_how_many() -> None:
    cells = run_cells([
        ("s1", "a", 8000, "ok", 600, {}), ("s1", "b", 8000, "ok", 580, {}),
        ("s2", "a", 8000, "ok", 800, {}), ("s2", "b", 8000, "failed", None, {}),
        ("s3", "a", 8000, "ok", 700, {}), ("s3", "b", 8000, "ok", 600, {}),
        ("s4", "a", 8000, "error", None, {}), ("s4", "b", 8000, "ok", 900, {}),
        # another window is its own stratum: s2 completed by both there
        ("s2", "a", 32000, "ok", 1000, {}), ("s2", "b", 32000, "ok", 1100, {}),
    ])
    t = comparison_table(cells).set_index(["template", "window"])
    assert t.loc[("a", 8000), "retained_tokens"] == 650  # s1 and s3 only
    assert t.loc[("b", 8000), "retained_tokens"] == 590
    assert t.loc[("a", 8000), "n"] == 2 and t.loc[("b", 8000), "n"] == 2
    assert t.loc[("a", 32000), "n"] == 1 and t.loc[("a", 32000), "retained_tokens"] == 1000
    assert (t.loc[("b", 8000), "failed"], t.loc[("b", 8000), "errors"]) == (1, 0)
    assert (t.loc[("a", 8000), "failed"], t.loc[("a", 8000), "errors"]) == (0, 1)
    assert t.loc[("b", 8000), "failure_rate"] == 0.25  # 1 failed of 4 cells with an outcome
    assert t.loc[("a", 8000), "failure_rate"] == 0.0  # the error is not an outcome
    assert t.loc[("b", 8000), "parse_success_pct"] == 100.0  # failed cells got no reply


def test_survivors_means_only_when_asked_and_labelled_so() -> None:
    cells = run_cells([
        ("s1", "a", 8000, "ok", 600, {}), ("s1", "b", 8000, "ok", 580, {}),
        ("s2", "a", 8000, "ok", 800, {}), ("s2", "b", 8000, "failed", None, {}),
    ])
    t = comparison_table(cells, survivors=True).set_index("template")
    assert t.loc["a", "retained_tokens"] == 700 and t.loc["a", "n"] == 2
    assert t.loc["b", "retained_tokens"] == 580 and t.loc["b", "n"] == 1
    assert set(t["mean_over"]) == {"survivors"}


def test_parse_success_counts_replies_and_useful_excludes_echoes_and_empty_summaries() -> None:
    cells = run_cells([
        ("s1", "a", None, "ok", 1, {"fill_rate": 0.5, "template_echo": 0.0}),
        ("s2", "a", None, "ok", 1, {"fill_rate": 1.0, "template_echo": 1.0}),   # echo
        ("s3", "a", None, "ok", 1, {"fill_rate": 0.0, "template_echo": None}),  # empty
        ("s4", "a", None, "ok", 1, {"fill_rate": 0.3, "template_echo": None}),  # short strings
        ("s5", "a", None, "ok", 1, {"parse_outcome": "invalid_json"}),
        ("s6", "a", None, "failed", None, {}),
    ])
    row = comparison_table(cells).iloc[0]
    assert row["replies"] == 5 and row["failed"] == 1
    assert row["parse_success_pct"] == 80.0
    assert row["useful_structured_pct"] == 40.0


def test_billing_keeps_reported_and_estimated_tokens_apart() -> None:
    cells = run_cells([
        ("s1", "a", None, "ok", 1, {"billed_input_tokens": 900, "billed_output_tokens": 100,
                                    "reported_tokens": 1000, "estimated_tokens": 0}),
        ("s2", "a", None, "ok", 1, {"billed_input_tokens": 500, "billed_output_tokens": 100,
                                    "reported_tokens": 500, "estimated_tokens": 100}),
    ])
    row = comparison_table(cells).iloc[0]
    assert (row["billed_tokens"], row["billed_reported"], row["billed_estimated"]) == (
        800, 750, 50)


def test_the_row_shows_the_effective_window_and_the_tokenizer_and_sums_http_retries_as_a_total(
        ) -> None:
    cells = run_cells([
        ("s1", "a", 32768, "ok", 1, {"effective_window": 16384, "window_tokenizer": "gemma3-270m",
                                     "http_retries": 2}),
        ("s2", "a", 32768, "ok", 1, {"effective_window": 16384, "window_tokenizer": "gemma3-270m",
                                     "http_retries": 1}),
        ("s1", "b", 8192, "ok", 1, {}),
    ])
    t = comparison_table(cells)
    assert t[["window", "effective_window", "window_tokenizer",
              "http_retries_total"]].values.tolist() == [
        [32768, 16384, "gemma3-270m", 3], [8192, 8192, None, 0]]


def test_grouping_by_other_columns_works() -> None:
    t = comparison_table(CELLS, by=("model",))
    assert t["model"].tolist() == ["m"] and t["cells"].tolist() == [5]


def test_style_table_formats_percentages_and_thousands() -> None:
    html = style_table(comparison_table(CELLS)).to_html()
    assert "70.0%" in html and "1,500" in html and "50.0%" in html and "none" in html


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


def test_every_mean_of_a_row_is_over_the_same_n_sessions_and_sums_are_named_as_sums() -> None:
    cells = run_cells([
        ("s1", "a", 8000, "ok", 600, {"retries": 1, "http_retries": 1, "calls_made": 1,
                                      "calls_shared": 0}),
        ("s1", "b", 8000, "ok", 500, {"retries": 0, "calls_made": 0, "calls_shared": 1}),
        # b failed s2, so s2 is not a common session: a's unparsed reply there and its four
        # ladder steps stay out of a's means, and only the sums and counts see them.
        ("s2", "a", 8000, "ok", 900, {"parse_outcome": "invalid_json", "retries": 4,
                                      "http_retries": 2, "calls_made": 5, "calls_shared": 0}),
        ("s2", "b", 8000, "failed", None, {"retries": 4, "calls_made": 5, "calls_shared": 0}),
    ])
    t = comparison_table(cells).set_index("template")
    a = t.loc["a"]
    assert (a["n"], a["cells"], a["replies"]) == (1, 2, 2)
    assert (a["parse_success_pct"], a["retained_tokens"], a["retries_max"]) == (100.0, 600, 1)
    assert a["calls"] == 1.0 and t.loc["b", "calls"] == 1.0  # one call each, sent or shared
    assert (a["calls_made_total"], a["calls_shared_total"], a["http_retries_total"]) == (6, 0, 3)
    assert (t.loc["b", "calls_made_total"], t.loc["b", "calls_shared_total"]) == (5, 1)
    assert {"http_retries", "calls_made", "calls_shared"}.isdisjoint(t.columns)


def test_a_model_free_row_shows_n_a_where_no_reply_call_or_ladder_exists() -> None:
    from workbench.harness.results._table import MODEL_ONLY_COLUMNS, not_applicable

    cells = run_cells([("s1", "a", 8000, "ok", 600, {"calls_made": 1, "calls_shared": 0})])
    cells = pd.concat([cells, run_cells([("s1", "a", 8000, "ok", 400, {
        "calls_made": 0, "calls_shared": 0, "parse_outcome": None})]).assign(
        strategy="mask", model="none")], ignore_index=True)
    t = comparison_table(cells).set_index("strategy")
    mask, goose = t.loc["mask"], t.loc["goose"]
    assert mask["retained_tokens"] == 400 and mask["billed_tokens"] == 0  # these do apply
    assert all(pd.isna(mask[c]) for c in MODEL_ONLY_COLUMNS if c in t.columns)
    assert not_applicable(mask) == frozenset(MODEL_ONLY_COLUMNS) and not not_applicable(goose)
    assert goose["parse_success_pct"] == 100.0
    html = style_table(comparison_table(cells)).to_html()
    assert "n/a" in html


def test_a_plain_text_summary_shows_n_a_for_parsing_not_zero_percent() -> None:
    """A policy's summary is plain text (parse outcome ``text``) or, when the policy needed no
    call, absent: "parsed" cannot apply, so it reads n/a, never "0 %" (which would say every
    reply failed to parse). The model columns that do apply (calls, ladder) stay numbers."""
    from workbench.harness.report._text_table import text_table
    from workbench.harness.results._table import PARSE_ONLY_COLUMNS, not_applicable

    cells = run_cells([("s1", "a", 8000, "ok", 600, {"calls_made": 1, "calls_shared": 0})])
    policy = run_cells([("s1", "a", 8000, "ok", 400, {"parse_outcome": "text", "calls_made": 1,
                                                      "calls_shared": 0}),
                        ("s2", "a", 8000, "ok", 300, {"parse_outcome": None, "calls_made": 0,
                                                      "calls_shared": 0})])
    cells = pd.concat([cells, policy.assign(strategy="codex")], ignore_index=True)
    t = comparison_table(cells).set_index("strategy")
    codex, goose = t.loc["codex"], t.loc["goose"]
    assert codex["n"] == 2 and pd.isna(codex["parse_success_pct"])
    assert pd.isna(codex["useful_structured_pct"]) and codex["calls"] == 0.5
    assert not_applicable(codex) == frozenset(PARSE_ONLY_COLUMNS) and not not_applicable(goose)
    assert goose["parse_success_pct"] == 100.0
    # A goose reply that did not parse is still a 0 (parsing applied and failed).
    failed = run_cells([("s1", "a", 8000, "ok", 600, {"parse_outcome": "invalid_json"})])
    assert comparison_table(failed).loc[0, "parse_success_pct"] == 0.0
    lines = text_table(comparison_table(cells).reset_index(drop=True)).splitlines()
    row = next(line for line in lines if line.startswith("codex"))
    assert "n/a" in row.split() and "0.0" not in row.split()
