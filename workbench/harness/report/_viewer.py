"""The viewer: a folder of runs served as pages on 127.0.0.1 (the standard library's
``http.server``), as ``inspect view`` and ``promptfoo view`` serve theirs.

In: a folder holding run folders (each with a ``results.sqlite``, one or two levels down). Out:

- ``/``: every run with its recommendation line, date, spec and cell count, a link to its
  report, and a form to pick two runs;
- ``/compare?a=RUN&b=RUN``: the two runs side by side, then `compare_runs` (what ``workbench
  compare`` prints);
- ``/report/RUN``: writes the run's report when it is missing or stale, then redirects to it;
- ``/files/...``: the files of the folder (the reports and their plots), nothing outside it.

Every run name and every piece of text is escaped; the server binds 127.0.0.1 only.
"""

from __future__ import annotations

import html
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, quote, unquote, urlsplit

from workbench.harness.report._html import when
from workbench.harness.report._screen import headline
from workbench.harness.results._results import DB_FILE, Results

__all__ = ["HOST", "RunRow", "Viewer", "find_runs", "index_page", "report_is_stale", "serve"]

HOST = "127.0.0.1"
"""The only address the viewer listens on."""
REPORT_PAGE = "report/report.html"
_STYLE = ("body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1400px;"
          "padding:10px 16px}table{border-collapse:collapse;width:100%}"
          "th,td{border:1px solid #d9dde2;padding:3px 6px;text-align:left;vertical-align:top}"
          "th{background:#f2f4f6}.num{text-align:right}.side{display:grid;"
          "grid-template-columns:1fr 1fr;gap:12px}.side>div{border:1px solid #d9dde2;"
          "padding:6px 10px}pre{white-space:pre;overflow-x:auto;background:#f6f7f8;"
          "border:1px solid #d9dde2;padding:6px;font-size:12px}")


def report_is_stale(run_dir: Path) -> bool:
    """True when ``report/report.html`` is missing or older than the run's results store."""
    page = run_dir / REPORT_PAGE
    if not page.is_file():
        return True
    newest = max((p.stat().st_mtime for p in run_dir.glob(f"{DB_FILE}*")), default=0.0)
    return page.stat().st_mtime < newest


def find_runs(root: Path) -> list[Path]:
    """The run folders under `root` (one or two levels down), by name."""
    found = {p.parent for pattern in (f"*/{DB_FILE}", f"*/*/{DB_FILE}")
             for p in root.glob(pattern)}
    return sorted(found, key=lambda p: p.relative_to(root).as_posix())


@dataclass
class RunRow:
    """One run as the index lists it."""

    name: str
    recommendation: str
    date: str
    spec: str
    cells: int

    @classmethod
    def load(cls, root: Path, folder: Path) -> RunRow:
        """Read the run in `folder` (its verdict gives the recommendation line)."""
        results = Results.load(folder)
        runs = results.runs
        date = when(runs["finished_at"].dropna().iloc[-1]) if not runs.empty and \
            runs["finished_at"].notna().any() else "—"
        spec = results.spec.name if results.spec is not None else (
            str(runs["name"].iloc[-1]) if not runs.empty else "—")
        line = headline(results.verdict())[0] if not results.cells.empty else "no cells"
        return cls(folder.relative_to(root).as_posix(), line, date, spec, len(results.cells))


class Viewer:
    """What the pages are made from: the root folder and its runs' rows (cached per store
    change, so a run that goes on is read again)."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self._rows: dict[str, tuple[float, RunRow]] = {}
        self._lock = threading.Lock()

    def folder(self, name: str) -> Path | None:
        """The run folder called `name` under the root, or None (nothing outside the root)."""
        folder = (self.root / name).resolve()
        if not folder.is_relative_to(self.root) or not (folder / DB_FILE).is_file():
            return None
        return folder

    def rows(self) -> list[RunRow]:
        """Every run's row."""
        out = []
        for folder in find_runs(self.root):
            stamp = max(p.stat().st_mtime for p in folder.glob(f"{DB_FILE}*"))
            key = folder.relative_to(self.root).as_posix()
            with self._lock:
                cached = self._rows.get(key)
                if cached is None or cached[0] != stamp:
                    cached = (stamp, RunRow.load(self.root, folder))
                    self._rows[key] = cached
            out.append(cached[1])
        return out


def _page(title: str, body: str) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<link rel="icon" href="data:,"><title>'
            f"{html.escape(title)}</title><style>{_STYLE}</style></head><body>{body}"
            "</body></html>\n")


def index_page(viewer: Viewer) -> str:
    """The list of runs, their reports, and the form that compares two of them."""
    esc = html.escape
    rows = viewer.rows()
    trs = "".join(
        f'<tr data-run="{esc(r.name)}"><td><code>{esc(r.name)}</code></td>'
        f'<td class="rec">{esc(r.recommendation)}</td><td>{esc(r.date)}</td>'
        f'<td>{esc(r.spec)}</td><td class="num">{r.cells:,}</td>'
        f'<td><a href="/report/{quote(r.name)}">report</a></td></tr>' for r in rows)
    options = "".join(f'<option value="{esc(r.name)}">{esc(r.name)}</option>' for r in rows)
    second = "".join(f'<option value="{esc(r.name)}"{" selected" if i == 1 else ""}>'
                     f"{esc(r.name)}</option>" for i, r in enumerate(rows))
    body = (f"<h1>Runs in {esc(str(viewer.root))}</h1><p>{len(rows)} run(s)</p>"
            '<table id="runs"><thead><tr><th>run</th><th>recommendation</th><th>finished</th>'
            f'<th>spec</th><th>cells</th><th></th></tr></thead><tbody>{trs}</tbody></table>'
            '<h2>Compare two runs</h2><form id="compare" action="/compare" method="get">'
            f'A <select name="a">{options}</select> B <select name="b">{second}</select> '
            '<button type="submit">compare</button></form>')
    return _page("workbench runs", body)


def compare_page(viewer: Viewer, a: str, b: str) -> str | None:
    """Runs `a` and `b` side by side, then what ``workbench compare A B`` prints; None when
    either is not a run under the root."""
    from workbench.harness.report._compare_runs import compare_runs  # the bootstrap's cost

    folders = viewer.folder(a), viewer.folder(b)
    if folders[0] is None or folders[1] is None:
        return None
    esc = html.escape
    sides = []
    for label, name, folder in (("A", a, folders[0]), ("B", b, folders[1])):
        row = RunRow.load(viewer.root, folder)
        sides.append(f'<div class="run" id="run-{label}"><h2>{label}: <code>{esc(name)}</code>'
                     f'</h2><p class="rec">{esc(row.recommendation)}</p><p>finished '
                     f"{esc(row.date)} · spec {esc(row.spec)} · {row.cells:,} cells · "
                     f'<a href="/report/{quote(name)}">report</a></p></div>')
    text = compare_runs(folders[0], folders[1]).to_text()
    body = (f'<p><a href="/">all runs</a></p><h1>{esc(a)} against {esc(b)}</h1>'
            f'<div class="side">{"".join(sides)}</div>'
            f'<h2>workbench compare {esc(a)} {esc(b)}</h2><pre id="comparison">{esc(text)}'
            "</pre>")
    return _page(f"{a} against {b}", body)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        url = urlsplit(self.path)
        viewer = self.server.viewer
        path = unquote(url.path)
        if path == "/":
            self._send(200, index_page(viewer))
        elif path == "/compare":
            query = parse_qs(url.query)
            page = compare_page(viewer, query.get("a", [""])[0], query.get("b", [""])[0])
            self._send(200, page) if page is not None else self._send(404, "no such run")
        elif path.startswith("/report/"):
            self._report(path.removeprefix("/report/"))
        elif path.startswith("/files/"):
            self._file(path.removeprefix("/files/"))
        else:
            self._send(404, "not found")

    def _report(self, name: str) -> None:
        folder = self.server.viewer.folder(name)
        if folder is None:
            self._send(404, "no such run")
            return
        if report_is_stale(folder):
            from workbench.harness.report._report import write_report  # plots: matplotlib

            write_report(folder)
        self.send_response(303)
        self.send_header("Location", f"/files/{quote(name)}/{REPORT_PAGE}")
        self.end_headers()

    def _file(self, relative: str) -> None:
        root = self.server.viewer.root
        target = (root / relative).resolve()
        if not target.is_relative_to(root) or not target.is_file():
            self._send(404, "not found")
            return
        kinds = {".html": "text/html; charset=utf-8", ".png": "image/png",
                 ".csv": "text/csv; charset=utf-8", ".md": "text/markdown; charset=utf-8"}
        data = target.read_bytes()
        self.send_response(200)
        self.send_header("Content-Type", kinds.get(target.suffix, "application/octet-stream"))
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send(self, status: int, text: str) -> None:
        data = text.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - its name
        pass  # the terminal shows the URL once, not every request


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, viewer: Viewer, port: int) -> None:
        super().__init__((HOST, port), _Handler)
        self.viewer = viewer


def serve(root: Path, port: int = 0) -> _Server:
    """A viewer server for the runs under `root` on 127.0.0.1:`port` (0: any free port),
    bound and not yet serving: call ``serve_forever()`` (or run it on a thread).

    Raises:
        OSError: the port is taken.
    """
    return _Server(Viewer(root), port)
