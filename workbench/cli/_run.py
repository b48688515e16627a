"""``workbench run``: run (or resume) an experiment into a run folder.

Prints the comparison table, the verdict and the error summary. Exit codes: 0 when every cell
produced an outcome (a summary, or a compaction failure such as context exhausted),
`EXIT_INFRASTRUCTURE` when any cell hit an infrastructure error (replay cache miss, auth,
network, retries exhausted); click's 1 and 2 stay for bad input and usage errors.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from workbench.harness import Results

EXIT_INFRASTRUCTURE = 3
"""Exit code of `workbench run` when any cell hit an infrastructure error."""

TABLE_COLUMNS = ("n", "cells", "failed", "errors", "parse_success_pct", "useful_structured_pct",
                 "retained_tokens", "summary_tokens", "billed_reported", "billed_estimated",
                 "cost", "retries_mean", "retries_max", "http_retries", "calls_made", "calls_shared",
                 "probe_recall",
                 "template_echo", "qa_accuracy", "qa_loss", "judge_score", "next_action_match")
"""Columns `workbench run` prints after template, model and window (see the glossary)."""

TABLE_HEADER = (
    "Per template x model x window. n = sessions every template completed in that model x "
    "window;\ntoken, cost, retries_mean and recall columns are means per cell over those n "
    "sessions\n(tokens and cost aggregated the same way). billed_reported = counted by the "
    "model or provider,\nbilled_estimated = estimated by the workbench (o200k). failed = "
    "compaction outcome (context exhausted),\nerrors = infrastructure. parse_success_pct and "
    "useful_structured_pct are over cells that got a reply.\nwindow: the simulated cap, "
    "'32k->16k' when the model's real context is smaller; [tokenizer] the cap\ncounted with. "
    "qa_accuracy = exact questions answered right from the compacted context, qa_loss = the\n"
    "share lost against the full history ([qa] answerer 'lookup': whether the answer is "
    "findable).\nDefinitions: README, 'Metrics glossary'.")


def _window_text(window: object, effective: object, tokenizer: object) -> str:
    from workbench.harness.experiment._windows import format_window

    if isinstance(window, str):
        text = window
    else:
        text = format_window(int(window))  # type: ignore[call-overload]
        if isinstance(effective, (int, float)) and int(effective) < int(window):  # type: ignore[call-overload]
            text += f"->{format_window(int(effective))}"
    if isinstance(tokenizer, str) and tokenizer:
        text += f" [{tokenizer}]"
    return text


def print_table(results: Results) -> None:
    """Print the comparison table of `results` as `workbench run` shows it."""
    import pandas as pd

    from workbench.harness.results._table import column_formats, format_cell

    table = results.table()
    if table.empty:
        click.echo("no cells finished")
        return
    keys = [c for c in ("strategy", "template", "model", "window") if c in table.columns]
    shown = table[keys + [c for c in TABLE_COLUMNS if c in table.columns]].copy()
    shown["window"] = [_window_text(w, e, t) for w, e, t in
                       zip(table["window"], table["effective_window"],
                           table["window_tokenizer"], strict=True)]
    for col, fmt in column_formats(list(shown.columns)).items():
        shown[col] = [format_cell(v, fmt) for v in shown[col]]
    click.echo(TABLE_HEADER + "\n")
    with pd.option_context("display.width", 300, "display.max_columns", 40):
        click.echo(shown.to_string(index=False))


@click.command("run")
@click.argument("spec", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", "out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Run folder (default: runs/<name>; the same folder resumes).")
@click.option("--retry-errors", is_flag=True, help="Re-run cells stored as errors.")
@click.option("--dry-run", is_flag=True, help="Count cells and estimate tokens and cost only.")
@click.option("--concurrency", type=click.IntRange(min=1), default=None,
              help="Cells in flight at once (overrides the spec).")
@click.option("--no-progress", is_flag=True, help="Hide the progress bar.")
@click.option("--new", "new", is_flag=True,
              help="Start a fresh run folder (<out>-2, -3...) instead of resuming the existing one.")
@click.option("--executor", type=click.Choice(["local", "ray"]), default=None,
              help="Where cells run (overrides the spec's executor): local asyncio, or Ray "
                   "(needs the ray extra).")
@click.option("--address", default=None, metavar="auto|ray://HOST:PORT",
              help="Ray cluster to use: 'auto' joins this machine's cluster, ray://host:port a "
                   "remote one; omitted starts a private local Ray instance.")
def command(spec: Path | None, out: Path | None, retry_errors: bool, dry_run: bool,
            concurrency: int | None, no_progress: bool, new: bool, executor: str | None,
            address: str | None) -> None:
    """Run the experiment SPEC (TOML); without SPEC, the shipped default experiment.

    Re-running the same command resumes: finished cells are skipped. A run folder holding a
    different experiment's cells is refused; pass --new or another --out. Exits 3 when any cell
    hit an infrastructure error (cache miss, auth, network, retries exhausted), 0 when every
    cell produced an outcome (compaction failures such as context exhausted are outcomes).
    """
    from workbench.harness import DryRunEstimate, Experiment, run_experiment
    from workbench.harness.run import default_out

    experiment = Experiment.default() if spec is None else Experiment.from_toml(spec)
    folder = out or default_out(experiment)
    result = run_experiment(experiment, folder, retry_errors=retry_errors, dry_run=dry_run,
                            progress=not no_progress, concurrency=concurrency, new=new,
                            executor=executor, address=address)
    if isinstance(result, DryRunEstimate):
        return  # the runner printed the estimate
    infrastructure = _print_results(result)
    if infrastructure:
        click.echo(f"exit {EXIT_INFRASTRUCTURE}: {infrastructure} cell(s) hit infrastructure "
                   "errors; fix the cause and rerun with --retry-errors", err=True)
        sys.exit(EXIT_INFRASTRUCTURE)


def _print_results(results: Results) -> int:
    """Print table, verdict, error summary and folder; return the infrastructure error count."""
    from workbench.harness.results._outcomes import FAILED

    print_table(results)
    _print_replays(results)
    found = results.verdict()
    click.echo("\n" + found.to_text())
    cells = results.cells
    errors = found.infrastructure_errors
    failed = sum(e.count for e in found.errors if e.kind == FAILED)
    click.echo(f"\nrun folder: {results.run_dir} ({len(cells)} cells, {failed} failed, "
               f"{errors} errors, status {results.status})")
    click.echo(f"report: workbench report {results.run_dir}")
    return errors


REPLAY_SHOWN = ("strategy", "window", "threshold", "sessions", "compactions", "billed_tokens",
                "cache_breaks", "peak_context", "overflow_turns", "facts_recall_mean")


def _print_replays(results: Results) -> None:
    import pandas as pd

    if results.replays.empty:
        return
    table = results.replay_table()
    shown = table[[c for c in REPLAY_SHOWN if c in table.columns]].copy()
    for col in shown.columns:
        if col == "facts_recall_mean":
            shown[col] = ["—" if pd.isna(v) else f"{v:.1%}" for v in shown[col]]
        elif col == "window":
            from workbench.harness.experiment._windows import format_window

            shown[col] = [format_window(int(v)) for v in shown[col]]
        elif col not in ("strategy", "threshold"):
            shown[col] = ["—" if pd.isna(v) else f"{v:,.0f}" for v in shown[col]]
    click.echo("\nwhole-session replay (means per session):")
    with pd.option_context("display.width", 250, "display.max_columns", 40):
        click.echo(shown.to_string(index=False))
