"""Goose's session-level compaction (``context_mgmt/mod.rs``: ``compact_messages``).

The originals are archived (hidden from the agent, still shown to the user), then come the
summary and a continuation note (both agent-only), the latest text-only user prompt replayed as
an agent-only copy, and the newest turn-context event of that turn, carried so it stays last.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Unpack

from workbench._memo import memo
from workbench.compaction._model import CompactionModel, Usage
from workbench.compaction._summarize import SummarizeOptions, Summary, summarize
from workbench.compaction._templates import Templates
from workbench.messages import (
    Message,
    MessageMetadata,
    TextContent,
    ToolRequest,
    ToolResponse,
    recorded_fields,
)
from workbench.tokens import TokenEstimator, context_tokens, default_estimator

__all__ = [
    "CONVERSATION_CONTINUATION_TEXT",
    "MANUAL_COMPACT_CONTINUATION_TEXT",
    "TOOL_LOOP_CONTINUATION_TEXT",
    "CompactionResult",
    "compact_messages",
    "compacted_conversation",
    "summarizer_input",
]

CONVERSATION_CONTINUATION_TEXT = (
    "Your context was compacted: the message before this one is a summary of the conversation "
    "so far. Do not bring up the compaction or the summary; just carry on with the "
    "conversation naturally."
)
"""Continuation after automatic compaction, right after the user spoke."""

TOOL_LOOP_CONTINUATION_TEXT = (
    "Your context was compacted: the message before this one is a summary of the conversation "
    "so far. Do not bring up the compaction; keep calling tools as needed to finish the task."
)
"""Continuation after automatic compaction in the middle of a tool loop."""

MANUAL_COMPACT_CONTINUATION_TEXT = (
    "Your context was compacted because the user asked for it: the message before this one is a "
    "summary of the conversation so far. Do not bring up the summarization; continue the "
    "conversation naturally."
)
"""Continuation after a manual ``/compact``."""


@dataclass
class CompactionResult:
    """What `compact_messages` returns.

    Attributes:
        conversation: The new message list (archived originals, summary, continuation,
            preserved prompt, carried turn context).
        usage: Billable usage of the summarization call (raw output, not the rendered summary).
        retained_context_tokens: Estimated agent-visible context after compaction.
        summary: The full `Summary` (attempts, parse outcome...); not in Goose.
    """

    conversation: list[Message]
    usage: Usage
    retained_context_tokens: int
    summary: Summary


def _replayable_text(message: Message) -> list[TextContent] | None:
    """The agent-visible text items of a text-only user prompt, else None."""
    projected = memo().projected.get(message, None, message.agent_projection)
    if any(isinstance(c, (ToolRequest, ToolResponse)) for c in projected.content):
        return None
    texts = [c for c in projected.content if isinstance(c, TextContent)]
    return texts or None


def _preserved_at(conversation: Sequence[Message]) -> tuple[int, list[TextContent]] | None:
    """Where the prompt a compaction preserves is, and its text items."""
    for index in range(len(conversation) - 1, -1, -1):
        m = conversation[index]
        if not m.is_agent_visible or m.is_turn_context or m.role != "user":
            continue
        texts = _replayable_text(m)
        if texts is not None:
            return index, texts
    return None


def _preserved_copy(found: tuple[int, list[TextContent]] | None) -> tuple[int, Message] | None:
    """Where the preserved prompt is (`_preserved_at`), and a new agent-only copy of it."""
    if found is None:
        return None
    index, texts = found
    return index, Message(role="user", content=[t.model_copy() for t in texts],
                          metadata=MessageMetadata.agent_only())


def summarizer_input(conversation: Sequence[Message]) -> list[Message]:
    """What Goose's ``do_compact`` sends to `summarize`.

    Turn-context events are dropped (stale per-turn state), then agent-visible messages are
    projected to agent-audience content, and messages left empty are dropped.

    Args:
        conversation: The session's messages.

    Returns:
        The projected messages, in order.
    """
    # worked out once per list of recorded messages (the run memo's ``conversations``), from
    # each message's projection (``projected``): every cell of a session asks the same
    return list(memo().conversations.get(conversation, "summarizer input", _projected,
                                         conversation))


def _projected(conversation: Sequence[Message]) -> tuple[Message, ...]:
    out = []
    projected_memo = memo().projected
    for m in conversation:
        if m.is_turn_context or not m.is_agent_visible:
            continue
        projected = projected_memo.get(m, None, m.agent_projection)
        if projected.content:
            out.append(projected)
    return tuple(out)


def _archived_all(conversation: Sequence[Message]) -> tuple[Message, ...]:
    archived = memo().archived
    return tuple(archived.get(m, None, archived_copy, m) for m in conversation)


def _around_summary(conversation: Sequence[Message]
                    ) -> tuple[tuple[Message, ...], tuple[int, list[TextContent]] | None]:
    """What every compaction of `conversation` puts around its summary: the archived copies,
    and where the prompt it preserves is (found on the manual path too: one entry, checked
    once per compaction, for both)."""
    return _archived_all(conversation), _preserved_at(conversation)


def archived_copy(message: Message) -> Message:
    """`message` hidden from the agent (``agentVisible: false``), as a Goose JSON round trip
    with that flag set would read it: unknown keys kept, the flag written on export. The
    content items are shared, not copied (nothing edits a recorded message's items)."""
    written = {**message.metadata.to_goose(), "agentVisible": False}
    metadata = MessageMetadata.model_validate(written)
    metadata.__pydantic_fields_set__ = recorded_fields(written)
    copy = message.copy_with(metadata=metadata)
    copy._shape = {**(message._shape or {"id": True, "created": True}), "metadata": True}
    return copy


async def compact_messages(
    model: CompactionModel,
    conversation: Sequence[Message],
    *,
    manual_compact: bool = False,
    templates: Templates | None = None,
    estimator: TokenEstimator | None = None,
    **summarize_options: Unpack[SummarizeOptions],
) -> CompactionResult:
    """Compact a session the way Goose does.

    Args:
        model: The summarizer (Goose uses the main session model).
        conversation: The session's messages.
        manual_compact: True for a user-requested ``/compact``: no prompt is preserved and the
            manual continuation text is used.
        templates: Compaction templates (default: what Goose would use on this machine, i.e.
            overrides under ``<goose config>/prompts/`` else the built-ins).
        estimator: `TokenEstimator` for usage estimation and retained tokens (default: tiktoken).
        **summarize_options: Passed on to `summarize` (transcript style, removal, order).

    Returns:
        The `CompactionResult`.

    Raises:
        CompactionError: summarization failed (see `summarize`).
        TemplateError: the compaction template failed to render.
    """
    if estimator is None:
        estimator = default_estimator()
    if templates is None:
        templates = Templates.goose_overrides()

    summary = await summarize(model, estimator, templates, summarizer_input(conversation),
                              **summarize_options)
    new = compacted_conversation(conversation, summary.message, manual_compact=manual_compact)
    retained = context_tokens(new, estimator)
    return CompactionResult(conversation=new, usage=summary.usage,
                            retained_context_tokens=retained, summary=summary)


def compacted_conversation(conversation: Sequence[Message], summary: Message, *,
                           manual_compact: bool = False) -> list[Message]:
    """The conversation Goose builds around a summary (the second half of `compact_messages`).

    Any summary fits: the harness also puts a recorded agent's own summary here, so its
    retained tokens are counted exactly as Goose's would be at the same boundary.

    Args:
        conversation: The messages the summary replaces.
        summary: The summary message (shown to the agent only).
        manual_compact: A user-requested ``/compact``: no prompt is preserved and the manual
            continuation text is used.

    Returns:
        The archived originals, the summary, the continuation note and, on the automatic path,
        the latest text-only user prompt with its newest turn-context event.
    """
    # The archived copies are made once per list of recorded messages and shared by every
    # compaction of it in the run (the run memo's ``conversations``): read-only, like the
    # recorded messages they copy.
    archived, preserved_at = memo().conversations.get(conversation, "around the summary",
                                                      _around_summary, conversation)
    found = None if manual_compact else _preserved_copy(preserved_at)
    is_most_recent = found is not None and all(
        m.is_turn_context for m in conversation[found[0] + 1:])
    new: list[Message] = list(archived)
    new.append(summary.reread_with(MessageMetadata.agent_only()))  # as a JSON round trip
    if manual_compact:
        text = MANUAL_COMPACT_CONTINUATION_TEXT
    elif is_most_recent:
        text = CONVERSATION_CONTINUATION_TEXT
    else:
        text = TOOL_LOOP_CONTINUATION_TEXT
    continuation = Message.assistant(text, metadata=MessageMetadata.agent_only())
    new.append(continuation)

    if found is not None:
        index, preserved = found
        preserved.created = continuation.created
        new.append(preserved)
        carried = next((m for m in reversed(conversation[index + 1:])
                        if m.is_turn_context and m.is_agent_visible), None)
        if carried is not None:
            # Reloads order by (created, id): a created no older than anything else keeps it last.
            latest = max(m.created for m in new)
            new.append(carried.copy_with(id=None, created=max(carried.created, latest)))
    return new
