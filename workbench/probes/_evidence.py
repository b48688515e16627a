"""The evidence check: a question is kept only when its answer stands verbatim in the history.

A question built from a transcript (or written by a model) states its evidence: a message index
and a span quoted from that message (`workbench.probes.Evidence`). `check_evidence` holds it to
that, the same way for every source:

- every evidence span occurs in its message: in one of the message's texts, tool outputs, or
  tool-call arguments (`message_texts`), whitespace aside;
- every expected item (each path of a list question) occurs in one of the spans; a choice
  question's answer is a label read off its evidence (``created`` for a file a ``Write``
  call created), so for it the span alone must hold.

Case, punctuation and everything else must match: "verbatim" means what the agent saw. A
question that fails is dropped by its builder and counted (`QuestionSet.dropped`), never asked.
`locate_evidence` finds the evidence of an answer that came without one (a model-written
question): the latest message holding it, and the line around it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from workbench._json_types import JSONValue
from workbench.messages import Message
from workbench.metrics._common import normalize_ws
from workbench.probes._questions import Evidence, Question

__all__ = ["QUOTE_CHARS", "check_evidence", "locate_evidence", "message_texts"]

QUOTE_CHARS = 300
"""A located quote keeps at most this many characters around the answer."""


def _strings(value: JSONValue) -> Iterator[str]:
    """Every string inside a tool call's arguments (nested lists and objects included)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def message_texts(message: Message) -> list[str]:
    """What `message` shows the agent, piece by piece: its texts, each tool output (or a failed
    call's error), each tool call's name and every string argument."""
    out = [message.concat_text()]
    for response in message.tool_responses():
        result = response.tool_result
        out.append(response.text() if result.ok else str(result.error or ""))
    for request in message.tool_requests():
        out.append(request.name or "")
        out.extend(_strings(request.arguments or {}))
    return [t for t in out if t]


def _holds(texts: Sequence[str], span: str) -> bool:
    wanted = normalize_ws(span)
    return bool(wanted) and any(wanted in normalize_ws(t) for t in texts)


def check_evidence(question: Question, messages: Sequence[Message]) -> str | None:
    """Why `question`'s evidence does not hold in `messages`, or None when it does (see the
    module docstring)."""
    if not question.evidence:
        return "no evidence"
    quotes = []
    for item in question.evidence:
        if not 0 <= item.message < len(messages):
            return f"evidence message {item.message} is outside the history"
        if not _holds(message_texts(messages[item.message]), item.quote):
            return f"the quote is not in message {item.message}"
        quotes.append(item.quote)
    if question.answer_type == "choice":
        return None
    expected = question.expected if isinstance(question.expected, list) else [question.expected]
    for value in expected:
        if not _holds(quotes, str(value)):
            return f"the expected answer {str(value)[:60]!r} is not in its evidence"
    return None


def locate_evidence(answer: str, messages: Sequence[Message]) -> Evidence | None:
    """The evidence of `answer`: the latest message holding it verbatim (whitespace aside), with
    the line around it as the quote; None when no message holds it."""
    wanted = normalize_ws(answer)
    if not wanted:
        return None
    for index in range(len(messages) - 1, -1, -1):
        for text in message_texts(messages[index]):
            flat = normalize_ws(text)
            at = flat.find(wanted)
            if at < 0:
                continue
            lines = [normalize_ws(line) for line in text.splitlines()]
            line = next((ln for ln in lines if wanted in ln), None)
            if line is None or len(line) > QUOTE_CHARS:
                margin = max(0, (QUOTE_CHARS - len(wanted)) // 2)
                line = flat[max(0, at - margin):at + len(wanted) + margin]
            return Evidence(index, line)
    return None
