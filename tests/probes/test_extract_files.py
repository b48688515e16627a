"""Files created, edited, deleted or only read, from the tool calls of real sessions."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from workbench.probes._transcript import shell_file_ops, written_paths
from workbench.probes.extractors import History, file_questions
from workbench.probes.extractors._files import FileTouch, file_touches
from workbench.sessions import Session

CC = "ae4a77f8-aedd-4bc1-888f-c94edc91af04"
HOME = "/home/USER/projects/spotter-worktrees/spotter-4te"


@pytest.mark.parametrize(("command", "ops"), [
    ("cat <<'EOF' > reproduce_issue.sh", [("reproduce_issue.sh", "write")]),
    # quotes hide the ; and the | inside a sed script
    ("sed -i 's/print(f\"x\")/import sys; print(y)/' src/_pytest/python.py",
     [("src/_pytest/python.py", "edit")]),
    ("nl -ba x/y.py | sed -n '1,5p'", [("x/y.py", "read")]),
    ("rm reproduce_issue.py test_typeerror.py", [("reproduce_issue.py", "delete"),
                                                  ("test_typeerror.py", "delete")]),
    ("echo hi >> notes.md && cat notes.md", [("notes.md", "write"), ("notes.md", "read")]),
    ("python a.py 2>&1 | tail -5", []),
    ("grep -r foo src/ > /dev/null", []),
    ("rm /repo/.dialyzerignore", [("/repo/.dialyzerignore", "delete")]),
])
def test_a_shell_command_names_the_files_it_touches_and_how(command: str,
                                                           ops: list[tuple[str, str]]) -> None:
    assert shell_file_ops(command) == ops


def test_shell_writes_count_as_written_paths_and_reads_do_not() -> None:
    assert written_paths("bash", {"command": "cat <<'EOF' > check.sh\necho\nEOF"}) == ["check.sh"]
    assert written_paths("bash", {"command": "sed -i 's/a/b/' src/x.py"}) == ["src/x.py"]
    assert written_paths("bash", {"command": "cat src/x.py"}) == []


def test_mini_swe_agent_files_come_from_its_shell_commands(real: Callable[[str], Session]) -> None:
    touches = file_touches(History.read(real("sympy__sympy-19637")))
    writes = [(t.path, t.how, t.index) for t in touches if t.how != "read"]
    assert writes == [("reproduce_issue.py", "create", 5), ("sympy/core/sympify.py", "edit", 17),
                      ("test_kernS_functionality.py", "create", 23),
                      ("sympy/core/sympify.py", "edit", 37), ("sympy/core/sympify.py", "edit", 41),
                      ("reproduce_issue.py", "delete", 47),
                      ("test_kernS_functionality.py", "delete", 47)]
    assert {t.path for t in touches if t.how == "read"} == {"sympy/core/sympify.py"}


def test_swe_agent_edits_name_the_open_file_by_the_name_it_was_given(
        real: Callable[[str], Session]) -> None:
    touches = file_touches(History.read(real("pydicom__pydicom-1458")))
    assert touches[1] == FileTouch("reproduce_bug.py", "edit", 5,
                                   "/pydicom__pydicom/reproduce_bug.py")
    assert [(t.path, t.how) for t in touches] == [
        ("reproduce_bug.py", "create"), ("reproduce_bug.py", "edit"),
        ("pydicom/pixel_data_handlers/numpy_handler.py", "read"),
        ("pydicom/pixel_data_handlers/numpy_handler.py", "edit"),
        ("reproduce_bug.py", "delete")]


def test_the_list_names_every_written_file_with_its_first_write_as_evidence(
        real: Callable[[str], Session]) -> None:
    (listed, *rest) = file_questions(History.read(real("sympy__sympy-19637")))
    assert listed.grader == "list" and listed.kind == "artifact"
    assert listed.expected == ["reproduce_issue.py", "sympy/core/sympify.py",
                               "test_kernS_functionality.py"]
    assert [(e.message, e.quote) for e in listed.evidence] == [
        (5, "reproduce_issue.py"), (17, "sympy/core/sympify.py"),
        (23, "test_kernS_functionality.py")]
    # files created and deleted again have no one-word fate: only the edited one is asked
    assert [(q.text, q.expected) for q in rest] == [
        ("Was the file `sympy/core/sympify.py` created, edited or deleted in this session?",
         "edited")]
    assert rest[0].answer_in == "call" and rest[0].choices == ["created", "edited", "deleted"]


def test_claude_code_files_created_edited_and_only_read(real: Callable[[str], Session]) -> None:
    questions = file_questions(History.read(real(CC)))
    fates = {q.text.split("`")[1]: q.expected for q in questions if q.answer_type == "choice"}
    assert fates[f"{HOME}/mix.exs"] == "edited"
    assert fates[f"{HOME}/spotter-plugin/scripts/lib/trace_context.sh"] == "created"
    assert fates[f"{HOME}/test/support/data_case.ex"] == "read"
    # created, then edited: both are true, so it is not asked
    assert f"{HOME}/lib/spotter/telemetry/otel.ex" not in fates
    # created, then removed with rm: listed among the written files, its fate not asked
    assert f"{HOME}/.dialyzerignore" in questions[0].expected
    assert f"{HOME}/.dialyzerignore" not in fates
    read = next(q for q in questions if q.expected == "read")
    assert read.text.startswith("Did we change the file") and read.choices == ["edited", "read"]
