"""How a comparison table (`workbench.harness.results._table`) shows: each column's number
format, one value formatted, and the styled table a notebook displays.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from workbench.harness.results._table import NOT_APPLICABLE, PERCENT_COLUMNS, not_applicable

if TYPE_CHECKING:  # pragma: no cover
    from pandas.io.formats.style import Styler

__all__ = ["column_formats", "format_cell", "style_table"]


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
        elif col == "useful_structured_pct":
            fmt[col] = "{:.1f}%"
        elif col in ("retained_tokens", "summary_tokens", "billed_tokens", "billed_reported",
                     "billed_estimated", "qa_billed_tokens"):
            fmt[col] = "{:,.0f}"
        elif col in ("cost", "cost_total", "qa_cost"):
            fmt[col] = "${:,.4f}"
        elif col in ("judge_score", "judge_kappa"):
            fmt[col] = "{:.2f}"
        elif col in ("retries_mean", "compression_ratio"):
            fmt[col] = "{:.3f}"
        elif col == "calls":
            fmt[col] = "{:.2f}"
        elif col in ("cells", "failures", "retries_max", "replies", "failed", "errors", "n",
                     "spent_tokens", "calls_made_total", "calls_shared_total",
                     "http_retries_total"):
            fmt[col] = "{:,.0f}"
    return fmt


def format_cell(value: object, fmt: str | None) -> str:
    """One value as display text: "—" for missing, `fmt` applied to numbers."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "—"
    if fmt is not None and isinstance(value, (int, float, np.integer, np.floating)):
        return fmt.format(value)
    return str(value)


def style_table(table: pd.DataFrame) -> Styler:
    """A pandas Styler for notebooks: recalls as percentages, tokens with thousands separators.

    Args:
        table: A `comparison_table` result.

    Returns:
        ``pandas.io.formats.style.Styler``.
    """
    shown = table.astype(object).copy()
    for i, row in table.iterrows():
        for col in not_applicable(row) & set(table.columns):
            shown.at[i, col] = NOT_APPLICABLE
    formats = {col: (lambda v, f=fmt: v if v == NOT_APPLICABLE else format_cell(v, f))
               for col, fmt in column_formats(table.columns).items()}
    return shown.style.format(formats, na_rep="—").hide(axis="index")
