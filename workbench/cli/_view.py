"""``workbench view [PATH]``: a run's report, or every run in a folder served on 127.0.0.1.

PATH holding a ``results.sqlite`` opens that run's ``report.html`` in the browser (writing the
report first when it is missing or stale). Any other folder (default ``runs/``) is served by
the viewer (`workbench.harness.report._viewer`): every run with its recommendation, date, spec
and cell count, a link to each report, and any two runs compared side by side.
"""

from __future__ import annotations

from pathlib import Path

import click

from workbench.errors import ConfigError

REPORT_HTML = "report.html"
DEFAULT_PORT = 7575
RUNS = Path("runs")


@click.command("view")
@click.argument("path", required=False, default=RUNS,
                type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--rebuild", is_flag=True, help="Write the report again even if it is current.")
@click.option("--no-open", "no_open", is_flag=True,
              help="Only write the report and print its path (or print the viewer's URL).")
@click.option("--port", type=click.IntRange(0, 65535), default=DEFAULT_PORT, show_default=True,
              help="Port of the viewer of a folder of runs (0: any free port).")
def command(path: Path, rebuild: bool, no_open: bool, port: int) -> None:
    """Open PATH's report when PATH is a run folder; serve every run under PATH (default
    runs/) on 127.0.0.1 otherwise: their recommendations, reports, and any two compared."""
    # the light start: the harness loads when the command runs
    from workbench.harness.report import REPORT_DIR

    # the light start: loads pandas, pydantic and jinja2
    from workbench.harness.report._viewer import report_is_stale

    # the light start: loads pandas, pydantic and jinja2
    from workbench.harness.results import DB_FILE

    if not (path / DB_FILE).is_file():
        _serve(path, port, no_open)
        return
    page = path / REPORT_DIR / REPORT_HTML
    if rebuild or report_is_stale(path):
        from workbench.harness.report._report import write_report  # plots: matplotlib

        page = write_report(path)["html"]
        click.echo(f"wrote {page}")
    if no_open:
        click.echo(str(page))
        return
    _open(page.resolve().as_uri(), f"opened {page}",
          f"no browser available; open this file yourself: {page}")


def _open(uri: str, opened_line: str, fallback: str) -> None:
    import webbrowser  # only when a page is opened

    try:
        opened = webbrowser.open(uri)
    except webbrowser.Error:
        opened = False
    click.echo(opened_line if opened else fallback)


def _serve(root: Path, port: int, no_open: bool) -> None:
    from workbench.harness.report._viewer import find_runs, serve  # (as above)

    runs = find_runs(root)
    if not runs:
        raise ConfigError(f"{root}: no results.sqlite here or in its subfolders; run "
                          f"`workbench run` first, or name a run folder")
    server = serve(root, port)
    host, bound = str(server.server_address[0]), int(server.server_address[1])
    url = f"http://{host}:{bound}/"
    click.echo(f"serving {len(runs)} run(s) from {root} at {url} (Ctrl-C stops)")
    if not no_open:
        _open(url, f"opened {url}", f"open {url} in a browser")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        click.echo("stopped")
    finally:
        server.server_close()
