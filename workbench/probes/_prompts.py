"""What an answerer model is asked: the system prompts and the question messages.

The answerer sees exactly the agent's context after compaction, in its own chat format, and
then one more user message: the question (`question_message`). For the next action it sees the
same context with no question at all; the system prompt (`next_action_system`) asks it to reply
with its next action as one line a parser can read.
"""

from __future__ import annotations

from collections.abc import Sequence

from workbench.messages import Message, MessageMetadata
from workbench.probes._questions import Question

__all__ = ["ANSWERER_SYSTEM", "answer_hint", "next_action_system", "question_message"]

ANSWERER_SYSTEM = (
    "You are the coding agent of the conversation above, after part of it was compacted. "
    "Answer the last message's question from what the conversation tells you, and from "
    "nothing else. Be brief. Quote values, file paths, identifiers and error messages exactly "
    "as they appear. When the conversation does not tell you, answer: unknown."
)
"""The answerer's system prompt for every question."""

ANSWER_HINTS: dict[str, str] = {
    "number": "Answer with the number only.",
    "identifier": "Answer with the exact name only.",
    "value": "Answer with the exact value only.",
    "path": "Answer with the file path only.",
    "error": "Quote the error message exactly, on one line.",
    "choice": "Answer with one word: {choices}.",
    "paths": "List the file paths, one per line.",
    "text": "Answer in one or two sentences.",
}
"""The line added to a question by its answer type."""

NEXT_ACTION_SYSTEM = (
    "You are the coding agent of this conversation, after part of it was compacted; continue "
    "the work. Reply with your next action only, as a single line: TOOL <tool name> <main "
    "argument>, where the main argument is the file path the tool acts on or the shell "
    "command you would run; or NONE when your next step calls no tool. Tools this session "
    "uses: {tools}."
)
"""The system prompt for the next turn (``{tools}``: the session's tool names)."""


def answer_hint(question: Question) -> str:
    """The reply-format line for `question`'s answer type."""
    hint = ANSWER_HINTS.get(question.answer_type, ANSWER_HINTS["text"])
    return hint.format(choices=", ".join(question.choices) or "")


def question_message(question: Question) -> Message:
    """The user message that asks `question` (agent-only: it is not part of the history)."""
    return Message.user(f"{question.text}\n{answer_hint(question)}",
                        metadata=MessageMetadata.agent_only())


def next_action_system(tools: Sequence[str]) -> str:
    """`NEXT_ACTION_SYSTEM` naming `tools` (or saying none are known)."""
    return NEXT_ACTION_SYSTEM.format(tools=", ".join(tools) or "unknown")
