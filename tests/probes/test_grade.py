"""Deterministic grades: exact values, list shares, choices, open answers, no answer."""

from __future__ import annotations

import pytest

from workbench._memo import run_memo
from workbench.errors import ConfigError
from workbench.probes import Question, grade_answer, is_unknown, stale_only
from workbench.probes._grade import identifying_tokens


def q(expected: object, **kw: object) -> Question:
    return Question(id="q", kind=str(kw.pop("kind", "recall")), text="?",
                    expected=expected, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(("question", "answer", "grade"), [
    (q("50354", answer_type="number"), "The dev server now uses port 50,354.", 1.0),
    (q("50354", answer_type="number"), "Port 59767.", 0.0),
    (q("seen_webhook_6930", answer_type="identifier"), "`seen_webhook_6930`", 1.0),
    (q("seen_webhook_6930", answer_type="identifier"), "seen_webhook_69301", 0.0),
    (q("src/app.py", answer_type="path"), "We changed /repo/src/app.py", 1.0),
    (q("KeyError: 'x'", answer_type="error"), "E   KeyError: 'x'", 1.0),
    (q("KeyError: 'x'", answer_type="error"), "a KeyError", 0.0),
])
def test_exact_questions_grade_one_or_zero(question: Question, answer: str,
                                           grade: float) -> None:
    assert grade_answer(question, answer) == grade


def test_a_choice_must_name_the_expected_choice_and_no_other() -> None:
    question = q("edited", kind="artifact", answer_type="choice",
                 choices=["created", "edited", "deleted"])
    assert grade_answer(question, "It was modified.") == 1.0
    assert grade_answer(question, "created") == 0.0
    assert grade_answer(question, "created, then edited") == 0.0


def test_a_list_question_scores_the_share_of_items_named() -> None:
    question = q(["src/a.py", "src/b.py", "tests/test_c.py"], kind="artifact", grader="list",
                 answer_type="paths")
    assert grade_answer(question, "src/a.py\n/repo/tests/test_c.py") == pytest.approx(2 / 3)
    assert grade_answer(question, "src/a.py src/b.py tests/test_c.py") == 1.0


def test_an_open_answer_needs_half_the_expected_content_words() -> None:
    question = q("add retry logic to the uploader client", kind="continuation",
                 grader="overlap", answer_type="text")
    assert grade_answer(question, "Next: retry logic for the uploader.") == 1.0
    assert grade_answer(question, "Write the docs.") == 0.0


@pytest.mark.parametrize("answer", [None, "", "unknown", "I don't know.", " N/A "])
def test_no_answer_scores_zero_for_every_grader(answer: str | None) -> None:
    assert is_unknown(answer)
    for question in (q("x"), q(["x"], grader="list"), q("x", grader="overlap")):
        assert grade_answer(question, answer) == 0.0


def test_a_replaced_value_is_told_apart_from_no_answer() -> None:
    question = q("50354", answer_type="number", stale=["59767"])
    assert stale_only(question, "port 59767")
    assert not stale_only(question, "port 50354 (was 59767)")
    assert not stale_only(question, "unknown")


def test_a_list_grader_needs_a_list_and_only_it_takes_one() -> None:
    with pytest.raises(ConfigError, match="question 'q': a list grader needs a list"):
        q("x", grader="list")
    with pytest.raises(ConfigError, match="kind 'history' is not one of recall"):
        q("x", kind="history")


def test_an_open_answer_must_name_what_the_expected_answer_names() -> None:
    asked = Question(id="r", kind="continuation", text="What did the user ask most recently?",
                     expected="Please review the branch `feature/replica-3a31` before I merge it.",
                     grader="overlap", answer_type="text")
    # the common words match, the branch does not: not the request that was made
    assert grade_answer(asked, "Please review the branch `feature/session-958d` before I "
                               "merge it.") == 0.0
    assert grade_answer(asked, "They want feature/replica-3a31 reviewed before the merge.") == 1.0
    assert identifying_tokens(asked.expected_text()) == ["feature/replica-3a31"]
    assert identifying_tokens("a new module, see `dispatch_d48b` and port 50354") == [
        "dispatch_d48b", "50354"]


def test_a_grade_remembered_in_a_run_follows_the_questions_grading_fields() -> None:
    with run_memo() as found:
        question = q("50354", answer_type="number", stale=["59767"])
        assert grade_answer(question, "Port 50354.") == 1.0
        assert stale_only(question, "Port 59767.") is True  # its grade is remembered too
        assert len(found.grades) == 3
        other = q("50354", answer_type="number", stale=["59767"])  # equal fields: shared
        other.id, other.text = "another", "what port?"
        assert grade_answer(other, "Port 50354.") == 1.0
        assert len(found.grades) == 3
        question.expected = "59767"  # an edited question is graded again
        assert grade_answer(question, "Port 50354.") == 0.0
        question.stale = []
        assert stale_only(question, "Port 50354.") is False
        question.answer_type, question.grader = "text", "overlap"
        assert grade_answer(question, "the port is 59767") == 1.0
        assert grade_answer(question, "Port 50354.") == 0.0
    assert len(found.grades) == 0  # dropped with the run
