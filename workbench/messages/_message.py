"""The Goose-compatible `Message`: role, creation time, content items and visibility metadata."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Literal, TypedDict, Unpack

from pydantic import BaseModel, ConfigDict, Field, JsonValue, PrivateAttr, field_validator
from pydantic_core import PydanticUndefined

from workbench._json_types import JSONObject
from workbench.messages._content import (
    Annotations,
    CallToolResult,
    Content,
    McpBlock,
    TextContent,
    ToolCall,
    ToolCallResult,
    ToolRequest,
    ToolResponse,
    ToolResponseResult,
    UnknownContent,
    content_from_goose,
)
from workbench.messages._deepcopy import deepcopy_model

Role = Literal["user", "assistant"]


class MessageMetadata(BaseModel):
    """Goose's ``MessageMetadata``: visibility flags plus optional extras kept as read.

    ``userVisible`` and ``agentVisible`` default to true when missing; unknown keys
    (``inference``, ``usage``, ``operations``...) are kept and written back.
    """

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    user_visible: bool = Field(default=True, alias="userVisible")
    agent_visible: bool = Field(default=True, alias="agentVisible")
    turn_context: bool | None = Field(default=None, alias="turnContext")

    __deepcopy__ = deepcopy_model

    def model_post_init(self, context: object, /) -> None:
        self.__pydantic_fields_set__.update({"user_visible", "agent_visible"})

    @classmethod
    def agent_only(cls) -> MessageMetadata:
        """Seen by the agent, hidden from the user (summaries, continuations, replays)."""
        return cls(user_visible=False, agent_visible=True)

    @classmethod
    def user_only(cls) -> MessageMetadata:
        """Shown to the user, hidden from the agent (archived history)."""
        return cls(user_visible=True, agent_visible=False)

    def to_goose(self) -> JSONObject:
        """Dump as Goose JSON (camelCase, only keys read or set)."""
        return self.model_dump(by_alias=True, exclude_unset=True, mode="json")


def _now() -> int:
    """A new message's ``created``: the current time in whole seconds."""
    return int(time.time())


class MessageFields(TypedDict, total=False):
    """The `Message` fields a constructor (`Message.user`, `system_message`...) passes on."""

    created: int
    id: str | None
    metadata: MessageMetadata
    extra: dict[str, JsonValue]


def recorded_fields(meta: Mapping[str, object]) -> set[str]:
    """The metadata fields a recorded ``metadata`` dict set (which of the visibility flags it
    wrote, and its other keys), so they are written back exactly."""
    return set(f for f, info in MessageMetadata.model_fields.items()
               if (info.alias or f) in meta) | {
        k for k in meta if k not in {"userVisible", "agentVisible", "turnContext"}}


class Message(BaseModel):
    """One conversation message in Goose's message model.

    `from_goose` / `to_goose` read and write Goose's JSON (legacy JSONL lines, session export,
    SQLite ``content_json``/``metadata_json`` columns) without losing unknown keys or items.
    """

    model_config = ConfigDict(populate_by_name=True, arbitrary_types_allowed=True)

    role: Role
    content: list[Content] = Field(default_factory=list)
    created: int = Field(default_factory=_now)
    id: str | None = None
    metadata: MessageMetadata = Field(default_factory=MessageMetadata)
    extra: dict[str, JsonValue] = Field(default_factory=dict, exclude=True)
    """Top-level keys of the recorded JSON the model does not know; written back by `to_goose`."""
    _shape: dict[str, bool] | None = PrivateAttr(default=None)

    __deepcopy__ = deepcopy_model

    @field_validator("content", mode="before")
    @classmethod
    def _parse_content(cls, value: object) -> object:
        if isinstance(value, list):
            out: list[object] = []
            for item in value:
                if isinstance(item, dict):
                    parsed = content_from_goose(item)
                    if parsed is not None:
                        out.append(parsed)
                else:
                    out.append(item)
            return out
        return value

    # ---- constructors ------------------------------------------------------------------

    @classmethod
    def user(cls, text: str | None = None, **kw: Unpack[MessageFields]) -> Message:
        """A user message, with one text item when `text` is given."""
        return cls(role="user", content=[TextContent(text=text)] if text is not None else [], **kw)

    @classmethod
    def assistant(cls, text: str | None = None, **kw: Unpack[MessageFields]) -> Message:
        """An assistant message, with one text item when `text` is given."""
        return cls(role="assistant",
                   content=[TextContent(text=text)] if text is not None else [], **kw)

    def with_text(self, text: str, audience: list[str] | None = None) -> Message:
        """Append a text item (optionally for one audience) and return self."""
        ann = Annotations(audience=audience) if audience is not None else None
        item = TextContent(text=text, annotations=ann) if ann else TextContent(text=text)
        self.content.append(item)
        return self

    def with_tool_request(self, id: str, name: str, arguments: dict[str, JsonValue] | None = None,
                          error: str | None = None) -> Message:
        """Append a tool request (an invalid call when `error` is given) and return self."""
        if error is not None:
            call = ToolCallResult(status="error", error=error)
        else:
            call = ToolCallResult(status="success", value=ToolCall(name=name, arguments=arguments))
        self.content.append(ToolRequest(id=id, tool_call=call))
        return self

    def with_tool_response(self, id: str, text: str | None = None, *, is_error: bool = False,
                           error: str | None = None) -> Message:
        """Append a tool response: text output (flagged `is_error`) or a failed call (`error`)."""
        if error is not None:
            result = ToolResponseResult(status="error", error=error)
        else:
            blocks = [McpBlock(type="text", text=text)] if text is not None else []
            value = CallToolResult(content=blocks, is_error=is_error)
            result = ToolResponseResult(status="success", value=value)
        self.content.append(ToolResponse(id=id, tool_result=result))
        return self

    # ---- Goose JSON ----------------------------------------------------------------------

    @classmethod
    def from_goose(cls, d: JSONObject) -> Message:
        """Read a Goose message dict (``{id, role, created, content, metadata}``)."""
        known = {"id", "role", "created", "content", "metadata"}
        kwargs: dict[str, object] = {
            "role": d["role"],
            "content": d.get("content") or [],
            "extra": {k: v for k, v in d.items() if k not in known},
        }
        if "created" in d:
            kwargs["created"] = d["created"]
        if "id" in d:
            kwargs["id"] = d["id"]
        msg = cls(**kwargs)
        meta = d.get("metadata")
        if isinstance(meta, dict):
            msg.metadata = MessageMetadata.model_validate(meta)
            # Remember which visibility flags were recorded so they round-trip exactly.
            msg.metadata.__pydantic_fields_set__ = recorded_fields(meta)
        msg._shape = {k: (k in d) for k in ("id", "created", "metadata")}
        return msg

    def to_goose(self) -> JSONObject:
        """Write as a Goose message dict; a message read by `from_goose` comes back unchanged."""
        shape = self._shape or {"id": True, "created": True, "metadata": True}
        out: JSONObject = {}
        if shape.get("id"):
            out["id"] = self.id
        out["role"] = self.role
        if shape.get("created"):
            out["created"] = self.created
        out["content"] = [c.to_goose() for c in self.content]
        if shape.get("metadata"):
            out["metadata"] = self.metadata.to_goose()
        out.update(self.extra)
        return out

    def reread_with(self, metadata: MessageMetadata) -> Message:
        """What `from_goose` reads back from this message's `to_goose` with `metadata` written
        in its place (a compaction's summary, made agent-only so): the same message, built
        without validating every field again. The items and the metadata still make the
        round trip, so what reading does to them (Goose's load migration, the tags stripped
        from text) is done as before."""
        if self.extra:  # keys written beside the fields: read back by `from_goose` itself
            data = self.to_goose()
            data["metadata"] = metadata.to_goose()
            return Message.from_goose(data)
        shape = self._shape or {"id": True, "created": True, "metadata": True}
        meta = metadata.to_goose()
        read = MessageMetadata.model_validate(meta)
        read.__pydantic_fields_set__ = recorded_fields(meta)
        has_id, has_created = bool(shape.get("id")), bool(shape.get("created"))
        given = {"role", "content", "extra", "metadata"}
        given |= {"id"} if has_id else set()
        given |= {"created"} if has_created else set()
        new = Message.model_construct(  # every value as `from_goose` validates it
            given, role=self.role, content=_read_items([c.to_goose() for c in self.content]),
            extra={}, metadata=read, created=self.created if has_created else _now(),
            id=self.id if has_id else None)
        private = new.__pydantic_private__
        assert private is not None  # a model with private attributes always has the dict
        private["_shape"] = {"id": has_id, "created": has_created, "metadata": True}
        return new

    # ---- views -----------------------------------------------------------------------------

    def concat_text(self) -> str:
        """Join only the text items with newlines (Goose's ``as_concat_text``)."""
        return "\n".join(c.text for c in self.content if isinstance(c, TextContent))

    @property
    def is_agent_visible(self) -> bool:
        """True when the agent sees this message."""
        return self.metadata.agent_visible

    @property
    def is_user_visible(self) -> bool:
        """True when the user sees this message."""
        return self.metadata.user_visible

    @property
    def is_turn_context(self) -> bool:
        """True for a per-turn ``<turn-context>`` event."""
        return bool(self.metadata.turn_context)

    def tool_requests(self) -> list[ToolRequest]:
        """The tool request items of this message."""
        return [c for c in self.content if isinstance(c, ToolRequest)]

    def tool_responses(self) -> list[ToolResponse]:
        """The tool response items of this message."""
        return [c for c in self.content if isinstance(c, ToolResponse)]

    def has_tool_response(self) -> bool:
        """True when any item is a tool response."""
        for c in self.content:  # a loop, not any() over a generator: asked of every message
            if isinstance(c, ToolResponse):  # of a list at each removal step
                return True
        return False

    def unknown_items(self) -> list[UnknownContent]:
        """Items kept as unknown content."""
        return [c for c in self.content if isinstance(c, UnknownContent)]

    def agent_projection(self) -> Message:
        """A copy holding only what the assistant audience sees.

        Text and tool-result blocks annotated for an audience that excludes ``assistant`` are
        removed (Goose projects content for the agent before summarizing).
        """
        def visible(ann: Annotations | None) -> bool:
            return ann is None or ann.audience is None or "assistant" in ann.audience

        items: list[Content] = []
        for c in self.content:
            if isinstance(c, TextContent):
                if visible(c.annotations):
                    items.append(c)
            elif isinstance(c, ToolResponse) and c.tool_result.ok and c.tool_result.value is not None:
                blocks = c.tool_result.blocks()
                kept = [b for b in blocks if visible(b.annotations)]
                if len(kept) == len(blocks):
                    items.append(c)
                else:
                    value = c.tool_result.value
                    new_value: CallToolResult | list[McpBlock] = (
                        kept if isinstance(value, list)
                        else value.model_copy(update={"content": kept}))
                    result = c.tool_result.model_copy(update={"value": new_value})
                    items.append(c.model_copy(update={"tool_result": result}))
            else:
                items.append(c)
        return self.model_copy(update={"content": items})

    def copy_with(self, **update: object) -> Message:
        """A shallow copy with fields replaced (keeps the recorded JSON shape)."""
        if update:
            new = self.model_copy(update=update)
            private = new.__pydantic_private__
            if private is not None and private.get("_shape"):
                # its own dict, written straight in (pydantic's setattr is the slow part)
                private["_shape"] = dict(private["_shape"])
            return new
        # What pydantic's __copy__ does, without its generic copy() dispatch: half the time,
        # and every compaction archives each recorded message this way.
        new = object.__new__(type(self))
        _set = object.__setattr__
        _set(new, "__dict__", self.__dict__.copy())
        extra = self.__pydantic_extra__
        _set(new, "__pydantic_extra__", None if extra is None else dict(extra))
        _set(new, "__pydantic_fields_set__", set(self.__pydantic_fields_set__))
        private = getattr(self, "__pydantic_private__", None)
        if private is not None:
            private = {k: v for k, v in private.items() if v is not PydanticUndefined}
            if private.get("_shape"):
                private["_shape"] = dict(private["_shape"])
        _set(new, "__pydantic_private__", private)
        return new


def _read_items(items: list[JSONObject]) -> list[Content]:
    """Goose content items as `Message`'s content validator reads them (one that reads as
    nothing, a ``reasoning`` item without text, is left out)."""
    out: list[Content] = []
    for item in items:
        parsed = content_from_goose(item)
        if parsed is not None:
            out.append(parsed)
    return out


def messages_from_goose(items: Iterable[JSONObject]) -> list[Message]:
    """Read a list of Goose message dicts."""
    return [Message.from_goose(d) for d in items]
