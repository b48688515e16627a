"""``report.html``: one self-contained page a person decides from.

Order on the page: the verdict, the comparison table (grouped headers, sortable, filterable,
each row opening its cells), the plots, then the details (paired comparisons, what summaries
forget most, failed cells). Style and script are inlined from ``assets/``; plots are
embedded PNGs; per-cell texts travel in compressed blocks (see ``_drilldown``). Every piece of
session or model text is escaped: HTML text through `html.escape`, embedded JSON through
`script_json`, and the script only ever writes text into the page with ``textContent``.
"""

from __future__ import annotations

import base64
import html
from datetime import datetime
from functools import cache
from importlib import resources
from pathlib import Path

import pandas as pd

from workbench.harness.report._drilldown import cell_index, cell_payloads, script_json
from workbench.harness.report._html_table import html_table, plain_table
from workbench.harness.report._html_verdict import render_verdict, verdict_view
from workbench.harness.results._results import Results
from workbench.harness.results._table import window_label

TABLE_BY = ("template", "model", "window")
MAX_FAILURES = 50
"""Failed cells listed in the details (all of them are in cells.csv and the drill-down)."""
TOP_FORGOTTEN = 12
"""Most often forgotten items listed per kind."""

_CMP_FORMATS = {"diff": "{:+.3f}", "ci_low": "{:+.3f}", "ci_high": "{:+.3f}", "holm_p": "{:.3f}"}


@cache
def _asset(name: str) -> str:
    return (resources.files("workbench.harness.report") / "assets" / name).read_text("utf-8")


def when(value: object) -> str:
    """An ISO timestamp as ``2026-01-01 00:00 UTC`` (text that does not parse passes through)."""
    if not isinstance(value, str) or not value:
        return "—"
    try:
        stamp = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return value
    return stamp.strftime("%Y-%m-%d %H:%M UTC") if stamp.tzinfo else stamp.strftime(
        "%Y-%m-%d %H:%M")


def _duration(start: object, end: object) -> str:
    try:
        secs = (datetime.fromisoformat(str(end).replace("Z", "+00:00"))
                - datetime.fromisoformat(str(start).replace("Z", "+00:00"))).total_seconds()
    except (TypeError, ValueError):
        return ""
    return f"{secs:.0f} s" if secs < 120 else f"{secs / 60:.1f} min"


def run_summary(results: Results) -> str:
    """One line about the run: name, status, cells, failures, when and how long."""
    cells = results.cells
    parts = []
    runs = getattr(results, "runs", None)
    if runs is not None and not runs.empty:
        last = runs.iloc[-1]
        parts.append(f"run {last.get('name')} · {last.get('status')}")
    failed = int((cells["status"] == "error").sum()) if "status" in cells else 0
    parts.append(f"{len(cells)} cells, {failed} failed")
    if runs is not None and not runs.empty:
        start, end = runs["started_at"].iloc[0], runs.iloc[-1].get("finished_at")
        took = _duration(start, end)
        parts.append(f"started {when(start)}" + (f", took {took}" if took else "")
                     + (f" over {len(runs)} invocations" if len(runs) > 1 else ""))
        parts.append(f"workbench {runs.iloc[-1].get('workbench_version')}")
    return " · ".join(parts)


def _key(value: object, col: str) -> str:
    return str(window_label(value)) if col == "window" else str(value)


def row_groups(table: pd.DataFrame, cells: pd.DataFrame) -> tuple[list[int], list[int]]:
    """Which table row each cell belongs to.

    Returns:
        ``(per table row its group id, per cell its group id)``; a cell whose key matches no row
        gets -1.
    """
    by = [c for c in TABLE_BY if c in table.columns and c in cells.columns]
    rows = {tuple(_key(r[c], c) for c in by): i for i, r in enumerate(table.to_dict("records"))}
    of_cell = [rows.get(tuple(_key(r[c], c) for c in by), -1)
               for r in cells[by].to_dict("records")] if by else [-1] * len(cells)
    return list(range(len(table))), of_cell


def _most_forgotten(forgotten: pd.DataFrame, cells: int) -> str:
    if forgotten.empty:
        return "<p>Nothing recorded as forgotten.</p>"
    esc = html.escape
    out = [f"<p class=\"wb-note\">Items missing from the most summaries, out of {cells} cells "
           "(each cell's full list is in its drill-down and in forgotten.csv).</p>",
           '<div class="wb-forgot">']
    for kind, group in forgotten.groupby("kind", sort=False):
        counts = group.groupby("item")["cell_id"].nunique().sort_values(ascending=False,
                                                                        kind="stable")
        items = "".join(f'<li title="{esc(str(item))}"><span class="num">{n}</span> '
                        f"<code>{esc(str(item))}</code></li>"
                        for item, n in counts.head(TOP_FORGOTTEN).items())
        more = len(counts) - TOP_FORGOTTEN
        extra = f"<li>… and {more} more</li>" if more > 0 else ""
        out.append(f"<div><h4>{esc(str(kind))}</h4><ul>{items}{extra}</ul></div>")
    out.append("</div>")
    return "".join(out)


def render_html(results: Results, *, title: str, table: pd.DataFrame, comparisons: pd.DataFrame,
                pngs: dict[str, bytes], forgotten: pd.DataFrame, failures: pd.DataFrame,
                forgotten_by_cell: dict[str, dict[str, list[str]] | None],
                text_px: dict[str, float] | None = None) -> str:
    """The whole report page.

    Args:
        results: The loaded `Results` (cells, attempts, runs, spec).
        title: The page title.
        table: The comparison table.
        comparisons: The verdict's comparisons, one row each (`verdict_comparisons`).
        pngs: Plot images by name.
        forgotten: One row per forgotten item (``cell_id``, ``kind``, ``item``...).
        failures: The failed cells' key columns and messages.
        forgotten_by_cell: ``{cell_id: {kind: [items]} or None}`` for the drill-down.
        text_px: Per plot, its smallest text in pixels at the PNG's own size (``data-text-px``
            on the image: at 1,400 px each plot is shown at that size, so at least 11 px).

    Returns:
        The HTML document.
    """
    esc = html.escape
    cells: pd.DataFrame = results.cells
    groups, of_cell = row_groups(table, cells)
    index = cell_index(cells, of_cell)
    chunks = cell_payloads(Path(results.run_dir), cells, results.attempts, forgotten_by_cell)

    body = [f'<header><h1>{esc(title)}</h1><p class="wb-meta">{esc(run_summary(results))}'
            "</p></header>",
            render_verdict(verdict_view(results.verdict()))]
    body.append('<section id="table-section"><h2>Comparison table '
                f'<small>{len(table)} rows: template × model × window</small></h2>'
                '<div class="wb-toolbar" id="wb-toolbar">'
                '<input type="search" id="wb-filter" placeholder="filter rows…" '
                'aria-label="filter rows"><span id="wb-selects"></span>'
                '<span id="wb-count" class="wb-note"></span>'
                '<span class="wb-note">Click a header to sort, a row to open its cells.</span>'
                '</div><div class="wb-toolbar"><span class="wb-note">columns:</span>'
                '<span id="wb-groups" class="wb-groups"></span>'
                '<span id="wb-fit" class="wb-note"></span></div>' + html_table(table, row_groups=groups) + "</section>")
    body.append('<section id="plots"><h2>Plots</h2><div class="wb-plots">')
    for name, png in pngs.items():
        data = base64.b64encode(png).decode("ascii")
        px = (text_px or {}).get(name)
        size = f' data-text-px="{px:.1f}"' if px is not None else ""
        body.append(f'<figure><img alt="{esc(name)}"{size} src="data:image/png;base64,{data}">'
                    f"<figcaption>{esc(name)}</figcaption></figure>")
    body.append("</div></section>")
    body.append('<section id="details"><h2>Details</h2>')
    if not comparisons.empty:
        body.append("<h3>Every comparison of the verdict, per model × window <small>template − "
                    "best, bootstrap 95% CI, Holm p; tie: no significant difference</small></h3>"
                    + plain_table(comparisons, _CMP_FORMATS))
    body.append("<h3>What the summaries forgot most</h3>" + _most_forgotten(forgotten, len(cells)))
    body.append(f"<h3>Failed cells <small>{len(failures)}</small></h3>")
    if failures.empty:
        body.append("<p>No failed cells.</p>")
    else:
        body.append(plain_table(failures.head(MAX_FAILURES)))
        if len(failures) > MAX_FAILURES:
            body.append(f"<p>… {len(failures) - MAX_FAILURES} more in cells.csv.</p>")
    body.append("<p class=\"wb-note\">Generated from <code>results.sqlite</code> by "
                "<code>workbench report</code>; do not edit, regenerate.</p></section>")

    blocks = [f'<script type="application/json" id="wb-index">{script_json(index)}</script>']
    blocks += [f'<script type="application/octet-stream" id="wb-chunk-{i}">{chunk}</script>'
             for i, chunk in enumerate(chunks)]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<link rel="icon" href="data:,"><title>{esc(title)}</title>'
            f"<style>{_asset('report.css')}</style></head><body>\n<main>"
            + "\n".join(body) + "</main>\n" + "\n".join(blocks)
            + f"\n<script>{_asset('report.js')}</script>\n</body></html>\n")
