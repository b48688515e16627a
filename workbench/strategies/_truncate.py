"""``truncate``: truncation only. The oldest messages are dropped until the newest ones fit a share
of the window; no summary, no model call.

What is kept is a contiguous suffix of the agent-visible history (the walk stops at the first
message that does not fit). A kept suffix never starts with tool outputs whose request was
dropped: the cut moves forward past them, so every kept output still has its call.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from workbench.messages import Message
from workbench.strategies._base import (
    CompactionRequest,
    Strategy,
    StrategyResult,
    scored_view,
)
from workbench.strategies._registry import strategy

__all__ = ["TruncateSettings", "Truncation", "truncate_history"]


class TruncateSettings(BaseModel):
    """Settings of ``truncate``."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, frozen=True)

    target_ratio: float = Field(default=0.5, gt=0, le=1)
    """The kept suffix may fill at most this share of the window."""
    min_messages: int = Field(default=1, ge=0)
    """The newest messages always kept, even past the budget."""


def truncate_history(messages: list[Message], budget: int, estimator: object,
                     min_messages: int = 1) -> list[Message]:
    """The longest contiguous suffix of agent-visible `messages` within `budget` tokens.

    Args:
        messages: The history (messages hidden from the agent are dropped).
        budget: Token budget of the suffix (per message: Goose's ``count_chat_tokens``).
        estimator: The `TokenEstimator`.
        min_messages: The newest messages kept even past the budget.

    Returns:
        The kept suffix, starting after any leading tool outputs whose calls were cut off.
    """
    visible = [m for m in messages if m.is_agent_visible]
    total = 0
    start = len(visible)
    for i in range(len(visible) - 1, -1, -1):
        cost = estimator.count_chat_tokens("", [visible[i]])  # type: ignore[attr-defined]
        if len(visible) - i > min_messages and total + cost > budget:
            break
        total += cost
        start = i
    requested = {r.id for m in visible[start:] for r in m.tool_requests()}
    while (start < len(visible) - min_messages and visible[start].tool_responses()
           and not any(r.id in requested for r in visible[start].tool_responses())):
        start += 1
    return visible[start:]


@strategy("truncate")
class Truncation(Strategy):
    """Drop the oldest messages until the rest fits ``target_ratio`` x the window."""

    Settings = TruncateSettings
    settings: TruncateSettings
    uses_model = False
    uses_template = False

    async def compact(self, request: CompactionRequest) -> StrategyResult:
        """Keep the newest messages that fit; with no window nothing is dropped."""
        s = self.settings
        messages = list(request.messages)
        visible = [m for m in messages if m.is_agent_visible]
        if request.window is None:
            context = visible
        else:
            budget = int(request.window * s.target_ratio)
            context = truncate_history(messages, budget, request.estimator, s.min_messages)
        dropped = len(visible) - len(context)
        text, tokens = scored_view(context, request)
        return StrategyResult(context=context, summary_text=text,
                              retained_tokens=tokens,
                              compacted=dropped > 0, detail={"messages_dropped": dropped})
