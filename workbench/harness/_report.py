"""`write_report`: a run folder's report, regenerated from its results store.

Writes into ``<run>/report/`` (or `out_dir`): ``report.md``, ``report.html`` (self-contained:
tables plus the plots as embedded PNG), ``table.csv`` (the comparison table), ``cells.csv`` (every
cell), ``forgotten.csv`` (one row per item a summary forgot) and one PNG per plot. Nothing here is
meant to be edited by hand: run ``workbench report RUN_DIR`` again instead.
"""

from __future__ import annotations

import base64
import html
import io
import json
from pathlib import Path
from typing import Any

import pandas as pd

from workbench.errors import WorkbenchError
from workbench.harness._paired import PairedResult, paired_comparison
from workbench.harness._plots import PLOTS
from workbench.harness._table import column_formats, comparison_table, format_cell, window_label
from workbench.harness._verdict import verdict

TABLE_NOTE = ("Means (tokens, cost, retries, recalls) are per cell over the n sessions every "
              "template completed in that model x window (mean_over); parse_success_pct and "
              "useful_structured_pct are over the cells that got a reply; failed = compaction "
              "outcomes, errors = infrastructure; billed_reported / billed_estimated split what "
              "the model reported from the workbench's o200k estimates. See the README's "
              "metrics glossary.")

REPORT_DIR = "report"
MAX_FORGOTTEN_CELLS = 100
"""Cells listed under "What the summaries forgot" in the md/html report (forgotten.csv has all)."""
MAX_ITEMS = 8
"""Items shown per kind and cell before "... and N more"."""
FORGOTTEN_KINDS = ("files", "errors", "requests", "facts", "stale")


def _load(results_or_run_dir: Any) -> Any:
    if hasattr(results_or_run_dir, "cells"):
        return results_or_run_dir
    from workbench.harness._results import Results

    return Results.load(results_or_run_dir)


# ---- markdown ---------------------------------------------------------------------------------


def markdown_table(df: pd.DataFrame, formats: dict[str, str] | None = None) -> str:
    """A GitHub-flavoured Markdown table of `df` (no index), numbers right-aligned.

    Args:
        df: The frame to show.
        formats: ``{column: format string}`` applied to numeric values.

    Returns:
        The table text, ending with a newline.
    """
    formats = formats or {}
    cols = list(df.columns)

    def cell(v: Any, col: str) -> str:
        return format_cell(v, formats.get(col)).replace("|", "\\|").replace("\n", " ")

    numeric = [pd.api.types.is_numeric_dtype(df[c]) for c in cols]
    lines = ["| " + " | ".join(str(c) for c in cols) + " |",
             "|" + "|".join("---:" if n else "---" for n in numeric) + "|"]
    for row in df.itertuples(index=False):
        lines.append("| " + " | ".join(cell(v, c) for v, c in zip(row, cols, strict=True)) + " |")
    return "\n".join(lines) + "\n"


# ---- pieces -------------------------------------------------------------------------------------


def _comparisons(cells: pd.DataFrame, seed: int) -> list[PairedResult]:
    """Each template (then model) against the first one, on probe recall, when there are two."""
    out: list[PairedResult] = []
    if "probe_recall" not in cells.columns:
        return out
    for on in ("template", "model"):
        if on not in cells.columns:
            continue
        values = list(dict.fromkeys(cells[on].dropna().astype(str)))
        for other in values[1:]:
            out.append(paired_comparison(cells, values[0], other, on=on, seed=seed))
    return out


def _session_loader() -> Any:
    cache: dict[tuple[str, str | None], dict[str, Any]] = {}

    def get(path: str, fmt: str | None, session_id: str) -> Any:
        from workbench.sessions import load_sessions

        key = (path, fmt)
        if key not in cache:
            try:
                cache[key] = {s.id: s for s in load_sessions(path, format=fmt, errors="skip")}
            except (WorkbenchError, OSError):
                cache[key] = {}
        return cache[key].get(session_id)

    return get


def cell_forgotten(run_dir: Path, row: dict[str, Any],
                   sessions: Any = None) -> dict[str, list[str]] | None:
    """What one cell's summary forgot: the stored ``.forgotten.json``, else computed.

    Args:
        run_dir: The run folder.
        row: The cell (a dict of its columns).
        sessions: Optional ``(path, format, session_id) -> Session | None`` loader (cached).

    Returns:
        ``{kind: [items]}``, or None for an error cell or when neither file nor session is found.
    """
    stored = run_dir / "summaries" / f"{row['cell_id']}.forgotten.json"
    if stored.is_file():
        return json.loads(stored.read_text(encoding="utf-8"))
    if row.get("status") != "ok":
        return None
    summary = run_dir / str(row.get("summary_path") or f"summaries/{row['cell_id']}.md")
    if not summary.is_file() or not row.get("session_path"):
        return None
    get = sessions or _session_loader()
    session = get(str(row["session_path"]), row.get("session_format"), str(row["session_id"]))
    if session is None:
        return None
    from workbench.harness.metrics import compute_forgotten

    return compute_forgotten(session, summary.read_text(encoding="utf-8"))


def forgotten_frame(run_dir: Path, cells: pd.DataFrame) -> pd.DataFrame:
    """One row per forgotten item: the cell's key columns, ``kind`` and ``item``."""
    keys = ["cell_id", "session_id", "template", "model", "window", "repeat"]
    rows = []
    sessions = _session_loader()
    for row in cells.to_dict("records"):
        got = cell_forgotten(run_dir, row, sessions)
        for kind, items in (got or {}).items():
            for item in items:
                rows.append({**{k: row.get(k) for k in keys}, "kind": kind, "item": item})
    frame = pd.DataFrame(rows, columns=keys + ["kind", "item"])
    if not frame.empty:
        frame["window"] = frame["window"].map(window_label).astype(object)
    return frame


def _cell_title(row: dict[str, Any]) -> str:
    return (f"{row['session_id']} · {row['template']} · {row['model']} · "
            f"window {window_label(row['window'])} · repeat {row['repeat']}")


def _forgotten_groups(forgotten: pd.DataFrame) -> list[tuple[str, list[tuple[str, list[str]]]]]:
    groups = []
    for _, g in forgotten.groupby("cell_id", sort=False):
        first = g.iloc[0].to_dict()
        kinds = [(k, g[g["kind"] == k]["item"].tolist()) for k in FORGOTTEN_KINDS
                 if (g["kind"] == k).any()]
        groups.append((_cell_title(first), kinds))
    return groups


def _shown(items: list[str]) -> list[str]:
    extra = len(items) - MAX_ITEMS
    return items[:MAX_ITEMS] + ([f"... and {extra} more"] if extra > 0 else [])


def _failures(cells: pd.DataFrame) -> pd.DataFrame:
    cols = ["session_id", "template", "model", "window", "repeat", "error_type", "error_message"]
    if "status" not in cells.columns:
        return pd.DataFrame(columns=cols)
    failed = cells[cells["status"] == "error"].reindex(columns=cols).copy()
    failed["window"] = failed["window"].map(window_label).astype(object)
    failed["error_message"] = failed["error_message"].astype(str).str.slice(0, 160)
    return failed


def _run_line(results: Any) -> str:
    runs = getattr(results, "runs", None)
    if runs is None or runs.empty:
        return ""
    last = runs.iloc[-1]
    return (f"Run **{last.get('name')}** ({len(runs)} invocation(s)), status {last.get('status')}, "
            f"started {runs['started_at'].iloc[0]}, finished {last.get('finished_at')}, "
            f"workbench {last.get('workbench_version')}.")


def _comparison_frame(comparisons: list[PairedResult]) -> pd.DataFrame:
    return pd.DataFrame([c.to_dict() for c in comparisons],
                        columns=["a", "b", "metric", "n_pairs", "n_clusters", "mean_diff",
                                 "ci_low", "ci_high", "winner", "failed_a", "failed_b"])


_CMP_FORMATS = {"mean_diff": "{:+.3f}", "ci_low": "{:+.3f}", "ci_high": "{:+.3f}"}

# ---- writers ------------------------------------------------------------------------------------


def _markdown(title: str, run_line: str, table: pd.DataFrame, comparisons: pd.DataFrame,
              plots: dict[str, Path], forgotten: pd.DataFrame, failures: pd.DataFrame,
              verdict_text: str = "") -> str:
    parts = [f"# {title}\n", "Generated from `results.sqlite` by `workbench report`; "
             "do not edit, regenerate.\n"]
    if run_line:
        parts.append(run_line + "\n")
    parts += ["## Comparison table\n", TABLE_NOTE + "\n",
              markdown_table(table, column_formats(table.columns))]
    if verdict_text:
        parts += ["## Verdict\n", "```text\n" + verdict_text + "\n```\n"]
    if not comparisons.empty:
        parts += ["## Paired comparisons (b - a, cluster bootstrap over sessions, 95% CI)\n",
                  markdown_table(comparisons, _CMP_FORMATS)]
    parts.append("## Plots\n")
    parts += [f"![{name}]({path.name})\n" for name, path in plots.items()]
    parts.append("## What the summaries forgot\n")
    groups = _forgotten_groups(forgotten) if not forgotten.empty else []
    if not groups:
        parts.append("Nothing recorded as forgotten.\n")
    for title_, kinds in groups[:MAX_FORGOTTEN_CELLS]:
        lines = [f"### {title_}\n"]
        for kind, items in kinds:
            lines.append(f"- **{kind}** ({len(items)}): "
                         + "; ".join(f"`{i}`" if kind in ("files", "errors") else i
                                     for i in _shown(items)))
        parts.append("\n".join(lines) + "\n")
    if len(groups) > MAX_FORGOTTEN_CELLS:
        parts.append(f"... {len(groups) - MAX_FORGOTTEN_CELLS} more cells in forgotten.csv.\n")
    parts.append("## Failed cells\n")
    parts.append(markdown_table(failures) if not failures.empty else "No failed cells.\n")
    return "\n".join(parts)


_CSS = """body{font-family:system-ui,sans-serif;margin:2em auto;max-width:72em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:.9em}th,td{border:1px solid #ccc;
padding:.25em .6em;text-align:right}th{background:#f3f3f3}td:first-child,th:first-child
{text-align:left}img{max-width:100%;border:1px solid #eee;margin:.5em 0}code{font-size:.9em}"""


def _html_table(df: pd.DataFrame, name: str, formats: dict[str, str] | None = None) -> str:
    # A fixed id instead of the Styler's random one: regenerating a report gives the same file.
    styler = df.style.set_uuid(name).format(formats or {}, na_rep="—").hide(axis="index")
    return styler.to_html()


def _html(title: str, run_line: str, table: pd.DataFrame, comparisons: pd.DataFrame,
          pngs: dict[str, bytes], forgotten: pd.DataFrame, failures: pd.DataFrame,
          verdict_text: str = "") -> str:
    esc = html.escape
    body = [f"<h1>{esc(title)}</h1>",
            "<p>Generated from <code>results.sqlite</code> by <code>workbench report</code>; "
            "do not edit, regenerate.</p>"]
    if run_line:
        body.append(f"<p>{esc(run_line.replace('**', ''))}</p>")
    body += ["<h2>Comparison table</h2>", f"<p>{esc(TABLE_NOTE)}</p>",
             _html_table(table, "table", column_formats(table.columns))]
    if verdict_text:
        body += ["<h2>Verdict</h2>", f"<pre>{esc(verdict_text)}</pre>"]
    if not comparisons.empty:
        body += ["<h2>Paired comparisons (b - a, cluster bootstrap over sessions, 95% CI)</h2>",
                 _html_table(comparisons, "paired", _CMP_FORMATS)]
    body.append("<h2>Plots</h2>")
    for name, png in pngs.items():
        data = base64.b64encode(png).decode("ascii")
        body.append(f'<figure><img alt="{esc(name)}" src="data:image/png;base64,{data}">'
                    f"<figcaption>{esc(name)}</figcaption></figure>")
    body.append("<h2>What the summaries forgot</h2>")
    groups = _forgotten_groups(forgotten) if not forgotten.empty else []
    if not groups:
        body.append("<p>Nothing recorded as forgotten.</p>")
    for title_, kinds in groups[:MAX_FORGOTTEN_CELLS]:
        items = "".join(f"<li><b>{esc(kind)}</b> ({len(values)}): "
                        + "; ".join(f"<code>{esc(v)}</code>" for v in _shown(values)) + "</li>"
                        for kind, values in kinds)
        body.append(f"<h3>{esc(title_)}</h3><ul>{items}</ul>")
    if len(groups) > MAX_FORGOTTEN_CELLS:
        body.append(f"<p>... {len(groups) - MAX_FORGOTTEN_CELLS} more cells in "
                    "forgotten.csv.</p>")
    body.append("<h2>Failed cells</h2>")
    body.append(_html_table(failures, "failures") if not failures.empty
                else "<p>No failed cells.</p>")
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{esc(title)}</title>"
            f"<style>{_CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def write_report(results_or_run_dir: Any, out_dir: str | Path | None = None) -> dict[str, Path]:
    """Write the report of a run: Markdown, HTML, CSVs and PNG plots.

    Args:
        results_or_run_dir: A `Results`, or a run folder (loaded with `Results.load`).
        out_dir: Where to write; defaults to ``<run>/report/``.

    Returns:
        Paths by name: ``markdown``, ``html``, ``table_csv``, ``cells_csv``, ``forgotten_csv``,
        and ``plot_<name>`` for each plot.

    Raises:
        ConfigError: the folder holds no results store.
    """
    results = _load(results_or_run_dir)
    run_dir = Path(results.run_dir)
    out = Path(out_dir) if out_dir is not None else run_dir / REPORT_DIR
    out.mkdir(parents=True, exist_ok=True)
    cells: pd.DataFrame = results.cells
    spec = getattr(results, "spec", None)
    seed = int(getattr(spec, "seed", 0) or 0)

    table = comparison_table(cells)
    comparisons = _comparison_frame(_comparisons(cells, seed) if not cells.empty else [])
    forgotten = forgotten_frame(run_dir, cells)
    failures = _failures(cells)
    verdict_text = verdict(results).to_text()

    paths: dict[str, Path] = {"markdown": out / "report.md", "html": out / "report.html",
                              "table_csv": out / "table.csv", "cells_csv": out / "cells.csv",
                              "forgotten_csv": out / "forgotten.csv"}
    table.to_csv(paths["table_csv"], index=False)
    cells.to_csv(paths["cells_csv"], index=False)
    forgotten.to_csv(paths["forgotten_csv"], index=False)

    pngs: dict[str, bytes] = {}
    plot_paths: dict[str, Path] = {}
    for name, fn in PLOTS.items():
        buf = io.BytesIO()
        fn(cells).savefig(buf, format="png", dpi=100)
        pngs[name] = buf.getvalue()
        plot_paths[name] = out / f"{name}.png"
        plot_paths[name].write_bytes(pngs[name])
        paths[f"plot_{name}"] = plot_paths[name]

    title = f"Compaction report: {getattr(spec, 'name', None) or run_dir.name}"
    run_line = _run_line(results)
    paths["markdown"].write_text(_markdown(title, run_line, table, comparisons, plot_paths,
                                           forgotten, failures, verdict_text), encoding="utf-8")
    paths["html"].write_text(_html(title, run_line, table, comparisons, pngs, forgotten,
                                   failures, verdict_text), encoding="utf-8")
    return paths
