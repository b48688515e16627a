"""`write_report`: a run folder's report, regenerated from its results store.

Writes into ``<run>/report/`` (or `out_dir`): ``report.md`` (the run's ``Recommendation:`` lines first,
right after the title), ``report.html`` (one self-contained
page: verdict, sortable table with a drill-down into every cell, embedded plots; see
``_html_report``), ``table.csv`` (the comparison table), ``cells.csv`` (every
cell), ``forgotten.csv`` (one row per item a summary forgot) and one PNG per plot. Nothing here is
meant to be edited by hand: run ``workbench report RUN_DIR`` again instead.
"""

from __future__ import annotations

import base64
import html
import io
import json
from collections.abc import Callable, Hashable, Mapping
from pathlib import Path
from typing import TypeAlias

import pandas as pd

from workbench._redact import redact
from workbench._storage import write_atomic
from workbench.errors import WorkbenchError
from workbench.harness.report._html import render_html
from workbench.harness.report._html_table import plain_table, short_window
from workbench.harness.report._html_verdict import verdict_comparisons
from workbench.harness.report._policy_section import policy_report
from workbench.harness.report._replays import replay_report
from workbench.harness.results._plots import PLOTS, PNG_DPI, REPORT_PLOTS, smallest_text_pt
from workbench.harness.results._results import Results, read_cell_text, read_cell_texts
from workbench.harness.results._table import (
    NOT_APPLICABLE,
    comparison_table,
    not_applicable,
    window_label,
)
from workbench.harness.results._table_format import column_formats, format_cell
from workbench.harness.results._verdict import run_verdict
from workbench.metrics import compute_forgotten
from workbench.sessions import Session, load_sessions
from workbench.strategies import replay_ranking
from workbench.strategies._replay_table import REPLAY_KEYS

TABLE_NOTE = ("Outcome counts (cells, replies, failed = compaction outcomes, errors = "
              "infrastructure) are over every cell of a row. Every other value is a mean per "
              "cell over the n sessions every template completed in that model x window "
              "(mean_over), except the sums over every cell: spent_tokens, cost_total, "
              "calls_made_total, calls_shared_total, http_retries_total. billed_* and cost say "
              "what a cell's summary cost (a call shared with another cell or read from a "
              "recording counts at that call's usage); spent_tokens and cost_total say what the "
              "run paid. n/a: the metric cannot apply (a model-free strategy has no reply). See "
              "the README's metrics glossary.")

REPLAY_NOTE = ("Means per session, except peak_context_max (the largest prompt of any session) "
               "and errors_total (a sum). feasible: every prompt fit the window; an infeasible "
               "row's billed tokens are not a cost to compare, and it is never ranked on them. "
               "Fact and probe survival count only the compactions whose context fit the "
               "window (rounds_over_window counts the others).")

REPORT_DIR = "report"
MAX_FORGOTTEN_CELLS = 100
"""Cells listed under "What the summaries forgot" in the md/html report (forgotten.csv has all)."""
MAX_ITEMS = 8
"""Items shown per kind and cell before "... and N more"."""
FORGOTTEN_KINDS = ("files", "errors", "requests", "facts", "stale")

SessionLoader: TypeAlias = Callable[[str, str | None, str], Session | None]
"""``(path, format, session_id) -> Session | None``: a cell's session, files read once."""


def _load(results_or_run_dir: Results | str | Path) -> Results:
    if isinstance(results_or_run_dir, Results):
        return results_or_run_dir
    return Results.load(results_or_run_dir)


# ---- markdown ---------------------------------------------------------------------------------


def markdown_table(df: pd.DataFrame, formats: dict[str, str] | None = None, *,
                   comparison: bool = False) -> str:
    """A GitHub-flavoured Markdown table of `df` (no index), numbers right-aligned.

    Args:
        df: The frame to show.
        formats: ``{column: format string}`` applied to numeric values.
        comparison: `df` is a comparison table: windows read as the verdict writes them
            (``8k``) and metrics that cannot apply to a row (`not_applicable`) show ``n/a``.

    Returns:
        The table text, ending with a newline.
    """
    formats = formats or {}
    cols = list(df.columns)

    def cell(v: object, col: str, absent: frozenset[str]) -> str:
        if col in absent:
            text = NOT_APPLICABLE
        elif comparison and col in ("window", "effective_window"):
            text = short_window(v)  # the verdict's label: 8k, 32k
        else:
            text = format_cell(v, formats.get(col))
        return text.replace("|", "\\|").replace("\n", " ")

    numeric = [pd.api.types.is_numeric_dtype(df[c]) for c in cols]
    lines = ["| " + " | ".join(str(c) for c in cols) + " |",
             "|" + "|".join("---:" if n else "---" for n in numeric) + "|"]
    for record in df.to_dict("records"):
        absent = not_applicable(record) if comparison else frozenset()
        lines.append("| " + " | ".join(cell(record[c], c, absent) for c in cols) + " |")
    return "\n".join(lines) + "\n"


# ---- pieces -------------------------------------------------------------------------------------


def _session_loader() -> SessionLoader:
    cache: dict[tuple[str, str | None], dict[str, Session]] = {}

    def get(path: str, fmt: str | None, session_id: str) -> Session | None:
        key = (path, fmt)
        if key not in cache:
            try:
                cache[key] = {s.id: s for s in load_sessions(path, format=fmt, errors="skip")}
            except (WorkbenchError, OSError):
                cache[key] = {}
        return cache[key].get(session_id)

    return get


def cell_forgotten(run_dir: Path, row: Mapping[Hashable, object], sessions: SessionLoader | None = None,
                   stored: str | None = None) -> dict[str, list[str]] | None:
    """What one cell's summary forgot: its stored ``forgotten.json``, else computed.

    Args:
        run_dir: The run folder.
        row: The cell (a dict of its columns).
        sessions: Optional ``(path, format, session_id) -> Session | None`` loader (cached).
        stored: The cell's ``forgotten.json`` when the caller has read it already.

    Returns:
        ``{kind: [items]}``, or None for an error cell or when neither file nor session is found.
    """
    if stored is None:
        stored = read_cell_text(run_dir, str(row["cell_id"]), "forgotten.json")
    if stored is not None:
        return json.loads(stored)
    if row.get("status") != "ok":
        return None
    summary = run_dir / str(row.get("summary_path") or f"summaries/{row['cell_id']}.md")
    if not summary.is_file() or not row.get("session_path"):
        return None
    get = sessions or _session_loader()
    fmt = row.get("session_format")
    session = get(str(row["session_path"]), fmt if isinstance(fmt, str) else None,
                  str(row["session_id"]))
    if session is None:
        return None
    return compute_forgotten(session, summary.read_text(encoding="utf-8"))


def forgotten_by_cell(run_dir: Path,
                      cells: pd.DataFrame) -> dict[str, dict[str, list[str]] | None]:
    """`cell_forgotten` for every cell: ``{cell_id: {kind: [items]} or None}``."""
    sessions = _session_loader()
    records = cells.to_dict("records")
    stored = read_cell_texts(run_dir, "forgotten.json", [str(r["cell_id"]) for r in records])
    return {str(row["cell_id"]): cell_forgotten(run_dir, row, sessions,
                                                stored.get(str(row["cell_id"])))
            for row in records}


def forgotten_frame(run_dir: Path, cells: pd.DataFrame,
                    by_cell: dict[str, dict[str, list[str]] | None] | None = None) -> pd.DataFrame:
    """One row per forgotten item: the cell's key columns, ``kind`` and ``item``.

    Args:
        run_dir: The run folder.
        cells: The run's cells.
        by_cell: A `forgotten_by_cell` result to reuse (computed when None).
    """
    keys = ["cell_id", "session_id", "template", "model", "window", "repeat"]
    rows = []
    by_cell = forgotten_by_cell(run_dir, cells) if by_cell is None else by_cell
    for row in cells.to_dict("records"):
        got = by_cell.get(str(row["cell_id"]))
        for kind, items in (got or {}).items():
            for item in items:
                rows.append({**{k: row.get(k) for k in keys}, "kind": kind, "item": item})
    frame = pd.DataFrame(rows, columns=keys + ["kind", "item"])
    if not frame.empty:
        frame["window"] = frame["window"].map(window_label).astype(object)
    return frame


def _cell_title(row: Mapping[str, object]) -> str:
    return (f"{row['session_id']} · {row['template']} · {row['model']} · "
            f"window {window_label(row['window'])} · repeat {row['repeat']}")


def _forgotten_groups(forgotten: pd.DataFrame) -> list[tuple[str, list[tuple[str, list[str]]]]]:
    # Plain dicts, one pass: per-cell DataFrame filtering made a 2,000-cell report take minutes.
    cells: dict[object, tuple[Mapping[str, object], dict[str, list[str]]]] = {}
    for record in forgotten.to_dict("records"):
        entry = cells.setdefault(record["cell_id"], (record, {}))
        entry[1].setdefault(record["kind"], []).append(record["item"])
    return [(_cell_title(first), [(k, kinds[k]) for k in FORGOTTEN_KINDS if k in kinds])
            for first, kinds in cells.values()]


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


def _run_line(results: Results) -> str:
    runs = getattr(results, "runs", None)
    if runs is None or runs.empty:
        return ""
    last = runs.iloc[-1]
    return (f"Run **{last.get('name')}** ({len(runs)} invocation(s)), status {last.get('status')}, "
            f"started {runs['started_at'].iloc[0]}, finished {last.get('finished_at')}, "
            f"workbench {last.get('workbench_version')}.")


COMPARISONS_TITLE = ("Every comparison of the verdict, per model x window (template - best, "
                     "cluster bootstrap 95% CI, Holm p; tie: no significant difference)")
_CMP_FORMATS = {"diff": "{:+.3f}", "ci_low": "{:+.3f}", "ci_high": "{:+.3f}", "holm_p": "{:.3f}"}

# ---- writers ------------------------------------------------------------------------------------


def _markdown(title: str, run_line: str, table: pd.DataFrame, comparisons: pd.DataFrame,
              plots: dict[str, Path], forgotten: pd.DataFrame, failures: pd.DataFrame,
              verdict_text: str = "", recommendation: list[str] | None = None) -> str:
    parts = [f"# {title}\n"]
    if recommendation:
        parts += ["## Recommendation\n", "\n".join(f"- {line}" for line in recommendation)
                  + "\n"]
    parts.append("Generated from `results.sqlite` by `workbench report`; do not edit, "
                 "regenerate.\n")
    if run_line:
        parts.append(run_line + "\n")
    parts += ["## Comparison table\n", TABLE_NOTE + "\n",
              markdown_table(table, column_formats(table.columns), comparison=True)]
    if verdict_text:
        parts += ["## Verdict\n", "```text\n" + verdict_text + "\n```\n"]
    if not comparisons.empty:
        parts += [f"## {COMPARISONS_TITLE}\n",
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


def write_report(results_or_run_dir: Results | str | Path, out_dir: str | Path | None = None) -> dict[str, Path]:
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

    table = comparison_table(cells)
    # the verdict's own comparisons, per model x window: the report states nothing else
    comparisons = verdict_comparisons(results.verdict())
    by_cell = forgotten_by_cell(run_dir, cells)
    forgotten = forgotten_frame(run_dir, cells, by_cell)
    failures = _failures(cells)
    found = run_verdict(results)
    verdict_text = found.to_text()

    paths: dict[str, Path] = {"markdown": out / "report.md", "html": out / "report.html",
                              "table_csv": out / "table.csv", "cells_csv": out / "cells.csv",
                              "forgotten_csv": out / "forgotten.csv"}
    # Every text file goes through the redaction layer (stores written by older versions may
    # still hold a key in a traceback).
    for frame, name in ((table, "table_csv"), (cells, "cells_csv"), (forgotten, "forgotten_csv")):
        write_atomic(paths[name], redact(frame.to_csv(index=False)))

    pngs: dict[str, bytes] = {}
    text_px: dict[str, float] = {}
    plot_paths: dict[str, Path] = {}
    for name in REPORT_PLOTS:
        buf = io.BytesIO()
        figure = PLOTS[name](cells)
        figure.savefig(buf, format="png", dpi=PNG_DPI)
        text_px[name] = smallest_text_pt(figure) * PNG_DPI / 72
        pngs[name] = buf.getvalue()
        plot_paths[name] = out / f"{name}.png"
        write_atomic(plot_paths[name], pngs[name])
        paths[f"plot_{name}"] = plot_paths[name]

    title = f"Compaction report: {getattr(spec, 'name', None) or run_dir.name}"
    run_line = _run_line(results)
    write_atomic(paths["markdown"], redact(_markdown(
        title, run_line, table, comparisons, plot_paths, forgotten, failures, verdict_text,
        found.recommendation_lines())))
    write_atomic(paths["html"], redact(render_html(
        results, title=title, table=table, comparisons=comparisons, pngs=pngs,
        forgotten=forgotten, failures=failures, forgotten_by_cell=by_cell, text_px=text_px)))
    _add_replay_section(results, out, paths)
    return paths


def _add_replay_section(results: Results, out: Path, paths: dict[str, Path]) -> None:
    """Append the whole-session replay table and plots, when the run has replays."""
    if not hasattr(results, "replays") or results.replays.empty:
        return
    table, pngs, text_px = replay_report(results, out)
    paths["replay_csv"] = out / "replay.csv"
    write_atomic(paths["replay_csv"], table.to_csv(index=False))
    ranking = replay_ranking(table)
    table = table.assign(feasible=["yes" if v else "no" for v in table["feasible"]],
                         window=[short_window(w) for w in table["window"]])
    formats = {c: "{:,.0f}" for c in table.columns if c not in REPLAY_KEYS
               and not c.startswith(("facts_", "probe_"))}
    formats.update({c: "{:.1%}" for c in table.columns if c.startswith(("facts_", "probe_"))})
    heading = "Whole-session replay"
    md = [f"\n## {heading}\n", REPLAY_NOTE + "\n", markdown_table(table, formats),
          *(f"- {line}" for line in ranking), ""]
    md += [f"![{name}]({name})\n" for name in pngs]
    policies = policy_report(results, out, markdown_table)  # detectors, survival, verdict
    md += policies.markdown if policies is not None else []
    write_atomic(paths["markdown"], paths["markdown"].read_text(encoding="utf-8")
                 + redact("\n".join(md)))
    images = "".join(f'<figure><img alt="{html.escape(name)}" '
                     f'data-text-px="{text_px[name]:.1f}" src="data:image/png;base64,'
                     f'{base64.b64encode(data).decode()}"></figure>' for name, data in pngs.items())
    items = "".join(f"<li>{html.escape(line)}</li>" for line in ranking)
    section = (f'<section id="replay"><h2>{heading}</h2><p>{html.escape(REPLAY_NOTE)}</p>'
               f'<div class="wb-wide">{plain_table(table, formats)}</div><ul>{items}</ul>'
               f'<div class="wb-plots">{images}</div>'
               f'{policies.html if policies is not None else ""}</section>')
    text = paths["html"].read_text(encoding="utf-8")
    write_atomic(paths["html"], redact(text.replace('<section id="details">',
                                                    section + '\n<section id="details">', 1)))
    for name in [*pngs, *(policies.pngs if policies is not None else ())]:
        paths[f"plot_{name.removesuffix('.png')}"] = out / name
