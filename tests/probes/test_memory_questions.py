"""The memory set's questions: abstention (the answer was never given, "unknown" is right and
only an answer that says so) and knowledge updates (the newest value is expected, every
replaced one is kept as stale)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import ROOT
from workbench.probes import Question, build_questions, grade_answer
from workbench.probes._questions import QuestionSet
from workbench.sessions import load_session

MEMORY = ROOT / "datasets" / "memory"


@pytest.fixture(scope="module")
def first() -> object:
    return load_session(MEMORY / "mem-024k-s49.json")


def _abstention() -> Question:
    return Question(id="recall-abstain-a1", kind="recall",
                    text='Who signed off? If the conversation never says, answer "unknown".',
                    expected="unknown", answer_type="text", abstention=True)


@pytest.mark.parametrize(("answer", "grade"), [
    ("unknown", 1.0), ("Unknown.", 1.0), ("not stated", 1.0), ("I do not know.", 1.0),
    ("Alice signed off", 0.0), ("unknown: probably Alice", 0.0), ("", 0.0), (None, 0.0)])
def test_only_an_answer_that_says_it_was_never_given_is_right(answer: str | None,
                                                              grade: float) -> None:
    assert grade_answer(_abstention(), answer) == grade


def test_an_ordinary_question_still_scores_unknown_as_wrong() -> None:
    q = Question(id="recall-fact-f01", kind="recall", text="Which port?", expected="6000",
                 answer_type="number")
    assert grade_answer(q, "unknown") == 0.0 and grade_answer(q, "port 6000") == 1.0


def test_the_flag_round_trips_and_older_question_files_read_as_not_abstaining() -> None:
    data = _abstention().to_dict()
    assert data["abstention"] is True
    assert Question.from_dict(data) == _abstention()
    older = {"id": "q", "kind": "recall", "text": "?", "expected": "x"}
    assert "abstention" not in Question.from_dict(older).to_dict()


def test_a_memory_session_asks_its_abstention_questions(first: object) -> None:
    asked = build_questions(first)  # the default ten
    abstain = [q for q in asked.questions if q.abstention]
    truth = {a["question"] for a in first.meta["abstentions"]}  # type: ignore[attr-defined]
    assert abstain and all(q.text.removesuffix(' If the conversation never says, answer '
                                               '"unknown".') in truth for q in abstain)
    assert all(q.expected == "unknown" and q.kind == "recall" for q in abstain)
    assert QuestionSet.from_dict(asked.to_dict()).questions == asked.questions


def test_the_port_question_expects_the_newest_value_and_knows_all_three_stale_ones(
        first: object) -> None:
    asked = build_questions(first, per_session=None)
    facts = first.meta["planted_facts"]  # type: ignore[attr-defined]
    ports = [f["text"].split()[-1] for f in facts if f["text"].startswith("port ")]
    port = next(q for q in asked.questions if q.expected == ports[-1])
    assert len(ports) == 4 and port.stale == ports[:-1]


def test_the_memory_set_is_apart_from_the_shipped_manifest() -> None:
    import json

    shipped = json.loads((ROOT / "datasets" / "manifest.json").read_text(encoding="utf-8"))
    memory = json.loads((MEMORY / "manifest.json").read_text(encoding="utf-8"))
    assert not {e["name"] for e in shipped["sessions"]} & {e["name"] for e in memory["sessions"]}
    assert memory["generator_version"] == 4 and shipped["generator_version"] == 3
    assert sorted(Path(p).name for p in MEMORY.glob("*.json") if p.name != "manifest.json") == \
        sorted(e["file"] for e in memory["sessions"])
