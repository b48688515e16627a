"""The optional ``probe_author``: a model that reads the full history and writes more questions.

It is asked for a JSON list of ``{"kind", "question", "answer"}`` objects whose answers are
copied from the session word for word. Each answer then goes through the same evidence check
as the transcript's own questions (`ground_authored`): the latest message that holds it
verbatim becomes its evidence, and a question whose answer no message holds is dropped and
counted. The kept questions are open ones (graded by word overlap and, when a judge is
configured, by the judge); they join the session's question set, kept apart from the built
ones in the metrics (``qa_authored``), and are saved with it, so a later run asks the same
questions without calling the author again. A reply that is not such a list raises
`ReplyFormatError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from workbench._json_types import JSONValue
from workbench.errors import ReplyFormatError
from workbench.messages import Message, MessageMetadata
from workbench.probes._evidence import locate_evidence
from workbench.probes._questions import AUTHOR_SOURCE, KINDS, Question
from workbench.probes._reply_json import json_in_reply

__all__ = ["AUTHOR_SYSTEM", "author_message", "ground_authored", "parse_author_reply"]

AUTHOR_SYSTEM = (
    "You write test questions about the coding session above. They check later whether an "
    "agent that sees only a compacted version of the session still knows what matters to "
    "continue it. Each question must be answerable from the session, and its answer must be "
    "what the session says at its end (the latest value of anything that changed). Kinds: "
    "recall (a fact, value or error message), artifact (files changed and how), continuation "
    "(what comes next), decision (what was decided and why). Copy each answer from the "
    "session word for word (a value, a name, a path, an error message, a short phrase): an "
    "answer the session does not hold verbatim is discarded. Reply with a JSON list only: "
    "[{\"kind\": \"recall\", \"question\": \"...\", \"answer\": \"...\"}, ...]."
)
"""The probe author's system prompt."""

AUTHOR_REQUEST = "Write {n} questions of these kinds: {kinds}."


def author_message(n: int, kinds: Sequence[str] = KINDS) -> Message:
    """The request that follows the history in the author's prompt."""
    return Message.user(AUTHOR_REQUEST.format(n=n, kinds=", ".join(kinds)),
                        metadata=MessageMetadata.agent_only())


def _array(text: str) -> JSONValue:
    return json_in_reply(text, "[]", "the probe author")


def parse_author_reply(text: str, n: int, kinds: Sequence[str] = KINDS,
                       author: str = "") -> list[Question]:
    """The first `n` questions of an author's reply whose kind is in `kinds`.

    Raises:
        ReplyFormatError: not a JSON list of objects with a known kind, a question and an
            answer (the message names the first bad item).
    """
    items = _array(text or "")
    if not isinstance(items, list):
        raise ReplyFormatError("the probe author's reply is not a JSON list")
    out: list[Question] = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise ReplyFormatError(f"the probe author's item {i} is not an object")
        kind = str(item.get("kind") or "").strip().lower()
        question = str(item.get("question") or "").strip()
        answer = str(item.get("answer") or "").strip()
        if kind not in KINDS:
            raise ReplyFormatError(f"the probe author's item {i} has kind {kind!r}, not one "
                                   f"of {', '.join(KINDS)}")
        if not question or not answer:
            raise ReplyFormatError(f"the probe author's item {i} lacks a question or answer")
        if kind not in kinds or len(out) >= n:
            continue
        out.append(Question(id=f"author-{len(out) + 1}", kind=kind, text=question,
                            expected=answer, grader="overlap", answer_type="text",
                            source=f"{AUTHOR_SOURCE}:{author}" if author else AUTHOR_SOURCE,
                            judged=True))
    return out


def ground_authored(questions: Sequence[Question],
                    messages: Sequence[Message]) -> tuple[list[Question], int]:
    """`questions` whose answer a message of `messages` holds verbatim, each with that
    evidence (`locate_evidence`), and how many were dropped for holding none."""
    kept = []
    for question in questions:
        evidence = locate_evidence(question.expected_text(), messages)
        if evidence is not None:
            kept.append(replace(question, evidence=[evidence]))
    return kept, len(questions) - len(kept)
