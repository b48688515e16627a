"""A stored cell named for people, in error summaries and the regression gate's messages.

``session gen-005k-s1, model extractive, template default, window 8k`` (plus the strategy
when it is not Goose's, and the repeat when there are several).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

from workbench.harness.experiment._windows import format_window

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["cell_label", "cell_labels", "repeat_of", "window_text"]

NAMED_BY = ("session_id", "model", "template", "window")
"""The columns a cell's name needs."""


def window_text(value: object) -> str:
    """A stored window (int, None or NaN) as shown in tables and names: ``8k``, ``none``."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return format_window(None)
    if isinstance(value, str):
        return value
    return format_window(int(value))  # type: ignore[call-overload]


def repeat_of(row: Mapping[str, object]) -> int:
    """The cell's repeat index (0 when the row has none)."""
    value = row.get("repeat")
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return 0
    return int(value)  # type: ignore[call-overload]


def cell_label(row: Mapping[str, object]) -> str:
    """A cell named for people: ``session gen-005k-s1, model extractive, template default, window 8k``."""
    text = (f"session {row['session_id']}, model {row['model']}, template {row['template']}, "
            f"window {window_text(row['window'])}")
    strategy = row.get("strategy")
    if strategy and strategy != "goose":
        text += f", strategy {strategy}"
    if repeat_of(row):
        text += f", repeat {repeat_of(row)}"
    return text


def cell_labels(cells: pd.DataFrame) -> list[str]:
    """`cell_label` of every row of a cells DataFrame (empty names when it lacks `NAMED_BY`)."""
    if any(col not in cells.columns for col in NAMED_BY):
        return [""] * len(cells)
    return [cell_label({str(k): v for k, v in row.items()}) for row in cells.to_dict("records")]
