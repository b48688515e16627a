"""The viewer in a real browser: `workbench view` over a folder of two runs, served on
127.0.0.1, opened in headless Chromium: the runs listed, one report opened, the two compared."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.chromium_cdp import Browser, find_chromium
from tests.session_files import write_tool_sessions
from workbench.cli import cli
from workbench.harness.report._compare_runs import compare_runs
from workbench.harness.report._viewer import HOST, serve


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    binary = find_chromium()
    if binary is None:
        pytest.skip("needs Chromium: `apt-get install chromium`")
    chrome = Browser(binary, tmp_path_factory.mktemp("chromium-profile"))
    yield chrome
    chrome.close()


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``runs/`` holding two runs of the extractive model: A compares two templates, B three."""
    root = tmp_path_factory.mktemp("project")
    write_tool_sessions(root, 3, padding=80)
    for name, templates in (("alpha", '["default", "lean-facts"]'),
                            ("beta", '["default", "lean-facts", "top3-intent"]')):
        spec = root / f"{name}.toml"
        spec.write_text(f'name = "{name}"\nsessions = ["s*.json"]\nmodels = ["extractive"]\n'
                        f"templates = {templates}\n", encoding="utf-8")
        done = CliRunner().invoke(cli, ["run", str(spec), "--out", str(root / "runs" / name),
                                        "--no-progress"])
        assert done.exit_code == 0, done.output
    return root / "runs"


@pytest.fixture(scope="module")
def viewer(runs: Path) -> Iterator[str]:
    server = serve(runs, 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://{HOST}:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def go(browser: Browser, url: str) -> None:
    browser.send("Page.navigate", session=True, url=url)
    browser.wait_event("Page.loadEventFired")


def test_the_viewer_lists_both_runs_opens_a_report_and_compares_them_side_by_side(
        browser: Browser, runs: Path, viewer: str, tmp_path: Path) -> None:
    assert viewer.startswith("http://127.0.0.1:")
    go(browser, viewer + "/")
    rows = browser.eval("""[...document.querySelectorAll('#runs tbody tr')].map(tr =>
        [...tr.children].map(td => td.textContent.trim()))""")
    browser.screenshot(tmp_path / "viewer-index.png")
    assert [r[0] for r in rows] == ["alpha", "beta"]
    for row, spec, cells in zip(rows, ("alpha", "beta"), (6, 9), strict=True):
        assert row[1].startswith("Recommendation: "), row
        assert row[2].endswith(" UTC") and row[3] == spec and row[4] == str(cells), row
        assert row[5] == "report"

    # a report link writes the report and opens it
    go(browser, viewer + "/report/alpha")
    assert browser.eval("location.pathname") == "/files/alpha/report/report.html"
    assert browser.eval("document.title") == "Compaction report: alpha"
    assert browser.eval("document.querySelectorAll('#wb-table tr.wb-row').length") == 2
    assert (runs / "alpha" / "report" / "report.html").is_file()

    # the form compares the two runs: each side, then what `workbench compare` prints
    go(browser, viewer + "/")
    browser.eval("document.querySelector('#compare select[name=a]').value = 'alpha';"
                 "document.querySelector('#compare select[name=b]').value = 'beta'; 1")
    browser.send("Runtime.evaluate", session=True,
                 expression="document.getElementById('compare').submit()")
    browser.wait_event("Page.loadEventFired")
    page = browser.eval("""({path: location.pathname + location.search,
        a: document.getElementById('run-A').textContent,
        b: document.getElementById('run-B').textContent,
        text: document.getElementById('comparison').textContent})""")
    browser.screenshot(tmp_path / "viewer-compare.png", full_page=True)
    assert page["path"] == "/compare?a=alpha&b=beta"
    assert "A: alpha" in page["a"] and "B: beta" in page["b"]
    assert "Recommendation: " in page["a"] and "6 cells" in page["a"] and "9 cells" in page["b"]
    assert page["text"] == compare_runs(runs / "alpha", runs / "beta").to_text()
    assert "Paired comparison, B - A: " in page["text"]
    assert browser.console_errors() == []


def test_the_viewer_serves_nothing_outside_its_folder(viewer: str) -> None:
    import urllib.error
    import urllib.request

    for path in ("/files/../alpha.toml", "/files/%2e%2e/alpha.toml", "/report/..",
                 "/compare?a=alpha&b=../..", "/nowhere"):
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(viewer + path, timeout=30)  # noqa: S310 - our own server
        assert info.value.code == 404, path
