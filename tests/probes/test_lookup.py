"""The offline ``lookup`` answerer: retrieval from the context, never from the expected answer."""

from __future__ import annotations

from tests.probes._sessions import ERROR, PENDING, manifest_session
from workbench.messages import Message, MessageMetadata
from workbench.probes import LookupAnswerer, build_questions, grade_answer


def _score(messages: list[Message]) -> dict[str, float]:
    answerer = LookupAnswerer(messages)
    questions = build_questions(manifest_session(), per_session=None).questions
    return {q.id: grade_answer(q, answerer.answer(q)) for q in questions}


def test_from_the_full_history_every_findable_answer_is_found() -> None:
    scores = _score(manifest_session().messages)
    exact = {k: v for k, v in scores.items() if "how" not in k}
    assert exact == dict.fromkeys(exact, 1.0)
    # What a file change did is in the manifest, not in the transcript: not findable there.
    assert scores["artifact-how-1"] == 0.0


def test_a_context_that_kept_nothing_scores_zero() -> None:
    scores = _score([Message.user("Let us continue.", metadata=MessageMetadata.agent_only())])
    assert set(scores.values()) == {0.0}


def test_a_summary_is_read_like_any_context() -> None:
    summary = Message.user(
        "# Summary\n\n## Errors\n- E       KeyError: 'order_17'\n\n## State\n"
        "The dev server must now use port 50354 (it was 59767).\n\n"
        "## Files\n- edited src/shop/totals.py\n\n## Next steps:\n"
        f"- {PENDING}\n", metadata=MessageMetadata.agent_only())
    answerer = LookupAnswerer([summary])
    questions = {q.id: q for q in build_questions(manifest_session(), per_session=None).questions}
    assert answerer.answer(questions["recall-error-last"]) == ERROR
    assert answerer.answer(questions["recall-fact-f03"]) == "50354"
    assert answerer.answer(questions["artifact-files"]) == "src/shop/totals.py"
    assert PENDING in answerer.answer(questions["continuation-pending"])


def test_agent_invisible_messages_are_not_read() -> None:
    hidden = Message.user("The dev server must now use port 50354 instead of 59767.",
                          metadata=MessageMetadata.user_only())
    question = next(q for q in build_questions(manifest_session()).questions
                    if q.id == "recall-fact-f03")
    assert LookupAnswerer([hidden]).answer(question) == ""


def test_a_question_about_the_first_error_takes_the_earliest_one() -> None:
    messages = [Message.assistant().with_tool_request("a", "shell", {"command": "make"}),
                Message.user().with_tool_response("a", "ValueError: first", is_error=True),
                Message.assistant().with_tool_request("b", "shell", {"command": "make"}),
                Message.user().with_tool_response("b", "TypeError: second", is_error=True)]
    first = next(q for q in build_questions(manifest_session(), per_session=None).questions
                 if q.id == "recall-error-last")
    answerer = LookupAnswerer(messages)
    assert answerer.answer(first) == "TypeError: second"
    first.position = "first"
    assert answerer.answer(first) == "ValueError: first"
