"""Values that changed during real sessions, asked for the newest, the old ones kept."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from workbench.probes.extractors import History, update_questions
from workbench.probes.extractors._updates import command_head
from workbench.sessions import Session

CC = "ae4a77f8-aedd-4bc1-888f-c94edc91af04"


@pytest.mark.parametrize(("command", "head"), [
    ("mix test --seed 0 2>&1 | tail -30", "mix test"),
    ("cd repo && PYTHONPATH=. python3 -m pytest tests/a.py", "python3 -m pytest"),
    ("bin/test sympy/core/tests/test_assumptions.py", "bin/test"),
    ("pytest -q", "pytest"),
])
def test_a_test_runner_is_named_by_its_head(command: str, head: str) -> None:
    assert command_head(command) == head


def test_test_counts_that_changed_are_asked_at_the_last_run(
        real: Callable[[str], Session]) -> None:
    (question,) = update_questions(History.read(real(CC)))
    assert question.text == ("How many tests ran in the last run of `mix test` (whatever its "
                             "arguments)?")
    assert (question.expected, question.stale) == ("309", ["297"])
    assert question.answer_in == "output" and question.position == "last"
    sympy = {q.text: (q.expected, q.stale) for q in update_questions(History.read(
        real("sympy__sympy-16597")))}
    assert sympy["How many tests passed in the last run of `bin/test` (whatever its arguments)?"
                 ] == ("39", ["64", "66", "1623"])


def test_a_files_length_is_followed_across_swe_agents_views(
        real: Callable[[str], Session]) -> None:
    (question,) = update_questions(History.read(real("pydicom__pydicom-1458")))
    assert question.text == ("How many lines long was `/pydicom__pydicom/reproduce_bug.py` the "
                             "last time the session showed it?")
    assert (question.expected, question.stale) == ("18", ["1"])
    assert question.blank_before == "[File: /pydicom__pydicom/reproduce_bug.py ("
