"""Goose's message model in Python: `Message`, its content items and metadata.

Layers, smallest first: `_content` (the items, MCP blocks, unknown items kept whole),
`_message` (the message, its metadata, visibility and audience projection).
"""

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
from workbench.messages._message import Message, MessageMetadata, Role, messages_from_goose

__all__ = [
    "ActionRequired", "Annotations", "CallToolResult", "Content", "DocumentContent",
    "ErrorContent", "FrontendToolRequest", "ImageContent", "McpBlock", "Message",
    "MessageMetadata", "RedactedThinkingContent", "Role", "SystemNotification", "TextContent",
    "ThinkingContent", "ToolCall", "ToolCallResult", "ToolConfirmationRequest", "ToolRequest",
    "ToolResponse", "ToolResponseResult", "UnknownContent", "content_from_goose",
    "messages_from_goose", "strip_unicode_tags",
]
