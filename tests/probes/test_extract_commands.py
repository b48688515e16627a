"""Which commands real sessions ran, and what they printed."""

from __future__ import annotations

from collections.abc import Callable

from workbench.probes.extractors import History, command_questions
from workbench.probes.extractors._commands import outcome_line
from workbench.sessions import Session

CC = "ae4a77f8-aedd-4bc1-888f-c94edc91af04"


def test_a_described_command_is_asked_by_its_description(real: Callable[[str], Session]) -> None:
    questions = command_questions(History.read(real(CC)))
    described = [(q.text, q.expected) for q in questions if q.answer_in == "call"]
    assert described[:3] == [
        ("Which command did we run for \"Show issue details for spotter-4te\"? Quote it exactly.",
         "bd show spotter-4te"),
        ("Which command did we run for \"Show details of first subtask\"? Quote it exactly.",
         "bd show spotter-4te.1"),
        ("Which command did we run for \"Check if opentelemetry_bandit is currently in mix.lock\"? "
         "Quote it exactly.", "grep -A 2 opentelemetry_bandit mix.lock")]
    # "Run tests" ran six times, and "Claim the task" says no more than "Claim task 4" does:
    # which call would be meant?
    assert not any(text.startswith(("Which command did we run for \"Run tests\"?",
                                     "Which command did we run for \"Claim the task\"?"))
                   for text, _ in described)
    assert ("Which command did we run for \"Claim the next task\"? Quote it exactly.",
            "bd update spotter-4te.2 --status in_progress") in described


def test_a_program_that_ran_is_asked_what_it_printed(real: Callable[[str], Session]) -> None:
    questions = command_questions(History.read(real("sympy__sympy-19637")))
    printed = [(q.text, q.expected, q.position) for q in questions]
    assert printed == [
        ("What did the command `python test_kernS_functionality.py` print the first time? "
         "Quote its last line of output.", "kernS('2 * (x + y)') = 2*(x + y)", "first"),
        ("What did the command `python reproduce_issue.py && python test_kernS_functionality.py`"
         " print the last time? Quote its last line of output.",
         "kernS('2 * (x + y)') = 2*(x + y)", "last")]
    assert all(q.answer_in == "output" for q in questions)


def test_the_outcome_is_the_last_line_that_says_something() -> None:
    # "OK" is too short to tell one run from another
    assert outcome_line("<returncode>0</returncode>\n<output>\nRan 3 tests\n\nOK\n</output>"
                        ) == "Ran 3 tests"
    assert outcome_line("<returncode>0</returncode>\n<output>\n</output>") is None
    assert outcome_line("<returncode>0</returncode>\n<output>\nRan 3 tests in 0.1s\n</output>"
                        ) == "Ran 3 tests in 0.1s"
    assert outcome_line("Success!\n(Open file: /a.py)\n(Current directory: /)\nbash-$"
                        ) == "Success!"
