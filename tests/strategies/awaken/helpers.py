"""Message builders in awaken's vocabulary for the awaken port's tests."""

from __future__ import annotations

from itertools import count

from workbench.messages import Message, internal_message, system_message

_ids = count(1)


def _id(id: str | None) -> str:
    return id or f"m{next(_ids)}"


def user(text: str, id: str | None = None) -> Message:
    """awaken's ``Message::user``."""
    return Message.user(text, id=_id(id))


def assistant(text: str = "", calls: tuple[str, ...] | list[str] = (),
              id: str | None = None) -> Message:
    """awaken's ``Message::assistant`` / ``assistant_with_tool_calls`` (empty text: no text item)."""
    msg = Message.assistant(text or None, id=_id(id))
    for call in calls:
        msg.with_tool_request(call, "tool", {})
    return msg


def tool(call_id: str, text: str, id: str | None = None) -> Message:
    """awaken's ``Message::tool``: one result answering `call_id`."""
    return Message.user(id=_id(id)).with_tool_response(call_id, text)


def system(text: str, id: str | None = None) -> Message:
    """awaken's ``Message::system``."""
    return system_message(text, id=_id(id))


def internal_system(text: str, id: str | None = None) -> Message:
    """awaken's ``Message::internal_system``."""
    return system_message(text, internal=True, id=_id(id))


def internal_user(text: str, id: str | None = None) -> Message:
    """An internal User message (a continuation prompt, an inbox notice)."""
    return internal_message("user", text, id=_id(id))


def texts(messages: list[Message]) -> list[str]:
    """The concatenated text of each message (tool results included)."""
    from workbench.strategies.awaken._view import text_of

    return [text_of(m) for m in messages]
