"""Requests: what the user asked for, and what was pending when the session stopped.

- *the last request*: the human's latest turn of three words or more (a ``continue`` is not a
  request); and, when the session had more than one, *the task it started with*;
- *what was pending*: the last tool call, the action in flight when the session stopped: the
  command it ran (quoted whole), else the file it acted on.

All are *continuation* questions. The requests are open (graded by word overlap, and by a
judge when one is configured); a request longer than `REQUEST_CHARS` is asked up to the end
of the sentence or line that passes it. The agent's own statements of what it would do next
are not asked: too often they are a step it announced and took at once ("Let me read the
file:").
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from workbench.metrics._common import normalize_ws
from workbench.probes._questions import CUE_TOOL_CALL, CUE_USER, Evidence, Question
from workbench.probes._transcript import action_of
from workbench.probes.extractors._common import one_line
from workbench.probes.extractors._history import History, Turn

__all__ = ["request_questions"]

SOURCE = "transcript:requests"
REQUEST_CHARS = 300
LAST_QUESTION = "What did the user ask for most recently?"
FIRST_QUESTION = "What task did the user give at the start of the session?"
TOOL_QUESTION = ("What was the last tool call the agent made? Name the tool and the file or "
                 "command it acted on.")
REQUEST_CUE = [CUE_USER, "asked", "request", "requested", "wants", "intent", "goal"]
TOOL_CUE = [CUE_TOOL_CALL, "tool", "ran", "command", "called", "last"]
MIN_WORDS = 3


def _cut(text: str) -> str:
    """`text` up to the end of the sentence or line that passes `REQUEST_CHARS`."""
    if len(text) <= REQUEST_CHARS:
        return text.strip()
    ends = [m.end() for m in re.finditer(r"[.!?](?=\s)|\n", text) if m.end() >= REQUEST_CHARS]
    return text[:ends[0] if ends else REQUEST_CHARS].strip()


def _request(turn: Turn, text: str, position: str) -> Question:
    expected = _cut(turn.text)
    return Question(id="", kind="continuation", text=text, expected=expected, grader="overlap",
                    answer_type="text", source=SOURCE, cue=REQUEST_CUE, position=position,
                    judged=True, evidence=[Evidence(turn.index, normalize_ws(expected))])


def request_questions(history: History) -> list[Question]:
    """The continuation questions of the session (see the module docstring)."""
    human = history.human
    out: list[Question] = []
    if human and len(human[-1].text.split()) >= MIN_WORDS:
        out.append(_request(human[-1], LAST_QUESTION, "last"))
    if human and len(human[0].text.split()) >= MIN_WORDS and (
            len(human) > 1 or not out):
        out.append(_request(human[0], FIRST_QUESTION, "first"))
    if history.calls:
        call = history.calls[-1]
        command = one_line(call.command) if call.command else None
        action = action_of(call.name, call.arguments)
        expected, answer_type = ((command, "text") if command and "\\" not in command
                                 else (action.argument, "path") if action.kind == "path"
                                 else ("", ""))
        if expected and expected in _holding(call.arguments):
            out.append(Question(id="", kind="continuation", text=TOOL_QUESTION,
                                expected=expected, answer_type=answer_type, source=SOURCE,
                                cue=TOOL_CUE, position="last",
                                evidence=[Evidence(call.index, expected)]))
    return out


def _holding(arguments: Mapping[str, object]) -> str:
    return "\n".join(v for v in arguments.values() if isinstance(v, str))
