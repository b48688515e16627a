"""``workbench compare RUN_A RUN_B``: what changed between two runs.

Prints, per (template, model, window), B - A of the comparison-table columns; the cells (joined
on the cell key: session, strategy, model, template, window, repeat) whose status or parse outcome
changed; and a paired bootstrap comparison of B against A on one metric.
"""

from __future__ import annotations

from pathlib import Path

import click

_BY = ("template", "model", "window")
DELTA_FORMATS = {
    "cells": "{:+,.0f}", "failures": "{:+,.0f}", "retries_max": "{:+,.0f}",
    "retained_tokens": "{:+,.0f}", "summary_tokens": "{:+,.0f}", "billed_tokens": "{:+,.0f}",
    "cost": "{:+.4f}", "parse_success_pct": "{:+.1f}", "retries_mean": "{:+.3f}",
    "compression_ratio": "{:+.3f}",
}


@click.command("compare")
@click.argument("run_a", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("run_b", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--metric", default="probe_recall", show_default=True,
              help="Metric for the paired comparison of B against A.")
@click.option("--seed", default=0, show_default=True, help="Bootstrap seed.")
def command(run_a: Path, run_b: Path, metric: str, seed: int) -> None:
    """Show what changed from RUN_A to RUN_B (deltas are B - A)."""
    import pandas as pd

    from workbench.harness._paired import paired_comparison
    from workbench.harness._report import markdown_table
    from workbench.harness._results import Results
    from workbench.harness._table import (
        PERCENT_COLUMNS,
        changed_cells,
        comparison_table,
        table_delta,
    )

    a, b = Results.load(run_a), Results.load(run_b)
    delta = table_delta(comparison_table(a.cells, _BY), comparison_table(b.cells, _BY), _BY)
    formats = {**DELTA_FORMATS, **{c: "{:+.1%}" for c in PERCENT_COLUMNS}}
    click.echo(f"A: {run_a}\nB: {run_b}\n")
    click.echo("Per (template, model, window), B - A:\n")
    click.echo(markdown_table(delta, formats))
    changed = changed_cells(a.cells, b.cells)
    click.echo(f"Cells whose status or parse outcome changed: {len(changed)}\n")
    if not changed.empty:
        click.echo(markdown_table(changed))
    if a.cells.empty or b.cells.empty:
        return
    both = pd.concat([a.cells.assign(run="A"), b.cells.assign(run="B")], ignore_index=True)
    result = paired_comparison(both, "A", "B", on="run", metric=metric, seed=seed)
    click.echo(f"Paired comparison, B - A: {result}")
