"""The graders audited against answers labelled by hand (``grading_cases.json``, its ``about``
says how they were drawn and labelled): the exact and list graders agree with the labels on at
least 98 % of their cases, and every disagreement left is named below as a known limit."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from workbench.probes import GRADING_AUDIT, Question, build_questions, grade_answer
from workbench.sessions import Session

CASES = json.loads((Path(__file__).with_name("grading_cases.json")).read_text())["cases"]
AGREEMENT = 0.98
"""The least share of their cases the exact and list graders must agree with the labels on."""

KNOWN_LIMITS = {
    "c089": "overlap: a right answer in other words (the new module holds the function) shares "
            "too few of the expected answer's words (wrong zero)",
    "c091": "overlap: the same, for another session (wrong zero)",
    "c096": "overlap: an answer listing every request passes when the latest is among them "
            "(lenient pass)",
    "c164": "exact: an answer quoting the expected command inside an unrelated passage (the task "
            "description that spells it) passes, since the grader looks for the value anywhere "
            "in the answer (lenient pass)",
}
"""Disagreements between a grader and the labels that stay: what the rule cannot see."""

ISSUE_ERRORS = {"c089": "wrong zero", "c091": "wrong zero", "c096": "lenient pass",
                "c109": "lenient pass", "c247": "lenient pass", "c248": "lenient pass"}
"""The six errors of the kinds the issue reports (2 wrong zeros, 4 lenient passes), found in
the runs; the identifier rule of the overlap grader fixed three of them."""


def _choices(case: dict[str, Any]) -> list[str]:
    return list(case.get("choices", []))


def _question(case: dict[str, Any], text: str, expected: Any) -> Question:
    return Question(id=case["case"], kind="recall", text=text, expected=expected,
                    grader=case["grader"], answer_type=case["answer_type"],
                    choices=_choices(case))


def _texts(session: Session) -> dict[tuple[int, int], str]:
    """The pieces a shared case's answer is spelled from (see the file's ``about``)."""
    out = {}
    for m, message in enumerate(session.messages):
        pieces = [message.concat_text()]
        for response in message.tool_responses():
            result = response.tool_result
            pieces.append(response.text() if result.ok else str(result.error or ""))
        pieces += [f"{r.name} {r.arguments or {}}" for r in message.tool_requests()]
        out.update({(m, k): p for k, p in enumerate(pieces) if p})
    return out


def _shared(case: dict[str, Any], real: Callable[[str], Session],
            memo: dict[str, Any]) -> tuple[Question, str]:
    if case["session"] not in memo:
        session = real(case["session"])
        memo[case["session"]] = ({q.id: q for q in build_questions(session).questions},
                                 _texts(session))
    questions, texts = memo[case["session"]]
    asked = questions[case["question_id"]]
    answer = "".join(p["t"] if "t" in p else texts[(p["m"], p["k"])][p["s"]:p["e"]]
                     for p in case["answer_parts"])
    return _question(case, asked.text, asked.expected), answer


def _disagreements(cases: list[tuple[dict[str, Any], Question, str]]) -> dict[str, str]:
    return {c["case"]: c["grader"] for c, q, answer in cases
            if abs(grade_answer(q, answer) - c["label"]) > 1e-6}


def _default_cases() -> list[tuple[dict[str, Any], Question, str]]:
    return [(c, _question(c, c["question"], c["expected"]), c["answer"])
            for c in CASES if c["run"] == "default"]


def test_the_set_is_drawn_from_both_runs_and_labelled_with_reasons() -> None:
    assert len(CASES) >= 200
    assert {c["run"] for c in CASES} == {"default", "shared-sessions"}
    assert len({c["case"] for c in CASES}) == len(CASES)
    assert all(c["reason"] and 0 <= c["label"] <= 1 for c in CASES)
    exact = [c for c in CASES if c["grader"] != "overlap"]
    assert len(exact) >= 150
    assert set(ISSUE_ERRORS) <= {c["case"] for c in CASES}


def test_the_default_runs_cases_agree_but_for_the_known_limits() -> None:
    """These need no ``../shared``: the shipped datasets' questions and answers are stored."""
    limits = {c["case"] for c in CASES if c["case"] in KNOWN_LIMITS and c["run"] == "default"}
    assert set(_disagreements(_default_cases())) == limits


def test_every_case_agrees_but_for_the_known_limits(real: Callable[[str], Session]) -> None:
    memo: dict[str, Any] = {}
    cases = _default_cases() + [(c, *_shared(c, real, memo)) for c in CASES
                                if c["run"] == "shared-sessions"]
    found = _disagreements(cases)
    assert set(found) == set(KNOWN_LIMITS)
    exact = [c for c, _, _ in cases if c["grader"] != "overlap"]
    agree = sum(1 for c in exact if c["case"] not in found)
    assert agree / len(exact) >= AGREEMENT, f"{agree}/{len(exact)}"
    open_cases = [c for c, _, _ in cases if c["grader"] == "overlap"]
    open_agree = sum(1 for c in open_cases if c["case"] not in found)
    # the figures the package reports (the verdict's to_dict, the glossary) are these
    assert GRADING_AUDIT == {"cases": len(cases), "exact_agree": agree,
                             "exact_cases": len(exact), "open_agree": open_agree,
                             "open_cases": len(open_cases), "known_limits": len(KNOWN_LIMITS)}


@pytest.mark.parametrize("case", sorted(ISSUE_ERRORS))
def test_the_issues_errors_are_in_the_set_and_three_are_fixed(case: str) -> None:
    by_case = {c["case"]: c for c in CASES}
    c = by_case[case]
    assert c["run"] == "default" and c["grader"] == "overlap"
    grade = grade_answer(_question(c, c["question"], c["expected"]), c["answer"])
    if case in KNOWN_LIMITS:
        assert grade != c["label"]
    else:
        assert grade == c["label"] == 0  # the lenient passes the identifier rule now fails
