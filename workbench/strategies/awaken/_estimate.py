"""awaken's token estimate: UTF-8 bytes / 4 plus 4 per message, and its tool-descriptor figure.

Mirrors ``estimate_message_tokens``, ``estimate_tokens`` and ``estimate_tool_tokens`` of
``awaken-runtime-contract/src/contract/transform.rs``. The same estimate drives truncation, the
compaction trigger, ``pre_tokens``/``post_tokens`` and the savings ratio.

Every function that counts takes an optional ``count`` (a `MessageCounter`); None means awaken's
heuristic. `tiktoken_counter` is the option that counts with ``workbench.tokens`` instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from workbench.messages import (
    Message,
    TextContent,
    ThinkingContent,
    ToolRequest,
    ToolResponse,
)
from workbench.tokens import TokenEstimator, compact_json, default_estimator

MESSAGE_OVERHEAD_TOKENS = 4
"""awaken's role overhead per message."""
BYTES_PER_TOKEN = 4
NON_TEXT_BLOCK_CHARS = 50
"""A non-text block (image, document, ...) counts as this many characters."""
TOOL_DESCRIPTOR_OVERHEAD = 10
UNSERIALIZABLE_SCHEMA_CHARS = 100

MessageCounter = Callable[[Message], int]
"""Counts one message's tokens; every budget decision in this package goes through one."""


def _nbytes(text: str) -> int:
    return len(text.encode("utf-8"))


def content_chars(msg: Message) -> int:
    """The "characters" awaken counts for a message: text and thinking bytes, 50 per other block.

    Tool calls are not content in awaken, so a Goose tool request counts 0 (their arguments are
    invisible to the estimate). A tool result counts its text blocks in bytes (an error result its
    error text) and 50 for each non-text block.
    """
    total = 0
    for item in msg.content:
        if isinstance(item, TextContent):
            total += _nbytes(item.text)
        elif isinstance(item, ThinkingContent):
            total += _nbytes(item.thinking)
        elif isinstance(item, ToolRequest):
            continue
        elif isinstance(item, ToolResponse):
            result = item.tool_result
            if not result.ok:
                total += _nbytes(result.error or "")
                continue
            for block in result.blocks():
                if block.type == "text":
                    total += _nbytes(block.text or "")
                else:
                    total += NON_TEXT_BLOCK_CHARS
        else:
            total += NON_TEXT_BLOCK_CHARS
    return total


def estimate_message_tokens(msg: Message) -> int:
    """awaken's estimate for one message: ``4 + content_chars // 4`` (bytes, not characters)."""
    return MESSAGE_OVERHEAD_TOKENS + content_chars(msg) // BYTES_PER_TOKEN


def estimate_tokens(messages: Iterable[Message], count: MessageCounter | None = None) -> int:
    """The estimate of a list of messages: the sum of the per-message estimates.

    Args:
        messages: The messages.
        count: Per-message counter; None means awaken's byte heuristic.
    """
    counter = count or estimate_message_tokens
    return sum(counter(m) for m in messages)


def _schema_of(tool: Mapping[str, object]) -> object:
    for key in ("parameters", "input_schema", "inputSchema"):
        if key in tool:
            return tool[key]
    return {}


def estimate_tool_tokens(tools: Sequence[Mapping[str, object]] | None) -> int:
    """awaken's figure for tool descriptors actually sent.

    Per descriptor: name bytes + description bytes (not divided by 4) + compact schema JSON
    bytes // 4 + 10. The description therefore weighs about four times as much as message text.

    Args:
        tools: Descriptors as dicts with ``name``, ``description`` and ``parameters`` (or
            ``input_schema``/``inputSchema``).
    """
    total = 0
    for tool in tools or ():
        try:
            schema_chars = _nbytes(compact_json(_schema_of(tool)))
        except (TypeError, ValueError):
            schema_chars = UNSERIALIZABLE_SCHEMA_CHARS
        total += (_nbytes(str(tool.get("name", ""))) + _nbytes(str(tool.get("description", "")))
                  + schema_chars // BYTES_PER_TOKEN + TOOL_DESCRIPTOR_OVERHEAD)
    return total


def tiktoken_counter(estimator: TokenEstimator | None = None) -> MessageCounter:
    """The tokenizer option: count each message as ``workbench.tokens`` does (Goose's rules).

    The result is 4 per message plus the tiktoken count of its text, tool requests (name and
    arguments, which awaken's heuristic ignores) and tool-result text.

    Args:
        estimator: A `TokenEstimator`; None uses the process-wide tiktoken one.
    """
    if estimator is None:
        estimator = default_estimator()
    est = estimator
    empty = est.count_chat_tokens("", [])  # the reply primer, counted once per request

    def count(msg: Message) -> int:
        return est.count_chat_tokens("", [msg]) - empty

    return count


def memo_counter(count: MessageCounter | None = None) -> MessageCounter:
    """A counter that remembers each message object's count (for replays that re-count).

    The cache is keyed by object identity and keeps the message alive, so an id is never reused
    for another message; messages must not be mutated after they are first counted.

    Args:
        count: The counter to remember; None means awaken's heuristic.
    """
    base = count or estimate_message_tokens
    seen: dict[int, tuple[Message, int]] = {}

    def counted(msg: Message) -> int:
        hit = seen.get(id(msg))
        if hit is not None and hit[0] is msg:
            return hit[1]
        tokens = base(msg)
        seen[id(msg)] = (msg, tokens)
        return tokens

    return counted
