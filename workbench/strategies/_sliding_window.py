"""``sliding-window``: Letta's sliding-window summariser (Letta-like: the recall-memory search
Letta adds is not modelled).

Source: the letta-ai/letta documentation on context management and its summarizer settings
(``sliding_window`` mode, ``sliding_window_percentage``: the oldest ~30 % of the messages are
evicted per pass), summarised in ``../shared/reference/peers.md`` B.10.

- Trigger: the context fills the window (Letta summarises when a request would overflow).
- Evict: the oldest 30 % of the messages (after the running summary) leave the context. The
  cut is moved forward past tool outputs, so a kept output never loses its call. When the
  rest is still at the trigger, a further 10 % is evicted, and so on, up to everything.
- Recursive summary: the model gets the previous summary and the evicted messages and writes
  one new summary that folds them together; it replaces the previous one at the head of the
  context.
"""

from __future__ import annotations

from pydantic import Field

from workbench.messages import Message
from workbench.strategies._base import CompactionRequest, Strategy, StrategyResult
from workbench.strategies._policy import (
    Calls,
    PolicySettings,
    load_prompt,
    policy_result,
    strip_thinking,
)
from workbench.strategies._registry import strategy

__all__ = ["SUMMARY_LEAD", "SlidingWindowSettings", "SlidingWindowStrategy", "eviction_cut"]

SUMMARY_LEAD = "Summary of the earlier conversation (older messages were moved out):\n\n"
REQUEST = "Fold the earlier summary (if any) and these messages into one new summary."


class SlidingWindowSettings(PolicySettings):
    """Settings of ``sliding-window`` (defaults: Letta's)."""

    trigger_share: float = Field(default=1.0, gt=0, le=1)
    """Summarise when the context reaches this share of the window (1: when it is full)."""
    evict_share: float = Field(default=0.3, gt=0, le=1)
    """The oldest share of the messages evicted per pass."""
    step: float = Field(default=0.1, gt=0, le=1)
    """Evict this much more while the rest is still at the trigger."""


def eviction_cut(messages: list[Message], share: float) -> int:
    """Index of the first kept message when `share` of `messages` is evicted, moved forward
    past tool outputs (a kept output keeps its call)."""
    cut = min(len(messages), max(1, round(len(messages) * share)))
    while cut < len(messages) and messages[cut].has_tool_response():
        cut += 1
    return cut


@strategy("sliding-window")
class SlidingWindowStrategy(Strategy):
    """Letta-like sliding window: evict the oldest share into a recursive summary (module
    docstring)."""

    Settings = SlidingWindowSettings
    settings: SlidingWindowSettings
    uses_template = False

    def trigger_tokens(self, window: int) -> int | None:
        """The window (``trigger_share`` of it)."""
        return max(1, int(self.settings.trigger_share * window))

    async def compact(self, request: CompactionRequest) -> StrategyResult:
        """Evict the oldest share (more while needed) and fold it into the summary.

        Raises:
            CompactionError: the summary call failed.
            ContextLengthExceeded: the evicted part does not fit the summariser's window.
        """
        s = self.settings
        messages = [m for m in request.messages if m.is_agent_visible]
        previous = messages[0] if messages and messages[0].concat_text().startswith(
            SUMMARY_LEAD) else None
        rest = messages[1:] if previous is not None else messages
        trigger = self.trigger_tokens(request.window) if request.window else None
        share = s.evict_share
        cut = eviction_cut(rest, share)
        while trigger is not None and cut < len(rest) and sum(
                request.estimator.count_chat_tokens("", [m]) for m in rest[cut:]) >= trigger:
            share = min(1.0, share + s.step)
            cut = eviction_cut(rest, share)
        evicted = ([previous] if previous is not None else []) + rest[:cut]
        calls = Calls(request.model)
        summary = strip_thinking(await calls.ask(load_prompt("sliding-window"), evicted,
                                                 REQUEST))
        context = [Message.user(SUMMARY_LEAD + summary), *rest[cut:]]
        return policy_result(context, request, calls=calls, summary=summary, evicted=cut,
                             evicted_share=round(share, 2))
