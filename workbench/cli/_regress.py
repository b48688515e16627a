"""``workbench regress``: the regression gate (exit 0 passed, 1 regressed, 2 could not run)."""

from __future__ import annotations

import traceback
from pathlib import Path
from typing import TYPE_CHECKING

import click

from workbench.cli._options import json_option, override_options, pop_overrides, write_json_file
from workbench.errors import WorkbenchError
from workbench.regress._defaults import BASELINE_ROOT

if TYPE_CHECKING:
    from workbench.harness.experiment import Experiment
    from workbench.harness.experiment._overrides import Overrides


@click.command("regress")
@click.argument("spec", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--baseline", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Baseline folder (default: regress/<experiment name>; for a shipped spec "
                   "used from elsewhere, the shipped baseline).")
@click.option("--update", is_flag=True,
              help="Rewrite the baseline from this run instead of comparing with it.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Keep the replayed run in this folder (default: a temporary one).")
@click.option("--progress", is_flag=True, help="Show the progress bar.")
@json_option
@override_options
@click.pass_context
def command(ctx: click.Context, spec: Path | None, baseline: Path | None, update: bool,
            out: Path | None, progress: bool, json_path: Path | None,
            **overridden: object) -> None:
    """Replay the experiment SPEC (default experiments/regress.toml here, else the shipped one)
    from its recordings and compare it with the committed baseline.

    Rendered summaries must match exactly (a unified diff shows any change); the metrics named
    in the spec's [regress] table must stay within their tolerances. Every model that calls a
    model is forced to replay-only, so a missing recording fails and names the cell. With
    overrides (--model, --template, --window, --sessions, --limit, --set) only the summaries
    of the cells run are compared. Exit codes: 0 passed (or --update wrote the baseline),
    1 regressed, 2 could not run.
    """
    # the light start: loads pandas, pydantic and jinja2
    from workbench.regress import COULD_NOT_RUN, run_regress

    if json_path is not None and out is None:
        raise click.UsageError("--json needs --out: the replayed run is otherwise a temporary "
                               "folder, gone when the gate ends")
    overrides = pop_overrides(overridden)
    try:
        experiment, baseline = _spec(spec, baseline, overrides)
        report = run_regress(experiment, baseline, update=update, out=out, progress=progress,
                             partial=bool(overrides))
    except Exception as exc:  # a crash is "could not run" (2), never mistaken for "regressed"
        if isinstance(exc, WorkbenchError):
            click.echo(f"ERROR {exc}")
        else:
            click.echo(traceback.format_exc(), err=True)
        click.echo("result: COULD NOT RUN (exit 2)" if isinstance(exc, WorkbenchError) else
                   "result: COULD NOT RUN (exit 2): the gate crashed, see the traceback above")
        ctx.exit(COULD_NOT_RUN)
    click.echo(report.render())
    if json_path is not None and report.run_dir is not None:
        from workbench.harness.results._results import Results  # (as above)

        write_json_file(json_path, Results.load(report.run_dir), "regress",
                        {"exit_code": report.exit_code})
    ctx.exit(report.exit_code)


def _spec(spec: Path | None, baseline: Path | None,
          overrides: Overrides) -> tuple[Experiment, Path | None]:
    """The experiment to replay and its baseline (the shipped one for a shipped spec read
    from outside the clone, where regress/<name> is not in the working folder)."""
    # the light start: the shipped-files lookup (~13 ms) only when a gate runs
    from workbench._resources import is_shipped, shipped

    # the light start: loads pydantic and jinja2
    from workbench.harness.experiment import Experiment

    # the light start: loads pydantic and jinja2
    from workbench.harness.experiment._locate import find_spec

    path = find_spec(spec, "regress")
    experiment = Experiment.from_toml(path)
    local = Path(BASELINE_ROOT) / experiment.name
    if baseline is None and is_shipped(path) and not local.is_dir():
        baseline = shipped(BASELINE_ROOT, experiment.name)
    return overrides.apply(experiment), baseline
