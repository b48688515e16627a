"""Updates: values that changed during the session, asked for their newest value.

A knowledge-update question has one right answer, the latest value, and keeps the replaced
ones (`Question.stale`) so that an answer giving an old value is told apart from one giving
none. Values are followed across the session from three places:

- test runs: each run of the same test runner (`command_head`: ``mix test``, ``pytest``,
  ``bin/test``, whatever the arguments) prints counts (pytest's ``3 failed, 40 passed``,
  unittest's ``Ran 12 tests``, ExUnit's ``12 tests, 1 failure``, SymPy's ``tests finished: 40
  passed, 2 failed``); a count that differs between runs is asked at the runner's last run;
- file lengths SWE-agent prints (``[File: a.py (18 lines total)]``), per file;
- settings an edit changed: a ``key: value`` / ``key = value`` line of an edit's new text
  whose key the old text set to another value (``timeout: 60`` -> ``timeout: 120``).

All are *recall* questions.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from workbench.metrics._common import normalize_ws
from workbench.probes._normalize import normalize_command
from workbench.probes._questions import Evidence, Question
from workbench.probes.extractors._common import (
    cloze_question,
    cue_words,
    line_at,
    mentions,
    one_line,
)
from workbench.probes.extractors._history import Call, History

__all__ = ["update_questions"]

SOURCE = "transcript:updates"
COUNT_QUESTION = "How many tests {label} in the last run of `{head}` (whatever its arguments)?"
LENGTH_QUESTION = "How many lines long was `{path}` the last time the session showed it?"
_COUNTS = re.compile(r"\b(\d+) (failed|passed|errors?|skipped|failures?|tests?)\b")
_RAN = re.compile(r"^Ran (\d+) tests?\b", re.MULTILINE)
_LENGTH = re.compile(r"^\[File: (\S+) \((\d+) lines total\)\]", re.MULTILINE)
_SETTING = re.compile(r"^\s*[\"']?([A-Za-z_][\w.-]*)[\"']?\s*(?:=|:|=>)\s*"
                      r"([^\s,;{}\[\]#]+)[,;]?\s*$")
LABELS = {"failed": "failed", "failure": "failed", "failures": "failed", "passed": "passed",
          "error": "errored", "errors": "errored", "skipped": "were skipped", "test": "ran",
          "tests": "ran"}
EDIT_PAIRS = (("old_string", "new_string"), ("old_str", "new_str"), ("search", "replace"))


@dataclass(frozen=True)
class _Seen:
    value: str
    index: int
    line: str
    offset: int


def _count_lines(output: str) -> Iterator[tuple[str, str, int]]:
    """``(label, value, offset)`` of each test count of an output's summary lines."""
    for match in _RAN.finditer(output):
        yield "ran", match.group(1), match.start(1)
    for line in re.finditer(r"[^\n]+", output):
        text = line.group()
        if not (text.lstrip().startswith(("=", "tests finished")) or " tests, " in text
                or re.search(r" in \d+(?:\.\d+)?s\b", text)):
            continue
        for match in _COUNTS.finditer(text):
            label = LABELS[match.group(2)]
            yield label, match.group(1), line.start() + match.start(1)


def command_head(command: str) -> str:
    """The program a command runs, as written, with its sub-command when it has one
    (``mix test``, ``python -m pytest``, ``bin/test``): `normalize_command`'s head, spelled
    as the command spells it (so that it finds the command again)."""
    head = normalize_command(command).split()
    if not head:
        return ""
    words = command.split()
    at = next((i for i, w in enumerate(words) if w.rsplit("/", 1)[-1].casefold() == head[0]),
              None)
    return "" if at is None else " ".join(words[at:at + len(head)])


def _test_series(history: History) -> dict[tuple[str, str], list[_Seen]]:
    """Per test runner (`command_head`) and count: the counts of its runs, in order, while
    its latest run printed that count (``lookup`` reads the latest run that names it)."""
    runs: dict[str, list[Call]] = {}
    for call in history.tool_outputs():
        command = one_line(call.command) or ""
        head = command_head(command) if "\\" not in command else ""
        if head and any(_count_lines(call.output)):
            runs.setdefault(head, [])
    for call in history.tool_outputs():
        for head, found in runs.items():
            if call.command and mentions(call.command, head):
                found.append(call)
    series: dict[tuple[str, str], list[_Seen]] = {}
    for head, calls in runs.items():
        counted: dict[str, list[_Seen]] = {}
        for call in calls:
            assert call.result is not None
            for label, value, at in _count_lines(call.output):
                counted.setdefault(label, []).append(_Seen(value, call.result, call.output, at))
        last = calls[-1].result
        for label, seen in counted.items():
            if seen[-1].index == last:
                series[(head, label)] = seen
    return series


def _series(history: History) -> dict[tuple[str, str], list[_Seen]]:
    series = _test_series(history)
    for call in history.tool_outputs():
        assert call.result is not None
        for match in _LENGTH.finditer(call.output):
            series.setdefault(("length", match.group(1)), []).append(
                _Seen(match.group(2), call.result, call.output, match.start(2)))
    return series


def _question(key: tuple[str, str], seen: list[_Seen]) -> Question | None:
    values = list(dict.fromkeys(s.value for s in seen))
    last = seen[-1]
    if len(values) < 2 or last.value != values[-1]:
        return None
    stale = [v for v in values if v != last.value]
    line = line_at(last.line, last.offset)
    before = last.line[last.line.rfind("\n", 0, last.offset) + 1:last.offset]
    lead = " ".join(before.split()[-3:])
    if key[0] == "length":
        return Question(id="", kind="recall", text=LENGTH_QUESTION.format(path=key[1]),
                        expected=last.value, answer_type="number", source=SOURCE,
                        cue=cue_words(key[1], ["lines", "total"]), stale=stale,
                        position="last", blank_before=lead,
                        evidence=[Evidence(last.index, normalize_ws(line))])
    return Question(id="", kind="recall", text=COUNT_QUESTION.format(label=key[1], head=key[0]),
                    expected=last.value, answer_type="number", source=SOURCE,
                    cue=[key[0].lower()], stale=stale, position="last", answer_in="output",
                    blank_before=lead, evidence=[Evidence(last.index, normalize_ws(line))])


def _settings(text: str) -> dict[str, tuple[str, int]]:
    out = {}
    at = 0
    for line in text.splitlines(keepends=True):
        match = _SETTING.match(line)
        if match:
            out[match.group(1)] = (match.group(2), at + match.start(2))
        at += len(line)
    return out


def _edited_settings(history: History) -> list[Question]:
    out = []
    for call in history.calls:
        if call.failed:
            continue
        for old_key, new_key in EDIT_PAIRS:
            old, new = call.arguments.get(old_key), call.arguments.get(new_key)
            if not isinstance(old, str) or not isinstance(new, str):
                continue
            before, after = _settings(old), _settings(new)
            for key, (value, at) in after.items():
                if key in before and before[key][0] != value:
                    question = cloze_question("recall", SOURCE, new, value, at, call.index,
                                              "value", stale=[before[key][0]],
                                              position="last", corpus=history.corpus_lower)
                    if question is not None:
                        out.append(question)
    return out


def update_questions(history: History) -> list[Question]:
    """The update questions of the session (see the module docstring)."""
    out = [q for key, seen in _series(history).items() if (q := _question(key, seen))]
    return out + _edited_settings(history)
