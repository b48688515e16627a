"""``workbench record``: refresh an experiment's recordings with its real models."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("record")
@click.argument("spec", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Keep the run in this folder (default: a temporary one).")
@click.option("--fresh", is_flag=True,
              help="Move the old recording aside and record every answer anew.")
@click.option("--no-progress", is_flag=True, help="Hide the progress bar.")
@click.pass_context
def command(ctx: click.Context, spec: Path, out: Path | None, fresh: bool,
            no_progress: bool) -> None:
    """Run SPEC with its real models (your key; billed) and record every new answer into the
    spec's recording file ([cache] path), which `workbench regress` then replays.

    Prompts already recorded are answered from the file; --fresh records all of them again.
    The extractive baseline is never recorded (it makes no call). Exits 1 when a cell failed
    for an infrastructure reason (auth, rate limit, timeout).
    """
    # the light start: loads pandas, pydantic and jinja2
    from workbench.regress import record_experiment

    report = record_experiment(spec, out, fresh=fresh, progress=not no_progress)
    click.echo(report.render())
    ctx.exit(report.exit_code)
