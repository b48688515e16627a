"""The verdict section of the HTML report: what the run found, per model x window.

`_verdict_section` is the one adapter between the statistics and the page: it returns a
`VerdictView` (plain data), and `render_verdict` only draws that. Today the findings come from
`paired_comparison` (each template against the best one on probe recall, within one model x
window); pointing the report at a richer verdict means rewriting `_verdict_section` alone.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from workbench.harness._html_table import short_label, short_window
from workbench.harness._paired import paired_comparison

VERDICT_METRIC = "probe_recall"
MAX_ERROR_EXAMPLE = 160


@dataclass
class Finding:
    """One model x window: which template did best, and how sure that is.

    Attributes:
        model: The model identity.
        window: The window label (``8k``, ``none``).
        headline: One sentence for a person.
        winner: The template that beat every other one, or None.
        details: One line per comparison (difference, 95% interval, pairs).
    """

    model: str
    window: str
    headline: str
    winner: str | None = None
    details: list[str] = field(default_factory=list)


@dataclass
class VerdictView:
    """What the verdict section shows: findings, warnings and a summary of the errors."""

    metric: str
    findings: list[Finding] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    errors: list[tuple[str, int, str]] = field(default_factory=list)
    """``(error type, cells, an example message)``, most frequent first."""

    def to_text(self) -> str:
        """The verdict as plain text lines."""
        lines = [f"Verdict on {self.metric}:"]
        for f in self.findings:
            lines.append(f"- {f.model} @ {f.window}: {f.headline}")
        lines += [f"! {w}" for w in self.warnings]
        lines += [f"error {t}: {n} cell(s), e.g. {msg}" for t, n, msg in self.errors]
        return "\n".join(lines)


def _pct(value: float) -> str:
    return "—" if value is None or np.isnan(value) else f"{100 * value:.1f}%"


def _finding(cells: pd.DataFrame, model: str, window: Any, metric: str, seed: int) -> Finding:
    label = short_window(window)
    ok = cells[cells["status"] == "ok"] if "status" in cells else cells
    means = (pd.to_numeric(ok[metric], errors="coerce").groupby(ok["template"]).mean()
             .dropna().sort_values(ascending=False))
    sessions = cells["session_id"].nunique()
    if means.empty:
        return Finding(model, label, "no cell produced a summary to score")
    best = str(means.index[0])
    if len(means) == 1:
        return Finding(model, label, f"only {best} produced summaries "
                                     f"({metric} {_pct(means.iloc[0])})")
    beats, details = [], []
    for other in means.index[1:]:
        res = paired_comparison(cells, str(other), best, on="template", metric=metric,
                                seed=seed)
        details.append(f"{best} vs {other}: {100 * res.mean_diff:+.1f} pts "
                       f"[95% CI {100 * res.ci_low:+.1f}, {100 * res.ci_high:+.1f}], "
                       f"{res.n_pairs} pairs")
        if res.winner == best:
            beats.append(str(other))
    if len(beats) == len(means) - 1:
        head = (f"{best} is best ({metric} {_pct(means.iloc[0])}), ahead of every other "
                f"template ({sessions} sessions)")
        return Finding(model, label, head, best, details)
    if beats:
        tied = [str(t) for t in means.index[1:] if str(t) not in beats]
        head = (f"{best} leads ({_pct(means.iloc[0])}): clearly ahead of {', '.join(beats)}, "
                f"not of {', '.join(tied)} ({sessions} sessions)")
        return Finding(model, label, head, None, details)
    return Finding(model, label, f"no significant difference between templates "
                                 f"({sessions} sessions)", None, details)


def _verdict_section(results: Any) -> VerdictView:
    """The report's verdict, from a `Results` (the single place the page gets it from).

    Args:
        results: A loaded `Results`.

    Returns:
        A `VerdictView`: per model x window the best template on `VERDICT_METRIC` when its
        bootstrap interval against every other template excludes zero, else "no significant
        difference"; warnings; failed cells grouped by error type.
    """
    cells: pd.DataFrame = results.cells
    spec = getattr(results, "spec", None)
    seed = int(getattr(spec, "seed", 0) or 0)
    view = VerdictView(VERDICT_METRIC)
    if cells.empty:
        view.warnings.append("the run holds no cells")
        return view
    if VERDICT_METRIC in cells.columns and {"template", "model"} <= set(cells.columns):
        # Windows in numeric order, no cap ("none") last.
        order = pd.to_numeric(cells["window"], errors="coerce").fillna(float("inf"))
        for (model, _), group in cells.assign(_w=order).groupby(["model", "_w"], sort=True):
            view.findings.append(_finding(group, str(model), group["window"].iloc[0],
                                          VERDICT_METRIC, seed))
    else:
        view.warnings.append(f"no {VERDICT_METRIC} column: the cells were not scored")
    if "status" in cells.columns:
        failed = cells[cells["status"] == "error"]
        if len(failed):
            view.warnings.append(f"{len(failed)} of {len(cells)} cells failed; their "
                                 "summaries are missing from the means")
        for etype, group in failed.groupby(failed["error_type"].fillna("unknown"), sort=False):
            message = str(group["error_message"].iloc[0] or "")[:MAX_ERROR_EXAMPLE]
            view.errors.append((str(etype), len(group), message))
        view.errors.sort(key=lambda e: -e[1])
    if "template_echo" in cells.columns:
        echo = pd.to_numeric(cells["template_echo"], errors="coerce").mean()
        if echo > 0.5:
            view.warnings.append(f"{_pct(echo)} of scored summaries echo the template's own "
                                 "text: their recall says little")
    return view


def render_verdict(view: VerdictView) -> str:
    """The verdict section's HTML (all text escaped)."""
    esc = html.escape
    items = []
    for f in view.findings:
        detail = "".join(f"<li>{esc(d)}</li>" for d in f.details)
        cls = "wb-win" if f.winner else "wb-tie"
        items.append(f'<li class="{cls}"><b title="{esc(f.model)}">{esc(short_label(f.model))}'
                     f"</b> @ <b>{esc(f.window)}</b>: {esc(f.headline)}"
                     + (f"<details><summary>intervals</summary><ul>{detail}</ul></details>"
                        if detail else "") + "</li>")
    parts = ['<section id="verdict" class="wb-verdict"><h2>Verdict</h2>',
             f"<p class=\"wb-note\">Per model and window, templates compared on "
             f"<b>{esc(view.metric)}</b> with paired cells (same session, repeat) and a "
             "bootstrap 95% interval; a template wins only when every interval excludes zero."
             "</p>"]
    if items:
        parts.append('<ul class="wb-findings">' + "".join(items) + "</ul>")
    if view.warnings:
        parts.append('<ul class="wb-warnings">' + "".join(f"<li>{esc(w)}</li>"
                                                          for w in view.warnings) + "</ul>")
    if view.errors:
        parts.append('<p class="wb-errors"><b>Errors:</b> ' + "; ".join(
            f'<span title="{esc(msg)}">{esc(t)} × {n}</span>' for t, n, msg in view.errors)
            + "</p>")
    parts.append("</section>")
    return "".join(parts)
