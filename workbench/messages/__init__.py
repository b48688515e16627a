"""Goose's message model in Python: `Message`, its content items and metadata.

Layers, smallest first: `_content` (the items, MCP blocks, unknown items kept whole),
`_message` (the message, its metadata, visibility and audience projection),
`_system` (system and internal messages carried in metadata, beside Goose's two roles).
`MessageMemo` (values derived from a message, computed once while it lives) is re-exported
from the memo layer, `workbench._memo`, where every cache the workbench keeps is found.
"""

from workbench._memo import MessageMemo
from workbench.messages._content import (
    ActionRequired,
    Annotations,
    CallToolResult,
    Content,
    DocumentContent,
    ErrorContent,
    FrontendToolRequest,
    ImageContent,
    McpBlock,
    RedactedThinkingContent,
    SystemNotification,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolCallResult,
    ToolConfirmationRequest,
    ToolRequest,
    ToolResponse,
    ToolResponseResult,
    UnknownContent,
    content_from_goose,
    strip_unicode_tags,
)
from workbench.messages._message import (
    Message,
    MessageMetadata,
    Role,
    messages_from_goose,
    recorded_fields,
)
from workbench.messages._system import (
    SYSTEM_METADATA_KEY,
    internal_message,
    is_internal_message,
    is_system_message,
    new_message_id,
    system_message,
)

__all__ = [
    "SYSTEM_METADATA_KEY", "ActionRequired", "Annotations", "CallToolResult", "Content", "DocumentContent",
    "ErrorContent", "FrontendToolRequest", "ImageContent", "McpBlock", "Message", "MessageMemo",
    "MessageMetadata", "RedactedThinkingContent", "Role", "SystemNotification", "TextContent",
    "ThinkingContent", "ToolCall", "ToolCallResult", "ToolConfirmationRequest", "ToolRequest",
    "ToolResponse", "ToolResponseResult", "UnknownContent", "content_from_goose",
    "internal_message", "is_internal_message", "is_system_message", "messages_from_goose",
    "new_message_id", "recorded_fields", "strip_unicode_tags", "system_message",
]
