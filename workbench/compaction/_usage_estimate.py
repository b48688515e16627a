"""Fill in token counts a provider did not report (the crate's ``ensure_usage_tokens``).

Output tokens are estimated from each response item's *Display* form (Goose's ``fmt::Display``
for ``MessageContent``), joined with single spaces, so thinking and tool calls count too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from workbench.compaction._model import Usage
from workbench.messages import (
    ActionRequired,
    Content,
    DocumentContent,
    ErrorContent,
    FrontendToolRequest,
    ImageContent,
    Message,
    RedactedThinkingContent,
    SystemNotification,
    TextContent,
    ThinkingContent,
    ToolConfirmationRequest,
    ToolRequest,
    ToolResponse,
    UnknownContent,
)
from workbench.tokens import TokenEstimator

__all__ = ["display_content", "ensure_usage_tokens"]


def _pretty(value: object) -> str:
    # serde_json::to_string_pretty: two-space indent, ": " between key and value.
    return json.dumps(value, indent=2, ensure_ascii=False)


def _display_action(data: Mapping[str, object]) -> str:
    kind = data.get("actionType")
    if kind == "toolConfirmation":
        return f"[ActionRequired: ToolConfirmation for {data.get('toolName', '')}]"
    if kind == "elicitation":
        return f"[ActionRequired: Elicitation - {data.get('message', '')}]"
    if kind == "elicitationResponse":
        return f"[ActionRequired: ElicitationResponse for {data.get('id', '')}]"
    if kind == "toolConfirmationResponse":
        return f"[ActionRequired: ToolConfirmationResponse for {data.get('id', '')}]"
    return f"[ActionRequired: {kind}]"


def display_content(item: Content) -> str:
    """Goose's Display form of one content item (used only to estimate output tokens).

    Args:
        item: A content item of a model response.

    Returns:
        The raw text for text items, otherwise a bracketed description such as
        ``[Thinking: ...]`` or ``[ToolRequest: Tool: name, Args: {...}]``.
    """
    if isinstance(item, TextContent):
        return item.text
    if isinstance(item, ImageContent):
        return f"[Image: {item.mime_type}]"
    if isinstance(item, DocumentContent):
        if item.name:
            return f"[Document: {item.name} ({item.mime_type})]"
        return f"[Document: {item.mime_type}]"
    if isinstance(item, ToolRequest):
        call = item.tool_call
        if call.status == "success" and call.value is not None:
            return f"[ToolRequest: Tool: {call.value.name}, Args: {_pretty(call.value.arguments)}]"
        return f"[ToolRequest: Invalid tool call: {call.error or ''}]"
    if isinstance(item, ToolResponse):
        result = item.tool_result
        if not result.ok:
            return f"[ToolResponse: Error: {result.error or ''}]"
        return f"[ToolResponse: {len(result.blocks())} content item(s)]"
    if isinstance(item, ToolConfirmationRequest):
        return f"[ToolConfirmationRequest: {item.tool_name}]"
    if isinstance(item, ActionRequired):
        return _display_action(item.data)
    if isinstance(item, FrontendToolRequest):
        # Not in the baseline Display table (older message model); described like a tool call.
        value = item.tool_call.value
        return f"[FrontendToolRequest: {value.name if value is not None else 'error'}]"
    if isinstance(item, ThinkingContent):
        return f"[Thinking: {item.thinking}]"
    if isinstance(item, RedactedThinkingContent):
        return "[RedactedThinking]"
    if isinstance(item, SystemNotification):
        return f"[SystemNotification: {item.msg}]"
    if isinstance(item, ErrorContent):
        return f"[Error: {item.message}]"
    if isinstance(item, UnknownContent):
        return f"[{item.type or 'unknown'}]"
    return ""


def ensure_usage_tokens(usage: Usage, estimator: TokenEstimator, system_prompt: str,
                        request: list[Message], response: Message) -> Usage:
    """Estimate missing token counts, then recompute the total.

    Called on the **raw** response, before any structured rewrite, so the figures reflect what
    the provider billed.

    Args:
        usage: Usage as the provider reported it (not modified).
        estimator: A `TokenEstimator`.
        system_prompt: The system prompt sent.
        request: The messages sent.
        response: The raw model response.

    Returns:
        A copy where a missing ``input_tokens`` is ``count_chat_tokens(system_prompt, request)``,
        a missing ``output_tokens`` is the tokens of the response items' Display forms joined
        with " ", and, when both are known, ``total_tokens = input + output`` (overwriting any
        total the provider sent).
    """
    out = usage.copy()
    if out.input_tokens is None:
        out.input_tokens = estimator.count_chat_tokens(system_prompt, request)
    if out.output_tokens is None:
        text = " ".join(display_content(c) for c in response.content)
        out.output_tokens = estimator.count_text_tokens(text)
    if out.input_tokens is not None and out.output_tokens is not None:
        out.total_tokens = out.input_tokens + out.output_tokens
    return out
