"""``workbench tune SPEC``: search a parametrised variant for the best template.

Prints the front (the scored points, Pareto front marked), the winner with the rule that chose
it and its interval against the baseline, and writes the winner as ``prompts/<name>/`` (not when
the winner is the baseline: there is nothing new to write).
"""

from __future__ import annotations

from pathlib import Path

import click

FRONT_COLUMNS = ("template", "cells", "retained_tokens", "recall", "parse_success_pct",
                 "calls_made", "calls_shared", "front")
MAX_ROWS = 30
NOTHING_WRITTEN = ("no winner folder written: the winner is the baseline {baseline} itself "
                   "(use it as it is)")


@click.command("tune")
@click.argument("spec", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Run folder (default: runs/<name>; the same folder resumes).")
@click.option("--prompts-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where the winner's folder goes [default: the project's prompts/].")
@click.option("--winner-name", default=None, help="Folder name of the winner "
              "[default: [tune] winner_name, else <variant>-tuned].")
@click.option("--overwrite", is_flag=True, help="Replace an existing winner folder.")
@click.option("--no-write", is_flag=True, help="Do not write the winner's folder.")
@click.option("--no-share", is_flag=True, help="Send every call (for comparisons; costs more).")
@click.option("--concurrency", type=click.IntRange(min=1), default=None,
              help="Cells in flight at once (overrides the spec).")
@click.option("--no-progress", is_flag=True, help="Hide progress bars.")
def command(spec: Path, out: Path | None, prompts_dir: Path | None, winner_name: str | None,
            overwrite: bool, no_write: bool, no_share: bool, concurrency: int | None,
            no_progress: bool) -> None:
    """Tune the variant named in SPEC's [tune] table and report the winner."""
    import pandas as pd

    from workbench.harness.experiment._spec import project_root
    from workbench.tune import tune, write_winner

    result = tune(spec, out, share_calls=not no_share, progress=not no_progress,
                  concurrency=concurrency)
    shown = result.scores.sort_values(["front", "recall"], ascending=[False, False])
    shown = shown[[c for c in FRONT_COLUMNS if c in shown.columns]].head(MAX_ROWS)
    with pd.option_context("display.width", 250, "display.max_columns", 20,
                           "display.max_colwidth", 80):
        click.echo(shown.to_string(index=False, float_format=lambda v: f"{v:,.4g}"))
    if len(result.scores) > MAX_ROWS:
        click.echo(f"... {len(result.scores) - MAX_ROWS} more points in "
                   f"{result.run_dir / 'tune' / 'front.csv'}")
    for line in result.lines():
        click.echo(line)
    click.echo(f"front: {result.run_dir / 'tune' / 'front.png'}")
    if no_write:
        return
    if result.winner_is_baseline:
        click.echo(NOTHING_WRITTEN.format(baseline=result.baseline))
        return
    tune_table = result.experiment.tune if result.experiment is not None else None
    name = winner_name or (tune_table.winner_name if tune_table is not None else None)
    folder = write_winner(result, prompts_dir or project_root() / "prompts", name,
                          overwrite=overwrite)
    click.echo(f"winner written to {folder}")
