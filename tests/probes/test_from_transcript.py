"""A recording's question set: how many, spread over the session, each standing on evidence,
and answerable by ``lookup`` from the full history."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable

import pytest

from tests.probes._sessions import manifest_session
from workbench.probes import (
    Evidence,
    LookupAnswerer,
    Question,
    build_questions,
    check_evidence,
    grade_answer,
    question_target,
    transcript_candidates,
)
from workbench.probes._from_transcript import _positions, gives_away
from workbench.probes.extractors import EXTRACTORS, History
from workbench.sessions import Session
from workbench.tokens import context_tokens, default_estimator

LOOKUP_BAR = 0.9
"""The share of the real sessions' questions ``lookup`` must answer from the full history."""


@pytest.mark.parametrize(("tokens", "target"), [
    (0, 15), (4_996, 15), (29_999, 15), (50_000, 25), (78_001, 40), (173_149, 40)])
def test_one_question_per_2k_tokens_at_least_15_at_most_40(tokens: int, target: int) -> None:
    assert question_target(tokens) == target
    assert question_target(tokens, tokens_per_question=1000, min_questions=1,
                           max_questions=60) == min(60, max(1, -(-tokens // 1000)))
    assert question_target(tokens, max_questions=None) is None


def test_every_real_session_over_5k_tokens_gets_enough_questions(
        real_sessions: list[Session]) -> None:
    estimator = default_estimator()
    counts = {}
    for session in real_sessions:
        tokens = context_tokens(session.messages, estimator)
        found, _ = transcript_candidates(session)
        asked = build_questions(session).questions
        assert len(asked) == min(len(found), question_target(tokens) or 0), session.id
        counts[session.id] = (tokens, len(asked))
    assert all(n >= 5 for tokens, n in counts.values() if tokens > 5000), counts
    assert statistics.median(n for _, n in counts.values()) >= 15, counts
    assert len(counts) >= 18  # Claude Code (+ sub-agents), mini-swe-agent, SWE-agent, ...


def test_every_question_stands_on_its_evidence(real_sessions: list[Session]) -> None:
    for session in real_sessions:
        built = build_questions(session)
        ids = [q.id for q in built.questions]
        assert len(set(ids)) == len(ids), session.id
        for q in built.questions:
            assert check_evidence(q, session.messages) is None, (session.id, q.id)
            assert q.source.split(":")[0] == "transcript" and not gives_away(q)


def test_lookup_answers_nine_in_ten_questions_from_the_full_history(
        real_sessions: list[Session]) -> None:
    asked: Counter[str] = Counter()
    right: Counter[str] = Counter()
    for session in real_sessions:
        answerer = LookupAnswerer(session.messages)
        for q in build_questions(session).questions:
            asked[q.source] += 1
            right[q.source] += grade_answer(q, answerer.answer(q)) >= 1.0
    share = sum(right.values()) / sum(asked.values())
    assert share >= LOOKUP_BAR, {k: f"{right[k]}/{asked[k]}" for k in asked}
    assert sum(asked.values()) >= 300
    assert set(asked) == {f"transcript:{name}" for name in EXTRACTORS}


def test_questions_are_spread_over_the_session(real: Callable[[str], Session]) -> None:
    session = real("ae4a77f8-aedd-4bc1-888f-c94edc91af04")
    positions = _positions(session)
    where = [positions[max(e.message for e in q.evidence)]
             for q in build_questions(session).questions]
    assert where == sorted(where)  # the set lists them in session order
    quarters = Counter(min(3, int(w * 4)) for w in where)
    assert all(quarters[n] >= 5 for n in range(4)), quarters
    kinds = Counter(q.source for q in build_questions(session).questions)
    assert len(kinds) >= 6, kinds


def test_the_same_recording_always_gets_the_same_questions(
        real: Callable[[str], Session]) -> None:
    session = real("pytest-dev__pytest-6197")
    assert build_questions(session).to_json() == build_questions(session).to_json()


def test_kinds_and_counts_are_the_runs_to_choose(real: Callable[[str], Session]) -> None:
    session = real("pytest-dev__pytest-6197")
    only = build_questions(session, kinds=["artifact"]).questions
    assert only and {q.kind for q in only} == {"artifact"}
    few = build_questions(session, max_questions=6).questions
    assert len(few) == 6
    # the requests are always asked (the last one, the task, the last tool call)
    assert sum(q.source == "transcript:requests" for q in few) == 2
    every = build_questions(session, max_questions=None).questions
    assert len(every) == len(transcript_candidates(session)[0])


def test_a_question_whose_answer_is_not_in_its_evidence_is_dropped_and_counted(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def wrong(history: History) -> list[Question]:
        return [Question(id="", kind="recall", text="Which port now?", expected="8080",
                         source="transcript:wrong", evidence=[Evidence(7, "port 50354")]),
                Question(id="", kind="recall", text="Which port first?", expected="59767",
                         source="transcript:wrong",
                         evidence=[Evidence(7, "port 50354 instead of 59767")])]

    monkeypatch.setitem(EXTRACTORS, "wrong", wrong)
    session = manifest_session(planted_facts=None, errors=None, files_changed=None,
                               pending_tasks=None, decisions=None)
    built = build_questions(session)
    assert built.dropped == {"transcript:wrong": 1}
    assert [q.id for q in built.questions if q.source == "transcript:wrong"] == ["recall-wrong-2"]
    assert '"dropped": {\n  "transcript:wrong": 1\n }' in built.to_json()


def test_a_question_holding_its_own_answer_is_not_asked() -> None:
    held = Question(id="q", kind="recall", text="What exit code did `mix test --seed 0` give?",
                    expected="0", answer_type="number")
    assert gives_away(held)
    assert not gives_away(Question(id="q", kind="recall", text="Which exit code?", expected="0",
                                   answer_type="number"))
