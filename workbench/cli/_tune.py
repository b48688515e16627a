"""``workbench tune [SPEC]``: search a parametrised variant for the best template.

Prints the front (the scored points, Pareto front marked), the winner by the one winner rule
(``min-retained-safe`` unless the spec names another) with its comparison with the baseline,
or says plainly that nothing beat the baseline. Writes only into its run folder (the winner as
``<run>/tune/winner/<name>/``); ``workbench export --from-run RUN`` installs it.
"""

from __future__ import annotations

from pathlib import Path

import click

from workbench.cli._options import (
    json_option,
    load_spec,
    override_options,
    pop_overrides,
    write_json_file,
)

FRONT_COLUMNS = ("template", "cells", "retained_tokens", "recall", "parse_success_pct",
                 "calls_made", "calls_shared", "front")
MAX_ROWS = 30
EXPORT_HINT = ("install it with: workbench export --from-run {run}   (Goose's prompts; "
               "--as-variant writes prompts/{name}/ instead)")


@click.command("tune")
@click.argument("spec", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Run folder (default: runs/<name>; the same folder resumes).")
@click.option("--no-share", is_flag=True, help="Send every call (for comparisons; costs more).")
@click.option("--concurrency", type=click.IntRange(min=1), default=None,
              help="Cells in flight at once (overrides the spec).")
@click.option("--no-progress", is_flag=True, help="Hide progress bars.")
@json_option
@override_options
def command(spec: Path | None, out: Path | None, no_share: bool, concurrency: int | None,
            no_progress: bool, json_path: Path | None, **overridden: object) -> None:
    """Tune the variant named in SPEC's [tune] table and report the winner.

    SPEC defaults to experiments/tune.toml here, else the shipped tune spec. Nothing is
    written outside the run folder.
    """
    import pandas as pd  # the light start: pandas

    # the light start: loads pandas, pydantic and jinja2
    from workbench.harness.run import default_out

    # the light start: loads pandas, matplotlib, pydantic and jinja2
    from workbench.tune import tune

    overrides = pop_overrides(overridden)
    experiment, run_name = load_spec(spec, "tune", overrides)
    folder = out or default_out(experiment).parent / run_name
    if overrides:
        click.echo(f"overrides: {overrides.describe()} (run folder {folder})")
    result = tune(experiment, folder, share_calls=not no_share, progress=not no_progress,
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
    if result.winner_folder is not None:
        click.echo(f"winner folder (in the run folder only): {result.winner_folder}")
        click.echo(EXPORT_HINT.format(run=result.run_dir, name=result.winner_folder.name))
    if json_path is not None:
        from workbench.harness.results._results import Results  # (as above)

        write_json_file(json_path, Results.load(result.run_dir), "tune")
