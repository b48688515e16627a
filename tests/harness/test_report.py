"""`write_report` over a results store built by hand per the contract schema."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from workbench.harness.report._report import markdown_table, write_report
from workbench.messages import Message, messages_from_goose
from workbench.sessions import IMPORTERS, Session, importer

SCHEMA = """
CREATE TABLE runs (run_id TEXT PRIMARY KEY, name TEXT, spec_json TEXT, started_at TEXT,
  finished_at TEXT, workbench_version TEXT, status TEXT);
CREATE TABLE cells (cell_id TEXT PRIMARY KEY, run_id TEXT, session_id TEXT, session_path TEXT,
  session_format TEXT, strategy TEXT, model TEXT, template TEXT, window INTEGER, repeat INTEGER,
  status TEXT, original_tokens INTEGER, retained_tokens INTEGER, summary_tokens INTEGER,
  billed_input_tokens INTEGER, billed_output_tokens INTEGER, cache_read_tokens INTEGER,
  cache_write_tokens INTEGER, cost REAL, parse_outcome TEXT, structured INTEGER, attempts INTEGER,
  retries INTEGER, max_removal_percent INTEGER, tool_responses_removed INTEGER, latency_ms REAL,
  error_type TEXT, error_message TEXT, traceback TEXT, summary_path TEXT, metrics_json TEXT,
  started_at TEXT, finished_at TEXT);
CREATE TABLE attempts (attempt_id TEXT PRIMARY KEY, cell_id TEXT, attempt_no INTEGER,
  removal_percent INTEGER, messages_removed INTEGER, tool_responses_removed INTEGER, outcome TEXT,
  model TEXT, input_tokens INTEGER, output_tokens INTEGER, cache_read_tokens INTEGER,
  cache_write_tokens INTEGER, cost REAL, latency_ms REAL, cache_hit INTEGER, error TEXT);
"""

FORMAT = "h2-report-test"


@pytest.fixture(scope="module")
def json_importer():
    @importer(FORMAT)
    def load(path, errors="raise", **select):
        data = json.loads(Path(path).read_text())
        return [Session(id=data["id"], format=FORMAT, path=str(path),
                        messages=messages_from_goose(data["conversation"]), meta=data["meta"])]

    yield FORMAT
    IMPORTERS.pop(FORMAT, None)


def cell(cell_id, template, session_path, **kw):
    row = dict(cell_id=cell_id, run_id="r1", session_id="s1", session_path=str(session_path),
               session_format=FORMAT, strategy="goose", model="m", template=template,
               window=None, repeat=0, status="ok", original_tokens=1000, retained_tokens=400,
               summary_tokens=100, billed_input_tokens=1200, billed_output_tokens=150,
               cost=0.002, parse_outcome="structured", structured=1, attempts=1, retries=0,
               summary_path=f"summaries/{cell_id}.md")
    row.update(kw)
    return row


@pytest.fixture(scope="module")
def report(tmp_path_factory, json_importer) -> dict[str, Path]:
    """One report for the module: drawing the plots is the slow part."""
    return write_report(make_run(tmp_path_factory.mktemp("report")))


def make_run(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    (run / "summaries").mkdir(parents=True)
    session = Session(id="s1", format=FORMAT, path="s1.json", messages=[
        Message.user("Please fix the parser crash in src/app.py quickly"),
        Message.assistant().with_tool_request("t1", "shell", {"command": "cat src/app.py"}),
    ])
    session_path = session.write_goose_json(tmp_path / "s1.json")
    rows = [
        cell("c1", "goose", session_path, window=8000,
             metrics_json=json.dumps({"probe_recall": 0.5, "files_recall": 1.0})),
        cell("c2", "terse", session_path, window=8000, retained_tokens=200, cost=None,
             parse_outcome="invalid_json", structured=0, retries=1, attempts=2,
             metrics_json=json.dumps({"probe_recall": 0.25, "files_recall": 0.0})),
        cell("c3", "terse", session_path, status="error", retained_tokens=None,
             summary_tokens=None, parse_outcome=None, error_type="ContextLengthExceeded",
             error_message="prompt too long | 9000 > 8000", summary_path=None),
    ]
    (run / "summaries" / "c1.md").write_text("Fixing src/app.py.")
    (run / "summaries" / "c1.forgotten.json").write_text(json.dumps(
        {"files": [], "errors": [], "requests": ["stored request"], "facts": []}))
    (run / "summaries" / "c2.md").write_text("Nothing useful.")
    db = sqlite3.connect(run / "results.sqlite")
    db.executescript(SCHEMA)
    db.execute("INSERT INTO runs VALUES ('r1','demo','{}','2026-01-01T00:00:00Z',"
               "'2026-01-01T00:01:00Z','0.1.0','finished')")
    for row in rows:
        db.execute(f"INSERT INTO cells ({','.join(row)}) VALUES ({','.join('?' * len(row))})",
                   list(row.values()))
    db.commit()
    db.close()
    return run


def test_write_report_writes_every_file_into_the_run_report_folder(report):
    paths = report
    run = paths["markdown"].parent.parent
    assert sorted(paths) == ["cells_csv", "forgotten_csv", "html", "markdown", "plot_failures",
                             "plot_parse_success", "plot_recall", "plot_retained_tokens",
                             "plot_retries", "table_csv"]
    assert all(p.parent == run / "report" and p.is_file() for p in paths.values())


def test_the_table_csv_holds_the_comparison_table(report):
    table = pd.read_csv(report["table_csv"])
    assert table.columns.tolist()[:14] == [
        "template", "model", "window", "effective_window", "window_tokenizer", "cells", "replies",
        "failed", "errors", "failures", "failure_rate", "n", "mean_over", "parse_success_pct"]
    assert table[["template", "window", "cells", "failures", "failed", "errors"]].values.tolist() == [
        ["goose", "8000", 1, 0, 0, 0], ["terse", "8000", 1, 0, 0, 0], ["terse", "none", 1, 1, 1, 0]]
    assert table["probe_recall"].tolist()[:2] == [0.5, 0.25]
    assert table["cost"].isna().tolist() == [False, True, True]  # no completed cell: no mean
    assert table["cost_total"].isna().tolist() == [False, True, False]


def test_the_cells_csv_has_one_row_per_cell_with_metrics_expanded(report):
    cells = pd.read_csv(report["cells_csv"])
    # key order (session, strategy, model, template, window, repeat), not the order cells
    # finished: c3 (terse, no window) sorts before c2 (terse, 8k)
    assert cells["cell_id"].tolist() == ["c1", "c3", "c2"]
    assert cells["files_recall"].fillna(-1).tolist() == [1.0, -1, 0.0]  # c3 failed: no value


def test_forgotten_items_come_from_the_stored_file_else_are_computed(report):
    forgotten = pd.read_csv(report["forgotten_csv"])
    assert forgotten[["cell_id", "kind", "item"]].values.tolist() == [
        ["c1", "requests", "stored request"],
        ["c2", "files", "src/app.py"],
        ["c2", "requests", "Please fix the parser crash in src/app.py quickly"],
    ]


def test_the_html_is_self_contained_with_the_table_and_embedded_pngs(report):
    text = report["html"].read_text()
    # One plot per metric, each saying how small its text is at its own size.
    assert text.count('src="data:image/png;base64,iVBORw0KGgo') == 5
    assert text.count('data-text-px="12.5" src="data:image/png') == 5
    assert ('<table id="wb-table"' in text
            and '<td class="text wb-wrap wb-c-variant" data-v="terse">terse</td>' in text)
    # a model label is shown whole, with places to wrap
    assert '<td class="text wb-wrap wb-c-variant" data-v="m">m</td>' in text
    assert '<td class="num wb-c-recall" data-v="0.5">50.0</td>' in text  # probe recall; the % is in the header
    assert "ContextLengthExceeded" in text and "stored request" in text


def test_the_markdown_has_the_table_the_comparison_and_the_failures(report):
    text = report["markdown"].read_text()
    assert "| goose | m | 8000 | 8000 | — | 1 | 1 | 0 | 0 | 0 | 0.0% | 1 | common | 100.0% |" in text
    # the verdict's comparisons, per model x window, labelled as the verdict labels them
    assert ("| m | 8000 | probe_recall | terse | goose | 1 | -0.250 | -0.250 | -0.250 | 0.001 "
            "| tie |") in text
    assert "| a | b |" not in text  # nothing pooled over windows
    assert ("## Verdict\n\n```text\nVerdict: which template wins, per model x window" in text)
    # the recommendation is the first thing after the title
    title, rest = text.split("\n\n", 1)
    assert title.startswith("# Compaction report: ")
    assert rest.startswith("## Recommendation\n\n- Recommendation: ")
    assert rest.index("## Recommendation") < rest.index("Generated from") < rest.index("## Verdict")
    assert "  1 x context exhausted (failed): the session is larger than the window" in text
    assert "prompt too long \\| 9000 > 8000" in text
    assert "![recall](recall.png)" in text and "![retries](retries.png)" in text
    assert "Run **demo** (1 invocation(s)), status finished" in text


def test_markdown_table_escapes_pipes_and_right_aligns_numbers():
    df = pd.DataFrame({"name": ["a|b"], "n": [1234.5]})
    assert markdown_table(df, {"n": "{:,.0f}"}) == "| name | n |\n|---|---:|\n| a\\|b | 1,234 |\n"


def test_the_report_command_writes_to_out_and_prints_the_paths(tmp_path, report):
    from click.testing import CliRunner

    from workbench.cli._report import command

    run = report["markdown"].parent.parent
    res = CliRunner().invoke(command, [str(run), "--out", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    assert f"markdown: {tmp_path / 'out' / 'report.md'}" in res.output.splitlines()
    assert (tmp_path / "out" / "report.html").is_file()


def test_the_compare_command_shows_deltas_changed_cells_and_the_paired_result(tmp_path):
    from click.testing import CliRunner

    from workbench.cli._compare import command

    run_a = make_run(tmp_path / "a")
    run_b = make_run(tmp_path / "b")
    db = sqlite3.connect(run_b / "results.sqlite")
    db.execute("UPDATE cells SET retained_tokens = 300, metrics_json = "
               "'{\"probe_recall\": 0.75}' WHERE cell_id = 'c1'")
    db.execute("UPDATE cells SET status = 'ok', parse_outcome = 'structured' WHERE cell_id = 'c3'")
    db.commit()
    db.close()
    res = CliRunner().invoke(command, [str(run_a), str(run_b)])
    assert res.exit_code == 0, res.output
    out = res.output
    assert ("| goose | m | 8000 | both | +0 | +0 | +0 | +0 | +0 | +0.0% | +0 | +0.0 | +0.0 "
            "| -100 |") in out
    assert "Cells whose status or parse outcome changed: 1" in out
    assert "| s1 | goose | m | terse | none | 0 | error | ok | — | structured |" in out
    # Two pairs but one session: the cluster bootstrap has nothing to resample, no winner.
    assert ("Paired comparison, B - A: probe_recall: B - A = +0.125 [95% CI +0.125, +0.125] "
            "over 2 pairs; no clear winner") in out
    assert "Verdict: which run wins, per model x window" in out
    assert "  m @ 8000 (2 runs, 1 sessions completed by all):" in out


def test_compare_fail_on_exits_1_when_b_is_worse_than_the_tolerance(tmp_path):
    from click.testing import CliRunner

    from workbench.cli._compare import command

    run_a = make_run(tmp_path / "a")
    run_b = make_run(tmp_path / "b")
    db = sqlite3.connect(run_b / "results.sqlite")
    db.execute("UPDATE cells SET retained_tokens = 460 WHERE cell_id = 'c1'")  # +15 %
    db.commit()
    db.close()
    args = [str(run_a), str(run_b), "--fail-on", "probe_recall:0"]
    ok = CliRunner().invoke(command, args + ["--fail-on", "retained_tokens:20%"])
    assert ok.exit_code == 0, ok.output
    assert ("fail-on retained_tokens (lower is better): A 300, B 330 over 2 paired cells; "
            "B worse by 30, allowed 60 (20%): ok") in ok.output
    bad = CliRunner().invoke(command, args + ["--fail-on", "retained_tokens:5%"])
    assert bad.exit_code == 1, bad.output
    assert "B worse by 30, allowed 15 (5%): FAIL" in bad.output
    assert bad.output.rstrip().endswith("1 of 2 --fail-on check(s) failed")
    wrong = CliRunner().invoke(command, [str(run_a), str(run_b), "--fail-on", "recall"])
    assert wrong.exit_code == 2
    assert "--fail-on 'recall': expected METRIC:TOLERANCE" in wrong.output


def test_the_report_reads_the_same_whatever_order_the_cells_finished(tmp_path, json_importer):
    """Cells load in key order, so a run whose cells finished in another order (a thread pool,
    Ray) gives the same report: the same comparison baseline, the same sections, byte for byte
    (before, the first template to finish was the baseline every other one was compared with)."""
    first = make_run(tmp_path / "a")
    second = make_run(tmp_path / "b")
    db = sqlite3.connect(second / "results.sqlite")
    rows = db.execute("SELECT * FROM cells ORDER BY rowid").fetchall()
    db.execute("DELETE FROM cells")
    db.executemany(f"INSERT INTO cells VALUES ({','.join('?' * len(rows[0]))})",
                   list(reversed(rows)))
    db.commit()
    db.close()
    a = write_report(first)["markdown"].read_text(encoding="utf-8")
    b = write_report(second)["markdown"].read_text(encoding="utf-8")
    assert "| m | 8000 | probe_recall | terse | goose |" in a
    assert a.replace(str(tmp_path / "a"), "") == b.replace(str(tmp_path / "b"), "")
