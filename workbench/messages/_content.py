"""Content items of a Goose message, read and written as Goose's camelCase JSON.

Every model keeps keys it does not know (``extra="allow"``) and writes them back, and a
``type`` the workbench does not know becomes `UnknownContent`, which holds the raw dict.
Serialization only emits keys that were read or set, so `from_goose` -> `to_goose` is exact.
"""

from __future__ import annotations

import re
from typing import Literal, Union

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator

from workbench._json_types import JSONObject, JSONValue
from workbench.messages._deepcopy import deepcopy_model

_TAG_CHARS = re.compile("[\U000e0000-\U000e007f]")


def strip_unicode_tags(text: str) -> str:
    """Remove Unicode tag characters (U+E0000..U+E007F), as Goose does on load."""
    return _TAG_CHARS.sub("", text) if text and not text.isascii() else text


_ALWAYS_WRITTEN: dict[type, tuple[str, ...]] = {}
"""Per item class, the tag fields it always writes (``type``, ``status``) when it has them."""


class _Item(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True, validate_assignment=False)

    __deepcopy__ = deepcopy_model

    def model_post_init(self, context: object, /) -> None:
        # Tags that Goose always writes must be emitted even when a caller left the default.
        cls = type(self)
        tags = _ALWAYS_WRITTEN.get(cls)
        if tags is None:  # once per class: pydantic's model_fields is slow to reach
            tags = _ALWAYS_WRITTEN[cls] = tuple(n for n in ("type", "status")
                                                if n in cls.model_fields)
        if tags:
            self.__pydantic_fields_set__.update(tags)

    def to_goose(self) -> JSONObject:
        """Dump as Goose JSON: camelCase aliases, only the keys that were read or set."""
        return self.model_dump(by_alias=True, exclude_unset=True, mode="json")


# ---- MCP content blocks inside tool results -------------------------------------------------


class Annotations(_Item):
    """MCP annotations: who sees the item and how important it is."""

    audience: list[str] | None = None
    priority: float | None = None


class McpBlock(_Item):
    """One MCP ``ContentBlock`` of a tool result (text, image, audio, resource, resource_link...).

    The block is kept whole: `text` is the only field the workbench reads directly.
    """

    type: str
    text: str | None = None
    annotations: Annotations | None = None


# ---- tool call / result envelopes ------------------------------------------------------------


class ToolCall(_Item):
    """A tool invocation: name plus arguments (an object, or None)."""

    name: str
    arguments: dict[str, JsonValue] | None = None

    @field_validator("arguments", mode="before")
    @classmethod
    def _wrap_scalar(cls, value: object) -> object:
        # Goose wraps arguments that are not an object as {"value": x}; null means none.
        if value is None or isinstance(value, dict):
            return value
        return {"value": value}


class ToolCallResult(_Item):
    """Goose's ``ToolResult<CallToolRequestParam>``: ``{status: success, value}`` or ``{status: error, error}``."""

    status: str = "success"
    value: ToolCall | None = None
    error: str | None = None


class CallToolResult(_Item):
    """The MCP ``CallToolResult`` object of a successful tool response."""

    content: list[McpBlock] = Field(default_factory=list)
    is_error: bool | None = Field(default=None, alias="isError")
    structured_content: JsonValue = Field(default=None, alias="structuredContent")


class ToolResponseResult(_Item):
    """``{status: success, value: CallToolResult | [blocks]}`` or ``{status: error, error}``.

    Legacy data stores a bare list of blocks as the value; it is kept in that shape.
    """

    status: str = "success"
    value: CallToolResult | list[McpBlock] | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        """True for a success result."""
        return self.status == "success" and self.error is None

    def blocks(self) -> list[McpBlock]:
        """The content blocks of a success result (either shape), else an empty list."""
        if not self.ok or self.value is None:
            return []
        return self.value if isinstance(self.value, list) else self.value.content

    @property
    def is_error(self) -> bool:
        """True when the call failed or the tool flagged its own result as an error."""
        if not self.ok:
            return True
        return isinstance(self.value, CallToolResult) and bool(self.value.is_error)


# ---- content items ---------------------------------------------------------------------------


class TextContent(_Item):
    """Plain text, optionally annotated with an audience."""

    type: Literal["text"] = "text"
    text: str
    annotations: Annotations | None = None


class ImageContent(_Item):
    """An inline image (base64)."""

    type: Literal["image"] = "image"
    data: str = ""
    mime_type: str = Field(default="", alias="mimeType")
    annotations: Annotations | None = None


class DocumentContent(_Item):
    """An inline document (newer message model)."""

    type: Literal["document"] = "document"
    data: str = ""
    mime_type: str = Field(default="", alias="mimeType")
    name: str | None = None


class ToolRequest(_Item):
    """The assistant asks for a tool call; `id` pairs it with its `ToolResponse`."""

    type: Literal["toolRequest"] = "toolRequest"
    id: str
    tool_call: ToolCallResult = Field(alias="toolCall")

    @property
    def name(self) -> str | None:
        """The tool name, or None for an invalid call."""
        return self.tool_call.value.name if self.tool_call.value is not None else None

    @property
    def arguments(self) -> dict[str, JsonValue] | None:
        """The call's arguments, or None."""
        return self.tool_call.value.arguments if self.tool_call.value is not None else None


class ToolResponse(_Item):
    """The result of a tool call; `id` matches the request."""

    type: Literal["toolResponse"] = "toolResponse"
    id: str
    tool_result: ToolResponseResult = Field(alias="toolResult")

    def text(self) -> str:
        """Text blocks of the result joined with newlines."""
        return "\n".join(b.text or "" for b in self.tool_result.blocks() if b.type == "text")


class ToolConfirmationRequest(_Item):
    """Goose asks the user to confirm a tool call."""

    type: Literal["toolConfirmationRequest"] = "toolConfirmationRequest"
    id: str
    tool_name: str = Field(alias="toolName")
    arguments: dict[str, JsonValue] | None = None
    prompt: str | None = None


class ActionRequired(_Item):
    """A pending user action; `data.actionType` names the variant (fields kept as read)."""

    type: Literal["actionRequired"] = "actionRequired"
    data: dict[str, JsonValue]


class FrontendToolRequest(_Item):
    """A tool call run by the front end (older message model)."""

    type: Literal["frontendToolRequest"] = "frontendToolRequest"
    id: str
    tool_call: ToolCallResult = Field(alias="toolCall")


class ThinkingContent(_Item):
    """Model reasoning with its opaque signature."""

    type: Literal["thinking"] = "thinking"
    thinking: str
    signature: str = ""


class RedactedThinkingContent(_Item):
    """Reasoning the provider returned encrypted."""

    type: Literal["redactedThinking"] = "redactedThinking"
    data: str = ""


class SystemNotification(_Item):
    """A notification shown inline (for example "Compaction complete")."""

    type: Literal["systemNotification"] = "systemNotification"
    notification_type: str = Field(default="inlineMessage", alias="notificationType")
    msg: str = ""


class ErrorContent(_Item):
    """An error recorded in the conversation (newer message model)."""

    type: Literal["error"] = "error"
    kind: str = "other"
    message: str = ""


class UnknownContent(BaseModel):
    """A content item of a type the workbench does not know: kept whole, written back unchanged."""

    model_config = ConfigDict(frozen=False)
    raw: dict[str, JsonValue]

    @property
    def type(self) -> str:
        """The item's ``type`` tag as recorded (may be empty)."""
        return str(self.raw.get("type", ""))

    def to_goose(self) -> JSONObject:
        """The raw dict, unchanged."""
        return dict(self.raw)


Content = Union[
    TextContent,
    ImageContent,
    DocumentContent,
    ToolRequest,
    ToolResponse,
    ToolConfirmationRequest,
    ActionRequired,
    FrontendToolRequest,
    ThinkingContent,
    RedactedThinkingContent,
    SystemNotification,
    ErrorContent,
    UnknownContent,
]

CONTENT_TYPES: dict[str, type[_Item]] = {
    "text": TextContent,
    "image": ImageContent,
    "document": DocumentContent,
    "toolRequest": ToolRequest,
    "toolResponse": ToolResponse,
    "toolConfirmationRequest": ToolConfirmationRequest,
    "actionRequired": ActionRequired,
    "frontendToolRequest": FrontendToolRequest,
    "thinking": ThinkingContent,
    "redactedThinking": RedactedThinkingContent,
    "systemNotification": SystemNotification,
    "error": ErrorContent,
}


def content_from_goose(item: JSONValue) -> Content | None:
    """Parse one Goose content item.

    Applies Goose's legacy load migration (``reasoning`` becomes ``thinking`` with an empty
    signature; a ``reasoning`` item without text is skipped, returning None). An unknown type, or
    a known type whose fields do not validate, becomes `UnknownContent` so nothing is lost.
    """
    if not isinstance(item, dict):
        return UnknownContent(raw={"value": item})
    kind = item.get("type")
    if kind == "reasoning":
        text = item.get("text")
        return ThinkingContent(thinking=text, signature="") if text else None
    cls = CONTENT_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        return UnknownContent(raw=item)
    try:
        parsed = cls.model_validate(item)
    except ValueError:
        return UnknownContent(raw=item)
    if isinstance(parsed, TextContent) and not parsed.text.isascii():
        stripped = strip_unicode_tags(parsed.text)
        if stripped != parsed.text:
            parsed.text = stripped
    return parsed  # type: ignore[return-value]


def content_to_goose(item: Content) -> JSONObject:
    """Dump one content item as Goose JSON."""
    return item.to_goose()
