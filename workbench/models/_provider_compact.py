"""The providers' own compaction endpoints, reached through litellm like every other call.

- Anthropic's server-side compaction: ``POST /v1/messages`` with the beta header
  ``compact-2026-01-12`` and ``context_management.edits = [{"type": "compact_20260112",
  "trigger": ...}]`` (``litellm.anthropic_interface.messages.acreate``). The reply starts with
  a ``compaction`` block holding the summary; the summarisation is billed in
  ``usage.iterations`` beside the top-level usage.
- OpenAI's Responses compaction: ``POST /v1/responses/compact`` with the conversation as
  ``input`` (``litellm.acompact_responses``). The reply's ``output`` is the new window: kept
  items and an opaque, encrypted ``compaction`` item.

Both take the `LiteLLMModel` a run was given (its model string, ``api_base`` and key), map
litellm's errors like every call (`map_litellm_errors`) and return the reply as plain data
with its `Usage`. The conversation is sent as text messages (tool calls and results written
as text), which every endpoint accepts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from workbench._json_types import JSONObject
from workbench.compaction._format import format_message_for_compacting
from workbench.compaction._model import Usage
from workbench.messages import Message
from workbench.models._errors_map import load_litellm, map_litellm_errors, missing_key_error
from workbench.models._litellm import LiteLLMModel

__all__ = ["ANTHROPIC_BETA", "ANTHROPIC_EDIT", "anthropic_compaction", "openai_compaction",
           "text_messages"]

ANTHROPIC_BETA = "compact-2026-01-12"
ANTHROPIC_EDIT = "compact_20260112"
REPLY_TOKENS = 1_024
"""``max_tokens`` of the Anthropic request (it pauses after compacting)."""
_CALL_KEYS = ("api_base", "api_key", "extra_headers", "timeout")


def text_messages(messages: Sequence[Message]) -> list[dict[str, str]]:
    """`messages` as alternating ``{"role", "content"}`` text messages (consecutive messages of
    one role joined; tool calls and results as transcript lines)."""
    out: list[dict[str, str]] = []
    for m in messages:
        role = "assistant" if m.role == "assistant" else "user"
        text = format_message_for_compacting(m).split(": ", 1)[-1]
        if out and out[-1]["role"] == role:
            out[-1]["content"] += "\n\n" + text
        else:
            out.append({"role": role, "content": text})
    return out


def _call_params(model: LiteLLMModel) -> dict[str, Any]:
    params = {k: v for k, v in getattr(model, "params", {}).items() if k in _CALL_KEYS}
    missing = missing_key_error(model.model, dict(getattr(model, "params", {})))
    if missing is not None:
        raise missing
    return params


def _secrets(params: dict[str, object]) -> list[str]:
    return [str(params["api_key"])] if params.get("api_key") else []


def _get(data: Any, key: str, default: Any = None) -> Any:
    if isinstance(data, dict):
        return data.get(key, default)
    return getattr(data, key, default)


async def anthropic_compaction(model: LiteLLMModel, system: str, messages: Sequence[Message], *,
                               trigger: int, instructions: str | None = None
                               ) -> tuple[str, list[dict[str, str]], Usage]:
    """Ask Anthropic's API to compact `messages` and stop after compacting.

    Args:
        model: A `LiteLLMModel` of an Anthropic model.
        system: The system prompt sent with the conversation.
        messages: The conversation.
        trigger: The edit's trigger in input tokens.
        instructions: Replaces the API's own summarisation prompt when given.

    Returns:
        ``(summary, kept, usage)``: the compaction block's text, the text blocks that follow
        it, and the usage (top-level plus every iteration).

    Raises:
        AuthenticationError, ContextLengthExceeded, ModelCallError...: as for every call.
    """
    load_litellm()  # the offline environment is set before litellm is first imported
    # litellm takes seconds to import: only where a provider is called, never on `--help`
    from litellm.anthropic_interface import messages as anthropic_messages

    edit: JSONObject = {"type": ANTHROPIC_EDIT,
                        "trigger": {"type": "input_tokens", "value": int(trigger)},
                        "pause_after_compaction": True}
    if instructions:
        edit["instructions"] = instructions
    params = _call_params(model)
    headers = {**dict(params.pop("extra_headers", None) or {}), "anthropic-beta": ANTHROPIC_BETA}
    with map_litellm_errors(model.model, secrets=_secrets(params),
                            api_base=params.get("api_base")):
        reply = await anthropic_messages.acreate(
            model=model.model, max_tokens=REPLY_TOKENS, system=system or None,
            messages=text_messages(messages), context_management={"edits": [edit]},
            extra_headers=headers, **params)
    blocks = list(_get(reply, "content", []) or [])
    summary = "\n".join(str(_get(b, "content") or _get(b, "text") or "") for b in blocks
                        if _get(b, "type") == "compaction")
    kept = [{"role": "assistant", "content": str(_get(b, "text") or "")} for b in blocks
            if _get(b, "type") == "text" and _get(b, "text")]
    usage = _get(reply, "usage", {}) or {}
    tin = int(_get(usage, "input_tokens", 0) or 0)
    tout = int(_get(usage, "output_tokens", 0) or 0)
    for step in _get(usage, "iterations", []) or []:
        tin += int(_get(step, "input_tokens", 0) or 0)
        tout += int(_get(step, "output_tokens", 0) or 0)
    return summary, kept, Usage(model=model.model, input_tokens=tin, output_tokens=tout,
                                total_tokens=tin + tout, extra={"endpoint": "messages"})


async def openai_compaction(model: LiteLLMModel, messages: Sequence[Message]
                            ) -> tuple[list[dict[str, str]], Usage]:
    """Ask OpenAI's Responses API to compact `messages`.

    Args:
        model: A `LiteLLMModel` of an OpenAI model.
        messages: The conversation.

    Returns:
        ``(items, usage)``: the new window, each item ``{"type", "role", "content"}`` (a
        ``compaction`` item's content is its encrypted text), and the usage.

    Raises:
        AuthenticationError, ContextLengthExceeded, ModelCallError...: as for every call.
    """
    litellm = load_litellm()
    params = _call_params(model)
    with map_litellm_errors(model.model, secrets=_secrets(params),
                            api_base=params.get("api_base")):
        reply = await litellm.acompact_responses(model=model.model,
                                                 input=text_messages(messages), **params)
    items = []
    for item in _get(reply, "output", []) or []:
        kind = str(_get(item, "type") or "")
        if kind == "compaction":
            items.append({"type": kind, "role": "user",
                          "content": str(_get(item, "encrypted_content") or "")})
        elif kind == "message":
            parts = _get(item, "content", []) or []
            text = parts if isinstance(parts, str) else "\n".join(
                str(_get(p, "text") or "") for p in parts)
            items.append({"type": kind, "role": str(_get(item, "role") or "user"),
                          "content": text})
    usage = _get(reply, "usage", {}) or {}
    tin = int(_get(usage, "input_tokens", 0) or 0)
    tout = int(_get(usage, "output_tokens", 0) or 0)
    return items, Usage(model=model.model, input_tokens=tin, output_tokens=tout,
                        total_tokens=tin + tout, extra={"endpoint": "responses/compact"})
