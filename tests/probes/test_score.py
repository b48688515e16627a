"""A cell's QA metrics from its answered questions: the losses, the gain and the judge's
agreement counts included."""

from __future__ import annotations

import pytest

from workbench.probes import (
    CALIBRATION_COUNTS,
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


def test_the_loss_is_what_the_full_history_answers_and_the_compacted_context_misses() -> None:
    answered = [
        AnsweredQuestion(q("a", "recall", "50354", answer_type="number"), "port 50354",
                         full_answer="50354"),                     # kept
        AnsweredQuestion(q("b", "recall", "seen_x_1"), "unknown", full_answer="seen_x_1"),  # lost
        AnsweredQuestion(q("c", "artifact", ["a.py", "b.py"], "list", answer_type="paths"),
                         "a.py", full_answer="a.py b.py"),         # half its items lost
        AnsweredQuestion(q("e", "recall", "x_2"), "x_2", full_answer="unknown"),  # a gain
        AnsweredQuestion(q("f", "recall", "x_3"), "unknown", full_answer="no"),  # neither
        AnsweredQuestion(q("d", "recall", "v"), "v", full_answer=None),  # did not fit: left out
        AnsweredQuestion(q("o", "decision", "seen keys set", "overlap", answer_type="text"),
                         "a set of seen keys", full_answer="the seen keys set"),
    ]
    metrics = qa_metrics(answered)
    # over the 3 exact questions the full history gets right: 0 + 1 + 0.5 missed
    assert metrics["qa_loss_exact"] == pytest.approx(1.5 / 3)
    assert metrics["qa_loss_open"] == 0.0
    # of the 6 questions answered both ways, one is right only from the compacted context
    assert metrics["qa_gain"] == pytest.approx(1 / 6)
    assert metrics["qa_accuracy"] == pytest.approx((1 + 0 + 0.5 + 1 + 0 + 1) / 6)
    assert metrics["qa_recall"] == pytest.approx(3 / 5)
    assert metrics["qa_artifact"] == 0.5
    assert metrics["qa_questions"] == 7
    assert "judge_score" not in metrics
    lost = {a.question.id: (a.to_dict()["lost"], a.to_dict()["gained"]) for a in answered}
    assert lost == {"a": (False, False), "b": (True, False), "c": (True, False),
                    "e": (None, True), "f": (None, False), "d": (None, None),
                    "o": (False, False)}


def test_without_a_full_history_reference_the_loss_is_left_out() -> None:
    metrics = qa_metrics([AnsweredQuestion(q("a", "recall", "v"), "v")])
    assert metrics["qa_accuracy"] == 1.0
    assert not {"qa_loss_exact", "qa_loss_open", "qa_gain"} & set(metrics)


def test_exact_questions_a_judge_graded_are_counted_by_agreement() -> None:
    def grade(accuracy: int) -> JudgeGrade:
        return JudgeGrade({**dict.fromkeys(DIMENSIONS, 5), "accuracy": accuracy},
                          dict.fromkeys(DIMENSIONS, ""))
    answered = [AnsweredQuestion(q("a", "recall", "v"), "v", judge=grade(5)),
                AnsweredQuestion(q("b", "recall", "v"), "w", judge=grade(4)),
                AnsweredQuestion(q("c", "recall", "v"), "w", judge=grade(2)),
                AnsweredQuestion(q("d", "recall", "v"), "v", judge=grade(0)),
                AnsweredQuestion(q("o", "decision", "v", "overlap", answer_type="text",
                                   judged=True), "v", judge=grade(1))]
    metrics = qa_metrics(answered)
    assert {k: metrics[k] for k in CALIBRATION_COUNTS} == {
        "judge_exact_both": 1, "judge_exact_judge_only": 1, "judge_exact_grader_only": 1,
        "judge_exact_neither": 1}
    assert metrics["judge_accuracy"] == 1.0  # the judge's score covers the open questions only
    assert "judge_exact_both" not in qa_metrics([AnsweredQuestion(q("a", "recall", "v"), "v")])


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
