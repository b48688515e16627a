"""The comparison table: one row per (template, model, window) group of cells.

Every column is defined in the README's "Metrics glossary" and in `Results.table`. A row holds
three populations, each named:

- **Outcomes, over every cell of the row**: ``cells``; ``replies`` (cells that received a
  summary reply); ``failed`` (compaction outcomes: context exhausted after the whole removal
  ladder); ``errors`` (infrastructure: cache miss, auth, network, retries exhausted);
  ``failures`` = failed + errors (the older column); ``failure_rate`` = failed / (replies +
  failed).
- **Means over the n common sessions**: within one model x window, the *common sessions* are
  those (session, strategy, repeat) that every compared variant (``variant``, default the
  template) completed; ``n`` says how many. Over them: ``parse_success_pct`` and
  ``useful_structured_pct`` (100 x the share of those cells whose reply parsed / was a useful
  structured summary), tokens, ``billed_*``, ``cost``, ``calls``, ``retries_mean``,
  ``retries_max`` (the most of those cells) and the probe columns. ``survivors=True`` averages
  each group over its own completed cells instead and ``mean_over`` says so on every row.
- **Sums over every cell of the row** (what the run spent; they depend on which cell of a
  group of identical prompts sent the call): ``spent_tokens`` (input + output tokens this run
  paid for), ``cost_total`` (money it paid), ``calls_made_total`` / ``calls_shared_total``
  (calls the row's cells sent / took from another cell's identical prompt) and
  ``http_retries_total`` (gateway retries: 429, 5xx, timeouts).

Billing: ``billed_tokens`` (input + output per cell) = ``billed_reported`` (counts the provider
reported) + ``billed_estimated`` (counts the workbench estimated with o200k) and ``cost`` say
what the cell's summary cost: the calls it used, whether it sent them, shared another cell's
identical call or read the answer from a recording, so they are the same on every run and
executor. ``cost`` is NaN when a cell that called a model has an unknown price.

Where a metric cannot apply the table holds NaN and `not_applicable` names the columns (rows
of model-free strategies, model ``none``, have no reply to parse, no ladder and no model call);
displays show ``n/a`` there and ``—`` for a missing value.

- ``effective_window`` is the smaller of the cap and the model's real context (the window a row
  really ran at); ``window_tokenizer`` what the cap counted prompts with.
- A window of None (no cap) shows as ``"none"``.
- With the default grouping, ``strategy`` comes first when the cells hold more than one strategy.
- Functional probes (``[qa]``, when the cells have them): ``qa_accuracy`` (exactly graded
  questions answered right), ``qa_recall`` / ``qa_artifact`` / ``qa_continuation`` /
  ``qa_decision`` (per kind), ``qa_authored`` (the ``probe_author``'s questions, apart from the
  built ones), ``judge_score`` (0-5), ``qa_loss_exact`` / ``qa_loss_open`` (of the exact / open
  questions the full history answers, the share the compacted context misses), ``qa_gain``
  (the share only the compacted context gets right), ``next_action_match`` /
  ``next_action_match_full``: means over the common sessions; the three against the full
  history over the cells whose session fits the window (``n/a`` on a row where none does);
  ``qa_billed_tokens`` / ``qa_cost``: what the QA calls billed per cell (part of ``billed_tokens``
  and ``cost``); with a judge that graded exact questions too, ``judge_kappa``: its agreement
  with the exact grader in the row's model x window (`judge_agreement`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import SupportsInt, cast

import numpy as np
import pandas as pd

from workbench.harness.results._judge_agreement import with_judge_kappa
from workbench.harness.results._outcomes import ERROR, FAILED, OK, kind_from_row
from workbench.probes import QA_METRICS

CELL_KEYS = ("session_id", "strategy", "model", "template", "window", "repeat")
"""The columns that identify a cell within a run (its key; `cell_id` hashes them)."""

NO_WINDOW = "none"
DEFAULT_BY = ("template", "model", "window")
"""Default grouping; ``strategy`` is put first when the cells hold more than one strategy."""
COMMON = "common"
SURVIVORS = "survivors"

RECALL_COLUMNS = ("probe_recall", "files_recall", "errors_recall", "requests_recall",
                  "facts_recall", "stale_avoided", "fill_rate", "template_echo",
                  "compression_ratio")
"""Metric columns averaged into the table when the cells have them."""

QA_COLUMNS = QA_METRICS
"""Functional-probe columns (``[qa]``), averaged like the recall columns when present."""

QA_BILLING_COLUMNS = ("qa_billed_tokens", "qa_cost")
"""Means per cell of what the ``[qa]`` calls billed (already inside ``billed_tokens``/``cost``)."""

PERCENT_COLUMNS = (frozenset(RECALL_COLUMNS) - {"compression_ratio"} | {"failure_rate"}
                   | frozenset(QA_COLUMNS) - {"judge_score"})

ECHO_THRESHOLD = 0.5
"""A structured reply whose long strings are at least this share copied from the template is
a template echo (see `workbench.metrics.template_echo`)."""

OUTCOME_COLUMNS = ("cells", "replies", "failed", "errors", "failures", "failure_rate")
"""Counted over every cell of a row."""
MEAN_COLUMNS = ("parse_success_pct", "useful_structured_pct", "retained_tokens",
                "summary_tokens", "billed_tokens", "billed_reported", "billed_estimated", "cost",
                "calls", "retries_mean", "retries_max")
"""Aggregated over the row's cells in its n common sessions (``retries_max``: their largest)."""
SUM_COLUMNS = ("spent_tokens", "cost_total", "calls_made_total", "calls_shared_total",
               "http_retries_total")
"""Summed over every cell of a row: what the run spent (scheduling decides which cell of a
group of identical prompts pays)."""

TABLE_COLUMNS = ("effective_window", "window_tokenizer", *OUTCOME_COLUMNS, "n", "mean_over",
                 *MEAN_COLUMNS, *SUM_COLUMNS)
"""The table's columns after the grouping columns, in order (recall columns follow)."""

CALL_COLUMNS = ("calls", "calls_made_total", "calls_shared_total")
"""Present only when the cells have call counts (shared calls, migration m012)."""

MODEL_FREE = "none"
"""The model label of cells whose strategy calls no model (`Cell.model` for them)."""
MODEL_ONLY_COLUMNS = ("parse_success_pct", "useful_structured_pct", "calls", "retries_mean",
                      "retries_max", "template_echo", "fill_rate")
"""Columns that cannot apply to a model-free row: no reply to parse, no call, no ladder."""
REFERENCE_COLUMNS = frozenset({"qa_loss_exact", "qa_loss_open", "qa_gain"})
"""QA columns measured against the full history: n/a where no session fits the window."""
NOT_APPLICABLE = "n/a"
"""How displays show a metric that cannot apply (a missing value shows as "—")."""
PARSE_ONLY_COLUMNS = ("parse_success_pct", "useful_structured_pct", "template_echo", "fill_rate")
"""Columns about a JSON reply: they cannot apply to a strategy whose summary is plain text (the
agents' policies, awaken: ``parse_outcome`` ``text``) or that made no call."""
NOT_PARSED = ("text",)
"""Parse outcomes of a reply that is not parsed at all (a plain-text summary)."""


def not_applicable(row: Mapping[str, object] | pd.Series) -> frozenset[str]:
    """The columns of one table row that cannot apply to it (shown as `NOT_APPLICABLE`).

    Args:
        row: A row of a `comparison_table` (a mapping or a pandas Series).

    Returns:
        `MODEL_ONLY_COLUMNS` for a model-free row (model ``none``); `PARSE_ONLY_COLUMNS` for a
        row whose common cells all completed without a reply to parse (a completed cell's
        parse success is 0 or 1 where parsing applies, so a mean over n > 0 of them is NaN
        only where it applies to none); `REFERENCE_COLUMNS` for a row with questions answered
        but no full-history reference (no session of the row fits its window); else nothing.
    """
    if not hasattr(row, "get"):
        return frozenset()
    out = frozenset(MODEL_ONLY_COLUMNS) if row.get("model") == MODEL_FREE else frozenset()
    n, parsed = row.get("n"), row.get("parse_success_pct")
    if not out and isinstance(n, (int, float, np.integer)) and n > 0 and parsed is not None \
            and pd.isna(parsed):
        out |= frozenset(PARSE_ONLY_COLUMNS)
    if _number(row.get("qa_accuracy")) and not any(
            _number(row.get(c)) for c in REFERENCE_COLUMNS):
        out |= REFERENCE_COLUMNS
    return out


def _number(value: object) -> bool:
    return isinstance(value, int | float | np.integer | np.floating) and not np.isnan(value)


def _several(df: pd.DataFrame, col: str) -> bool:
    return col in df.columns and df[col].nunique(dropna=False) > 1


def prepare_cells(cells: pd.DataFrame) -> pd.DataFrame:
    """A copy of `cells` with derived columns.

    Args:
        cells: Cells as read from the store (`Results.cells`).

    Returns:
        The copy, with ``billed_tokens`` (input + output), ``ok`` (status == "ok"),
        ``outcome_kind`` (filled in for cells stored before it existed), ``failed`` (1 for a
        compaction failure, 0 for an ok cell, NaN for an infrastructure error),
        ``parse_success`` and ``useful_structured`` (1/0 for cells with a reply, NaN
        otherwise: their means are the table's percentages divided by 100),
        ``billed_reported`` / ``billed_estimated`` and ``spent_tokens`` (input + output tokens
        the cell paid for; a store from before migration m015 has only what it was billed,
        which then meant the same).
    """
    df = cells.copy()
    if "billed_tokens" not in df.columns:
        df["billed_tokens"] = (_numeric(df, "billed_input_tokens")
                               + _numeric(df, "billed_output_tokens"))
    df["ok"] = df["status"].eq("ok") if "status" in df else True
    stored = df["outcome_kind"] if "outcome_kind" in df else pd.Series(None, index=df.index)
    status = df["status"] if "status" in df else pd.Series("ok", index=df.index)
    error_type = df["error_type"] if "error_type" in df else pd.Series(None, index=df.index)
    df["outcome_kind"] = [k if isinstance(k, str) and k else kind_from_row(s, e)
                          for k, s, e in zip(stored, status, error_type, strict=True)]
    df["failed"] = df["outcome_kind"].map({OK: 0.0, FAILED: 1.0, ERROR: np.nan}).astype(float)
    # Vectorised forms of `useful_structured` (same rule) and of "parsed", per cell.
    parsed = (df["parse_outcome"].eq("structured") if "parse_outcome" in df
              else pd.Series(False, index=df.index))
    fill, echo = _numeric(df, "fill_rate"), _numeric(df, "template_echo")
    useful = parsed & (fill > 0) & (echo.isna() | (echo < ECHO_THRESHOLD))
    ok = df["ok"].astype(bool)
    # A plain-text summary, or none (no call was needed), has no reply to parse: NaN, not 0.
    parses = (df["parse_outcome"].notna() & ~df["parse_outcome"].isin(NOT_PARSED)
              if "parse_outcome" in df else pd.Series(True, index=df.index))
    df["useful_structured"] = useful.astype(float).where(ok & parses, np.nan)
    df["parse_success"] = parsed.astype(float).where(ok & parses, np.nan)
    for col in ("reported_tokens", "estimated_tokens"):
        if col not in df.columns:
            df[col] = np.nan
    df["billed_reported"] = _numeric(df, "reported_tokens")
    df["billed_estimated"] = _numeric(df, "estimated_tokens")
    if "qa_input_tokens" in df.columns and "qa_billed_tokens" not in df.columns:
        df["qa_billed_tokens"] = (_numeric(df, "qa_input_tokens")
                                  + _numeric(df, "qa_output_tokens"))
    if "spent_input_tokens" in df.columns:
        df["spent_tokens"] = (_numeric(df, "spent_input_tokens").fillna(0)
                              + _numeric(df, "spent_output_tokens").fillna(0))
    else:  # a store from before m015 (read without migrating): billed meant paid then
        df["spent_tokens"] = df["billed_tokens"]
        df["spent_cost"] = _numeric(df, "cost")
    return df


def window_label(value: object) -> str | int:
    """``"none"`` for a missing window, else the window as an int (labels pass through)."""
    if isinstance(value, str):
        return value
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return NO_WINDOW
    return int(cast(SupportsInt, value))  # a count; int() refuses others


def _numeric(df: pd.DataFrame, col: str) -> pd.Series:
    if col not in df.columns:
        return pd.Series(np.nan, index=df.index, dtype=float)
    return pd.to_numeric(df[col], errors="coerce")


def _key_strings(df: pd.DataFrame, cols: Sequence[str]) -> pd.Series:
    if not cols:
        return pd.Series("", index=df.index)
    parts = [df[c].astype(object).where(df[c].notna(), "\x00").astype(str) for c in cols]
    out = parts[0]
    for part in parts[1:]:
        out = out + "\x1f" + part
    return out


def mark_common(df: pd.DataFrame, by: Sequence[str], variant: str = "template") -> pd.Series:
    """True for the ok cells of sessions that every compared variant of their stratum completed.

    Args:
        df: Prepared cells (`prepare_cells`).
        by: The table's grouping columns.
        variant: The column whose values are compared within a stratum; the stratum is `by`
            without it. When `variant` is not in `by`, every ok cell is common.

    Returns:
        A boolean Series aligned with `df`.
    """
    ok = df["ok"].astype(bool)
    if variant not in by or variant not in df.columns:
        return ok
    strata = [c for c in by if c != variant]
    units = [k for k in CELL_KEYS if k not in by and k in df.columns]
    stratum = _key_strings(df, strata)
    unit = stratum + "\x1e" + _key_strings(df, units)
    variant_values = _key_strings(df, [variant])
    wanted = variant_values.groupby(stratum).nunique()
    done = variant_values[ok].groupby(unit[ok]).nunique()
    unit_stratum = stratum.groupby(unit).first()
    complete = done[done.to_numpy() == wanted.reindex(unit_stratum.reindex(done.index)).to_numpy()]
    return ok & unit.isin(set(complete.index))


def _cost_known(g: pd.DataFrame, column: str = "cost") -> bool:
    cost = _numeric(g, column)
    attempts = _numeric(g, "attempts")
    called = attempts.isna() | (attempts > 0)
    return not cost[called].isna().any()


def _one_value(series: pd.Series) -> str | None:
    values = list(dict.fromkeys(v for v in series if isinstance(v, str) and v))
    return ", ".join(values) if values else None


def _summarise(g: pd.DataFrame, use: pd.Series, mean_over: str) -> dict[str, object]:
    kinds = g["outcome_kind"]
    replies = int(kinds.eq(OK).sum())
    failed = int(kinds.eq(FAILED).sum())
    errors = int(kinds.eq(ERROR).sum())
    sel = use.to_numpy(dtype=bool)
    common = g[sel]
    cost = _numeric(g, "cost")
    spent_cost = _numeric(g, "spent_cost")
    effective = _numeric(g, "effective_window").dropna()
    model_free = "model" in g and bool(g["model"].eq(MODEL_FREE).all())
    row: dict[str, object] = {
        "effective_window": int(effective.min()) if len(effective) else None,
        "window_tokenizer": _one_value(g["window_tokenizer"]) if "window_tokenizer" in g else None,
        "cells": len(g),
        "replies": replies,
        "failed": failed,
        "errors": errors,
        "failures": failed + errors,
        "failure_rate": failed / (replies + failed) if replies + failed else np.nan,
        "n": int(sel.sum()),
        "mean_over": mean_over,
        "parse_success_pct": 100.0 * _numeric(common, "parse_success").mean(),
        "useful_structured_pct": 100.0 * _numeric(common, "useful_structured").mean(),
        "retained_tokens": _numeric(common, "retained_tokens").mean(),
        "summary_tokens": _numeric(common, "summary_tokens").mean(),
        "billed_tokens": _numeric(common, "billed_tokens").mean(),
        "billed_reported": _numeric(common, "billed_reported").mean(),
        "billed_estimated": _numeric(common, "billed_estimated").mean(),
        "cost": cost[sel].mean() if _cost_known(common) else np.nan,
        "retries_mean": _numeric(common, "retries").mean(),
        "retries_max": _numeric(common, "retries").max(),
        "spent_tokens": int(_numeric(g, "spent_tokens").fillna(0).sum()),
        "cost_total": (float(spent_cost.fillna(0).sum())
                       if _cost_known(g, "spent_cost") else np.nan),
        "http_retries_total": int(_numeric(g, "http_retries").fillna(0).sum()),
    }
    if "calls_made" in g.columns:
        made, shared = _numeric(g, "calls_made").fillna(0), _numeric(g, "calls_shared").fillna(0)
        row["calls"] = (made + shared)[sel].mean()
        row["calls_made_total"] = int(made.sum())
        row["calls_shared_total"] = int(shared.sum())
    for col in RECALL_COLUMNS + QA_COLUMNS:
        if col in g.columns:
            row[col] = _numeric(common, col).mean()
    if model_free:
        row.update(dict.fromkeys([c for c in MODEL_ONLY_COLUMNS if c in row], np.nan))
    if "qa_billed_tokens" in g.columns:
        row["qa_billed_tokens"] = _numeric(common, "qa_billed_tokens").mean()
        qa_cost = _numeric(common, "qa_cost")
        row["qa_cost"] = qa_cost.mean() if not qa_cost.isna().any() else np.nan
    return row


def comparison_table(cells: pd.DataFrame,
                     by: Sequence[str] = ("template", "model", "window"), *,
                     variant: str = "template", survivors: bool = False) -> pd.DataFrame:
    """Summarise cells per group (see the module docstring and the README's metrics glossary).

    Args:
        cells: One row per cell (`Results.cells`), metrics expanded into columns.
        by: Grouping columns, in display order. With the default, ``strategy`` is put first
            when the cells hold more than one strategy.
        variant: The compared column: means use only the sessions every value of it completed
            within the rest of `by` (model x window by default).
        survivors: Average each group over its own completed cells instead (the rows say
            ``mean_over = "survivors"``).

    Returns:
        One row per group, the `by` columns first, then `TABLE_COLUMNS`, then the recall
        columns the cells have; sorted by the `by` columns (windows numerically, then "none").
    """
    by = list(by)
    if tuple(by) == DEFAULT_BY and _several(cells, "strategy"):
        by = ["strategy", *by]  # strategies are a dimension like any other once there are two
    df = prepare_cells(cells)
    has_calls = "calls_made" in df.columns
    columns = by + [c for c in TABLE_COLUMNS if has_calls or c not in CALL_COLUMNS]
    if "qa_billed_tokens" in df.columns:
        columns += list(QA_BILLING_COLUMNS)
    columns += [c for c in RECALL_COLUMNS if c in df.columns]
    columns += [c for c in QA_COLUMNS if c in df.columns]
    if df.empty:
        return pd.DataFrame(columns=columns)
    use = df["ok"].astype(bool) if survivors else mark_common(df, by, variant)
    label = SURVIVORS if survivors else COMMON
    rows = []
    for key, g in df.groupby(by, dropna=False, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        rows.append({**dict(zip(by, key, strict=True)), **_summarise(g, use[g.index], label)})
    table = with_judge_kappa(pd.DataFrame(rows, columns=columns), df, by)
    if "window" in by:
        table["window"] = table["window"].map(window_label).astype(object)
    for col in ("effective_window", "window_tokenizer"):
        table[col] = table[col].astype(object).where(table[col].notna(), None)
    if "window" in by:
        missing = table["effective_window"].isna()
        table.loc[missing, "effective_window"] = table.loc[missing, "window"]
    return table.reset_index(drop=True)


