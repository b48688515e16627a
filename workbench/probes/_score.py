"""From answered questions to a cell's QA metrics (the ``qa_*`` columns).

- ``qa_accuracy``: the mean grade of the exactly graded questions (``exact`` 1/0, ``list``
  the share of items named): the share of exact questions answered right.
- ``qa_recall``, ``qa_artifact``, ``qa_continuation``, ``qa_decision``: the mean deterministic
  grade of that kind's questions (open ones by word overlap).
- ``qa_authored``: the mean deterministic grade of the questions a ``probe_author`` model
  wrote. They are kept apart: every other ``qa_*`` metric (the losses and gain too) covers the
  built questions only, so adding an author never moves them.
- ``judge_score``: the mean over the judged open questions of the judge's six-dimension mean
  (0-5); ``judge_<dimension>`` per dimension.
- ``qa_loss_exact``: of the exact questions (``exact`` and ``list`` graders) the full
  uncompacted history answers right, the share the compacted context misses (a list question
  counts the share of its items missed): what compaction cost, the answerer's own misses
  taken out. In 0..1.
- ``qa_loss_open``: the same for the open questions (``overlap`` grader).
- ``qa_gain``: of the questions answered from both, the share the compacted context gets right
  and the full history misses: the answerer's noise, shown rather than netted out of the loss.
- Where the full history was not answered (it does not fit the cell's window: no agent at
  that window could read it) the three are left out: ``n/a``.
- ``judge_exact_*``: with a judge, the exact questions it also graded, counted by agreement
  with the exact grader (`CALIBRATION_COUNTS`), for its kappa per model and window.
- ``next_action_match``: 1 when the next action from the compacted context is the recorded
  agent's, else 0; ``next_action_match_full``: 1 when it is the one the answerer takes from the
  full history.
- ``qa_questions``: questions asked; ``qa_stale_answers``: answers that gave a replaced value.

A metric that does not apply (no question of a kind, no judge, no recorded boundary) is left
out rather than stored as None, so tables and verdicts skip it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from workbench._json_types import JSONObject, JSONValue
from workbench.probes._grade import grade_answer, stale_only
from workbench.probes._judge import DIMENSIONS, JudgeGrade
from workbench.probes._questions import KINDS, Question
from workbench.probes._transcript import ToolAction

__all__ = ["CALIBRATION_COUNTS", "JUDGE_PASS", "AnsweredQuestion", "NextActionResult",
           "QA_METRICS", "calibration", "qa_metrics"]

QA_METRICS: tuple[str, ...] = ("qa_accuracy", "qa_recall", "qa_artifact", "qa_continuation",
                               "qa_decision", "qa_authored", "judge_score", "qa_loss_exact",
                               "qa_loss_open", "qa_gain", "next_action_match",
                               "next_action_match_full")
"""The QA columns of the results table, in display order."""
JUDGE_PASS = 3
"""A judge's accuracy score (0-5) from which its grade counts as a pass, when it is compared
with the exact grader's."""
CALIBRATION_COUNTS: tuple[str, ...] = ("judge_exact_both", "judge_exact_judge_only",
                                       "judge_exact_grader_only", "judge_exact_neither")
"""A cell's exact questions graded by the judge too: both passed them, only the judge, only
the exact grader, neither (the judge passes at `JUDGE_PASS`, the grader at a full grade)."""


@dataclass
class AnsweredQuestion:
    """One question with its answers and grades.

    Attributes:
        question: The question.
        answer: The answer from the compacted context (None: not answered, see `note`).
        full_answer: The answer from the full history, or None (not asked, or it did not fit
            the answerer's window).
        judge: The judge's grade of `answer` (an open question; for an exact question, the
            grade of a calibration sample), or None.
        note: Why an answer is missing (``context exceeds the answerer's window``...).
    """

    question: Question
    answer: str | None
    full_answer: str | None = None
    judge: JudgeGrade | None = None
    note: str = ""
    _grades: dict[str, float] = field(default_factory=dict, repr=False, compare=False)

    def _grade(self, answer: str | None) -> float | None:
        if answer is None:
            return None
        if answer not in self._grades:  # grades are asked for several times per question
            self._grades[answer] = grade_answer(self.question, answer)
        return self._grades[answer]

    @property
    def grade(self) -> float | None:
        """The deterministic grade of `answer` (None when it was not answered)."""
        return self._grade(self.answer)

    @property
    def full_grade(self) -> float | None:
        """The deterministic grade of `full_answer` (None when there is none)."""
        return self._grade(self.full_answer)

    def to_dict(self) -> JSONObject:
        """JSON-ready: the question's fields (its evidence, when it has one), the answers,
        their grades and the judge's."""
        q = self.question
        grade, full = self.grade, self.full_grade
        expected: JSONValue = q.expected if isinstance(q.expected, str) else list(q.expected)
        out: JSONObject = {
            "id": q.id, "kind": q.kind, "question": q.text, "expected": expected,
            "grader": q.grader, "answer_type": q.answer_type, "source": q.source,
            "answer": self.answer, "grade": grade,
            "stale": stale_only(q, self.answer) if self.answer is not None else False,
            "full_answer": self.full_answer, "full_grade": full,
            "lost": None if grade is None or full is None or full < 1 else grade < 1,
            "gained": None if grade is None or full is None else grade >= 1 > full,
        }
        if q.reference:
            out["reference"] = q.reference
        if q.evidence:
            out["evidence"] = [e.to_dict() for e in q.evidence]
        if self.judge is not None:
            out["judge"] = self.judge.to_dict()
        if self.note:
            out["note"] = self.note
        return out


@dataclass
class NextActionResult:
    """The next action from the compacted context, compared.

    Attributes:
        recorded: What the recorded agent did.
        action: What the answerer did from the compacted context.
        full_action: What it did from the full history (None: not asked, or did not fit).
        match: `action` agrees with `recorded`.
        match_full: `action` agrees with `full_action` (None without one).
        full_match: `full_action` agrees with `recorded` (the answerer's own ceiling).
        reply: The answerer's raw reply from the compacted context.
    """

    recorded: ToolAction
    action: ToolAction
    full_action: ToolAction | None
    match: bool
    match_full: bool | None
    full_match: bool | None = None
    reply: str = ""

    def to_dict(self) -> JSONObject:
        """JSON-ready."""
        return {"recorded": self.recorded.to_dict(), "action": self.action.to_dict(),
                "full_action": self.full_action.to_dict() if self.full_action else None,
                "match": self.match, "match_full": self.match_full,
                "full_match": self.full_match, "reply": self.reply}


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _loss(pairs: Sequence[tuple[float, float]]) -> float | None:
    """Of (compacted, full) grades, over those the full history got right: the share missed."""
    return _mean([1.0 - g for g, f in pairs if f >= 1.0])


def calibration(answered: Sequence[AnsweredQuestion]) -> dict[str, int]:
    """The `CALIBRATION_COUNTS` of the exact questions a judge graded (empty without any)."""
    pairs = [(a.judge.scores.get("accuracy", 0) >= JUDGE_PASS, (a.grade or 0.0) >= 1.0)
             for a in answered if a.judge is not None and a.question.exact
             and a.grade is not None]
    if not pairs:
        return {}
    both, judge_only, grader_only, neither = CALIBRATION_COUNTS
    return {both: sum(j and g for j, g in pairs), judge_only: sum(j and not g for j, g in pairs),
            grader_only: sum(g and not j for j, g in pairs),
            neither: sum(not j and not g for j, g in pairs)}


def qa_metrics(answered: Sequence[AnsweredQuestion],
               next_action: NextActionResult | None = None) -> dict[str, float | int]:
    """The cell's QA metrics (see the module docstring); inapplicable ones are left out."""
    out: dict[str, float | int] = {"qa_questions": len(answered)}
    every = [(a, a.grade) for a in answered if a.grade is not None]
    graded = [(a, g) for a, g in every if not a.question.authored]
    values: dict[str, float | None] = {
        "qa_accuracy": _mean([g for a, g in graded if a.question.exact])}
    for kind in KINDS:
        values[f"qa_{kind}"] = _mean([g for a, g in graded if a.question.kind == kind])
    values["qa_authored"] = _mean([g for a, g in every if a.question.authored])
    judged = [a.judge for a in answered if a.judge is not None and not a.question.exact]
    values["judge_score"] = _mean([j.overall for j in judged])
    for name in DIMENSIONS:
        values[f"judge_{name}"] = _mean([float(j.scores[name]) for j in judged])
    both = [(a, g, f) for a, g in graded if (f := a.full_grade) is not None]
    values["qa_loss_exact"] = _loss([(g, f) for a, g, f in both if a.question.exact])
    values["qa_loss_open"] = _loss([(g, f) for a, g, f in both if not a.question.exact])
    values["qa_gain"] = _mean([float(g >= 1.0 > f) for a, g, f in both])
    if next_action is not None:
        values["next_action_match"] = float(next_action.match)
        if next_action.match_full is not None:
            values["next_action_match_full"] = float(next_action.match_full)
    out.update({k: v for k, v in values.items() if v is not None})
    out.update(calibration(answered))
    stale = sum(1 for a in answered if a.answer is not None and stale_only(a.question, a.answer))
    if any(a.question.stale for a in answered):
        out["qa_stale_answers"] = stale
    return out
