"""The HTML report in a real browser: headless Chromium at 1400 x 900, driven over a pipe.

Two reports: the default run's (what a newcomer opens first), and a 2,000-cell run whose
summaries carry ``<script>`` and other markup from the session (extractive summaries copy the
user's words), to check size, laziness and escaping. Screenshots land in the test's temp folder.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.chromium_cdp import Browser, find_chromium
from tests.conftest import ROOT
from workbench.harness import Results, write_report
from workbench.harness.report._drilldown import CHUNK_CELLS
from workbench.harness.results._results import read_cell_text
from workbench.harness.results._store import ResultsStore

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

HOSTILE = ("<script>window.__wbPwned = 1</script> please fix src/app.py "
           '<img src=x onerror="window.__wbPwned = 2"> and keep </script><!-- this --> text')
"""A user message that would run script if any of it reached the page as markup."""


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory):
    binary = find_chromium()
    if binary is None:
        pytest.skip("needs Chromium: `apt-get install chromium` (.ci/run installs it where it "
                    "can)")
    chrome = Browser(binary, tmp_path_factory.mktemp("chromium-profile"))
    yield chrome
    chrome.close()


@pytest.fixture(scope="module")
def default_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("runs") / "default"
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["WORKBENCH_USER_PATH"] = str(out.parent / "user")
    done = subprocess.run([sys.executable, "-m", "workbench", "run", "--out", str(out),
                           "--no-progress"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    return write_report(out)["html"]


def _extractive_summary(text: str) -> str:
    from workbench.compaction import Templates, summarize
    from workbench.messages import Message
    from workbench.models import load_model
    from workbench.tokens import default_estimator

    messages = [Message.user(text), Message.assistant().with_text("Looking at src/app.py now."),
                Message.user("Also keep the port at 8080.")]
    summary = asyncio.run(summarize(load_model("extractive"), default_estimator(),
                                    Templates.default(), messages))
    return summary.message.concat_text()


def make_big_run(root: Path, n_cells: int = 2000) -> Path:
    """A run folder of `n_cells` extractive-looking cells, built straight into the store."""
    run = root / "big"
    (run / "summaries").mkdir(parents=True)
    base = _extractive_summary(HOSTILE)
    assert "<script>" in base  # the extractive model keeps the user's words
    templates = ["default", "lean-facts", "top3-intent", "x<img src=x onerror=window.__wbPwned=3>"]
    windows = [4096, 8192, 16384, 32768, None]
    with ResultsStore(run / "results.sqlite") as store:
        run_id = store.start_run("big", "{}", "test")
        for i in range(n_cells):
            template, window = templates[i % 4], windows[(i // 4) % 5]
            session, repeat = f"gen-{(i // 20) % 25:03d}", i // 500
            cell_id = f"c{i:05d}"
            failed = i % 37 == 5
            text = base + f"\n## Variant\n- {template} at {window} (cell {i})\n"
            if not failed:
                (run / "summaries" / f"{cell_id}.md").write_text(text, encoding="utf-8")
                (run / "summaries" / f"{cell_id}.raw.txt").write_text(
                    json.dumps({"user_intent": [HOSTILE]}), encoding="utf-8")
                (run / "summaries" / f"{cell_id}.forgotten.json").write_text(json.dumps(
                    {"files": [], "errors": [], "requests": [HOSTILE] if i % 3 else [],
                     "facts": [f"fact-{i % 7}"]}), encoding="utf-8")
            row = {"cell_id": cell_id, "run_id": run_id, "session_id": session,
                   "session_path": "generated", "strategy": "goose", "model": "extractive",
                   "template": template, "window": window, "repeat": repeat,
                   "status": "error" if failed else "ok", "original_tokens": 9000 + i,
                   "retained_tokens": None if failed else 500 + i % 300,
                   "summary_tokens": None if failed else 300 + i % 50,
                   "billed_input_tokens": 4000, "billed_output_tokens": 400, "cost": 0.0,
                   "parse_outcome": None if failed else "structured", "attempts": 2,
                   "retries": 1, "error_type": "CompactionContextExceeded" if failed else None,
                   "error_message": HOSTILE if failed else None,
                   "summary_path": None if failed else f"summaries/{cell_id}.md",
                   "metrics_json": None if failed else json.dumps(
                       {"probe_recall": (i % 10) / 10, "files_recall": 1.0})}
            store.record_cell(row, [
                {"attempt_no": 1, "removal_percent": 0, "outcome": "context_length_exceeded",
                 "input_tokens": None, "output_tokens": None},
                {"attempt_no": 2, "removal_percent": 10, "outcome": "error" if failed else "ok",
                 "input_tokens": 4000, "output_tokens": 400}])
        store.finish_run(run_id, "finished")
    return run


@pytest.fixture(scope="module")
def big_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = make_big_run(tmp_path_factory.mktemp("big"))
    started = time.perf_counter()
    html = write_report(run)["html"]
    print(f"2,000-cell report written in {time.perf_counter() - started:.1f} s, "
          f"{html.stat().st_size / 1e6:.2f} MB")  # a figure, not asserted (see bench/)
    return html


LAYOUT = """(() => {
  const rect = (id) => document.getElementById(id).getBoundingClientRect();
  const table = document.getElementById('wb-table');
  return {ready: document.documentElement.getAttribute('data-wb-ready'),
          scrollWidth: document.documentElement.scrollWidth,
          clientWidth: document.documentElement.clientWidth,
          height: innerHeight, verdictTop: rect('verdict').top,
          verdictBottom: rect('verdict').bottom, tableTop: rect('wb-table').top,
          tableRight: rect('wb-table').right, tableFits: table.scrollWidth <= table.parentElement.clientWidth,
          rows: document.querySelectorAll('#wb-table tr.wb-row').length,
          details: document.querySelectorAll('tr.wb-detail, .wb-panel').length};
})()"""

OPEN_FIRST_OK = """(async () => {
  const cell = wbReport.cells.find(c => c.status === 'ok' && %s);
  const row = document.querySelector('#wb-table tr.wb-row[data-g="' + cell.g + '"]');
  row.click();  // a click on the row opens its cell list
  const item = document.querySelector('tr.wb-detail[data-g="' + cell.g + '"] tr[data-cell="' + cell.id + '"]');
  item.click();  // a click on a cell opens its panel (payload decompressed now)
  for (let i = 0; i < 200 && !document.querySelector('.wb-panel[data-cell="' + cell.id + '"]'); i++)
    await new Promise(r => setTimeout(r, 25));
  const panel = document.querySelector('.wb-panel[data-cell="' + cell.id + '"]');
  panel.scrollIntoView();
  const summary = panel.querySelector('.wb-summary');
  return {id: cell.id, headings: Array.from(summary.querySelectorAll('h4, h5')).map(h => h.textContent),
          summaryText: summary.textContent, summaryHeight: summary.getBoundingClientRect().height,
          raw: panel.querySelectorAll('pre')[0] ? panel.querySelectorAll('pre')[0].textContent : null,
          panelText: panel.textContent, attempts: panel.querySelectorAll('.wb-plain tbody tr').length,
          scripts: document.scripts.length, pwned: window.__wbPwned === undefined ? null : window.__wbPwned};
})()"""


def test_the_default_report_fits_1400px_with_verdict_and_table_in_the_first_screen(
        browser: Browser, default_report: Path, tmp_path: Path) -> None:
    browser.open(default_report)
    got = browser.eval(LAYOUT)
    browser.screenshot(tmp_path / "default-first-screen.png")
    assert got["ready"] == "1"
    assert got["scrollWidth"] <= got["clientWidth"], got  # no sideways scrolling
    assert got["tableFits"] and got["tableRight"] <= got["clientWidth"], got
    assert 0 <= got["verdictTop"] < got["verdictBottom"] < got["height"], got
    assert got["tableTop"] < got["height"] - 100, got  # the table's first rows are on screen
    assert got["rows"] == 40 and got["details"] == 0  # no drill-down built up front
    assert browser.console_errors() == []


def test_on_a_narrower_page_column_groups_hide_until_the_table_fits_and_say_so(
        browser: Browser, default_report: Path) -> None:
    browser.send("Emulation.setDeviceMetricsOverride", session=True, width=1000, height=900,
                 deviceScaleFactor=1, mobile=False)
    try:
        browser.open(default_report)
        got = browser.eval(LAYOUT)
        note = browser.eval("document.getElementById('wb-fit').textContent")
        unticked = browser.eval("Array.from(document.querySelectorAll('#wb-groups input'))"
                                ".filter(b => !b.checked).length")
    finally:
        browser.send("Emulation.setDeviceMetricsOverride", session=True, width=1400,
                     height=900, deviceScaleFactor=1, mobile=False)
    assert got["tableFits"] and got["scrollWidth"] <= got["clientWidth"], got
    assert note.startswith("Hidden to fit the page: ") and unticked >= 1, note
    assert browser.console_errors() == []


def test_a_default_report_row_opens_its_cells_and_a_cell_shows_its_rendered_summary(
        browser: Browser, default_report: Path, tmp_path: Path) -> None:
    browser.open(default_report)
    got = browser.eval(OPEN_FIRST_OK % "c.model === 'extractive'")
    browser.screenshot(tmp_path / "default-drilldown.png")
    run = default_report.parent.parent
    cells = Results.load(run).cells.set_index("cell_id")
    summary_file = run / str(cells.loc[got["id"], "summary_path"])  # the file the cell names
    first_heading = summary_file.read_text(encoding="utf-8").splitlines()[0].lstrip("# ")
    assert got["headings"][0] == first_heading == "Conversation Summary"
    assert "User Intent" in got["headings"] and got["summaryHeight"] > 100
    assert got["raw"] == read_cell_text(default_report.parent.parent, got["id"], "raw.txt")
    assert got["attempts"] >= 1 and "Removal ladder attempts" in got["panelText"]
    assert "What the summary forgot" in got["panelText"]
    assert browser.console_errors() == []


def test_a_header_click_sorts_rows_and_a_cell_link_opens_that_cell(
        browser: Browser, default_report: Path) -> None:
    browser.open(default_report)
    got = browser.eval("""(async () => {
      const th = document.querySelector('#wb-table th[data-col="retained_tokens"]');
      const idx = Array.from(th.parentNode.children).indexOf(th) + 1;  // + the open column
      const values = () => Array.from(document.querySelectorAll('#wb-table tr.wb-row'))
        .map(r => parseFloat(r.children[idx].dataset.v));
      th.click();
      const up = values();
      th.click();
      const down = values();
      const cell = wbReport.cells[wbReport.cells.length - 1];
      location.hash = '#cell=' + cell.id;
      for (let i = 0; i < 200 && !document.querySelector('.wb-panel[data-cell="' + cell.id + '"]'); i++)
        await new Promise(r => setTimeout(r, 25));
      return {up, down, sort: th.getAttribute('aria-sort'),
              linked: !!document.querySelector('.wb-panel[data-cell="' + cell.id + '"]')};
    })()""")
    assert got["up"] == sorted(got["up"]) and got["down"] == sorted(got["up"], reverse=True)
    assert got["up"] != got["down"] and got["sort"] == "descending"
    assert got["linked"]
    assert browser.console_errors() == []


def test_two_variants_of_a_session_open_side_by_side_with_differences_marked(
        browser: Browser, default_report: Path) -> None:
    browser.open(default_report)
    got = browser.eval("""(async () => {
      const a = wbReport.cells.find(c => c.status === 'ok' && c.model === 'extractive' && c.template === 'default');
      const b = wbReport.cells.find(c => c.status === 'ok' && c.id !== a.id && c.session_id === a.session_id
                                       && c.repeat === a.repeat && c.template === 'lean-facts' && c.model === a.model);
      const host = document.createElement('div');
      document.querySelector('main').appendChild(host);
      const box = await wbReport.compare(a.id, b.id, host);
      return {panes: box.querySelectorAll('pre').length, del: box.querySelectorAll('.wb-del').length,
              add: box.querySelectorAll('.wb-add').length, same: box.querySelectorAll('pre span:not([class*=wb-])').length};
    })()""")
    assert got["panes"] == 2 and got["same"] > 0
    assert got["del"] + got["add"] > 0
    assert browser.eval("JSON.stringify(wbReport.lineDiff(['a','b','c'], ['a','x','c']))") == (
        '[[["a","same"],["b","del"],["c","same"]],[["a","same"],["x","add"],["c","same"]]]')


def test_a_2000_cell_report_opens_lazily_and_shows_session_script_as_text(
        browser: Browser, big_report: Path, tmp_path: Path) -> None:
    text = big_report.read_text(encoding="utf-8")
    assert "<script>window.__wbPwned" not in text and "<img src=x" not in text
    assert text.count('type="application/octet-stream"') == 2000 // CHUNK_CELLS
    browser.open(big_report)
    layout = browser.eval(LAYOUT)
    assert layout["ready"] == "1" and layout["details"] == 0
    assert layout["scrollWidth"] <= layout["clientWidth"], layout
    got = browser.eval(OPEN_FIRST_OK % "c.id > 'c01990'")  # a cell in the last chunk
    browser.screenshot(tmp_path / "big-drilldown.png")
    assert got["pwned"] is None  # nothing from the session ran
    assert HOSTILE.split(" please")[0] in got["summaryText"]  # shown as the characters it is
    assert json.loads(got["raw"]) == {"user_intent": [HOSTILE]}
    assert got["attempts"] == 2
    options = browser.eval("Array.from(document.querySelectorAll('#wb-selects option'))"
                           ".map(o => [o.value, o.textContent])")
    # labels are shown whole (they wrap in the table), as the characters they are
    assert ["x<img src=x onerror=window.__wbPwned=3>",
            "x<img src=x onerror=window.__wbPwned=3>"] in options
    assert ["16384", "16k"] in options
    shown = browser.eval("""(() => {
      const s = document.querySelector('#wb-selects select[data-col="template"]');
      s.value = 'x<img src=x onerror=window.__wbPwned=3>';
      s.dispatchEvent(new Event('change'));
      return document.getElementById('wb-count').textContent; })()""")
    assert shown == "5 of 20 rows"  # one template x five windows
    assert browser.eval("window.__wbPwned === undefined")
    assert browser.console_errors() == []


READABLE = """(() => {
  const clientWidth = document.documentElement.clientWidth;
  const scroller = (el) => {
    for (let p = el.parentElement; p; p = p.parentElement) {
      const o = getComputedStyle(p).overflowX;
      if (o === 'auto' || o === 'scroll') return p;
    }
    return null;
  };
  const plots = [...document.querySelectorAll('figure img')].map(i => ({
    alt: i.alt, px: parseFloat(i.dataset.textPx),
    shown: i.getBoundingClientRect().width / i.naturalWidth}));
  const tables = [...document.querySelectorAll('table')].filter(t => t.offsetParent !== null)
    .map(t => {
      const box = scroller(t);
      return {cls: t.className, right: t.getBoundingClientRect().right,
              boxRight: box ? box.getBoundingClientRect().right : null,
              reachable: box ? box.scrollWidth >= t.getBoundingClientRect().width - 1 : false};
    });
  return {clientWidth, scrollWidth: document.documentElement.scrollWidth, plots, tables};
})()"""


def test_at_1400px_plot_text_is_11px_or_more_and_a_wide_table_scrolls_instead_of_cutting(
        browser: Browser, default_report: Path, tmp_path: Path) -> None:
    browser.open(default_report)
    got = browser.eval(READABLE)
    browser.screenshot(tmp_path / "default-whole.png", full_page=True)
    width = got["clientWidth"]
    assert got["scrollWidth"] <= width, got  # the page itself never scrolls sideways
    # five metric plots, then one replay plot per replayed session
    assert [p["alt"] for p in got["plots"]][:5] == ["recall", "retained_tokens", "failures",
                                                    "parse_success", "retries"]
    for plot in got["plots"]:
        assert plot["px"] * plot["shown"] >= 11, plot
    wide = [t for t in got["tables"] if t["right"] > width]
    assert wide, "the replay table is wider than the page: it must scroll, not be cut"
    for table in got["tables"]:
        fits = table["right"] <= width + 1
        scrolls = table["boxRight"] is not None and table["boxRight"] <= width + 1 \
            and table["reachable"]
        assert fits or scrolls, table


LABEL = ("openai/gpt-4o-mini[api_base=https://ops:hunter2pass@llm-proxy.internal.example.com:"
         "8443/v1/deployments/summarizer,temperature=0.2,api_key=sk-live-abcdefghijklmnopqrstuv]")


def test_a_long_model_label_wraps_whole_with_secrets_masked_and_the_table_keeps_its_columns(
        browser: Browser, tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "summaries").mkdir(parents=True)
    with ResultsStore(run / "results.sqlite") as store:
        run_id = store.start_run("labels", "{}", "test")
        for i, (model, template) in enumerate([(LABEL, "default"), (LABEL, "lean-facts"),
                                               ("extractive", "default")]):
            store.record_cell({"cell_id": f"c{i}", "run_id": run_id, "session_id": "s",
                               "model": model, "template": template, "window": 8192,
                               "repeat": 0, "status": "ok", "retained_tokens": 100 + i,
                               "cost": 0.0012, "parse_outcome": "structured"})
        store.finish_run(run_id, "finished")
    browser.open(write_report(run)["html"])
    got = browser.eval("""(() => {
      const table = document.getElementById('wb-table');
      const cell = table.querySelector('td[data-v^="openai/gpt-4o-mini"]');
      const row = cell.parentElement;
      const last = row.lastElementChild.getBoundingClientRect();
      const line = parseFloat(getComputedStyle(cell).lineHeight) || 16;
      return {text: cell.textContent, height: cell.getBoundingClientRect().height, line,
              clipped: cell.scrollWidth > cell.clientWidth + 1,
              lastRight: last.right, clientWidth: document.documentElement.clientWidth,
              cost: [...table.querySelectorAll('th[data-col]')].some(
                  th => th.dataset.col === 'cost' && th.offsetParent !== null),
              page: document.body.innerText};
    })()""")
    assert got["text"] == ("openai/gpt-4o-mini[api_base=https://***@llm-proxy.internal.example"
                           ".com:8443/v1/deployments/summarizer,temperature=0.2,api_key=***]")
    assert "hunter2" not in got["page"] and "sk-live" not in got["page"]
    assert got["height"] > 1.5 * got["line"] and not got["clipped"], got  # wrapped, not cut
    assert got["cost"] and got["lastRight"] <= got["clientWidth"], got
