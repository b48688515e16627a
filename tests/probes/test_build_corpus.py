"""The shipped version-3 corpus feeds every kind of probe from its ground truth.

Functional probes: pending tasks become the continuation question, decisions the decision
questions, errors and files changed the recall and artifact questions, so every version-3
session is asked questions of all four kinds. String probes: the planted ``task`` and
``decision`` facts are kinds of the facts probe, weighed like the others.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from workbench.metrics._facts import fact_value, facts_probe
from workbench.probes import KINDS, LookupAnswerer, build_questions, grade_answer
from workbench.sessions import Session, load_session

DATASETS = Path(__file__).resolve().parents[2] / "datasets"


@pytest.fixture(scope="module")
def corpus() -> list[Session]:
    manifest = json.loads((DATASETS / "manifest.json").read_text())
    return [load_session(DATASETS / e["file"]) for e in manifest["sessions"]
            if e["version"] == 3]


def test_every_version_3_session_gets_questions_of_all_four_kinds(
        corpus: list[Session]) -> None:
    assert len(corpus) >= 42
    for session in corpus:
        questions = build_questions(session).questions
        assert set(Counter(q.kind for q in questions)) == set(KINDS), session.id
        sources = {q.source.split(":")[0] for q in questions}
        assert {"errors", "files_changed", "pending_tasks", "decisions"} <= sources, session.id


def test_pending_tasks_and_decisions_become_their_questions(corpus: list[Session]) -> None:
    for session in corpus:
        questions = {q.id: q for q in build_questions(session, per_session=None).questions}
        pending = questions["continuation-pending"]
        assert pending.expected == "; ".join(t["text"] for t in session.meta["pending_tasks"])
        assert pending.grader == "overlap" and pending.judged
        for d in session.meta["decisions"]:
            q = questions[f"decision-{d['id']}"]
            assert q.text == f"What did we decide about {d['topic']}, and why?"
            assert q.expected == d["choice"]
            assert q.reference == f"{d['choice']}, because {d['reason']}"
        errors = [e["text"] for e in session.meta["errors"]]
        assert questions["recall-error-last"].expected == errors[-1]
        assert questions["recall-error-last"].source == "errors"
        changed = {c["path"]: c for c in session.meta["files_changed"]}
        assert questions["artifact-files"].expected == list(changed)
        asked = [q for q in questions.values() if q.id.startswith("artifact-change-")]
        assert asked and all(q.expected == changed[q.text.split("`")[1]]["change"]
                             for q in asked)


def test_no_fill_in_the_blank_asks_for_a_task_a_decision_or_an_error(
        corpus: list[Session]) -> None:
    for session in corpus:
        kinds = {f["id"]: f["kind"] for f in session.meta["planted_facts"]}
        for q in build_questions(session, per_session=None).questions:
            if q.source.startswith("planted_fact:"):
                assert kinds[q.source.split(":")[1]] not in {"task", "decision", "error"}


def test_the_full_history_answers_the_decision_and_pending_questions(
        corpus: list[Session]) -> None:
    # `lookup` over the uncompacted history finds them: the questions are answerable.
    passed = Counter()
    asked = Counter()
    for session in corpus[::4]:
        answerer = LookupAnswerer(session.messages)
        for q in build_questions(session, per_session=None).questions:
            if q.kind in ("decision", "continuation") and q.source != "transcript:last_tool_call":
                asked[q.kind] += 1
                passed[q.kind] += grade_answer(q, answerer.answer(q)) >= 1
    assert asked["decision"] >= 10 and asked["continuation"] >= 10
    assert passed["decision"] / asked["decision"] >= 0.8, (passed, asked)
    assert passed["continuation"] / asked["continuation"] >= 0.8, (passed, asked)


def test_the_facts_probe_weighs_tasks_and_decisions_as_kinds(corpus: list[Session]) -> None:
    session = corpus[0]
    facts = session.meta["planted_facts"]
    history = "\n".join(m.concat_text() for m in session.messages)
    full, _ = facts_probe(session, history)
    assert {"task", "decision"} <= set(full.kinds)
    assert full.kinds["task"] == (len(session.meta["pending_tasks"]),) * 2
    assert full.kinds["decision"] == (len(session.meta["decisions"]),) * 2
    # a summary keeping everything but the decisions' names loses exactly that kind
    kept = history
    for f in facts:
        if f["kind"] == "decision":
            kept = kept.replace(f["text"], "").replace(str(fact_value(f)), "")
    dropped, _ = facts_probe(session, kept)
    assert dropped.kinds["decision"] == (0, len(session.meta["decisions"]))
    assert dropped.kinds["task"] == full.kinds["task"]
    assert dropped.recall < full.recall


def test_the_string_probes_find_the_manifests_errors_and_files(corpus: list[Session]) -> None:
    # The errors and files probes read the transcript; the manifest names the same items.
    from workbench.metrics._errors import session_errors
    from workbench.metrics._files import touched_files

    for session in corpus:
        lines = session_errors(session.messages)
        for error in session.meta["errors"]:
            assert any(error["text"] in line or line in error["text"] for line in lines), error
        touched = set(touched_files(session.messages))
        assert {c["path"] for c in session.meta["files_changed"]} <= touched, session.id
