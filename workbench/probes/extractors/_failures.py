"""Failures: the error messages, exit codes and failing tests of tool calls that failed.

A call failed when its response was flagged as an error or printed a non-zero exit code
(`workbench.probes.extractors._history.Call`). For each failed call that can be named (an
`Anchor`: its command, or its tool and file), at its first or last run:

- *what error it failed with*: the error line the errors probe picks from its output
  (`workbench.metrics._errors.error_line`), quoted exactly;
- *what exit code it returned*, when the output printed one (``<returncode>2</returncode>``,
  ``Exit code 2``);

and for every failing test its output names (pytest's ``FAILED a.py::test_x`` and ``a.py::test_x
FAILED``, unittest's ``FAIL: test_x (mod.Case)``, SymPy's ``____ a.py:test_x ____``, ExUnit's
``1) test x (Mod)``), a fill-in-the-blank question on that line asking for the test's name.
All are *recall* questions; the first two are answered from the call's own output
(`Question.answer_in`).
"""

from __future__ import annotations

import re

from workbench.metrics._common import normalize_ws
from workbench.metrics._errors import error_line
from workbench.probes._questions import Evidence, Question
from workbench.probes.extractors._anchor import anchor_of, occurrences
from workbench.probes.extractors._common import MAX_LINE_CHARS, cloze_question, occurrence, when
from workbench.probes.extractors._history import Call, History

__all__ = ["failure_questions", "failing_tests"]

SOURCE = "transcript:failures"
ERROR_QUESTION = "What error did {anchor} fail with{when}? Quote the error message exactly."
EXIT_QUESTION = "What exit code did {anchor} return{when}?"
TEST_QUESTION = 'Which test failed? Fill in the blank with its exact name: "{cloze}"'
_TESTS = (
    re.compile(r"^(?:FAILED|ERROR) [^\s:]+::(?:\w+::)*(?P<name>\w+)", re.MULTILINE),
    re.compile(r"^[^\s:]+::(?:\w+::)*(?P<name>\w+)(?:\[[^\]]*\])? (?:FAILED|ERROR)\b",
               re.MULTILINE),
    re.compile(r"^(?:FAIL|ERROR): (?P<name>test\w*) \([\w.]+\)", re.MULTILINE),
    re.compile(r"^_{3,} \S+\.py:(?P<name>test\w+) _{3,}$", re.MULTILINE),
    re.compile(r"^\s+\d+\) test (?P<name>[^\n(]+?) \([\w.]+\)$", re.MULTILINE),
)


def failing_tests(output: str) -> list[tuple[str, int]]:
    """``(test name, offset)`` of every failing test `output` names, in order, once each."""
    found: dict[str, int] = {}
    for pattern in _TESTS:
        for match in pattern.finditer(output):
            found.setdefault(match.group("name"), match.start("name"))
    return sorted(found.items(), key=lambda item: item[1])


def _error_quote(call: Call, error: str) -> str | None:
    """The line of the output holding `error` (whitespace aside), or the error itself when it
    is a cut part of a longer line."""
    for line in call.output.splitlines():
        flat = normalize_ws(line)
        if error in flat:
            return flat if len(flat) <= MAX_LINE_CHARS else error
    return error if error in normalize_ws(call.output) else None


def _call_questions(history: History, call: Call, n: int, total: int) -> list[Question]:
    anchor = anchor_of(call)
    assert anchor is not None
    position, phrase = occurrence(n, total)
    out: list[Question] = []
    error = error_line(call.output, flagged=True) if call.output.strip() else None
    quote = _error_quote(call, error) if error else None
    if error and quote and call.result is not None:
        out.append(Question(
            id="", kind="recall", text=ERROR_QUESTION.format(anchor=anchor.phrase, when=phrase),
            expected=error, answer_type="error", source=SOURCE,
            cue=list(anchor.cue), position=position, answer_in="output",
            evidence=[Evidence(call.result, quote)]))
    if call.exit_code and call.result is not None:
        line = call.exit_line
        out.append(Question(
            id="", kind="recall", text=EXIT_QUESTION.format(anchor=anchor.phrase, when=phrase),
            expected=str(call.exit_code), answer_type="number", source=SOURCE,
            cue=list(anchor.cue), position=position, answer_in="output",
            blank_before=line[:line.rfind(str(call.exit_code))].strip(),
            evidence=[Evidence(call.result, line)]))
    return out


def failure_questions(history: History) -> list[Question]:
    """The failure questions of the session (see the module docstring)."""
    out: list[Question] = []
    asked: set[tuple[str, int]] = set()
    for call in history.calls:
        if not call.failed or call.result is None:
            continue
        anchor = anchor_of(call)
        if anchor is not None:
            runs = occurrences(history, anchor)
            n = next((i for i, c in enumerate(runs) if c is call), -1)
            if n in when(len(runs)) and (anchor.key, n) not in asked:
                asked.add((anchor.key, n))
                out.extend(_call_questions(history, call, n, len(runs)))
    seen: set[str] = set()
    for call in history.calls:
        if not call.failed or call.result is None:
            continue
        for name, at in failing_tests(call.output):
            if name in seen or not name.isidentifier():
                continue
            seen.add(name)
            question = cloze_question("recall", SOURCE, call.output, name, at, call.result,
                                      "identifier", template=TEST_QUESTION,
                                      corpus=history.corpus_lower)
            if question is not None:
                out.append(question)
    return out
