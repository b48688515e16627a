"""Two comparison tables side by side (`workbench.harness.results._table`): what changed between
two runs, row by row and cell by cell (``workbench compare``).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from workbench.harness.results._table import CELL_KEYS, window_label

__all__ = ["changed_cells", "table_delta"]


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
