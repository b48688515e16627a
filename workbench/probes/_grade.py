"""Deterministic grading: how right an answer is, with no model involved.

`grade_answer` returns a score in 0..1 for one answer:

- ``exact`` questions: 1 when the expected value, normalised by its answer type
  (`workbench.probes._normalize`), occurs in the normalised answer and is not part of a longer
  word; paths also match by a trailing part of two or more components. A ``choice`` answer
  must name the expected choice and no other one.
- ``list`` questions: the share of the expected items the answer names (each item matched as an
  exact answer of the list's item type).
- ``overlap`` questions (open ones): 1 when the answer holds at least `OVERLAP_PASS` of the
  expected answer's content words (the user-requests probe's coverage rule) and as large a
  share of its identifying tokens (`identifying_tokens`: backticked names, tokens holding a
  digit, an underscore or a slash), else 0: common words alone do not pass a request about
  another branch or another test.

An empty answer, or one that only says it does not know, scores 0 for every grader, except on
an abstention question (the session never gives the answer): there only an answer that says
so (`abstains`: "unknown", "not stated"..., not an empty one) scores 1, and any other 0.
`stale_only` tells an answer that gives a replaced value (and not the current one) apart from
one that gives nothing.
"""

from __future__ import annotations

import re

from workbench._memo import memo
from workbench.metrics._common import content_words, word_set
from workbench.probes._normalize import (
    NORMALIZERS,
    contains,
    normalize_choice,
    normalize_error,
    normalize_number,
    normalize_text,
    path_in,
)
from workbench.probes._questions import Question

__all__ = ["GRADING_AUDIT", "OVERLAP_PASS", "UNKNOWN_ANSWERS", "abstains", "grade_answer",
           "identifying_tokens", "is_unknown", "stale_only"]

OVERLAP_PASS = 0.5
"""Share of the expected answer's content words an open answer must hold to count as right."""

GRADING_AUDIT: dict[str, int] = {"cases": 248, "exact_agree": 182, "exact_cases": 183,
                                  "open_agree": 62, "open_cases": 65, "known_limits": 4}
"""How the graders agree with answers from real runs labelled by hand before grading (the
project's ``tests/probes/grading_cases.json``; its test checks these counts): the exact and
list graders on `exact_agree` of `exact_cases`, the overlap grader on `open_agree` of
`open_cases`; the `known_limits` disagreements left are named in the test."""

UNKNOWN_ANSWERS = frozenset({"", "unknown", "i don't know", "i do not know", "not stated",
                             "not mentioned", "none", "n/a", "no idea"})
"""Answers that say nothing (normalised)."""


def is_unknown(answer: str | None) -> bool:
    """True for a missing answer or one that only says it does not know."""
    return answer is None or normalize_text(answer) in UNKNOWN_ANSWERS


def abstains(answer: str | None) -> bool:
    """True for an answer that says the conversation does not give it ("unknown", "not
    stated"...); an empty answer says nothing, so it does not abstain."""
    return answer is not None and bool(answer.strip()) and is_unknown(answer)


class _Forms:
    """One answer's normalised forms, each computed once however many items are matched."""

    def __init__(self, raw: str) -> None:
        self.raw = raw
        self._forms: dict[str, str] = {}

    def __getitem__(self, kind: str) -> str:
        form = self._forms.get(kind)
        if form is None:
            form = self._forms[kind] = NORMALIZERS[kind](self.raw)
        return form


def _exact(answer: _Forms, expected: str, answer_type: str, choices: list[str]) -> bool:
    if answer_type in ("path", "paths"):
        return path_in(answer["path"], expected)
    if answer_type == "choice":
        said = {normalize_choice(w) for w in answer["text"].replace(",", " ").split()}
        wanted = normalize_choice(expected)
        others = {normalize_choice(c) for c in choices} - {wanted}
        return wanted in said and not (said & others)
    if answer_type == "number":
        return contains(answer["number"], normalize_number(expected))
    if answer_type == "error":
        return contains(answer["error"], normalize_error(expected))
    return contains(answer["text"], normalize_text(expected))


_IDENTIFYING = re.compile(r"`([^`\n]+)`|[^\s`]*[0-9_/][^\s`]*")


def identifying_tokens(text: str) -> list[str]:
    """The tokens of `text` that name one thing: backticked names, and words holding a digit,
    an underscore or a slash (identifiers, paths, numbers, versions), normalised."""
    found = []
    for match in _IDENTIFYING.finditer(text):
        token = normalize_text((match.group(1) or match.group()).strip(".,;:!?()[]'\""))
        if any(ch.isalnum() for ch in token):
            found.append(token)
    return list(dict.fromkeys(found))


def overlap(answer: str, expected: str) -> float:
    """Share of `expected`'s content words that `answer` holds (0.0 when it has none)."""
    wanted = content_words(expected)
    if not wanted:
        return 0.0
    have = word_set(answer)
    return sum(1 for w in wanted if w in have) / len(wanted)


def _open_pass(answer: str, expected: str) -> bool:
    if overlap(answer, expected) < OVERLAP_PASS:
        return False
    names = identifying_tokens(expected)
    if not names:
        return True
    said = normalize_text(answer)
    return sum(1 for n in names if contains(said, n)) / len(names) >= OVERLAP_PASS


def _grading_key(question: Question) -> tuple[object, ...]:
    """What of `question` its grades depend on (its text and id do not)."""
    expected = question.expected
    return (question.abstention, question.grader, question.answer_type,
            tuple(expected) if isinstance(expected, list) else expected,
            tuple(question.choices), tuple(question.stale))


def grade_answer(question: Question, answer: str | None) -> float:
    """The deterministic score of `answer` to `question`, in 0..1 (see the module docstring).

    Every cell of a session grades its answers to the same questions, and many answers come
    back alike (the full history's in every cell, ``unknown``...): a grade is worked out once
    per grading fields and answer while the run lasts (the run memo's ``grades``)."""
    key = ("grade", _grading_key(question), answer)
    return float(memo().grades.get_or(key, lambda: _grade_answer(question, answer)))


def _grade_answer(question: Question, answer: str | None) -> float:
    if question.abstention:
        return 1.0 if abstains(answer) else 0.0
    if is_unknown(answer):
        return 0.0
    text = str(answer)
    if question.grader == "overlap":
        return 1.0 if _open_pass(text, question.expected_text()) else 0.0
    forms = _Forms(text)
    if question.grader == "list":
        items = [str(i) for i in question.expected] if isinstance(question.expected, list) else []
        if not items:
            return 0.0
        item_type = "path" if question.answer_type == "paths" else question.answer_type
        found = sum(1 for item in items if _exact(forms, item, item_type, question.choices))
        return found / len(items)
    return 1.0 if _exact(forms, question.expected_text(), question.answer_type,
                         question.choices) else 0.0


def stale_only(question: Question, answer: str | None) -> bool:
    """True when `answer` gives a value the session replaced and not the current one (once per
    grading fields and answer, as `grade_answer`)."""
    if not question.stale:
        return False
    key = ("stale", _grading_key(question), answer)
    return bool(memo().grades.get_or(key, lambda: _stale_only(question, answer)))


def _stale_only(question: Question, answer: str | None) -> bool:
    if is_unknown(answer) or not question.stale or grade_answer(question, answer) > 0:
        return False
    forms = _Forms(str(answer))
    return any(_exact(forms, old, question.answer_type, question.choices)
               for old in question.stale)
