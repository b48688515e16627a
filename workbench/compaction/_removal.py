"""The removal ladder's one step (the crate's ``filter_tool_responses`` in ``summarize.rs``): which
messages holding tool responses a retry drops at a percentage, "middle outwards" as Goose picks
them, or (``order="centred"``) by a V-prefix order; and the option beside it,
``removal="elide"``, that replaces the response text instead of dropping the message.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from workbench.messages import (
    CallToolResult,
    McpBlock,
    Message,
    ToolResponse,
    ToolResponseResult,
)

__all__ = ["ELIDED_TOOL_RESPONSE_TEXT", "REMOVAL_PERCENTAGES", "Removal", "RemovalOrder", "apply_removal",
           "elide_tool_responses", "filter_tool_responses", "removal_positions"]

REMOVAL_PERCENTAGES = (0, 10, 20, 50, 100)
"""Share of tool-response messages removed on each attempt, always counted from the original list."""
ELIDED_TOOL_RESPONSE_TEXT = (
    "[tool response elided: the conversation exceeded the summarizer's context window]"
)
"""What an elided tool response says instead of its output (``removal="elide"``)."""
RemovalOrder = Literal["goose", "centred"]
Removal = Literal["drop", "elide"]


def removal_positions(n: int, pct: int, order: RemovalOrder = "goose") -> list[int]:
    """Positions (indexes into the tool-response messages) removed at `pct`, in removal order.

    ``"goose"`` reproduces the baseline "middle outwards" walk with its quirks: it starts at
    ``n // 2 - 1`` (left bias), never reaches the last position when `n` is odd, and removes
    nothing at all when ``n == 1``. ``"centred"`` (V-prefix) sorts positions by their distance to
    ``(n - 1) / 2``, lower position first on ties, and reaches every position.

    Args:
        n: Number of messages holding tool responses.
        pct: Percentage to remove; 0 removes nothing, otherwise at least one is attempted.
        order: ``"goose"`` or ``"centred"``.

    Returns:
        Distinct positions in the order they are chosen.
    """
    if pct == 0 or n == 0:
        return []
    count = max(1, n * pct // 100)
    if order == "centred":
        # Twice the distance keeps the arithmetic exact for half-integer centres.
        ranked = sorted(range(n), key=lambda p: (abs(2 * p - (n - 1)), p))
        return ranked[:count]
    middle = n // 2
    chosen: list[int] = []
    for i in range(count):
        offset = i // 2
        if i % 2 == 0:
            if middle > offset:
                chosen.append(middle - offset - 1)
        elif middle + offset < n:
            chosen.append(middle + offset)
    return chosen


def _removed_indices(messages: Sequence[Message], pct: int, order: RemovalOrder) -> list[int]:
    tool_indices = [i for i, m in enumerate(messages) if m.has_tool_response()]
    return [tool_indices[p] for p in removal_positions(len(tool_indices), pct, order)]


def filter_tool_responses(messages: Sequence[Message], pct: int,
                          order: RemovalOrder = "goose") -> list[Message]:
    """Drop whole messages that hold tool responses, middle outwards (Goose's removal step).

    A dropped message loses everything, including text beside the response; the assistant's
    tool request stays, so the transcript keeps a ``tool_request(...)`` line with no response.

    Args:
        messages: The original conversation (never the output of an earlier step).
        pct: Percentage of tool-response messages to drop (see `removal_positions`).
        order: ``"goose"`` (baseline) or ``"centred"``.

    Returns:
        The kept messages in their original order.
    """
    return _dropped(messages, set(_removed_indices(messages, pct, order)))


def _dropped(messages: Sequence[Message], removed: set[int]) -> list[Message]:
    return [m for i, m in enumerate(messages) if i not in removed]


def _elided(response: ToolResponse) -> ToolResponse:
    block = McpBlock(type="text", text=ELIDED_TOOL_RESPONSE_TEXT)
    result = ToolResponseResult(status="success", value=CallToolResult(content=[block]))
    return response.model_copy(update={"tool_result": result})


def elide_tool_responses(messages: Sequence[Message], pct: int,
                         order: RemovalOrder = "goose") -> list[Message]:
    """Like `filter_tool_responses`, but keep the messages and replace each response's output.

    Request/response pairs stay valid and any text beside the response is kept.

    Args:
        messages: The original conversation.
        pct: Percentage of tool-response messages to elide.
        order: ``"goose"`` or ``"centred"``.

    Returns:
        A new list; chosen messages are copies whose tool responses read
        `ELIDED_TOOL_RESPONSE_TEXT`.
    """
    return _elided_at(messages, set(_removed_indices(messages, pct, order)))


def _elided_at(messages: Sequence[Message], removed: set[int]) -> list[Message]:
    out: list[Message] = []
    for i, m in enumerate(messages):
        if i in removed:
            content = [_elided(c) if isinstance(c, ToolResponse) else c for c in m.content]
            m = m.copy_with(content=content)
        out.append(m)
    return out


def apply_removal(messages: Sequence[Message], pct: int, order: RemovalOrder,
                   removal: Removal) -> tuple[list[Message], int, int]:
    """The attempt's messages, how many messages were dropped and how many responses removed."""
    if pct == 0:  # the first attempt sends everything (no scan for tool responses)
        return list(messages), 0, 0
    removed = _removed_indices(messages, pct, order)
    responses = sum(len(messages[i].tool_responses()) for i in removed)
    if removal == "elide":
        return _elided_at(messages, set(removed)), 0, responses
    return _dropped(messages, set(removed)), len(removed), responses
