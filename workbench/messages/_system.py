"""System and internal messages beside Goose's two roles.

Goose's message model knows only ``user`` and ``assistant``: its system prompt travels outside the
conversation. Other agents (awaken, for one) keep ``System`` messages inside the history (the agent
prompt, injected context, a stored summary) and mark some messages internal (sent to the model but
hidden from API consumers). Both are represented here through message metadata, so Goose's JSON
round trip stays exact for every message that does not use them:

* a system message is a ``user`` message whose metadata carries ``"system": true``;
* an internal message is agent-visible but not user-visible, which is exactly Goose's
  ``MessageMetadata.agent_only()`` (Goose's own summaries and continuation texts read as internal).
"""

from __future__ import annotations

import uuid
from typing import Literal, TypedDict, Unpack

from pydantic import JsonValue

from workbench.messages._message import Message, MessageMetadata


class MessageExtras(TypedDict, total=False):
    """The further `Message` fields `system_message` and `internal_message` pass on."""

    created: int
    extra: dict[str, JsonValue]


SYSTEM_METADATA_KEY = "system"
"""The metadata key that marks a message as a system message."""


def new_message_id() -> str:
    """A fresh random message id (every constructor here assigns one, as awaken does)."""
    return f"msg_{uuid.uuid4().hex}"


def system_message(text: str, *, internal: bool = False, id: str | None = None,
                   **kw: Unpack[MessageExtras]) -> Message:
    """A system message holding `text`.

    Args:
        text: The message text.
        internal: Mark it internal (agent-visible, hidden from the user), like awaken's
            ``Message::internal_system``.
        id: The message id; a fresh one when None.
        **kw: Further `Message` fields (``created``...).

    Returns:
        A ``user``-role carrier message flagged as system in its metadata.
    """
    meta = MessageMetadata.agent_only() if internal else MessageMetadata()
    setattr(meta, SYSTEM_METADATA_KEY, True)
    return Message.user(text, id=id or new_message_id(), metadata=meta, **kw)


def internal_message(role: Literal["user", "assistant", "system"], text: str, *,
                     id: str | None = None, **kw: Unpack[MessageExtras]) -> Message:
    """An internal message: sent to the model, hidden from the user.

    Args:
        role: ``user``, ``assistant`` or ``system``.
        text: The message text.
        id: The message id; a fresh one when None.
        **kw: Further `Message` fields.

    Returns:
        The message, with agent-only visibility.
    """
    if role == "system":
        return system_message(text, internal=True, id=id, **kw)
    factory = Message.user if role == "user" else Message.assistant
    return factory(text, id=id or new_message_id(), metadata=MessageMetadata.agent_only(), **kw)


def is_system_message(msg: Message) -> bool:
    """True when `msg` is a system message (flagged in its metadata)."""
    extra = msg.metadata.model_extra or {}
    return extra.get(SYSTEM_METADATA_KEY) is True


def is_internal_message(msg: Message) -> bool:
    """True when `msg` is internal: the agent sees it, the user does not."""
    return msg.metadata.agent_visible and not msg.metadata.user_visible
