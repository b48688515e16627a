"""The last request, the task the session started with, and the last tool call."""

from __future__ import annotations

from collections.abc import Callable

from workbench.probes.extractors import History, request_questions
from workbench.sessions import Session

CC = "ae4a77f8-aedd-4bc1-888f-c94edc91af04"


def test_a_continue_is_not_a_request_but_the_task_is(real: Callable[[str], Session]) -> None:
    questions = request_questions(History.read(real(CC)))
    # the last human turn is "continue implementation": only the task is asked
    assert [(q.text, q.position) for q in questions] == [
        ("What task did the user give at the start of the session?", "first"),
        ("What was the last tool call the agent made? Name the tool and the file or command "
         "it acted on.", "last")]
    assert questions[0].expected.startswith("Work on bead spotter-4te.")
    assert questions[0].grader == "overlap" and questions[0].judged


def test_a_single_request_is_the_last_one(real: Callable[[str], Session]) -> None:
    questions = request_questions(History.read(real("basic")))
    assert [(q.text, q.expected) for q in questions] == [
        ("What did the user ask for most recently?",
         "Please create a simple 2048 game. No need to run it. Please finish the interaction "
         "after your finish coding."),
        ("What was the last tool call the agent made? Name the tool and the file or command it "
         "acted on.", "/workspace/game_2048.py")]
    assert questions[1].answer_type == "path"


def test_a_long_task_is_cut_after_its_sentence_and_the_submit_is_quoted_whole(
        real: Callable[[str], Session]) -> None:
    last, tool = request_questions(History.read(real("sympy__sympy-16597")))
    assert last.expected.startswith("<pr_description>\nConsider the following PR description:")
    assert 300 <= len(last.expected) < 400
    assert tool.expected == ("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && "
                             "git diff --cached")
    assert tool.answer_type == "text"
