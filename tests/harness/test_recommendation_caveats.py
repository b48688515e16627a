"""The recommendation honest at every level (issue 33): the run's line carries every caveat its
strata carry, strata are counted by the window their cells ran at, a metric with no signal is
"no evidence", and the judge's figures are ranked on only where it agrees with the exact
grader."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import pytest

from workbench.harness import verdict
from workbench.probes import CALIBRATION_COUNTS, GRADING_AUDIT


def cell(session: str, template: str, *, model: str, window: int, recall: float,
         retained: int, effective: int | None = None, **metrics: Any) -> dict[str, Any]:
    return {"session_id": session, "strategy": "goose", "model": model, "template": template,
            "window": window, "effective_window": effective, "repeat": 0, "status": "ok",
            "outcome_kind": "ok", "error_class": None, "error_type": None,
            "parse_outcome": "structured", "retained_tokens": retained, "summary_tokens": 100,
            "probe_recall": recall, "template_echo": 0.0, "fill_rate": 0.5, **metrics}


def _run_cells() -> pd.DataFrame:
    """The extractive baseline at 8k and 32k (no cap of its own): b keeps fewer tokens but
    answers fewer questions; a tiny model whose own context is 8k, so its 32k cap runs at 8k,
    and which recalls nothing with either template, on three sessions."""
    rows = []
    for window in (8192, 32768):
        for i in range(6):
            rows += [cell(f"s{i}", "a", model="extractive", window=window, recall=0.8,
                          retained=900, qa_accuracy=0.6),
                     cell(f"s{i}", "b", model="extractive", window=window, recall=0.8,
                          retained=500, qa_accuracy=0.6 - 0.05 - 0.01 * (i % 3))]
        for i in range(3):
            rows += [cell(f"s{i}", "a", model="tiny", window=window, recall=0.0,
                          retained=300 + i, effective=8192),
                     cell(f"s{i}", "b", model="tiny", window=window, recall=0.0,
                          retained=250 + 3 * i, effective=8192)]
    return pd.DataFrame(rows)


RUN_LINES = [
    "Run as a whole (4 model x window, 3 by the window each ran at, rule min-retained-safe):",
    "  Recommendation: b — recommended in 3 of 3 model x window strata and not significantly "
    "worse on recall or failures in the 2 with evidence on recall; no evidence on recall in "
    "the other 1; recall against each stratum's best: extractive @ 8k +0.0 pts [+0.0, +0.0], "
    "extractive @ 32k +0.0 pts [+0.0, +0.0], tiny @ 8k no evidence",
    "    caveat: tiny @ 32k ran at 8k: counted with tiny @ 8k",
    "    caveat: extractive @ 8k, extractive @ 32k: but significantly worse than the best, a, "
    "on questions answered (exact) (-6.0 pts [-6.7, -5.3], Holm p <0.001)",
    "    caveat: tiny @ 8k: no template recalled a single probe item here: the choice rests on "
    "tokens alone",
    "    caveat: tiny @ 8k: only 3 session(s) completed by every template, below the 5 a "
    "significance test needs: provisional",
]


def test_the_run_recommendation_carries_its_strata_caveats_word_for_word() -> None:
    text = verdict(_run_cells()).to_text()
    lines = text.splitlines()
    start = lines.index(RUN_LINES[0])
    assert lines[start:start + len(RUN_LINES)] == RUN_LINES
    assert lines[start + len(RUN_LINES)] == "Errors and failures:"


def test_a_capped_window_is_titled_by_the_window_it_ran_at_and_counted_once() -> None:
    v = verdict(_run_cells())
    assert [s.title for s in v.strata] == ["extractive @ 8k", "extractive @ 32k", "tiny @ 8k",
                                           "tiny @ 32k (ran at 8k)"]
    assert [s.real_window for s in v.strata] == [8192, 32768, 8192, 8192]
    assert [s.counted_with for s in v.strata] == [None, None, None, "tiny @ 8k"]
    # the run's per-stratum entries are the counted strata
    assert [p["scope"] for p in v.recommendation.per_stratum] == [
        "extractive @ 8k", "extractive @ 32k", "tiny @ 8k"]


def test_zero_recall_everywhere_is_no_evidence_never_not_significantly_worse() -> None:
    v = verdict(_run_cells())
    tiny = v.strata[2]
    recall = next(m for m in tiny.metrics if m.metric == "probe_recall")
    assert recall.no_evidence == "every template scored 0"
    assert recall.to_lines() == ["probe recall (3 sessions): no evidence: every template "
                                 "scored 0"]
    rec = tiny.recommendation
    assert rec.reasons[0] == "no evidence on recall: every template scored 0"
    assert "not significantly lower" not in rec.to_text()
    assert "tiny @ 8k not" not in v.recommendation.to_text()


def test_one_shared_session_is_no_evidence() -> None:
    rows = [cell("s0", "a", model="m", window=8192, recall=0.7, retained=900),
            cell("s0", "b", model="m", window=8192, recall=0.6, retained=500)]
    (stratum,) = verdict(pd.DataFrame(rows)).strata
    recall = next(m for m in stratum.metrics if m.metric == "probe_recall")
    assert recall.no_evidence == ("1 session(s) shared by the templates: no spread to test a "
                                  "difference against")
    assert stratum.recommendation.reasons[0] == f"no evidence on recall: {recall.no_evidence}"


def _judged_cells(agrees: bool, calibrated: bool = True) -> pd.DataFrame:
    """Six sessions, two templates; the judge scores a higher than b; its exact questions
    agree with the grader (or contradict it) in every session."""
    rows = []
    for i in range(6):
        table = (2, 0, 0, 2) if agrees else (0, 2, 2, 0)
        counts = dict(zip(CALIBRATION_COUNTS, table, strict=True)) if calibrated else {}
        rows += [cell(f"s{i}", "a", model="m", window=8192, recall=0.8, retained=900,
                      judge_score=4.0 + 0.1 * (i % 2), **counts),
                 cell(f"s{i}", "b", model="m", window=8192, recall=0.8, retained=500,
                      judge_score=2.0, **counts)]
    return pd.DataFrame(rows)


def test_a_judge_that_agrees_is_ranked_on() -> None:
    (stratum,) = verdict(_judged_cells(agrees=True)).strata
    judge = next(m for m in stratum.metrics if m.metric == "judge_score")
    assert (judge.best, judge.worse, judge.not_ranked) == ("a", ["b"], "")
    assert stratum.judge is not None and stratum.judge.kappa == 1.0 and stratum.judge.trusted
    assert stratum.recommendation.caveats[-1].startswith(
        "but significantly worse than the best, a, on judge score (0-5) (")


def test_a_judge_below_the_floor_is_not_ranked_on_and_the_run_says_why() -> None:
    v = verdict(_judged_cells(agrees=False))
    (stratum,) = v.strata
    reason = ("the judge's figures are not ranked on: it agrees with the exact grader at "
              "Cohen's kappa -1.00 [-1.00, -1.00] over 48 exact questions, below 0.6")
    judge = next(m for m in stratum.metrics if m.metric == "judge_score")
    assert judge.to_lines() == [f"judge score (0-5): not ranked: {reason}"]
    assert stratum.recommendation.caveats == [reason]
    assert v.recommendation.caveats == [f"m @ 8k: {reason}"]
    assert "on judge score" not in v.to_text()


def test_an_unmeasured_judge_is_not_ranked_on() -> None:
    (stratum,) = verdict(_judged_cells(agrees=True, calibrated=False)).strata
    assert stratum.recommendation.caveats == [
        "the judge's figures are not ranked on: its agreement with the exact grader was not "
        "measured (set [qa] judge_calibration above 0)"]


def test_to_dict_carries_the_new_fields_through_json() -> None:
    cells = _judged_cells(agrees=False)
    cells["qa_loss_exact"] = [0.25 if t == "a" else 0.5 for t in cells["template"]]
    cells["qa_gain"] = 0.0
    data = verdict(cells).to_dict()
    assert json.loads(json.dumps(data, allow_nan=False)) == data
    assert data["grading"] == GRADING_AUDIT
    (stratum,) = data["strata"]
    assert (stratum["real_window"], stratum["counted_with"]) == (8192, None)
    assert stratum["qa_reference"] == {"qa_loss_exact": {"a": 0.25, "b": 0.5},
                                       "qa_gain": {"a": 0.0, "b": 0.0}}
    judge = stratum["judge"]
    assert (judge["kappa"], judge["questions"], judge["sessions"], judge["trusted"],
            judge["floor"]) == (-1.0, 48, 6, False, 0.6)
    assert data["recommendation"]["caveats"] == [f"m @ 8k: {judge['reason']}"]
    metric = next(m for m in stratum["metrics"] if m["metric"] == "judge_score")
    assert metric["not_ranked"] == judge["reason"] and metric["no_evidence"] == ""


@pytest.mark.parametrize("window", [8192, 32768])
def test_a_model_without_a_cap_runs_at_the_nominal_window(window: int) -> None:
    rows = [cell(f"s{i}", t, model="m", window=window, recall=0.5, retained=100)
            for i in range(2) for t in "ab"]
    (stratum,) = verdict(pd.DataFrame(rows)).strata
    assert stratum.real_window == window and stratum.counted_with is None
