"""``workbench run``: run (or resume) an experiment into a run folder."""

from __future__ import annotations

from pathlib import Path

import click

from workbench.harness import DryRunEstimate, Experiment, Results, run_experiment
from workbench.harness._runner import default_out

TABLE_COLUMNS = ("cells", "retained_tokens", "summary_tokens", "billed_tokens", "cost",
                 "parse_success_pct", "retries_mean", "retries_max", "failures", "calls_made",
                 "calls_shared", "probe_recall",
                 "template_echo")


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
    different experiment's cells is refused; pass --new or another --out.
    """
    experiment = Experiment.default() if spec is None else Experiment.from_toml(spec)
    folder = out or default_out(experiment)
    result = run_experiment(experiment, folder, retry_errors=retry_errors, dry_run=dry_run,
                            progress=not no_progress, concurrency=concurrency, new=new,
                            executor=executor, address=address)
    if isinstance(result, DryRunEstimate):
        return  # the runner printed the estimate
    _print_results(result)


def _print_results(results: Results) -> None:
    import pandas as pd

    table = results.table()
    if table.empty:
        click.echo("no cells finished")
    else:
        from workbench.harness._experiment import format_window
        from workbench.harness._table import column_formats, format_cell

        keep = [c for c in table.columns if c in ("strategy", "template", "model", "window") or
                c in TABLE_COLUMNS]
        shown = table[keep].copy()
        if "window" in shown:
            shown["window"] = [w if isinstance(w, str) else format_window(int(w))
                               for w in shown["window"]]
        fmts = column_formats(list(shown.columns))
        for col, fmt in fmts.items():
            shown[col] = [format_cell(v, fmt) for v in shown[col]]
        with pd.option_context("display.width", 250, "display.max_columns", 40):
            click.echo(shown.to_string(index=False))
    _print_replays(results)
    errors = int((results.cells["status"] == "error").sum()) if not results.cells.empty else 0
    click.echo(f"\nrun folder: {results.run_dir} ({len(results.cells)} cells, {errors} errors, "
               f"status {results.status})")
    click.echo(f"report: workbench report {results.run_dir}")


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
            from workbench.harness._experiment import format_window

            shown[col] = [format_window(int(v)) for v in shown[col]]
        elif col not in ("strategy", "threshold"):
            shown[col] = ["—" if pd.isna(v) else f"{v:,.0f}" for v in shown[col]]
    click.echo("\nwhole-session replay (means per session):")
    with pd.option_context("display.width", 250, "display.max_columns", 40):
        click.echo(shown.to_string(index=False))
