"""``workbench regress``: the regression gate (exit 0 passed, 1 regressed, 2 could not run)."""

from __future__ import annotations

import traceback
from pathlib import Path

import click

from workbench.regress._defaults import DEFAULT_SPEC


@click.command("regress")
@click.argument("spec", required=False, default=DEFAULT_SPEC,
                type=click.Path(dir_okay=False, path_type=Path))
@click.option("--baseline", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Baseline folder (default: regress/<experiment name>).")
@click.option("--update", is_flag=True,
              help="Rewrite the baseline from this run instead of comparing with it.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Keep the replayed run in this folder (default: a temporary one).")
@click.option("--progress", is_flag=True, help="Show the progress bar.")
@click.pass_context
def command(ctx: click.Context, spec: Path, baseline: Path | None, update: bool,
            out: Path | None, progress: bool) -> None:
    """Replay the experiment SPEC (default experiments/regress.toml) from its recordings and
    compare it with the committed baseline.

    Rendered summaries must match exactly (a unified diff shows any change); the metrics named
    in the spec's [regress] table must stay within their tolerances. Every model that calls a
    model is forced to replay-only, so a missing recording fails and names the cell.
    Exit codes: 0 passed (or --update wrote the baseline), 1 regressed, 2 could not run.
    """
    from workbench.regress import COULD_NOT_RUN, run_regress

    try:
        report = run_regress(spec, baseline, update=update, out=out, progress=progress)
    except Exception:  # a crash is "could not run" (2), never mistaken for "regressed" (1)
        click.echo(traceback.format_exc(), err=True)
        click.echo("result: COULD NOT RUN (exit 2): the gate crashed, see the traceback above")
        ctx.exit(COULD_NOT_RUN)
    click.echo(report.render())
    ctx.exit(report.exit_code)
