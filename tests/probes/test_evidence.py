"""The evidence check: a question stands only where its answer is verbatim in the history."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.probes._sessions import ERROR, manifest_session
from workbench.errors import ConfigError
from workbench.probes import (
    Evidence,
    Question,
    QuestionSet,
    check_evidence,
    locate_evidence,
    message_texts,
    read_question_set,
    write_question_set,
)

MESSAGES = manifest_session().messages


def question(expected: str | list[str], *evidence: Evidence, **kw: object) -> Question:
    grader = "list" if isinstance(expected, list) else "exact"
    return Question(id="q", kind="recall", text="?", expected=expected, grader=grader,
                    evidence=list(evidence), **kw)  # type: ignore[arg-type]


def test_a_message_shows_its_texts_outputs_and_call_arguments() -> None:
    assert message_texts(MESSAGES[1]) == ["Reading the module first.", "read_file",
                                          "src/shop/totals.py"]
    assert message_texts(MESSAGES[6])[0].startswith("E       KeyError")


@pytest.mark.parametrize(("q", "why"), [
    (question("50354", Evidence(8, "port = 50354")), None),
    # whitespace aside: the output's many spaces match one
    (question(ERROR, Evidence(6, f"E {ERROR}")), None),
    (question(["src/shop/totals.py", "config/dev.toml"], Evidence(1, "src/shop/totals.py"),
              Evidence(8, "config/dev.toml")), None),
    (question("50354"), "no evidence"),
    (question("50354", Evidence(99, "port")), "evidence message 99 is outside the history"),
    (question("50354", Evidence(7, "port = 50354")), "the quote is not in message 7"),
    (question("Port 50354", Evidence(8, "port = 50354")),
     "the expected answer 'Port 50354' is not in its evidence"),
    (question(["src/shop/totals.py", "old.json"], Evidence(1, "src/shop/totals.py")),
     "the expected answer 'old.json' is not in its evidence"),
    # a choice is a label read off its evidence: only the quote must hold
    (question("edited", Evidence(3, "src/shop/totals.py"), answer_type="choice",
              choices=["created", "edited"]), None),
])
def test_the_check_names_what_does_not_hold(q: Question, why: str | None) -> None:
    assert check_evidence(q, MESSAGES) == why


def test_an_answer_without_evidence_finds_the_latest_message_holding_it() -> None:
    assert locate_evidence("59767", MESSAGES) == Evidence(
        7, "Change of plan: the dev server must now use port 50354 instead of 59767.")
    assert locate_evidence("tests/fixtures/old.json", MESSAGES) == Evidence(
        12, "rm tests/fixtures/old.json")
    assert locate_evidence("port 8080", MESSAGES) is None
    assert locate_evidence("  ", MESSAGES) is None


def test_evidence_and_drops_survive_the_question_file(tmp_path: Path) -> None:
    q = question("50354", Evidence(8, "port = 50354"), answer_in="output")
    saved = QuestionSet(key="k", session_id="s", boundary=None, questions=[q],
                        dropped={"transcript:files": 2})
    path = write_question_set(saved, tmp_path)
    data = json.loads(path.read_text())
    assert data["questions"][0]["evidence"] == [{"message": 8, "quote": "port = 50354"}]
    assert data["questions"][0]["answer_in"] == "output"
    assert data["dropped"] == {"transcript:files": 2}
    assert read_question_set(path) == saved


@pytest.mark.parametrize(("field", "value", "why"), [
    ("evidence", [{"message": "8", "quote": "x"}], r"evidence\[0\]: evidence must be"),
    ("evidence", {"message": 8}, "evidence must be a list"),
    ("answer_in", "summary", "answer_in 'summary' is not one of"),
])
def test_a_bad_evidence_field_names_the_question(tmp_path: Path, field: str, value: object,
                                                 why: str) -> None:
    data = {"questions": [{"id": "q", "kind": "recall", "text": "?", "expected": "1",
                           field: value}]}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=why):
        read_question_set(path)
