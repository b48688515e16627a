"""The judge's rubric replies: parsed exactly, and a malformed one is an error, never a zero."""

from __future__ import annotations

import json

import pytest

from workbench.errors import ReplyFormatError
from workbench.probes import DIMENSIONS, JUDGE_SYSTEM, Question, judge_message, parse_judge_reply


def reply(**overrides: object) -> str:
    body: dict[str, object] = {d: {"score": 4, "reason": f"{d} fine"} for d in DIMENSIONS}
    body.update(overrides)
    return json.dumps(body)


def test_a_rubric_reply_gives_six_scores_their_reasons_and_the_mean() -> None:
    grade = parse_judge_reply(reply(accuracy={"score": 1, "reason": "wrong port"}))
    assert grade.scores == {**dict.fromkeys(DIMENSIONS, 4), "accuracy": 1}
    assert grade.reasons["accuracy"] == "wrong port"
    assert grade.overall == pytest.approx((1 + 4 * 5) / 6)
    assert grade.to_dict()["scores"]["accuracy"] == 1


def test_a_fenced_reply_with_prose_around_it_is_read() -> None:
    text = f"Here is my grade:\n```json\n{reply()}\n```\nThanks."
    assert parse_judge_reply(text).overall == 4.0


def test_bare_integer_scores_are_accepted_without_reasons() -> None:
    grade = parse_judge_reply(json.dumps(dict.fromkeys(DIMENSIONS, 5)))
    assert grade.overall == 5.0 and set(grade.reasons.values()) == {""}


@pytest.mark.parametrize(("text", "why"), [
    ("The answer looks right to me.", "holds no JSON object"),
    ("{accuracy: 4}", "not valid JSON"),
    (json.dumps({"accuracy": {"score": 4}}), "lacks context_awareness"),
    (reply(accuracy={"score": 7}), "not an integer from 0 to 5"),
    (reply(accuracy={"score": 2.5}), "not an integer from 0 to 5"),
    (reply(accuracy={"score": "high"}), "is not a number"),
    (reply(accuracy={"reason": "x"}), "has no score"),
    (reply(accuracy={"score": 3, "reason": 3}), "reason for accuracy is not text"),
])
def test_a_malformed_reply_raises_naming_what_is_wrong(text: str, why: str) -> None:
    with pytest.raises(ReplyFormatError, match=why):
        parse_judge_reply(text)


def test_the_judge_is_shown_the_question_the_reference_and_the_answer() -> None:
    q = Question(id="d", kind="decision", text="What did we decide?", expected="use a set",
                 grader="overlap", answer_type="text", reference="use a set, because overlap")
    text = judge_message(q, "we used a set").concat_text()
    assert "What did we decide?" in text and "use a set, because overlap" in text
    assert text.endswith("Answer to grade:\nwe used a set")
    assert all(d in JUDGE_SYSTEM for d in DIMENSIONS)
