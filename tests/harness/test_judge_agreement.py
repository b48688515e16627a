"""The judge's agreement with the exact grader: a sample of exact questions graded by the judge
too, and Cohen's kappa with its interval per model x window, from scripted judges that agree
and that do not."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.harness.test_qa_run import ANSWERER, USAGE, attempts, question_text, write_session
from tests.probes._sessions import manifest_session
from workbench.harness import Experiment, Results, run_experiment
from workbench.harness.results import cohen_kappa, judge_agreement
from workbench.messages import Message
from workbench.probes import CALIBRATION_COUNTS, DIMENSIONS, build_questions, normalize_text
from workbench.testing import ScriptedModel

SESSIONS = ("shop-1", "shop-2", "shop-3")


def _answerer() -> ScriptedModel:
    """Right on every other question (in the asking order), "no idea what" on the rest."""
    questions = build_questions(manifest_session(), per_session=None).questions
    right = {q.text: q.expected for n, q in enumerate(questions) if n % 2 == 0}

    def respond(system: str, messages: list[Message]) -> str:
        value = right.get(question_text(messages), "a wrong guess")
        return "\n".join(value) if isinstance(value, list) else value
    return ScriptedModel(respond=respond, usage=USAGE)


def _judge(agrees: bool) -> ScriptedModel:
    """A judge that passes an answer holding the reference (or, contrary, one that does not)."""
    def respond(system: str, messages: list[Message]) -> str:
        text = messages[-1].concat_text()
        reference = re.search(r"Reference answer:\n(.*?)\n\nAnswer to grade:", text, re.S)[1]  # type: ignore[index]
        answer = text.rsplit("Answer to grade:\n", 1)[1]
        holds = all(normalize_text(line) in normalize_text(answer)
                    for line in reference.splitlines())
        score = 5 if holds == agrees else 0
        return json.dumps({d: {"score": score, "reason": "scripted"} for d in DIMENSIONS})
    return ScriptedModel(respond=respond, usage=USAGE)


def _run(tmp_path: Path, agrees: bool, calibration: int = 3,
         templates: tuple[str, ...] = ("default",)) -> Results:
    for sid in SESSIONS:
        write_session(tmp_path, sid)
    spec = Experiment.from_dict({
        "name": "qa", "sessions": ["shop-*.json"], "models": ["extractive"],
        "templates": list(templates),
        "base_dir": str(tmp_path), "qa": {"answerer": ANSWERER, "judge": ANSWERER,
                                          "judge_calibration": calibration}})
    models = {"answerer": _answerer(), "judge": _judge(agrees)}
    return run_experiment(spec, tmp_path / "run", progress=False,
                          qa_model_factory=lambda cell, role: models[role])


def test_a_judge_that_agrees_with_the_exact_grader_has_kappa_one(tmp_path: Path) -> None:
    results = _run(tmp_path, agrees=True)
    sampled = [a for a in attempts(tmp_path / "run") if a["purpose"] == "judge_exact"]
    assert len(sampled) == 3 * len(SESSIONS)  # three exact questions per cell
    # every cell of a session gives the judge the same questions
    assert len({a["question_id"] for a in sampled}) == 3
    counts = results.cells[list(CALIBRATION_COUNTS)].sum()
    assert counts["judge_exact_judge_only"] == counts["judge_exact_grader_only"] == 0
    assert counts["judge_exact_both"] > 0 and counts["judge_exact_neither"] > 0
    (row,) = results.judge_agreement().to_dict("records")
    assert (row["model"], row["sessions"], row["questions"]) == ("extractive", 3, 9)
    assert (row["agreement"], row["kappa"], row["kappa_low"], row["kappa_high"]) == (
        1.0, 1.0, 1.0, 1.0)
    assert results.table()["judge_kappa"].tolist() == [1.0]  # the row's model x window
    # the judge's score still covers the open questions only
    assert results.cells["judge_score"].notna().all()


def test_a_judge_that_contradicts_the_exact_grader_has_a_negative_kappa(
        tmp_path: Path) -> None:
    results = _run(tmp_path, agrees=False)
    counts = results.cells[list(CALIBRATION_COUNTS)].sum()
    assert counts["judge_exact_both"] == counts["judge_exact_neither"] == 0
    (row,) = results.judge_agreement().to_dict("records")
    assert row["agreement"] == 0.0
    # 9 questions, the judge passing the 4 the grader fails and failing its 5: kappa -0.8
    assert row["kappa"] == pytest.approx(cohen_kappa(0, counts["judge_exact_judge_only"],
                                                     counts["judge_exact_grader_only"], 0))
    assert row["kappa"] == pytest.approx(-0.8)
    assert row["kappa_low"] <= row["kappa"] <= row["kappa_high"] < 0
    assert results.table()["judge_kappa"].tolist() == [pytest.approx(-0.8)]


def test_no_sample_without_calibration(tmp_path: Path) -> None:
    results = _run(tmp_path, agrees=True, calibration=0)
    assert not [a for a in attempts(tmp_path / "run") if a["purpose"] == "judge_exact"]
    assert results.judge_agreement().empty
    assert "judge_kappa" not in results.table()


def test_cohens_kappa_of_a_known_table() -> None:
    # 50 questions: observed agreement 0.7, pass rates 0.5 and 0.6 -> chance 0.5
    assert cohen_kappa(20, 5, 10, 15) == pytest.approx(0.4)
    assert math.isnan(cohen_kappa(10, 0, 0, 0))  # one verdict for everything: undefined
    assert math.isnan(cohen_kappa(0, 0, 0, 0))


def test_the_interval_resamples_whole_sessions_within_each_model_and_window() -> None:
    rows: list[dict[str, Any]] = []
    for session, table in enumerate([(3, 0, 1, 2), (2, 1, 0, 3), (4, 0, 0, 2), (1, 1, 1, 3)]):
        for window in (8192, 32768):
            rows.append({"model": "m", "window": window, "session_id": f"s{session}",
                         **dict(zip(CALIBRATION_COUNTS, table, strict=True))})
    rows.append({"model": "m", "window": 8192, "session_id": "s9"})  # no judge: left out
    out = judge_agreement(pd.DataFrame(rows), seed=1)
    assert out["window"].tolist() == [8192, 32768]
    first = out.iloc[0]
    assert first["questions"] == 24 and first["sessions"] == 4
    assert first["kappa"] == pytest.approx(cohen_kappa(10, 2, 2, 10))
    assert first["kappa_low"] <= first["kappa"] <= first["kappa_high"]
    again = judge_agreement(pd.DataFrame(rows), seed=1)
    assert again.equals(out)  # seeded


@pytest.mark.parametrize("agrees", [True, False], ids=["agrees", "contradicts"])
def test_the_verdict_ranks_on_the_judge_only_when_it_agrees(tmp_path: Path, agrees: bool) -> None:
    from workbench.harness import verdict

    results = _run(tmp_path, agrees=agrees, templates=("default", "lean-facts"))
    (stratum,) = verdict(results).strata
    judge = next(m for m in stratum.metrics if m.metric == "judge_score")
    assert stratum.judge is not None and stratum.judge.questions == 3 * 3 * 2
    if agrees:
        assert stratum.judge.kappa == 1.0 and judge.not_ranked == "" and judge.best is not None
        assert not any("judge" in c for c in stratum.recommendation.caveats)
    else:
        assert stratum.judge.kappa < 0 and judge.best is None
        assert judge.not_ranked == stratum.judge.reason
        assert stratum.judge.reason.startswith(
            "the judge's figures are not ranked on: it agrees with the exact grader at Cohen's "
            "kappa -")
        assert stratum.recommendation.caveats[-1] == stratum.judge.reason
