"""A cell's QA metrics from its answered questions, qa_loss included."""

from __future__ import annotations

import pytest

from workbench.probes import (
    DIMENSIONS,
    AnsweredQuestion,
    Evidence,
    JudgeGrade,
    NextActionResult,
    Question,
    ToolAction,
    qa_metrics,
)


def q(qid: str, kind: str, expected: object, grader: str = "exact", **kw: object) -> Question:
    return Question(id=qid, kind=kind, text="?", expected=expected, grader=grader,
                    **kw)  # type: ignore[arg-type]


def test_qa_loss_is_the_mean_of_full_minus_compacted_on_questions_answered_both_ways() -> None:
    answered = [
        AnsweredQuestion(q("a", "recall", "50354", answer_type="number"), "port 50354",
                         full_answer="50354"),                     # 1 - 1 = 0
        AnsweredQuestion(q("b", "recall", "seen_x_1"), "unknown", full_answer="seen_x_1"),  # 1
        AnsweredQuestion(q("c", "artifact", ["a.py", "b.py"], "list", answer_type="paths"),
                         "a.py", full_answer="a.py b.py"),         # 1 - 0.5 = 0.5
        AnsweredQuestion(q("d", "recall", "v"), "v", full_answer=None),  # did not fit: left out
    ]
    metrics = qa_metrics(answered)
    assert metrics["qa_loss"] == pytest.approx((0 + 1 + 0.5) / 3)
    assert metrics["qa_accuracy"] == pytest.approx((1 + 0 + 0.5 + 1) / 4)
    assert metrics["qa_recall"] == pytest.approx(2 / 3)
    assert metrics["qa_artifact"] == 0.5
    assert metrics["qa_questions"] == 4
    assert "qa_decision" not in metrics and "judge_score" not in metrics


def test_open_questions_count_in_their_kind_but_not_in_qa_accuracy() -> None:
    grade = JudgeGrade(dict.fromkeys(DIMENSIONS, 3), dict.fromkeys(DIMENSIONS, ""))
    grade.scores["accuracy"] = 0
    answered = [
        AnsweredQuestion(q("p", "continuation", "add a regression test", "overlap",
                           answer_type="text", judged=True),
                         "next: add the regression test", judge=grade),
        AnsweredQuestion(q("e", "recall", "x"), "y"),
    ]
    metrics = qa_metrics(answered)
    assert metrics["qa_accuracy"] == 0.0 and metrics["qa_continuation"] == 1.0
    assert metrics["judge_score"] == pytest.approx(15 / 6)
    assert metrics["judge_accuracy"] == 0.0 and metrics["judge_continuity"] == 3.0


def test_unanswered_questions_are_left_out_and_stale_answers_counted() -> None:
    answered = [AnsweredQuestion(q("a", "recall", "50354", answer_type="number",
                                   stale=["59767"]), "59767"),
                AnsweredQuestion(q("b", "recall", "v"), None, note="too long")]
    metrics = qa_metrics(answered)
    assert metrics["qa_accuracy"] == 0.0 and metrics["qa_stale_answers"] == 1
    assert AnsweredQuestion(q("b", "recall", "v"), None).to_dict()["grade"] is None
    grounded = q("c", "recall", "v", evidence=[Evidence(3, "x = v")])
    assert AnsweredQuestion(grounded, "v").to_dict()["evidence"] == [{"message": 3,
                                                                     "quote": "x = v"}]
    assert "evidence" not in AnsweredQuestion(q("b", "recall", "v"), "v").to_dict()


def test_next_action_metrics_appear_only_with_a_recorded_action() -> None:
    assert "next_action_match" not in qa_metrics([])
    result = NextActionResult(ToolAction("Bash", "command", "git status"),
                              ToolAction("Bash", "text", "git status"), None, True, None)
    assert qa_metrics([], result) == {"qa_questions": 0, "next_action_match": 1.0}
    result.match_full = False
    assert qa_metrics([], result)["next_action_match_full"] == 0.0


def test_model_written_questions_are_kept_apart_from_the_built_ones() -> None:
    built = AnsweredQuestion(q("b", "recall", "50354", answer_type="number"), "50354",
                             full_answer="50354")
    written = [AnsweredQuestion(q(f"author-{n}", "recall", "the port moved to 50354", "overlap",
                                  answer_type="text", source="author:openai/x"), answer,
                                full_answer="the port moved to 50354")
               for n, answer in ((1, "it moved to port 50354"), (2, "unknown"))]
    alone = qa_metrics([built])
    both = qa_metrics([built, *written])
    assert both["qa_authored"] == 0.5
    # adding an author moves no built metric
    assert {k: v for k, v in both.items() if k not in ("qa_authored", "qa_questions")} == {
        k: v for k, v in alone.items() if k != "qa_questions"}
    assert both["qa_questions"] == 3 and "qa_authored" not in alone
