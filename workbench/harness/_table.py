"""The comparison table: one row per (template, model, window) group of cells.

Rules, so the numbers can be checked by hand:

- ``cells`` counts every cell of the group; ``failures`` counts cells with status ``error``.
- Token means (``retained_tokens``, ``summary_tokens``, ``billed_tokens`` = billed input + output)
  use only ``ok`` cells: an error cell counts as a failure and does not pull a mean down.
- ``cost`` is the sum over every cell (money spent on failed cells was spent too); it is NaN when
  any cell that made a model call has an unknown cost.
- ``parse_success_pct`` is 100 x (cells whose parse outcome is ``structured``) / ``cells``; error
  cells count as not parsed.
- ``retries_mean`` / ``retries_max`` cover every cell that recorded retries.
- Recall and fill columns are means over the cells that have the metric (ok cells).
- A window of None (no cap) shows as ``"none"``.
- ``calls_made`` / ``calls_shared`` (when the store has them) sum the model calls the group's
  cells sent and the calls they took from another cell's identical prompt (billed once, there).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

CELL_KEYS = ("session_id", "strategy", "model", "template", "window", "repeat")
"""The columns that identify a cell within a run (its key; `cell_id` hashes them)."""

NO_WINDOW = "none"
DEFAULT_BY = ("template", "model", "window")
"""Default grouping; ``strategy`` is put first when the cells hold more than one strategy."""

RECALL_COLUMNS = ("probe_recall", "files_recall", "errors_recall", "requests_recall",
                  "facts_recall", "stale_avoided", "fill_rate", "template_echo",
                  "compression_ratio")
"""Metric columns averaged into the table when the cells have them."""

PERCENT_COLUMNS = frozenset(RECALL_COLUMNS) - {"compression_ratio"}

CALL_COLUMNS = ("calls_made", "calls_shared")
"""Call counts summed per group when the cells have them (shared calls, migration m012)."""


def prepare_cells(cells: pd.DataFrame) -> pd.DataFrame:
    """A copy of `cells` with derived columns: ``billed_tokens`` and ``ok``.

    Args:
        cells: Cells as read from the store (`Results.cells`).

    Returns:
        The copy; ``billed_tokens`` is input + output tokens, ``ok`` is status == "ok".
    """
    df = cells.copy()
    if "billed_tokens" not in df.columns:
        df["billed_tokens"] = (_numeric(df, "billed_input_tokens")
                               + _numeric(df, "billed_output_tokens"))
    df["ok"] = df["status"].eq("ok") if "status" in df else True
    return df


def window_label(value: Any) -> Any:
    """``"none"`` for a missing window, else the window as an int (labels pass through)."""
    if isinstance(value, str):
        return value
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return NO_WINDOW
    return int(value)


def _several(df: pd.DataFrame, col: str) -> bool:
    return col in df.columns and df[col].nunique(dropna=False) > 1


def _numeric(df: pd.DataFrame, col: str) -> pd.Series:
    if col not in df.columns:
        return pd.Series(np.nan, index=df.index, dtype=float)
    return pd.to_numeric(df[col], errors="coerce")


def _summarise(g: pd.DataFrame) -> dict[str, Any]:
    ok = g["ok"].to_numpy(dtype=bool)
    cost = _numeric(g, "cost")
    attempts = _numeric(g, "attempts")
    called = attempts.isna() | (attempts > 0)
    cost_known = not cost[called].isna().any()
    parsed = g["parse_outcome"].eq("structured").sum() if "parse_outcome" in g else 0
    retries = _numeric(g, "retries")
    row: dict[str, Any] = {
        "cells": len(g),
        "retained_tokens": _numeric(g, "retained_tokens")[ok].mean(),
        "summary_tokens": _numeric(g, "summary_tokens")[ok].mean(),
        "billed_tokens": _numeric(g, "billed_tokens")[ok].mean(),
        "cost": float(cost.fillna(0).sum()) if cost_known else np.nan,
        "parse_success_pct": 100.0 * parsed / len(g) if len(g) else np.nan,
        "retries_mean": retries.mean(),
        "retries_max": retries.max(),
        "failures": int((~ok).sum()),
    }
    for col in CALL_COLUMNS:
        if col in g.columns:
            row[col] = int(_numeric(g, col).fillna(0).sum())
    for col in RECALL_COLUMNS:
        if col in g.columns:
            row[col] = _numeric(g, col).mean()
    return row


def comparison_table(cells: pd.DataFrame,
                     by: Sequence[str] = ("template", "model", "window")) -> pd.DataFrame:
    """Summarise cells per group (see the module docstring for each column's rule).

    Args:
        cells: One row per cell (`Results.cells`), metrics expanded into columns.
        by: Grouping columns, in display order. With the default, ``strategy`` is put first
            when the cells hold more than one strategy.

    Returns:
        One row per group, the `by` columns first, sorted by them (windows numerically, then
        "none").
    """
    by = list(by)
    if tuple(by) == DEFAULT_BY and _several(cells, "strategy"):
        by = ["strategy", *by]  # strategies are a dimension like any other once there are two
    df = prepare_cells(cells)
    columns = by + ["cells", "retained_tokens", "summary_tokens", "billed_tokens", "cost",
                    "parse_success_pct", "retries_mean", "retries_max", "failures"]
    columns += [c for c in CALL_COLUMNS if c in df.columns]
    columns += [c for c in RECALL_COLUMNS if c in df.columns]
    if df.empty:
        return pd.DataFrame(columns=columns)
    rows = []
    for key, g in df.groupby(by, dropna=False, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        rows.append({**dict(zip(by, key, strict=True)), **_summarise(g)})
    table = pd.DataFrame(rows, columns=columns)
    if "window" in by:
        table["window"] = table["window"].map(window_label).astype(object)
    return table.reset_index(drop=True)


def column_formats(columns: Sequence[str]) -> dict[str, str]:
    """Format strings per column: recalls as percentages, tokens with thousands separators.

    Args:
        columns: Column names of a `comparison_table` (others get no entry).

    Returns:
        ``{column: format string}`` for `str.format`.
    """
    fmt: dict[str, str] = {}
    for col in columns:
        if col in PERCENT_COLUMNS:
            fmt[col] = "{:.1%}"
        elif col == "parse_success_pct":
            fmt[col] = "{:.1f}%"
        elif col in ("retained_tokens", "summary_tokens", "billed_tokens"):
            fmt[col] = "{:,.0f}"
        elif col == "cost":
            fmt[col] = "${:,.4f}"
        elif col in ("retries_mean", "compression_ratio"):
            fmt[col] = "{:.3f}"
        elif col in ("cells", "failures", "retries_max", *CALL_COLUMNS):
            fmt[col] = "{:,.0f}"
    return fmt


def format_cell(value: Any, fmt: str | None) -> str:
    """One value as display text: "—" for missing, `fmt` applied to numbers."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "—"
    if fmt is not None and isinstance(value, (int, float, np.integer, np.floating)):
        return fmt.format(value)
    return str(value)


def style_table(table: pd.DataFrame) -> Any:
    """A pandas Styler for notebooks: recalls as percentages, tokens with thousands separators.

    Args:
        table: A `comparison_table` result.

    Returns:
        ``pandas.io.formats.style.Styler``.
    """
    return table.style.format(column_formats(table.columns), na_rep="—").hide(axis="index")


def table_delta(table_a: pd.DataFrame, table_b: pd.DataFrame,
                by: Sequence[str] = ("template", "model", "window")) -> pd.DataFrame:
    """Per group, ``b - a`` of every numeric column of two comparison tables.

    Args:
        table_a: The baseline run's `comparison_table`.
        table_b: The other run's table, grouped by the same `by`.
        by: The grouping columns.

    Returns:
        The `by` columns, ``present`` (``both``, ``only a``, ``only b``) and one delta column per
        numeric column (NaN where a group is missing on one side).
    """
    by = list(by)
    value_cols = [c for c in table_a.columns if c not in by and c in table_b.columns
                  and pd.api.types.is_numeric_dtype(table_a[c])]
    key = lambda t: t.assign(**{k: t[k].astype(str) for k in by})  # noqa: E731  "none" vs 8000
    merged = key(table_a).merge(key(table_b), on=by, how="outer", suffixes=("_a", "_b"),
                                indicator=True)
    out = merged[by].copy()
    out["present"] = merged["_merge"].map({"both": "both", "left_only": "only a",
                                           "right_only": "only b"}).astype(str)
    for col in value_cols:
        out[col] = (pd.to_numeric(merged[f"{col}_b"], errors="coerce")
                    - pd.to_numeric(merged[f"{col}_a"], errors="coerce"))
    return out.reset_index(drop=True)


def changed_cells(cells_a: pd.DataFrame, cells_b: pd.DataFrame,
                  columns: Sequence[str] = ("status", "parse_outcome")) -> pd.DataFrame:
    """Cells of two runs, joined on the cell key, whose `columns` differ.

    Args:
        cells_a: The baseline run's cells.
        cells_b: The other run's cells.
        columns: The columns compared (both sides shown as ``<col>_a`` / ``<col>_b``).

    Returns:
        One row per changed cell: the key columns (window shown as "none" when missing), then
        ``<col>_a`` and ``<col>_b`` per column. Cells present in one run only are not listed.
    """
    keys = [k for k in CELL_KEYS if k in cells_a.columns and k in cells_b.columns]
    cols = [c for c in columns if c in cells_a.columns and c in cells_b.columns]

    def side(df: pd.DataFrame) -> pd.DataFrame:
        part = df[keys + cols].copy()
        part["window"] = part["window"].map(window_label).astype(str)
        return part

    merged = side(cells_a).merge(side(cells_b), on=keys, suffixes=("_a", "_b"))
    differs = pd.Series(False, index=merged.index)
    for c in cols:
        a, b = merged[f"{c}_a"], merged[f"{c}_b"]
        differs |= ~((a == b) | (a.isna() & b.isna()))
    order = keys + [f"{c}_{s}" for c in cols for s in ("a", "b")]
    out = merged.loc[differs, order].reset_index(drop=True).astype(object)
    return out.where(out.notna(), None)
