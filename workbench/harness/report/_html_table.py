"""The comparison table as compact HTML: grouped headers, short labels, units, sort keys.

Columns are rendered from whatever the DataFrame holds. Each column is placed in a header group
by `COLUMN_GROUPS`, then by name patterns (``*_tokens``, ``*recall``, ...), else in the
`DEFAULT_GROUP`, so a column added to `comparison_table` later shows up without a change here.
Every value cell carries its raw value in ``data-v`` (the page's script sorts on it) and its full
text in a ``title`` whenever the shown text is shortened.
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass
from typing import SupportsFloat, SupportsInt, cast

import pandas as pd

from workbench.harness.experiment._windows import format_window
from workbench.harness.results._table import NOT_APPLICABLE, PERCENT_COLUMNS, not_applicable
from workbench.harness.results._table_format import column_formats

DEFAULT_GROUP = "other"

GROUP_ORDER = ("variant", "cells", "tokens", "cost", "reliability", "recall", "qa", "quality",
               "spent", DEFAULT_GROUP)
"""Header groups, left to right (a group with no column is not drawn)."""

COLUMN_GROUPS: dict[str, tuple[str, str, str]] = {
    # column: (group, short label, unit)
    "session_id": ("variant", "session", ""),
    "strategy": ("variant", "strategy", ""),
    "template": ("variant", "template", ""),
    "model": ("variant", "model", ""),
    "window": ("variant", "window", "tok"),
    "repeat": ("variant", "repeat", ""),
    "cells": ("cells", "cells", "n"),
    "failed": ("cells", "failed", "n"),
    "errors": ("cells", "errors", "n"),
    "n": ("cells", "n", "sessions"),
    "failure_rate": ("other", "failure rate", "%"),
    "replies": ("other", "replies", "n"),
    "failures": ("other", "failed + errors", "n"),
    "mean_over": ("other", "means over", ""),
    "effective_window": ("other", "effective window", "tok"),
    "window_tokenizer": ("other", "window counted in", ""),
    "retained_tokens": ("tokens", "retained", "tok"),
    "summary_tokens": ("tokens", "summary", "tok"),
    "billed_tokens": ("cost", "billed", "tok"),
    "billed_reported": ("cost", "reported", "tok"),
    "billed_estimated": ("cost", "estimated", "tok"),
    "cost": ("cost", "cost", "$"),
    "calls": ("cost", "calls", "n"),
    "spent_tokens": ("spent", "tokens", "tok"),
    "cost_total": ("spent", "cost", "$"),
    "calls_made_total": ("spent", "calls made", "n"),
    "calls_shared_total": ("spent", "calls shared", "n"),
    "http_retries_total": ("spent", "http retries", "n"),
    "parse_success_pct": ("reliability", "parsed", "%"),
    "useful_structured_pct": ("reliability", "useful", "%"),
    "retries_mean": ("reliability", "retries", "mean"),
    "retries_max": ("reliability", "retries", "max"),
    "probe_recall": ("recall", "all", "%"),
    "files_recall": ("recall", "files", "%"),
    "errors_recall": ("recall", "errors", "%"),
    "requests_recall": ("recall", "requests", "%"),
    "facts_recall": ("recall", "facts", "%"),
    "stale_avoided": ("quality", "stale avoided", "%"),
    "fill_rate": ("quality", "fields filled", "%"),
    "template_echo": ("quality", "template echo", "%"),
    "compression_ratio": ("quality", "compress.", "×"),
    "qa_billed_tokens": ("cost", "QA billed", "tok"),
    "qa_cost": ("cost", "QA cost", "$"),
    "qa_accuracy": ("qa", "exact", "%"),
    "qa_recall": ("qa", "recall", "%"),
    "qa_artifact": ("qa", "artifact", "%"),
    "qa_continuation": ("qa", "continuation", "%"),
    "qa_decision": ("qa", "decision", "%"),
    "qa_authored": ("qa", "model-written", "%"),
    "judge_score": ("qa", "judge", "0-5"),
    "judge_kappa": ("qa", "judge kappa", "κ"),
    "qa_loss_exact": ("qa", "loss exact", "%"),
    "qa_loss_open": ("qa", "loss open", "%"),
    "qa_gain": ("qa", "gain", "%"),
    "next_action_match": ("qa", "next action", "%"),
    "next_action_match_full": ("qa", "next action vs full", "%"),
}
"""Known columns: header group, short label, unit. Unknown columns fall back on name patterns."""

HIDE_FIRST = (DEFAULT_GROUP, "spent", "quality", "cost", "reliability", "qa")
"""Header groups the page hides, in this order, while the table is wider than the page (a
checkbox per group shows them again)."""

GROUP_TITLES = {"variant": "", "cells": "cells (all)",
                "tokens": "tokens kept (mean over n)", "cost": "billed per cell (mean over n)",
                "reliability": "replies (mean over n)", "recall": "probe recall (mean over n)",
                "qa": "questions answered (QA, mean over n)",
                "quality": "summary quality (mean over n)",
                "spent": "spent by the run (sums over all cells)", DEFAULT_GROUP: "other"}
"""Each group's title says which population its columns are computed over."""

_PATTERNS: tuple[tuple[str, str, str], ...] = (
    # regex on the column name, group, unit
    (r"_tokens?$", "tokens", "tok"),
    (r"cost", "cost", "$"),
    (r"recall", "recall", "%"),
    (r"retr", "reliability", "n"),
    (r"(_pct|_rate)$", "reliability", "%"),
    (r"_ms$", "reliability", "ms"),
)

MAX_LABEL = 22
"""Longest text shown for a string value before it is shortened (the full text is a tooltip)."""


@dataclass(frozen=True)
class ColumnSpec:
    """How one column is shown: its header group, short label, unit and number format."""

    name: str
    group: str
    label: str
    unit: str
    fmt: str | None


def column_spec(name: str) -> ColumnSpec:
    """The display spec of a column: from `COLUMN_GROUPS`, else from name patterns.

    Args:
        name: The column name.

    Returns:
        A `ColumnSpec` (unknown columns go to `DEFAULT_GROUP` with their name as label).
    """
    fmt = column_formats([name]).get(name)
    if name in COLUMN_GROUPS:
        group, label, unit = COLUMN_GROUPS[name]
    else:
        group, label, unit = DEFAULT_GROUP, name.replace("_", " "), ""
        for pattern, pat_group, pat_unit in _PATTERNS:
            if re.search(pattern, name):
                group, unit = pat_group, pat_unit
                break
    if fmt is None and name in PERCENT_COLUMNS:
        fmt = "{:.1%}"
    elif fmt is None and unit == "%" and name.endswith("_rate"):
        fmt = "{:.1%}"  # rates are fractions; ``*_pct`` columns are already in percent
    return ColumnSpec(name, group, label, unit, fmt)


def short_window(value: object) -> str:
    """A window as every table, verdict and plot labels it (`format_window`): 8192 -> ``8k``
    (k = 1024), 8000 -> ``8000``, None -> ``none``."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "none"
    if isinstance(value, str):
        if not value.isdigit():
            return value
        value = int(value)
    return format_window(int(cast(SupportsInt, value)))  # a count; int() refuses others


WRAPPED = frozenset({"model", "template", "strategy", "session_id"})
"""Label columns shown whole, wrapping inside the cell (a model label carrying its parameters
runs long; cut, it would hide what tells two rows apart)."""
_BREAK_AFTER = re.compile(r"([/,\[=@:])")


def wrappable(text: str) -> str:
    """`text` escaped, with a line-break opportunity (``<wbr>``) after each ``/ , [ = @ :``."""
    return "".join(html.escape(part) + ("<wbr>" if _BREAK_AFTER.fullmatch(part) else "")
                   for part in _BREAK_AFTER.split(text))


def short_label(text: str, limit: int = MAX_LABEL) -> str:
    """A long identity shortened for a table cell: cache prefixes and leading path parts dropped.

    ``replay:local/gemma3-270m@8k`` -> ``gemma3-270m``; labels within `limit` pass through.
    """
    out = re.sub(r"^(cached|replay):", "", text)
    out = re.sub(r"@[0-9.]+k?$", "", out)
    while len(out) > limit and "/" in out:
        out = out.split("/", 1)[1]
    return out if len(out) <= limit else out[:limit - 1] + "…"


def format_value(value: object, spec: ColumnSpec) -> str:
    """The display text of one value (``—`` for missing)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if spec.name == "window":
        return short_window(value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)) or hasattr(value, "dtype"):
        number = float(cast(SupportsFloat, value))  # a Python or numpy number
        if spec.fmt is not None:
            text = spec.fmt.format(number)
            # The header carries the unit; repeating it in every cell costs width.
            return text.rstrip("%") if spec.unit == "%" else text.lstrip("$")
        if number.is_integer():
            return f"{number:,.0f}"
        return f"{number:,.3g}" if abs(number) < 1000 else f"{number:,.0f}"
    return str(value)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) or (
        hasattr(value, "dtype") and getattr(value.dtype, "kind", "") in "iuf")


def ordered_specs(columns: list[str]) -> list[ColumnSpec]:
    """Specs for `columns`, regrouped so each header group is contiguous (stable within a group)."""
    specs = [column_spec(c) for c in columns]
    rank = {g: i for i, g in enumerate(GROUP_ORDER)}
    return sorted(specs, key=lambda s: rank.get(s.group, len(rank)))


def html_table(df: pd.DataFrame, *, table_id: str = "wb-table",
               row_groups: list[int] | None = None) -> str:
    """The comparison table as an HTML ``<table>`` with two header rows.

    Args:
        df: The comparison table (any columns).
        table_id: The ``id`` of the table element.
        row_groups: Per row, the index of its cell group in the drill-down data (``data-g``).

    Returns:
        HTML text; every value is escaped.
    """
    esc = html.escape
    specs = ordered_specs([str(c) for c in df.columns])
    groups: list[tuple[str, int]] = []
    for spec in specs:
        if groups and groups[-1][0] == spec.group:
            groups[-1] = (spec.group, groups[-1][1] + 1)
        else:
            groups.append((spec.group, 1))
    top = ['<th class="wb-open" rowspan="2" aria-label="open"></th>']
    top += [f'<th colspan="{n}" class="wb-group wb-c-{esc(g)}" data-group="{esc(g)}">'
            f"{esc(GROUP_TITLES.get(g, g))}</th>" for g, n in groups]
    second = []
    for spec in specs:
        numeric = pd.api.types.is_numeric_dtype(df[spec.name]) and spec.name != "window"
        unit = f"<small>{esc(spec.unit)}</small>" if spec.unit else ""
        second.append(f'<th data-col="{esc(spec.name)}" data-kind="{"num" if numeric else "text"}"'
                      f' title="{esc(spec.name)} (click to sort)"'
                      f' class="{"num" if numeric else "text"} wb-c-{esc(spec.group)}">'
                      f"{esc(spec.label)}{unit}</th>")
    body = []
    for i, record in enumerate(df.to_dict("records")):
        tds = ['<td class="wb-open"><button type="button" class="wb-toggle" '
               'aria-label="show cells">▸</button></td>']
        absent = not_applicable(record)
        for spec in specs:
            value = record[spec.name]
            text = NOT_APPLICABLE if spec.name in absent else format_value(value, spec)
            numeric = _is_number(value) and spec.name != "window"
            sort_key = value if numeric and not math.isnan(float(value)) else (
                value if spec.name == "window" and _is_number(value) else text)
            title = f' title="{esc(str(value))}"' if spec.name == "window" else ""
            wrap = " wb-wrap" if spec.name in WRAPPED else ""
            shown = wrappable(text) if wrap else esc(text)
            tds.append(f'<td class="{"num" if numeric else "text"}{wrap} wb-c-{esc(spec.group)}"'
                       f' data-v="{esc(str(sort_key))}"'
                       f'{title}>{shown}</td>')
        group = row_groups[i] if row_groups is not None else i
        body.append(f'<tr class="wb-row" data-g="{group}">' + "".join(tds) + "</tr>")
    return (f'<table id="{esc(table_id)}" class="wb-table" '
            f'data-hide-first="{esc(" ".join(HIDE_FIRST))}"><thead><tr>{"".join(top)}</tr>'
            f'<tr>{"".join(second)}</tr></thead><tbody>\n' + "\n".join(body)
            + "\n</tbody></table>")


def plain_table(df: pd.DataFrame, formats: dict[str, str] | None = None,
                table_class: str = "wb-plain") -> str:
    """A simple escaped HTML table (no sorting, no groups) for the details section."""
    esc = html.escape
    formats = formats or {}
    head = "".join(f"<th>{esc(str(c))}</th>" for c in df.columns)
    rows = []
    for record in df.to_dict("records"):
        tds = []
        for col, value in record.items():
            spec = ColumnSpec(str(col), DEFAULT_GROUP, str(col), "", formats.get(str(col)))
            numeric = _is_number(value)
            tds.append(f'<td class="{"num" if numeric else "text"}">'
                       f"{esc(format_value(value, spec))}</td>")
        rows.append("<tr>" + "".join(tds) + "</tr>")
    # Wider than the page, it scrolls sideways in its own box instead of being cut.
    return (f'<div class="wb-scroll"><table class="{table_class}"><thead><tr>{head}</tr>'
            "</thead><tbody>" + "".join(rows) + "</tbody></table></div>")
