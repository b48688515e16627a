"""``workbench report RUN_DIR``: regenerate a run's report from its results store."""

from __future__ import annotations

from pathlib import Path

import click

from workbench.cli._options import json_option, write_json_file


@click.command("report")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Write here instead of RUN_DIR/report/.")
@json_option
def command(run_dir: Path, out_dir: Path | None, json_path: Path | None) -> None:
    """Write report.md, report.html, CSVs and plots for RUN_DIR; print their paths and the verdict."""
    # the light start: loads matplotlib and pandas
    from workbench.harness.report._report import write_report

    # the light start: loads pandas, pydantic and jinja2
    from workbench.harness.results._results import Results
    results = Results.load(run_dir)
    for name, path in write_report(results, out_dir).items():
        click.echo(f"{name}: {path}")
    click.echo("\n" + results.verdict().to_text())
    write_json_file(json_path, results, "report")
