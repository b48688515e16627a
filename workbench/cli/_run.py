"""``workbench run``: run (or resume) an experiment into a run folder.

Prints the comparison table, the verdict and the error summary; resuming a run that has
nothing left to run says so and prints the summary once. Exit codes (`workbench.cli._exit_codes`):
0 when every cell produced an outcome (a summary, or a compaction failure such as context
exhausted), `EXIT_INFRASTRUCTURE` when any cell hit an infrastructure error (replay cache miss,
auth, network, retries exhausted), `EXIT_BUDGET` when the budget stopped the run (the runner
says why, once), `EXIT_INTERRUPTED` on Ctrl-C (`_stops`); click's 1 and 2 stay for bad input
and usage errors.
"""

from __future__ import annotations

import gc
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

import click

from workbench.cli._exit_codes import EXIT_BUDGET, EXIT_INFRASTRUCTURE
from workbench.cli._options import (
    json_option,
    load_spec,
    not_run_line,
    override_options,
    pop_overrides,
    write_json_file,
)
from workbench.cli._stops import (
    interrupted_line,
    nothing_ran,
    nothing_to_run_line,
    on_interrupt,
    resume_command,
    typed_arguments,
)

if TYPE_CHECKING:
    import pandas as pd

    from workbench.harness import Results

TABLE_HEADER = (
    "Per template x model x window. cells, failed (compaction outcome: context exhausted) and "
    "err (infrastructure)\ncount every cell; every other column is a mean per cell over the n "
    "sessions every template completed in\nthat model x window. billed and cost: what a cell's "
    "summary cost, its shared or recorded calls included;\nwhat the run paid is in the spent "
    "columns (--wide). n/a: cannot apply. Definitions: README, 'Metrics glossary'.")
"""Printed above the table."""
SPENT_LINE = ("spent by this run: {tokens:,} tokens, {cost}; model calls made {made:,}, shared "
              "{shared:,} (sums of the table's spent columns)")
REFERENCE_NOTE = ("reference: the recorded agent's own summary at its recorded boundary, counted "
                  "and probed as goose@recorded is;\ncompare it with the @recorded rows, not "
                  "with rows compacted at the end of the session.")
EFFECTIVE_NOTE = "ran at a smaller window than the cap (the model's own context): {rows}"
RUN_GC_THRESHOLDS = (10_000, 20, 20)
"""The collector's thresholds during `workbench run` (`_collect_less`)."""

MAX_TABLE_ROWS = 12
"""A table of at most this many rows is printed by default; a longer one with --verbose."""


def _effective_note(table: pd.DataFrame) -> str | None:
    """Which rows ran at a smaller effective window than their cap, or None."""
    # the light start: loads pydantic and jinja2
    from workbench.harness.experiment._windows import format_window

    smaller: dict[str, None] = {}
    for row in table.to_dict("records"):
        window, effective = row.get("window"), row.get("effective_window")
        if (isinstance(window, int) and isinstance(effective, (int, float))
                and int(effective) < window):
            smaller.setdefault(f"{row['model']} at {format_window(window)} ran at "
                               f"{format_window(int(effective))}", None)
    return EFFECTIVE_NOTE.format(rows="; ".join(smaller)) if smaller else None


def spent_line(table: pd.DataFrame) -> str:
    """The run's spend, summed from the table's sum columns (the same numbers, added up)."""
    import pandas as pd  # the light start: pandas

    def total(col: str) -> float:
        if col not in table.columns:
            return 0.0
        return float(pd.to_numeric(table[col], errors="coerce").fillna(0).sum())

    costs = pd.to_numeric(table["cost_total"], errors="coerce")
    cost = "unknown cost" if costs.isna().any() else f"${costs.sum():,.4f}"
    return SPENT_LINE.format(tokens=int(total("spent_tokens")), cost=cost,
                             made=int(total("calls_made_total")),
                             shared=int(total("calls_shared_total")))


def print_table(results: Results, *, wide: bool = False,
                table: pd.DataFrame | None = None) -> None:
    """Print the comparison table of `results` as `workbench run` shows it.

    Args:
        results: The run.
        wide: Every column; by default the table fits 120 columns.
        table: `results.table()` when the caller has it already.
    """
    from workbench.harness.report._text_table import text_table  # the light start

    table = results.table() if table is None else table
    if table.empty:
        click.echo("no cells finished")
        return
    click.echo(TABLE_HEADER + "\n")
    click.echo(text_table(table, wide=wide))
    if "strategy" in table.columns and (table["strategy"] == "reference").any():
        click.echo(REFERENCE_NOTE)
    note = _effective_note(table)
    if note:
        click.echo(textwrap.fill(note, width=120, subsequent_indent="  ",
                                 break_on_hyphens=False))
    click.echo(spent_line(table))


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
@click.option("--wide", is_flag=True,
              help="Print every column of the table (by default it fits 120 columns).")
@click.option("--verbose", is_flag=True,
              help="Print everything: the whole table, the replay, every comparison of the "
                   "verdict (by default: one screen, the table only when it has at most "
                   f"{MAX_TABLE_ROWS} rows).")
@json_option
@override_options
def command(spec: Path | None, out: Path | None, retry_errors: bool, dry_run: bool,
            concurrency: int | None, no_progress: bool, new: bool, executor: str | None,
            address: str | None, wide: bool, verbose: bool, json_path: Path | None,
            **overridden: object) -> None:
    """Run the experiment SPEC (TOML, or a shipped experiment's name); without SPEC,
    experiments/default.toml here (a clone or a `workbench init` project), else the shipped
    default experiment.

    Re-running the same command resumes: finished cells are skipped. A run folder holding a
    different experiment's cells is refused; pass --new or another --out. An overridden run
    (--model, --template, --window, --sessions, --limit, --set) gets its own folder,
    runs/<name>-<hash of the overrides>. Exits 3 when any cell hit an infrastructure error
    (cache miss, auth, network, retries exhausted), 4 when the budget stopped the run, 130 on
    Ctrl-C (after a line saying what was saved and the command that resumes), 0 when every
    cell produced an outcome (compaction failures such as context exhausted are outcomes).
    """
    # the light start: loads pandas, pydantic and jinja2
    from workbench.harness import DryRunEstimate, run_experiment

    # the light start: loads pandas, pydantic and jinja2
    from workbench.harness.run import default_out
    from workbench.harness.run._run_folder import fresh_folder  # the light start, as above

    overrides = pop_overrides(overridden)
    experiment, run_name = load_spec(spec, "default", overrides)
    default_folder = default_out(experiment).parent / run_name
    folder = out or default_folder
    if new and not dry_run:  # chosen here, so an interrupted run can name its folder
        folder, new = fresh_folder(folder), False
    if overrides:
        click.echo(f"overrides: {overrides.describe()} (run folder {folder})")
    line = not_run_line(experiment)
    if line:
        click.echo(textwrap.fill(line, width=120, break_on_hyphens=False))
    resume = resume_command(typed_arguments(), folder, default_folder)
    on_interrupt(lambda: interrupted_line(experiment, folder, resume))
    _collect_less()
    result = run_experiment(experiment, folder, retry_errors=retry_errors, dry_run=dry_run,
                            progress=not no_progress, concurrency=concurrency, new=new,
                            executor=executor, address=address)
    if isinstance(result, DryRunEstimate):
        return  # the runner printed the estimate
    if nothing_ran(result):
        click.echo(nothing_to_run_line(result))
    infrastructure = _print_results(result, wide=wide, verbose=verbose)
    write_json_file(json_path, result, "run")
    if result.status == "budget_reached":
        sys.exit(EXIT_BUDGET)  # the runner said why, once
    if infrastructure:
        click.echo(f"exit {EXIT_INFRASTRUCTURE}: {infrastructure} cell(s) hit infrastructure "
                   "errors; fix the cause and rerun with --retry-errors", err=True)
        sys.exit(EXIT_INFRASTRUCTURE)


def _collect_less() -> None:
    """Set the cyclic garbage collector for a run (this process is the command's own).

    A run keeps hundreds of thousands of objects for its whole length (sessions, messages,
    the run memo), and at Python's default thresholds the collector walks them again and
    again: about 0.5 s of the default run's CPU. What is loaded by now is frozen out of its
    view, and it runs on every `RUN_GC_THRESHOLDS[0]` new objects instead of 700 (0.1 s; the
    peak memory is the same: the run's objects are freed by reference counting).
    """
    gc.freeze()
    gc.set_threshold(*RUN_GC_THRESHOLDS)


def _print_results(results: Results, wide: bool = False, verbose: bool = False) -> int:
    """Print the answer (one screen; everything with `verbose`), the error summary and the
    folder; return the infrastructure error count."""
    # the light start: pandas and the verdict load once a run has something to print
    from workbench.harness.report._screen import screen_lines

    # the light start: loads pandas, pydantic and jinja2
    from workbench.harness.results._outcomes import FAILED

    found = results.verdict()
    if verbose:
        print_table(results, wide=wide)
        _print_replays(results)
        click.echo("\n" + found.to_text())
    else:
        table = results.table()
        if len(table) <= MAX_TABLE_ROWS:
            print_table(results, wide=wide, table=table)
        elif not table.empty:
            click.echo(spent_line(table))
        click.echo("\n" + "\n".join(screen_lines(found)))
    cells = results.cells
    errors = found.infrastructure_errors
    failed = sum(e.count for e in found.errors if e.kind == FAILED)
    click.echo(f"\nrun folder: {results.run_dir} ({len(cells)} cells, {failed} failed, "
               f"{errors} errors, status {results.status})")
    click.echo(f"report: workbench report {results.run_dir}"
               + ("" if verbose else "   (every comparison: --verbose)"))
    return errors


REPLAY_SHOWN = {"strategy": "strategy", "window": "window", "threshold": "threshold",
                "sessions": "sessions", "compactions": "compactions",
                "billed_tokens": "billed tok", "cache_breaks": "cache breaks",
                "peak_context_max": "peak (max)", "overflow_turns": "overflow",
                "feasible": "feasible", "facts_recall_mean": "facts kept"}
"""Replay columns `workbench run` prints, with their short headers."""
REPLAY_HEADER = "\n".join((
    "whole-session replay: means per session, except peak (max), the largest prompt of any "
    "session;",
    "overflow = turns whose prompt exceeded the window; feasible = every prompt fit it (an "
    "infeasible row's",
    "billed tokens are not a cost to compare); facts kept = planted facts still in the context,",
    "over the compactions whose context fit the window:"))


def _print_replays(results: Results) -> None:
    import pandas as pd  # the light start: pandas

    # the light start: loads pydantic and jinja2
    from workbench.harness.experiment._windows import format_window

    # the light start: loads pydantic and jinja2
    from workbench.strategies import replay_ranking, threshold_label

    if results.replays.empty:
        return
    table = results.replay_table()
    shown = table[[c for c in REPLAY_SHOWN if c in table.columns]].copy()
    for col in shown.columns:
        if col == "threshold" and shown[col].isna().any():  # "policy": each at its own trigger
            shown[col] = [threshold_label(v) for v in shown[col]]
        elif col == "facts_recall_mean":
            shown[col] = ["—" if pd.isna(v) else f"{v:.1%}" for v in shown[col]]
        elif col == "window":
            shown[col] = [format_window(int(v)) for v in shown[col]]
        elif col == "feasible":
            shown[col] = ["yes" if v else "no" for v in shown[col]]
        elif col not in ("strategy", "threshold"):
            shown[col] = ["—" if pd.isna(v) else f"{v:,.0f}" for v in shown[col]]
    click.echo("\n" + REPLAY_HEADER)
    click.echo(shown.rename(columns=REPLAY_SHOWN).to_string(index=False))
    for line in replay_ranking(table):
        click.echo(textwrap.fill(line, width=120, initial_indent="  ", subsequent_indent="    ",
                                 break_on_hyphens=False))
    spec = results.spec.replay if results.spec is not None else None
    if spec is not None and spec.detectors:
        # the light start: ~1.4 ms (the harness packages' own files) for detector text only
        from workbench.harness.report._replay_text import detector_text

        click.echo("\n" + detector_text(results))
