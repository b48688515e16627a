"""Error messages, exit codes and failing tests of the failed tool calls of real sessions."""

from __future__ import annotations

from collections.abc import Callable

from workbench.probes.extractors import History, failure_questions
from workbench.probes.extractors._failures import failing_tests
from workbench.sessions import Session

CC = "ae4a77f8-aedd-4bc1-888f-c94edc91af04"
HOME = "/home/USER/projects/spotter-worktrees/spotter-4te"


def test_each_failed_command_gives_its_error_and_exit_code(real: Callable[[str], Session]) -> None:
    questions = failure_questions(History.read(real("sympy__sympy-19637")))
    first = [(q.text, q.expected, q.answer_type, q.position, q.blank_before)
             for q in questions[:4]]
    assert first == [
        ("What error did the command `python reproduce_issue.py` fail with the first time? "
         "Quote the error message exactly.",
         "UnboundLocalError: local variable 'kern' referenced before assignment", "error",
         "first", ""),
        ("What exit code did the command `python reproduce_issue.py` return the first time?",
         "1", "number", "first", "<returncode>"),
        ("What error did the command `pytest sympy/core/tests/test_sympify.py` fail with the "
         "first time? Quote the error message exactly.",
         "bash: line 1: pytest: command not found", "error", "first", ""),
        ("What exit code did the command `pytest sympy/core/tests/test_sympify.py` return the "
         "first time?", "127", "number", "first", "<returncode>")]
    assert all(q.answer_in == "output" and q.kind == "recall" for q in questions)
    assert [(e.message, e.quote) for e in questions[3].evidence] == [
        (30, "<returncode>127</returncode>")]


def test_a_failed_tool_call_is_named_by_its_tool_and_file(real: Callable[[str], Session]) -> None:
    questions = failure_questions(History.read(real(CC)))
    # the failed git commits and multi-line scripts are too long to quote: not asked
    assert [(q.text, q.expected) for q in questions] == [
        (f"What error did the `Edit` call on `{HOME}/lib/spotter/telemetry/otel.ex` fail with "
         "the first time? Quote the error message exactly.",
         "<tool_use_error>String to replace not found in file."),
        (f"What error did the `Read` call on `{HOME}/test/support/conn_case.ex` fail with? "
         "Quote the error message exactly.",
         "<tool_use_error>File does not exist.</tool_use_error>")]
    assert questions[0].cue == [f"{HOME.lower()}/lib/spotter/telemetry/otel.ex", "edit"]


def test_failing_tests_are_named_in_pytests_and_sympys_reports() -> None:
    output = ("tests/a.py::test_one PASSED [ 50%]\ntests/a.py::TestX::test_two FAILED [100%]\n"
              "=== short test summary info ===\nFAILED tests/a.py::TestX::test_two - assert 0\n"
              "FAIL: test_three (pkg.tests.Case)\n"
              "________ sympy/core/tests/test_s.py:test_four ________")
    assert [name for name, _ in failing_tests(output)] == ["test_two", "test_three", "test_four"]


def test_a_failing_test_is_asked_as_a_blank_on_its_line(real: Callable[[str], Session]) -> None:
    questions = failure_questions(History.read(real("pytest-dev__pytest-6197")))
    (test,) = [q for q in questions if q.text.startswith("Which test failed?")]
    assert test.text == ('Which test failed? Fill in the blank with its exact name: "FAILED '
                         'testing/test_collection.py::Test_getinitialnodes:: ____ - Asser..."')
    assert test.expected == "test_pkgfile"
    assert test.blank_before == "FAILED testing/test_collection.py::Test_getinitialnodes::"
