"""What the summarizer reads, and the stored summary message it writes back.

Mirrors ``render_transcript`` and ``extract_previous_summary`` (``context/summarizer.rs``) and
the summary message of ``apply_summary`` (``context/compaction.rs``).
"""

from __future__ import annotations

from collections.abc import Sequence

from workbench.messages import Message, system_message
from workbench.strategies.awaken._view import ROLE_LABELS, is_internal, role_of, text_of

SUMMARY_OPEN_TAG = "<conversation-summary>"
SUMMARY_CLOSE_TAG = "</conversation-summary>"
TRANSCRIPT_SEPARATOR = "\n\n"


def render_transcript(messages: Sequence[Message]) -> str:
    """The transcript of `messages` as awaken's summarizer sees it.

    Internal messages (a previous summary, reminders, continuation prompts) are left out, and so
    is every message with empty text: an assistant message holding only tool calls disappears,
    and call names and arguments never appear. Each other message becomes ``[Role]: text``
    (System, User, Assistant, Tool), entries separated by a blank line. Tool results are included
    raw and at full length.

    Args:
        messages: The messages to summarize.

    Returns:
        The transcript; empty when nothing is left.
    """
    entries = []
    for msg in messages:
        if is_internal(msg):
            continue
        text = text_of(msg)
        if not text:
            continue
        entries.append(f"[{ROLE_LABELS[role_of(msg)]}]: {text}")
    return TRANSCRIPT_SEPARATOR.join(entries)


def summary_text(summary: str) -> str:
    """The stored text of a summary: the summary between the tags, each on its own line."""
    return f"{SUMMARY_OPEN_TAG}\n{summary}\n{SUMMARY_CLOSE_TAG}"


def summary_message(summary: str, *, id: str | None = None) -> Message:
    """The message a successful pass inserts at index 0: internal, System, tagged, fresh id."""
    return system_message(summary_text(summary), internal=True, id=id)


def is_summary_message(msg: Message) -> bool:
    """True for an internal System message whose text holds the opening summary tag."""
    return role_of(msg) == "system" and is_internal(msg) and SUMMARY_OPEN_TAG in text_of(msg)


def extract_previous_summary(messages: Sequence[Message]) -> str | None:
    """The inner text of the first internal System message holding both summary tags.

    Whitespace around the inner text is trimmed; a blank summary is skipped. A System message that
    is not internal is ignored even when it holds the tags.

    Returns:
        The previous cumulative summary, or None.
    """
    for msg in messages:
        if role_of(msg) != "system" or not is_internal(msg):
            continue
        text = text_of(msg)
        start = text.find(SUMMARY_OPEN_TAG)
        end = text.find(SUMMARY_CLOSE_TAG)
        if start < 0 or end < 0:
            continue
        inner = text[start + len(SUMMARY_OPEN_TAG):end].strip()
        if inner:
            return inner
    return None


def trim_to_compaction_boundary(messages: Sequence[Message]) -> list[Message]:
    """The load-time trim: drop everything before the last stored summary message.

    Does nothing when no summary message exists; applying it twice changes nothing more.
    """
    last = None
    for i, msg in enumerate(messages):
        if is_summary_message(msg):
            last = i
    return list(messages[last:]) if last else list(messages)
