"""How awaken's message model is read off a Goose `Message`.

awaken has four roles (System, User, Assistant, Tool); a Tool message answers one call id and an
assistant carries its calls in a separate ``tool_calls`` field, outside the content. Goose keeps
calls as ``toolRequest`` items of an assistant message and results as ``toolResponse`` items of a
user message. The mapping used throughout this package:

* **System**: a message flagged by `workbench.messages.system_message`.
* **Tool**: a (non-system) user message holding at least one tool response. A Goose message that
  answers a parallel batch at once stands for awaken's run of consecutive Tool messages.
* **User** / **Assistant**: everything else, by Goose role.
* **Internal**: agent-visible but hidden from the user (`workbench.messages.is_internal_message`).

The text of a message (awaken's ``Message::text``) is its text items plus, for a Tool message, the
text blocks of its results, joined with newlines; call names and arguments are never part of it.
"""

from __future__ import annotations

from typing import Literal

from workbench.messages import (
    Message,
    TextContent,
    ToolRequest,
    ToolResponse,
    is_internal_message,
    is_system_message,
)

AwakenRole = Literal["system", "user", "assistant", "tool"]

ROLE_LABELS: dict[str, str] = {
    "system": "System", "user": "User", "assistant": "Assistant", "tool": "Tool",
}


def role_of(msg: Message) -> AwakenRole:
    """awaken's role for a Goose message (see the module docstring)."""
    if is_system_message(msg):
        return "system"
    if msg.role == "assistant":
        return "assistant"
    if msg.has_tool_response():
        return "tool"
    return "user"


def is_tool(msg: Message) -> bool:
    """True for a Tool message (a user message that carries tool results)."""
    return role_of(msg) == "tool"


def is_internal(msg: Message) -> bool:
    """True for an internal message (awaken's ``Visibility::Internal``)."""
    return is_internal_message(msg)


def call_ids(msg: Message) -> list[str]:
    """The tool-call ids an assistant message issues (awaken's ``tool_calls``), in order."""
    if msg.role != "assistant":
        return []
    return [c.id for c in msg.content if isinstance(c, ToolRequest)]


def has_tool_calls(msg: Message) -> bool:
    """True when an assistant message issues at least one call."""
    return bool(call_ids(msg))


def result_ids(msg: Message) -> list[str]:
    """The call ids a Tool message answers, in order."""
    if not is_tool(msg):
        return []
    return [c.id for c in msg.content if isinstance(c, ToolResponse)]


def text_of(msg: Message) -> str:
    """awaken's ``Message::text``: text items and tool-result text, joined with newlines."""
    parts: list[str] = []
    for item in msg.content:
        if isinstance(item, TextContent):
            parts.append(item.text)
        elif isinstance(item, ToolResponse) and not is_system_message(msg):
            result = item.tool_result
            parts.append(item.text() if result.ok else (result.error or ""))
    return "\n".join(parts)
