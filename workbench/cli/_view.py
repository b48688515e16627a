"""``workbench view RUN_DIR``: open a run's HTML report, writing it first when needed."""

from __future__ import annotations

from pathlib import Path

import click

REPORT_HTML = "report.html"


def report_is_stale(run_dir: Path) -> bool:
    """True when ``report/report.html`` is missing or older than the run's results store."""
    from workbench.harness.report import REPORT_DIR
    from workbench.harness.results import DB_FILE

    page = run_dir / REPORT_DIR / REPORT_HTML
    if not page.is_file():
        return True
    newest = max((p.stat().st_mtime for p in run_dir.glob(f"{DB_FILE}*")), default=0.0)
    return page.stat().st_mtime < newest


@click.command("view")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--rebuild", is_flag=True, help="Write the report again even if it is current.")
@click.option("--no-open", "no_open", is_flag=True, help="Only write the report and print its path.")
def command(run_dir: Path, rebuild: bool, no_open: bool) -> None:
    """Open RUN_DIR's report.html in the browser (writing the report if it is missing or stale)."""
    from workbench.harness.report import REPORT_DIR

    page = run_dir / REPORT_DIR / REPORT_HTML
    if rebuild or report_is_stale(run_dir):
        from workbench.harness.report._report import write_report

        page = write_report(run_dir)["html"]
        click.echo(f"wrote {page}")
    import webbrowser

    uri = page.resolve().as_uri()
    if no_open:
        click.echo(str(page))
        return
    try:
        opened = webbrowser.open(uri)
    except webbrowser.Error:
        opened = False
    if opened:
        click.echo(f"opened {page}")
    else:
        click.echo(f"no browser available; open this file yourself: {page}")
