"""The HTML report's pieces without a browser: escaping, generic columns, payloads, `view`."""

from __future__ import annotations

import base64
import gzip
import json
import os
import re
import webbrowser
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from workbench.harness.report._drilldown import CHUNK_CELLS, cell_payloads, script_json
from workbench.harness.report._html_table import (
    DEFAULT_GROUP,
    column_spec,
    html_table,
    short_label,
    short_window,
)
from workbench.harness.report._html_verdict import render_verdict, verdict_view
from workbench.harness.results._store import ResultsStore
from workbench.harness.results._verdict import verdict

EVIL = "</script><!-- <script>alert(1)</script> & \u2028"


def test_script_json_never_closes_the_script_element_and_reads_back_unchanged():
    text = script_json({"summary": EVIL, "n": 1})
    assert "<" not in text and ">" not in text and "&" not in text
    assert "\u2028" not in text
    assert json.loads(text) == {"summary": EVIL, "n": 1}


def test_unknown_columns_land_in_a_group_by_name_pattern_or_the_default_group():
    assert column_spec("retained_tokens").group == "tokens"
    spec = column_spec("estimated_input_tokens")
    assert (spec.group, spec.label, spec.unit) == ("tokens", "estimated input tokens", "tok")
    assert column_spec("http_retries").group == "reliability"
    assert column_spec("failure_rate").fmt == "{:.1%}"
    assert column_spec("mystery").group == DEFAULT_GROUP


def test_the_table_renders_new_columns_under_grouped_headers_with_escaped_values():
    df = pd.DataFrame({"template": ["<b>t</b>"], "model": ["replay:openai/gpt-4o-mini@8k"],
                       "window": [8192], "cells": [3], "retained_tokens": [1234.4],
                       "probe_recall": [0.625], "mystery": [7.5]})
    out = html_table(df)
    assert '<th colspan="3" class="wb-group wb-c-variant" data-group="variant"></th>' in out
    assert ">other</th>" in out and ">probe recall (mean over n)</th>" in out
    assert "&lt;b&gt;t&lt;/b&gt;" in out and "<b>t</b>" not in out
    assert '<td class="text wb-c-variant" data-v="8192" title="8192">8k</td>' in out
    assert ('<td class="text wb-c-variant" data-v="replay:openai/gpt-4o-mini@8k" '
            'title="replay:openai/gpt-4o-mini@8k">gpt-4o-mini</td>') not in out  # fits: kept
    assert '<td class="num wb-c-tokens" data-v="1234.4">1,234</td>' in out
    assert '<td class="num wb-c-recall" data-v="0.625">62.5</td>' in out
    assert '<td class="num wb-c-other" data-v="7.5">7.5</td>' in out
    heads = re.findall(r'data-col="(\w+)"', out)
    assert heads == ["template", "model", "window", "cells", "retained_tokens", "probe_recall",
                     "mystery"]


def test_windows_and_long_identities_are_shortened_for_narrow_columns():
    # Labelled as the verdict and the terminal table label them (one window label everywhere).
    assert [short_window(v) for v in (8192, 32768, 8000, None, "none")] == [
        "8k", "32k", "8000", "none", "none"]
    assert short_label("cached:openai/gpt-4o-mini@8k") == "openai/gpt-4o-mini"
    assert short_label("openrouter/anthropic/claude-3-5-haiku") == "claude-3-5-haiku"
    assert short_label("openrouter/anthropic/claude-3-5-haiku-latest") == (
        "claude-3-5-haiku-late…")
    assert short_label("x" * 30) == "x" * 21 + "…"


def _cells(rows):
    base = {"session_id": "s", "strategy": "goose", "model": "m", "window": 8192, "repeat": 0,
            "status": "ok", "error_type": None, "error_message": None}
    return pd.DataFrame([{**base, **r} for r in rows])


def test_the_verdict_section_draws_the_runs_verdict_and_names_a_winner_only_past_zero():
    rows = []
    for s in range(8):
        rows.append({"session_id": f"s{s}", "template": "a", "probe_recall": 0.2 + s * 0.01})
        rows.append({"session_id": f"s{s}", "template": "b", "probe_recall": 0.6 + s * 0.01})
        rows.append({"session_id": f"s{s}", "template": "c", "probe_recall": 0.58 + s * 0.02})
    # c leads b on the mean, but c - b runs from -2 to +5 points: the interval holds zero.
    view = verdict_view(verdict(_cells(rows)))
    [finding] = view.findings
    assert (finding.model, finding.window, finding.winner) == ("m", "8k", None)
    assert finding.headline.startswith("ship ")
    assert finding.headline.endswith("; no significant difference on any headline metric "
                                     "(8 sessions completed by all)")
    assert finding.details[0] == "probe recall (8 sessions): best c (65.0%)"
    assert finding.details[1].startswith("b: tie with best, ")
    assert finding.details[2].startswith("a: consistently worse than best, ") or \
        finding.details[2].startswith("a: worse than best, ")
    assert finding.recommendation.startswith("Recommendation: ")
    two = verdict_view(verdict(_cells([r for r in rows if r["template"] != "c"])))
    assert two.findings[0].winner == "b"
    assert two.findings[0].headline.endswith("probe recall: b wins")
    assert two.findings[0].details[:2] == [
        "probe recall (8 sessions): best b (63.5%), significantly better than every other "
        "variant",
        "a: consistently worse than best: -40.0 pts in every one of 8 sessions, Holm p <0.001"]
    assert two.recommendation.startswith("Recommendation: ")
    assert two.to_text().splitlines()[1] == two.recommendation
    three = verdict_view(verdict(_cells([r for r in rows if r["template"] != "c"
                                              and r["session_id"] in ("s0", "s1", "s2")])))
    assert three.findings[0].headline.endswith(
        "probe recall: b ahead in every session (too few to test)")
    page = render_verdict(two)
    assert '<p class="wb-recommend"><b>Recommendation: ' in page


def test_the_verdict_counts_errors_by_class_with_their_cause_and_escapes_model_text():
    model = "<b>m</b><script>x</script>"
    cells = _cells([{"template": "a", "probe_recall": 0.5, "model": model},
                    {"template": "b", "probe_recall": 0.4, "model": model},
                    {"session_id": "s2", "template": "b", "model": model, "status": "error",
                     "error_type": "CacheMiss", "error_message": "no recording"}])
    view = verdict_view(verdict(cells))
    [(label, count, cause)] = view.errors
    assert (label, count) == ("cache miss (error)", 1)
    assert cause.startswith("replay-only cache has no recording for the prompt")
    page = render_verdict(view)
    assert "<script>x" not in page and "&lt;script&gt;x&lt;/script&gt;" in page


def test_payload_chunks_hold_summary_raw_reply_attempts_and_forgotten(tmp_path):
    (tmp_path / "summaries").mkdir()
    (tmp_path / "summaries" / "c0.md").write_text("# S\n- x\n", encoding="utf-8")
    (tmp_path / "summaries" / "c0.raw.txt").write_text('{"user_intent": []}', encoding="utf-8")
    ids = [f"c{i}" for i in range(CHUNK_CELLS + 1)]
    cells = pd.DataFrame({"cell_id": ids, "status": ["ok"] * len(ids),
                          "summary_path": ["summaries/c0.md"] + [None] * (len(ids) - 1)})
    attempts = pd.DataFrame({"cell_id": ["c0", "c0"], "attempt_no": [2, 1],
                             "removal_percent": [10, 0], "input_tokens": [90, None],
                             "output_tokens": [9, None],
                             "outcome": ["ok", "context_length_exceeded"], "error": [None, None]})
    chunks = cell_payloads(tmp_path, cells, attempts, {"c0": {"facts": ["f"]}})
    assert len(chunks) == 2
    first = json.loads(gzip.decompress(base64.b64decode(chunks[0])))
    assert first["c0"] == {"summary": "# S\n- x\n", "raw": '{"user_intent": []}',
                           "forgotten": {"facts": ["f"]}, "error": None,
                           "attempts": [[1, 0, None, None, "context_length_exceeded", None],
                                        [2, 10, 90.0, 9.0, "ok", None]]}
    assert first["c1"]["summary"] is None and first["c1"]["raw"] is None
    assert list(json.loads(gzip.decompress(base64.b64decode(chunks[1])))) == [ids[-1]]


def _tiny_run(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    (run / "summaries").mkdir(parents=True)
    (run / "summaries" / "c1.md").write_text("# Summary\n", encoding="utf-8")
    with ResultsStore(run / "results.sqlite") as store:
        run_id = store.start_run("tiny", "{}", "test")
        store.record_cell({"cell_id": "c1", "run_id": run_id, "session_id": "s", "model": "m",
                           "template": "t", "window": 8192, "repeat": 0, "status": "ok",
                           "retained_tokens": 10, "summary_path": "summaries/c1.md",
                           "parse_outcome": "structured"})
        store.finish_run(run_id, "finished")
    return run


def test_view_writes_a_missing_report_and_opens_it_in_the_browser(tmp_path, monkeypatch):
    from workbench.cli import cli

    opened = []
    monkeypatch.setattr(webbrowser, "open", lambda uri: opened.append(uri) or True)
    run = _tiny_run(tmp_path)
    res = CliRunner().invoke(cli, ["view", str(run)])
    page = run / "report" / "report.html"
    assert res.exit_code == 0, res.output
    assert res.output.splitlines() == [f"wrote {page}", f"opened {page}"]
    assert opened == [page.resolve().as_uri()]


def test_view_reuses_a_current_report_and_prints_the_path_without_a_browser(tmp_path,
                                                                           monkeypatch):
    from workbench.cli import cli

    monkeypatch.setattr(webbrowser, "open", lambda uri: False)
    run = _tiny_run(tmp_path)
    CliRunner().invoke(cli, ["view", str(run), "--no-open"])
    page = run / "report" / "report.html"
    future = page.stat().st_mtime + 60
    os.utime(page, (future, future))
    res = CliRunner().invoke(cli, ["view", str(run)])
    assert res.exit_code == 0, res.output
    assert res.output == f"no browser available; open this file yourself: {page}\n"
    os.utime(page, (1, 1))  # older than results.sqlite: stale, written again
    res = CliRunner().invoke(cli, ["view", str(run), "--no-open"])
    assert res.output.splitlines() == [f"wrote {page}", str(page)]


def test_view_names_a_folder_without_results(tmp_path):
    from workbench.cli import cli

    res = CliRunner().invoke(cli, ["view", str(tmp_path)])
    assert res.exit_code == 1
    assert f"{tmp_path}: no results.sqlite here" in res.output


@pytest.mark.parametrize("name", ["report.css", "report.js"])
def test_report_assets_ship_with_the_package(name):
    from importlib import resources

    text = (resources.files("workbench.harness.report") / "assets" / name).read_text("utf-8")
    assert "</script" not in text.lower() and len(text) > 1000


def test_a_run_without_cells_still_gets_a_page_that_says_so(tmp_path):
    from workbench.harness import write_report

    with ResultsStore(tmp_path / "results.sqlite") as store:
        store.finish_run(store.start_run("empty", "{}", "test"), "finished")
    text = write_report(tmp_path)["html"].read_text(encoding="utf-8")
    assert "<li>the run holds no cells</li>" in text
    assert '<script type="application/json" id="wb-index">[]</script>' in text
    assert "wb-chunk-0" not in text
