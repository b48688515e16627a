"""`History`: the human turns, tool calls and exit codes of real sessions, read once."""

from __future__ import annotations

from collections.abc import Callable

from workbench.messages import Message, MessageMetadata
from workbench.probes._transcript import is_human, is_injected
from workbench.probes.extractors import History
from workbench.sessions import Session

CC = "ae4a77f8-aedd-4bc1-888f-c94edc91af04"


def test_human_turns_leave_out_hooks_skills_and_the_recorded_summary(
        real: Callable[[str], Session]) -> None:
    history = History.read(real(CC))
    # 18 is a skill's text (isMeta), 288 the recorded summary, 289-291 the /compact echoes
    assert [(t.index, t.text) for t in history.human] == [
        (0, "Work on bead spotter-4te. Run bd show spotter-4te to see the issue details and bd "
            "ready to find available subtasks. Start with the first ready task."),
        (292, "continue implementation")]


def test_a_harness_task_in_its_own_tags_is_the_humans_request() -> None:
    assert not is_injected("<pr_description>\nFix the bug\n</pr_description>")
    assert is_injected("<task-notification>\n<task-id>b7636e2</task-id>")
    assert is_injected("<command-name>/compact</command-name>")
    assert is_injected("Please always provide EXACTLY ONE action in triple backticks, found 2")
    demo = Message.user("Here is a demonstration", metadata=MessageMetadata.model_validate(
        {"isDemo": True}))
    assert not is_human(demo, demo.concat_text())
    assert is_human(Message.user("Fix the bug please"), "Fix the bug please")


def test_mini_swe_agents_format_error_reply_is_not_a_human_turn(
        real: Callable[[str], Session]) -> None:
    session = real("pytest-dev__pytest-6197")
    assert session.messages[58].concat_text().startswith("Please always provide EXACTLY ONE")
    assert [t.index for t in History.read(session).human] == [0]


def test_swe_agents_demonstration_is_not_a_human_turn(real: Callable[[str], Session]) -> None:
    history = History.read(real("pydicom__pydicom-1458"))
    assert [t.index for t in history.human] == [1]
    assert history.human[0].text.startswith("We're currently solving the following issue")


def test_calls_carry_their_output_failure_and_exit_code(real: Callable[[str], Session]) -> None:
    history = History.read(real("sympy__sympy-19637"))
    failed = [(c.index, c.command, c.exit_code, c.exit_line) for c in history.calls if c.failed]
    assert failed[:3] == [
        (7, "python reproduce_issue.py", 1, "<returncode>1</returncode>"),
        (29, "pytest sympy/core/tests/test_sympify.py", 127, "<returncode>127</returncode>"),
        (33, "python -m pytest sympy/core/tests/test_sympify.py", 1,
         "<returncode>1</returncode>")]
    assert len(history.calls) == 26 and all(c.result == c.index + 1 for c in history.calls)
    cc = History.read(real(CC))
    exits = [(c.index, c.exit_code, c.exit_line) for c in cc.calls if c.exit_code is not None]
    assert exits[0] == (160, 1, "Exit code 1")
    # an Edit that found nothing to replace is flagged, with no exit code
    edit = next(c for c in cc.calls if c.index == 54)
    assert edit.failed and edit.exit_code is None and edit.command == ""
    assert edit.output.startswith("<tool_use_error>String to replace not found in file.")


def test_the_corpus_is_every_text_whitespace_normalised(real: Callable[[str], Session]) -> None:
    history = History.read(real("basic"))
    assert "Please create a simple 2048 game. No need to run it." in history.corpus
    assert history.corpus_lower == history.corpus.lower()
