"""Token counting as Goose does it: tiktoken ``o200k_base`` plus Goose's chat overheads.

``count_chat_tokens`` adds 4 tokens per message and for a non-empty system prompt, 3 for the reply
primer, and per-tool schema overheads; only text, tool requests and tool-response text count
(images and other items count 0, as upstream).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, Protocol, runtime_checkable

from workbench._offline import ensure_offline
from workbench.messages import Message, TextContent, ToolRequest, ToolResponse

ENCODING = "o200k_base"
PER_MESSAGE_TOKENS = 4
SYSTEM_TOKENS = 4
REPLY_PRIMER_TOKENS = 3
TOOL_TOKENS = 7
TOOL_PROPERTIES_TOKENS = 3
PROPERTY_TOKENS = 3
ENUM_DISCOUNT = 3
ENUM_ITEM_TOKENS = 3
TOOLS_FOOTER_TOKENS = 12
_CACHE_SIZE = 65536


@runtime_checkable
class TokenEstimator(Protocol):
    """Counts tokens for usage estimation and retained-context reporting."""

    def count_text_tokens(self, text: str) -> int:
        """Tokens of one string."""
        ...

    def count_chat_tokens(self, system: str, messages: Sequence[Message],
                          tools: Sequence[dict[str, Any]] | None = None) -> int:
        """Tokens of a chat request: system prompt, messages, tool schemas, reply primer."""
        ...


def compact_json(value: Any) -> str:
    """JSON with no spaces, like serde_json's ``to_string``."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class TiktokenEstimator:
    """Goose's estimator over tiktoken, with a per-text LRU cache.

    Args:
        encoding: The tiktoken encoding name (Goose uses ``o200k_base`` for every model).
        cache_size: How many distinct texts to remember.
    """

    def __init__(self, encoding: str = ENCODING, cache_size: int = _CACHE_SIZE) -> None:
        ensure_offline()
        import tiktoken

        self.encoding_name = encoding
        self._enc = tiktoken.get_encoding(encoding)
        self._count = lru_cache(maxsize=cache_size)(self._uncached)

    def _uncached(self, text: str) -> int:
        return len(self._enc.encode(text, allowed_special="all"))

    def count_text_tokens(self, text: str) -> int:
        """Tokens of `text` (special tokens allowed, as Goose's counter)."""
        return self._count(text) if text else 0

    def content_tokens(self, message: Message) -> int:
        """Tokens of a message's countable items (no per-message overhead)."""
        total = 0
        for item in message.content:
            if isinstance(item, TextContent):
                total += self.count_text_tokens(item.text)
            elif isinstance(item, ToolRequest):
                if item.tool_call.value is not None:
                    call = item.tool_call.value
                    total += self.count_text_tokens(
                        f"{item.id}:{call.name}:{compact_json(call.arguments)}")
            elif isinstance(item, ToolResponse):
                total += self.count_text_tokens(item.text())
        return total

    def count_chat_tokens(self, system: str, messages: Sequence[Message],
                          tools: Sequence[dict[str, Any]] | None = None) -> int:
        """Goose's ``count_chat_tokens``: system + 4, per message 4 + content, tools, + 3."""
        total = 0
        if system:
            total += self.count_text_tokens(system) + SYSTEM_TOKENS
        for message in messages:
            total += PER_MESSAGE_TOKENS + self.content_tokens(message)
        if tools:
            total += self._tools_tokens(tools)
        return total + REPLY_PRIMER_TOKENS

    def _tools_tokens(self, tools: Sequence[dict[str, Any]]) -> int:
        total = 0
        for tool in tools:
            name = tool.get("name", "")
            description = str(tool.get("description", "")).rstrip(".")
            total += TOOL_TOKENS + self.count_text_tokens(f"{name}:{description}")
            props = (tool.get("input_schema") or tool.get("parameters") or {}).get("properties")
            if props:
                total += TOOL_PROPERTIES_TOKENS
                for pname, spec in props.items():
                    ptype = spec.get("type", "")
                    pdesc = str(spec.get("description", "")).rstrip(".")
                    total += PROPERTY_TOKENS + self.count_text_tokens(f"{pname}:{ptype}:{pdesc}")
                    if spec.get("enum"):
                        total -= ENUM_DISCOUNT
                        for item in spec["enum"]:
                            total += ENUM_ITEM_TOKENS + self.count_text_tokens(str(item))
        return total + TOOLS_FOOTER_TOKENS

    def count_context_tokens(self, messages: Sequence[Message]) -> int:
        """Goose's retained-context figure: per agent-visible message, ``count_chat_tokens("", [m])``."""
        return sum(self.count_chat_tokens("", [m]) for m in messages if m.is_agent_visible)


_default: TiktokenEstimator | None = None


def default_estimator() -> TiktokenEstimator:
    """A process-wide `TiktokenEstimator` (o200k_base), built on first use."""
    global _default
    if _default is None:
        _default = TiktokenEstimator()
    return _default


def context_tokens(messages: Sequence[Any], estimator: Any) -> int:
    """Agent-visible tokens of `messages` as Goose's retained-context figure counts them.

    Uses the estimator's ``count_context_tokens`` when it has one, else sums each visible
    message as a one-message chat.
    """
    counter = getattr(estimator, "count_context_tokens", None)
    if callable(counter):
        return int(counter(messages))
    return sum(estimator.count_chat_tokens("", [m]) for m in messages if m.is_agent_visible)
