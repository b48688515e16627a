"""Render messages as the transcript the summarizer reads (the crate's ``format.rs``).

Two styles: ``"goose"`` (baseline: ``[role]: part\\npart``, one entry per message, multi-line text
not escaped, so a text can forge ``[assistant]:`` lines) and ``"jsonl"`` (V-jsonl: one compact
JSON object per message, ``{"role": ..., "content": [parts]}``, which cannot forge roles).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Literal

from workbench._memo import memo
from workbench.messages import (
    ActionRequired,
    Content,
    DocumentContent,
    ErrorContent,
    FrontendToolRequest,
    ImageContent,
    Message,
    SystemNotification,
    TextContent,
    ToolConfirmationRequest,
    ToolRequest,
    ToolResponse,
)

TranscriptStyle = Literal["goose", "jsonl"]
EMPTY_MESSAGE = "<empty message>"

_ACTION_LABELS: dict[object, tuple[str, str]] = {  # looked up by a recorded actionType
    "toolConfirmation": ("tool_confirmation", "toolName"),
    "elicitation": ("elicitation", "message"),
    "elicitationResponse": ("elicitation_response", "id"),
    "toolConfirmationResponse": ("tool_confirmation_response", "id"),
}


_SERDE = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
"""serde_json::to_string: compact separators, non-ASCII kept as is (one encoder for every
line: ``json.dumps`` with options would build one per call)."""


def _serde_json(value: object) -> str:
    return _SERDE.encode(value)


def format_content_item(item: Content) -> str | None:
    """One content item's transcript part, or None when the item is omitted."""
    if isinstance(item, TextContent):
        return item.text
    if isinstance(item, ImageContent):
        return f"[image: {item.mime_type}]"
    if isinstance(item, DocumentContent):
        if item.name:
            return f"[document: {item.name} ({item.mime_type})]"
        return f"[document: {item.mime_type}]"
    if isinstance(item, ToolRequest):
        call = item.tool_call
        if call.status == "success" and call.value is not None:
            try:
                args = _serde_json(call.value.arguments)
            except (TypeError, ValueError):
                args = "<<invalid json>>"
            return f"tool_request({call.value.name}): {args}"
        return "tool_request: [error]"
    if isinstance(item, ToolResponse):
        result = item.tool_result
        if not result.ok:
            return "tool_response: [error]"
        texts = [b.text or "" for b in result.blocks() if b.type == "text"]
        if not texts:
            return "tool_response: [non-text content]"
        return "tool_response: " + "\n".join(texts)
    if isinstance(item, ToolConfirmationRequest):
        return f"tool_confirmation_request: {item.tool_name}"
    if isinstance(item, ActionRequired):
        kind = item.data.get("actionType", "")
        label, key = _ACTION_LABELS.get(kind, (None, None))
        if label is None or key is None:
            return None
        return f"action_required({label}): {item.data.get(key, '')}"
    if isinstance(item, FrontendToolRequest):
        call = item.tool_call
        if call.status == "success" and call.value is not None:
            return f"frontend_tool_request: {call.value.name}"
        return "frontend_tool_request: [error]"
    if isinstance(item, SystemNotification):
        return f"system_notification: {item.msg}"
    if isinstance(item, ErrorContent):
        return f"error: {item.message}"
    # thinking, redacted thinking and unknown items are left out of the transcript
    return None


def format_message_for_compacting(msg: Message, style: TranscriptStyle = "goose") -> str:
    """Render one message for the summarizer's transcript.

    Args:
        msg: The message.
        style: ``"goose"`` (baseline) or ``"jsonl"`` (one JSON object per line).

    Returns:
        ``"[role]: parts"`` (``<empty message>`` when nothing renders), or one JSON line.
    """
    parts = [p for p in (format_content_item(c) for c in msg.content) if p is not None]
    if style == "jsonl":
        return _serde_json({"role": msg.role, "content": parts})
    if not parts:
        return f"[{msg.role}]: {EMPTY_MESSAGE}"
    return f"[{msg.role}]: " + "\n".join(parts)


def transcript_lines(messages: Iterable[Message],
                     style: TranscriptStyle = "goose") -> list[str]:
    """Each message's transcript line, formatted once per message and style while it lives
    (the run memo's ``formatted``, `workbench._memo`); a list of messages asked for again
    (every cell of a session) is looked up once (``conversations``)."""
    listed = messages if isinstance(messages, (list, tuple)) else list(messages)
    return list(memo().conversations.get(listed, ("transcript lines", style), _lines, listed,
                                         style))


def _lines(messages: Sequence[Message], style: TranscriptStyle) -> tuple[str, ...]:
    get = memo().formatted.get
    return tuple(get(m, style, format_message_for_compacting, m, style) for m in messages)


def format_transcript(messages: Iterable[Message], style: TranscriptStyle = "goose") -> str:
    """The whole transcript: each message's line (`transcript_lines`), joined with newlines."""
    return "\n".join(transcript_lines(messages, style))
