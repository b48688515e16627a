"""The judge: a rubric of six dimensions, each scored 0-5, for open questions.

After Factory's probe-based evaluation, in our own words. The judge is shown the question, the
reference answer (the ground truth the question was built from) and the answer under test,
and returns one JSON object: per dimension an integer score from 0 to 5 and a short reason.
`parse_judge_reply` accepts the object bare or in a code fence; anything else (missing
dimension, a score outside 0-5, no JSON) raises `ReplyFormatError` rather than becoming a 0,
so a broken judge is an error row, never a silent bad score.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from workbench._json_types import JSONObject, JSONValue
from workbench.errors import ReplyFormatError
from workbench.messages import Message
from workbench.probes._questions import Question
from workbench.probes._reply_json import json_in_reply

__all__ = ["DIMENSIONS", "JUDGE_SYSTEM", "JudgeGrade", "judge_message", "parse_judge_reply"]

DIMENSIONS: dict[str, str] = {
    "accuracy": "the facts stated (values, names, paths, errors) agree with the reference; "
                "nothing stated is wrong or invented",
    "context_awareness": "the answer reflects where the session stands now: the latest "
                         "values and state, not ones the session later replaced",
    "artifact_trail": "the files, commands and other artifacts involved are named correctly "
                      "and completely",
    "completeness": "every part of the question, and every item of the reference, is covered",
    "continuity": "the answer would let the work go on without rediscovering what was "
                  "known (next steps, reasons, constraints)",
    "instruction_following": "it answers what was asked, in the form asked, and says "
                             "'unknown' rather than guessing",
}
"""The rubric: dimension -> what a 5 means."""

MAX_SCORE = 5

JUDGE_SYSTEM = (
    "You grade one answer given by a coding agent whose conversation history was compacted. "
    "Compare the answer with the reference answer, which is the ground truth. Score each "
    "dimension from 0 (absent or wrong) to 5 (fully meets it):\n"
    + "\n".join(f"- {name}: {text}" for name, text in DIMENSIONS.items())
    + "\nA dimension the question does not touch scores like accuracy. Reply with one JSON "
    "object and nothing else, every dimension present, each as {\"score\": <0-5>, "
    "\"reason\": \"<one sentence>\"}, for example {\"accuracy\": {\"score\": 4, \"reason\": "
    "\"...\"}, ...}."
)
"""The judge's system prompt (the rubric)."""


@dataclass
class JudgeGrade:
    """The judge's grade of one answer.

    Attributes:
        scores: Dimension -> score (0-5).
        reasons: Dimension -> the judge's reason.
    """

    scores: dict[str, int] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)

    @property
    def overall(self) -> float:
        """The mean of the six scores (0-5)."""
        return sum(self.scores.values()) / len(self.scores) if self.scores else math.nan

    def to_dict(self) -> JSONObject:
        """JSON-ready, with the overall mean."""
        return {"overall": self.overall, "scores": dict(self.scores),
                "reasons": dict(self.reasons)}


def judge_message(question: Question, answer: str) -> Message:
    """The user message a judge grades: question, reference answer and the answer."""
    return Message.user(f"Question:\n{question.text}\n\nReference answer:\n"
                        f"{question.reference_text()}\n\nAnswer to grade:\n"
                        f"{answer.strip() or '(no answer)'}")


def _object(text: str) -> JSONValue:
    return json_in_reply(text, "{}", "the judge")


def _score(value: JSONValue, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ReplyFormatError(f"the judge's score for {name} is not a number: {value!r}")
    if value != int(value) or not 0 <= value <= MAX_SCORE:
        raise ReplyFormatError(f"the judge's score for {name} is {value!r}, not an integer "
                               f"from 0 to {MAX_SCORE}")
    return int(value)


def parse_judge_reply(text: str) -> JudgeGrade:
    """Read a judge's reply.

    Raises:
        ReplyFormatError: the reply is not the rubric's JSON (no object, a dimension missing,
            a score that is not an integer from 0 to 5, a reason that is not text).
    """
    data = _object(text or "")
    if not isinstance(data, dict):
        raise ReplyFormatError("the judge's reply is not a JSON object")
    grade = JudgeGrade()
    missing = [d for d in DIMENSIONS if d not in data]
    if missing:
        raise ReplyFormatError(f"the judge's reply lacks {', '.join(missing)}")
    for name in DIMENSIONS:
        entry = data[name]
        if isinstance(entry, dict):
            if "score" not in entry:
                raise ReplyFormatError(f"the judge's entry for {name} has no score")
            grade.scores[name] = _score(entry["score"], name)
            reason = entry.get("reason", "")
            if not isinstance(reason, str):
                raise ReplyFormatError(f"the judge's reason for {name} is not text")
            grade.reasons[name] = reason.strip()
        else:
            grade.scores[name] = _score(entry, name)
            grade.reasons[name] = ""
    return grade
