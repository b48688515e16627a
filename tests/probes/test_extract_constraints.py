"""What the user required or forbade, asked as the word after the constraint's trigger."""

from __future__ import annotations

from collections.abc import Callable

from workbench.probes.extractors import History, constraint_questions
from workbench.probes.extractors._constraints import constraints_in
from workbench.sessions import Session


def test_a_constraint_blanks_the_first_content_word_after_its_trigger() -> None:
    text = ("Fix the bug. Do not modify the tests in any way. The rest is fine. Always run "
            "ruff before committing. Never.")
    found = [text[at:].split()[0] for _, at in constraints_in(text)]
    assert found == ["modify", "run"]


def test_openhands_users_no_need_to_run_it(real: Callable[[str], Session]) -> None:
    (question,) = constraint_questions(History.read(real("basic")))
    # the sentence alone is too short to say what is asked: the one before it comes along
    assert question.text == ('Fill in the blank with the user\'s exact word: "Please create a '
                             'simple 2048 game. No need to ____ it."')
    assert question.expected == "run" and question.kind == "decision"
    assert question.blank_before == "No need to"
    assert question.evidence[0].message == 0


def test_aider_and_mini_swe_agent_constraints(real: Callable[[str], Session]) -> None:
    aider = {q.expected: q.text for q in constraint_questions(History.read(
        real("chat-history.md#12")))}
    assert aider["IgnorantTemporaryDirectory"].endswith(
        '"don\'t use `____` use GitTemporaryDirectory"')
    task = {q.expected: q.text for q in constraint_questions(History.read(
        real("sympy__sympy-16597")))}
    assert task["finite"].endswith('"I would expect that a number should be ____ before it can '
                                   'be even."')
