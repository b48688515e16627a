"""The offline ``lookup`` answerer: retrieval from the context, never from the expected answer."""

from __future__ import annotations

from tests.probes._sessions import ERROR, PENDING, manifest_session
from workbench.messages import Message, MessageMetadata
from workbench.probes import LookupAnswerer, Question, build_questions, grade_answer


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
    assert LookupAnswerer([hidden]).answer(question) == "unknown"


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


def _runs() -> list[Message]:
    """`pytest -q` run twice (exit 1, then 0) with a grep between that mentions it."""
    return [
        Message.assistant("I'll create the test first.").with_tool_request(
            "w", "write_file", {"path": "tests/test_a.py", "content": "def test_a(): pass"}),
        Message.user().with_tool_response("w", "written"),
        Message.assistant().with_tool_request("r1", "shell", {"command": "pytest -q"}),
        Message.user().with_tool_response("r1", "E   KeyError: 'x'\n1 failed in 0.1s\nExit code 1",
                                          is_error=True),
        Message.assistant().with_tool_request("g", "shell",
                                              {"command": "grep -n x tests/test_a.py"}),
        Message.user().with_tool_response("g", "1:def test_a(): pass"),
        Message.assistant().with_tool_request("r2", "shell", {"command": "pytest -q"}),
        Message.user().with_tool_response("r2", "1 passed in 0.1s\nExit code 0"),
    ]


def _error_question(**kw: object) -> Question:
    return Question(id="r", kind="recall", text="What error did `pytest -q` fail with?",
                    expected="KeyError: 'x'", answer_type="error", cue=["pytest -q"],
                    answer_in="output", **kw)  # type: ignore[arg-type]


def test_an_outcome_is_read_from_the_output_of_the_call_the_cue_names() -> None:
    answerer = LookupAnswerer(_runs())
    exit_code = Question(id="e", kind="recall", text="What exit code did `pytest -q` return?",
                         expected="1", answer_type="number", cue=["pytest -q"],
                         blank_before="Exit code", answer_in="output", position="first")
    assert answerer.answer(exit_code) == "1"
    exit_code.position = "last"
    assert answerer.answer(exit_code) == "0"
    assert answerer.answer(_error_question(position="first")) == "KeyError: 'x'"
    printed = Question(id="p", kind="recall", text="What did `pytest -q` print?",
                       expected="1 passed in 0.1s", answer_type="text", cue=["pytest -q"],
                       answer_in="output", position="last")
    assert answerer.answer(printed) == "1 passed in 0.1s\nExit code 0"


def test_an_outcome_in_a_summary_is_read_from_its_text() -> None:
    summary = Message.user("## Tests\n`pytest -q` failed with exit code 1: KeyError: 'x'.",
                           metadata=MessageMetadata.agent_only())
    answerer = LookupAnswerer([summary])
    exit_code = Question(id="e", kind="recall", text="What exit code did `pytest -q` return?",
                         expected="1", answer_type="number", cue=["pytest -q"],
                         blank_before="exit code", answer_in="output")
    assert answerer.answer(exit_code) == "1"
    assert answerer.answer(_error_question()) == "KeyError: 'x'."


def test_a_question_about_a_call_reads_the_calls_alone() -> None:
    answerer = LookupAnswerer([
        Message.assistant().with_tool_request("r", "read_file", {"path": "tests/test_a.py"}),
        Message.user().with_tool_response("r", "def test_a(): pass"),
        Message.assistant().with_tool_request(
            "e", "edit_file", {"path": "tests/test_a.py", "old_str": "pass", "new_str": "x"}),
        Message.user().with_tool_response("e", "ok"),
        Message.assistant("Added the missing assert to tests/test_a.py.")])
    fate = Question(id="f", kind="artifact", text="Was `tests/test_a.py` created or edited?",
                    expected="edited", answer_type="choice", choices=["created", "edited"],
                    cue=["tests/test_a.py"])
    # the calls that name the file say what happened to it, not the latest text ("Added")
    assert answerer.answer(fate) == "edited"
    fate.answer_in = "call"
    assert answerer.answer(fate) == "edited"


def test_a_value_blank_takes_the_token_after_its_leading_words() -> None:
    messages = [Message.user().with_tool_response("c", "Commit   503d567 fix: pin tokenizers\n"),
                Message.assistant("Later: Commit 9f8e7d6 fix: pin tokenizers again")]
    answerer = LookupAnswerer(messages)
    blank = Question(id="v", kind="recall", text='Fill in: "Commit ____ fix: pin tokenizers"',
                     expected="503d567", answer_type="value", cue=["pin", "tokenizers"],
                     blank_before="Commit", position="first")
    assert answerer.answer(blank) == "503d567"  # whitespace aside
    blank.position = "last"
    assert answerer.answer(blank) == "9f8e7d6"


def test_a_skills_text_is_not_the_humans_message() -> None:
    skill = Message.user("Base directory for this skill: /x\nAlways prefer local sources.",
                         metadata=MessageMetadata.model_validate({"isMeta": True}))
    human = Message.user("Please add the OTEL spans to the hooks controller.")
    answerer = LookupAnswerer([human, skill])
    request = next(q for q in build_questions(manifest_session(), per_session=None).questions
                   if q.id == "continuation-last-request")
    assert answerer.answer(request) == human.concat_text()


def test_a_calls_kind_is_read_from_what_it_does_not_from_what_it_carries() -> None:
    answerer = LookupAnswerer([
        Message.assistant().with_tool_request(
            "e", "edit", {"path": "aider/main.py", "search": "x = 1",
                          "replace": "# create a new repo when none exists\nx = 2"}),
        Message.user().with_tool_response("e", "Applied edit to aider/main.py"),
        Message.assistant().with_tool_request(
            "w", "shell", {"command": "cat <<'EOF' > fix_main.py\nopen('aider/main.py')\nEOF"}),
        Message.user().with_tool_response("w", ""),
        *[m for n in range(6) for m in (
            Message.assistant().with_tool_request(f"r{n}", "shell",
                                                  {"command": f"sed -n '{n},9p' aider/main.py"}),
            Message.user().with_tool_response(f"r{n}", "x = 2"))]])
    fate = Question(id="f", kind="artifact", text="Was `aider/main.py` created or edited?",
                    expected="edited", answer_type="choice", choices=["created", "edited"],
                    cue=["aider/main.py"], answer_in="call")
    # the heredoc names the file only inside the script it writes; six later calls only read
    # it: the edit is found behind them, by its tool name, not by the "create a new" it wrote
    assert answerer.answer(fate) == "edited"


def test_a_question_about_a_call_is_read_from_a_summarys_text() -> None:
    summary = Message.user("## Files\n- edited aider/main.py (the repo check)",
                           metadata=MessageMetadata.agent_only())
    fate = Question(id="f", kind="artifact", text="Was `aider/main.py` created or edited?",
                    expected="edited", answer_type="choice", choices=["created", "edited"],
                    cue=["aider/main.py"], answer_in="call")
    assert LookupAnswerer([summary]).answer(fate) == "edited"
