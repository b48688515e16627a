"""Convert between the workbench's Goose messages and OpenAI-style chat payloads (litellm's lingua franca).

Outbound: ``(system, messages)`` becomes a list of chat messages with the system prompt first, text as
string content, tool requests as assistant ``tool_calls`` (JSON arguments), tool responses as
``role: tool`` messages, and thinking dropped (providers reject replayed reasoning without their
signatures, and the summarizer never needs it).

Inbound: a litellm ``ModelResponse`` becomes an assistant `Message` plus a `Usage`.
"""

from __future__ import annotations

import json
from typing import Any

from workbench.compaction._model import Usage
from workbench.messages import (
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolRequest,
    ToolResponse,
)

__all__ = ["to_openai_messages", "from_openai_response", "usage_from_openai"]


def _tool_call(item: ToolRequest) -> dict[str, Any]:
    return {
        "id": item.id,
        "type": "function",
        "function": {
            "name": item.name or "",
            "arguments": json.dumps(item.arguments or {}, ensure_ascii=False),
        },
    }


def _tool_result_text(item: ToolResponse) -> str:
    result = item.tool_result
    if not result.ok:
        return f"Error: {result.error or 'tool call failed'}"
    text = item.text()
    return f"Error: {text}" if result.is_error else text


def _content_value(texts: list[str], images: list[ImageContent]) -> str | list[dict[str, Any]]:
    """Plain string when there is only text (what every provider accepts), else content parts."""
    if not images:
        return "\n".join(texts)
    parts: list[dict[str, Any]] = [{"type": "text", "text": t} for t in texts]
    for img in images:
        url = f"data:{img.mime_type or 'image/png'};base64,{img.data}"
        parts.append({"type": "image_url", "image_url": {"url": url}})
    return parts


def _convert_one(msg: Message) -> list[dict[str, Any]]:
    texts: list[str] = []
    images: list[ImageContent] = []
    calls: list[dict[str, Any]] = []
    tool_msgs: list[dict[str, Any]] = []
    for item in msg.content:
        if isinstance(item, TextContent):
            texts.append(item.text)
        elif isinstance(item, ImageContent):
            images.append(item)
        elif isinstance(item, ToolRequest):
            if item.tool_call.value is None:
                # An invalid call has no name to put in tool_calls; keep what went wrong as text.
                texts.append(f"[invalid tool call {item.id}: {item.tool_call.error or ''}]")
            else:
                calls.append(_tool_call(item))
        elif isinstance(item, ToolResponse):
            tool_msgs.append(
                {"role": "tool", "tool_call_id": item.id, "content": _tool_result_text(item)}
            )
        # Thinking, notifications and unknown items are not sent.

    out: list[dict[str, Any]] = []
    if msg.role == "assistant":
        if texts or images or calls:
            entry: dict[str, Any] = {
                "role": "assistant",
                "content": _content_value(texts, images) if (texts or images) else None,
            }
            if calls:
                entry["tool_calls"] = calls
            out.append(entry)
        # Tool responses never sit in assistant messages in Goose; if one does, keep it after.
        out.extend(tool_msgs)
    else:
        # Tool results must directly follow the assistant turn that asked for them.
        out.extend(tool_msgs)
        if texts or images:
            out.append({"role": "user", "content": _content_value(texts, images)})
    return out


def to_openai_messages(system: str, messages: list[Message]) -> list[dict[str, Any]]:
    """Build OpenAI chat messages: the system prompt first, then each message in order.

    Args:
        system: The system prompt (omitted when empty).
        messages: The conversation to send.

    Returns:
        A list of ``{"role", "content", ...}`` dicts ready for ``litellm.acompletion``.
    """
    out: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": system})
    for msg in messages:
        out.extend(_convert_one(msg))
    return out


def _get(obj: Any, name: str) -> Any:
    """Attribute or key access: litellm objects are pydantic models that also behave like dicts."""
    if obj is None:
        return None
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


def _int_or_none(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def usage_from_openai(response: Any, model: str) -> Usage:
    """Read token counts, cache counts, finish reason and resolved model from a response.

    Args:
        response: A litellm ``ModelResponse`` (or a dict of the same shape).
        model: The model id the caller asked for (kept as `Usage.model`).

    Returns:
        The `Usage`; `cost` is left None for the caller to fill.
    """
    usage = _get(response, "usage")
    details = _get(usage, "prompt_tokens_details")
    cache_read = _int_or_none(_get(details, "cached_tokens"))
    if cache_read is None:
        cache_read = _int_or_none(_get(usage, "cache_read_input_tokens"))
    extra: dict[str, Any] = {}
    choices = _get(response, "choices") or []
    if choices:
        extra["finish_reason"] = _get(choices[0], "finish_reason")
    resolved = _get(response, "model")
    if resolved:
        extra["resolved_model"] = resolved
    fingerprint = _get(response, "system_fingerprint")
    if fingerprint:
        extra["system_fingerprint"] = fingerprint
    return Usage(
        model=model,
        input_tokens=_int_or_none(_get(usage, "prompt_tokens")),
        output_tokens=_int_or_none(_get(usage, "completion_tokens")),
        total_tokens=_int_or_none(_get(usage, "total_tokens")),
        cache_read_input_tokens=cache_read,
        cache_write_input_tokens=_int_or_none(_get(usage, "cache_creation_input_tokens")),
        extra=extra,
    )


def _parse_arguments(raw: Any) -> tuple[dict[str, Any] | None, str | None]:
    if raw is None or raw == "":
        return {}, None
    if isinstance(raw, dict):
        return raw, None
    try:
        value = json.loads(raw)
    except (TypeError, ValueError) as exc:
        return None, f"could not parse tool arguments as JSON: {exc}"
    return (value if isinstance(value, dict) else {"value": value}), None


def from_openai_response(response: Any, model: str) -> tuple[Message, Usage]:
    """Turn a chat completion into the assistant `Message` and its `Usage`.

    Reasoning text (``reasoning_content``) is kept as a thinking item, text as a text item, and
    tool calls as tool requests (a call whose arguments are not JSON becomes an invalid request).

    Args:
        response: A litellm ``ModelResponse``.
        model: The model id the caller asked for.
    """
    reply = Message.assistant()
    choices = _get(response, "choices") or []
    message = _get(choices[0], "message") if choices else None
    reasoning = _get(message, "reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        reply.content.append(ThinkingContent(thinking=reasoning))
    text = _get(message, "content")
    if isinstance(text, str) and text:
        reply.with_text(text)
    for call in _get(message, "tool_calls") or []:
        fn = _get(call, "function")
        args, error = _parse_arguments(_get(fn, "arguments"))
        reply.with_tool_request(_get(call, "id") or "", _get(fn, "name") or "", args, error=error)
    return reply, usage_from_openai(response, model)
