"""The comparison table as plain text for a terminal: the HTML report's column groups, a
default selection that fits `WIDTH` columns, and every column with ``wide=True``.

Columns are grouped and labelled as in the HTML table (`column_spec`: group, label, unit), with
shorter labels where a terminal needs them (`TEXT_LABELS`). Three header lines: the group, the
label, the unit. Values are formatted as in the HTML table; a metric that cannot apply to a
row (`not_applicable`) shows ``n/a``, a missing one ``—``. When the default selection is still
wider than the width, columns are dropped in `DROP_ORDER`, then long names shortened, and the
footer says which columns are hidden.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from workbench.harness.report._html_table import (
    ColumnSpec,
    format_value,
    ordered_specs,
    short_label,
)
from workbench.harness.results._table import NOT_APPLICABLE, not_applicable

WIDTH = 120
"""Characters a default table fits in (a wide table may be wider)."""

KEY_COLUMNS = ("strategy", "template", "model", "window")
DEFAULT_COLUMNS = ("cells", "failed", "errors", "n", "parse_success_pct",
                   "useful_structured_pct", "retained_tokens", "billed_tokens", "cost",
                   "probe_recall", "qa_accuracy", "template_echo")
"""What the default table shows after the key columns (``wide=True`` shows every column)."""
DROP_ORDER = ("useful_structured_pct", "template_echo", "cost", "errors", "billed_tokens")
"""Default columns given up, first to last, while the table is wider than the width."""

TEXT_LABELS = {"errors": "err", "failed": "fail", "retained_tokens": "retained", "parse_success_pct": "parsed",
               "useful_structured_pct": "useful", "probe_recall": "recall",
               "template_echo": "echo", "billed_tokens": "billed", "qa_accuracy": "qa"}
"""Terminal labels where the HTML label is too long for a narrow column."""
TEXT_UNITS = {"n": "", "window": ""}
"""Terminal units where the HTML unit would only widen a narrow column."""
TEXT_GROUP_TITLES = {"variant": ("",), "cells": ("cells",), "tokens": ("tokens kept", "tokens"),
                     "cost": ("billed per cell", "billed/cell", "billed"),
                     "reliability": ("replies", "repl."), "recall": ("probe recall", "recall"),
                     "qa": ("questions answered", "QA"),
                     "quality": ("quality", "qual."),
                     "spent": ("spent by the run (sums over all cells)", "spent (sums)", "spent"),
                     "other": ("other",)}
"""Group titles, longest first: the longest that fits its columns is shown (the HTML report's
titles are longer)."""
MIN_LABEL = 12
"""Names are never shortened below this many characters to make a table fit."""
GAP, GROUP_GAP = " ", "  "


@dataclass
class _Column:
    spec: ColumnSpec
    label: str
    unit: str
    cells: list[str]

    @property
    def width(self) -> int:
        return max([len(self.label), len(self.unit), *(len(c) for c in self.cells)])


def shorten(text: str, limit: int) -> str:
    """A name cut to `limit` characters: cache prefixes and leading path parts go first (as in
    the HTML table), then the middle, so names that differ at their end stay apart."""
    out = short_label(text, len(text))  # cache prefix and @window only
    while len(out) > limit and "/" in out:
        out = out.split("/", 1)[1]
    if len(out) <= limit:
        return out
    head = (limit - 1) // 2
    return out[:head] + "…" + out[len(out) - (limit - 1 - head):]


def _cell_text(value: object, spec: ColumnSpec, row: pd.Series, limit: int) -> str:
    if spec.name in not_applicable(row):
        return NOT_APPLICABLE
    text = format_value(value, spec)
    if isinstance(value, str) and spec.name != "window":
        return shorten(text, limit)
    return text


def _columns(table: pd.DataFrame, names: Sequence[str], limit: int) -> list[_Column]:
    rows = [table.iloc[i] for i in range(len(table))]
    return [_Column(spec, TEXT_LABELS.get(spec.name, spec.label),
                    TEXT_UNITS.get(spec.name, spec.unit),
                    [_cell_text(row[spec.name], spec, row, limit) for row in rows])
            for spec in ordered_specs(list(names))]


def _render(columns: list[_Column]) -> list[str]:
    widths = [c.width for c in columns]
    groups = [c.spec.group for c in columns]

    def line(parts: list[str], right: list[bool]) -> str:
        out = ""
        for i, (part, width) in enumerate(zip(parts, widths, strict=True)):
            if i:
                out += GROUP_GAP if groups[i] != groups[i - 1] else GAP
            out += part.rjust(width) if right[i] else part.ljust(width)
        return out.rstrip()

    numeric = [c.spec.group != "variant" for c in columns]
    title_line, start = "", 0
    for i in range(1, len(columns) + 1):
        if i == len(columns) or groups[i] != groups[start]:
            span = sum(widths[start:i]) + len(GAP) * (i - start - 1)
            titles = TEXT_GROUP_TITLES.get(groups[start], (groups[start],))
            title = next((t for t in titles if len(t) <= span), titles[-1][:span])
            title_line += (GROUP_GAP if start else "") + title.center(span)
            start = i
    body = [line([c.cells[r] for c in columns], numeric) for r in range(len(columns[0].cells))]
    return [title_line.rstrip(), line([c.label for c in columns], numeric),
            line([c.unit for c in columns], numeric), *body]


def text_table(table: pd.DataFrame, *, width: int = WIDTH, wide: bool = False) -> str:
    """The comparison table as terminal text (see the module docstring).

    Args:
        table: A `comparison_table` (or `Results.table()`).
        width: Characters the default table must fit in.
        wide: Show every column (the width is then not enforced).

    Returns:
        The header lines, one line per row and, when columns were hidden, a footer naming them.
    """
    if table.empty:
        return "no cells finished"
    keys = [c for c in KEY_COLUMNS if c in table.columns]
    if wide:
        names = keys + [c for c in table.columns if c not in keys]
        return "\n".join(_render(_columns(table, names, 10**6)))
    shown = keys + [c for c in DEFAULT_COLUMNS if c in table.columns]
    hidden = [c for c in table.columns if c not in shown]
    limit = max([len(v) for c in keys for v in table[c] if isinstance(v, str)],
                default=MIN_LABEL)
    droppable = [c for c in DROP_ORDER if c in shown]
    lines = _render(_columns(table, shown, limit))
    while (too_wide := max(len(line) for line in lines) - width) > 0:
        if droppable:  # fewer columns first: a shortened name may no longer say which
            name = droppable.pop(0)
            shown.remove(name)
            hidden.insert(0, name)
        elif limit > MIN_LABEL:
            limit = max(MIN_LABEL, limit - too_wide)
        else:
            break
        lines = _render(_columns(table, shown, limit))
    if hidden:
        note = f"({len(hidden)} more columns with --wide: {', '.join(hidden)})"
        lines.extend(textwrap.wrap(note, width=width, break_on_hyphens=False))
    return "\n".join(lines)
