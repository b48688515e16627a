"""``aider``: Aider's recursive chat-history summary.

Source: Aider-AI/aider, ``aider/history.py`` (``ChatSummary``: the split, the half-budget tail,
the head ending on an assistant message, the recursion depth, the 4-message minimum) and
``aider/models.py`` (the history budget: a sixteenth of the model's input window, at least 1,024
and at most 8,192 tokens); summarised in ``../shared/reference/peers.md`` B.10.

- Trigger: the history passes its budget, ``min(max(window / 16, 1024), 8192)`` tokens.
- Split: the tail is the newest messages that add up to less than half the budget; the head
  (everything before) is moved back until it ends with an assistant message. With 4 messages
  or fewer, a head of 4 or fewer, or past depth 3, everything is summarised at once.
- Summarise the head with a prompt asking for a first-person account from the user's side
  (every name, file and value kept); the summary replaces the head as one user message.
- Recurse: when the summary and the tail are still over the budget, the same is done again
  to them, one level deeper.
- The result ends with an assistant message (``Ok.`` is added when it does not), so the next
  user message does not merge into the summary.
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
from workbench.tokens import TokenEstimator

__all__ = ["SUMMARY_LEAD", "AiderSettings", "AiderStrategy", "history_budget"]

SUMMARY_LEAD = "Here is what we talked about before, in short:\n"
REQUEST = "Condense the chat below as instructed."
CLOSING = "Ok."


class AiderSettings(PolicySettings):
    """Settings of ``aider`` (defaults: Aider's)."""

    divisor: int = Field(default=16, ge=1)
    """The budget is the window divided by this..."""
    budget_min: int = Field(default=1_024, ge=1)
    """...but at least this many tokens..."""
    budget_max: int = Field(default=8_192, ge=1)
    """...and at most this many."""
    max_depth: int = Field(default=3, ge=0)
    """Deeper than this, everything is summarised at once."""
    min_split: int = Field(default=4, ge=1)
    """With this many messages or fewer, everything is summarised at once."""


def history_budget(window: int, settings: AiderSettings) -> int:
    """``min(max(window // divisor, budget_min), budget_max)``."""
    return min(max(window // settings.divisor, settings.budget_min), settings.budget_max)


@strategy("aider")
class AiderStrategy(Strategy):
    """Aider: summarise the older half, keep the newer, recurse until it fits (module
    docstring)."""

    Settings = AiderSettings
    settings: AiderSettings
    uses_template = False

    def trigger_tokens(self, window: int) -> int | None:
        """The history budget (`history_budget`)."""
        return history_budget(window, self.settings)

    async def compact(self, request: CompactionRequest) -> StrategyResult:
        """Summarise recursively until the history fits its budget.

        Raises:
            CompactionError: a summary call failed.
            ContextLengthExceeded: a head does not fit the summariser's window.
        """
        messages = [m for m in request.messages if m.is_agent_visible]
        budget = history_budget(request.window or 0, self.settings) if request.window else None
        calls = Calls(request.model)
        size = _Sizes(request.estimator)
        if budget is None or size.of(messages) <= budget:
            return policy_result(messages, request, compacted=False, reason="within budget")
        out, summary = await self._summarize(messages, budget, 0, calls, size)
        if out and out[-1].role != "assistant":
            out.append(Message.assistant(CLOSING))
        return policy_result(out, request, calls=calls, summary=summary, calls_made=len(
            calls.usages))

    async def _summarize(self, messages: list[Message], budget: int, depth: int, calls: Calls,
                         size: _Sizes) -> tuple[list[Message], str]:
        s = self.settings
        if len(messages) <= s.min_split or depth > s.max_depth:
            return await _all(messages, calls)
        half, tail_tokens, split = budget // 2, 0, len(messages)
        for i in range(len(messages) - 1, -1, -1):
            cost = size.of([messages[i]])
            if tail_tokens + cost >= half:
                break
            tail_tokens += cost
            split = i
        while split > 1 and messages[split - 1].role != "assistant":
            split -= 1
        if split <= s.min_split:
            return await _all(messages, calls)
        head, summary = await _all(messages[:split], calls)
        result = head + messages[split:]
        if size.of(result) < budget:
            return result, summary
        return await self._summarize(result, budget, depth + 1, calls, size)


class _Sizes:
    """Token counts of messages, each message counted once."""

    def __init__(self, estimator: TokenEstimator) -> None:
        self.estimator = estimator
        self._known: dict[int, tuple[Message, int]] = {}

    def of(self, messages: list[Message]) -> int:
        total = 0
        for m in messages:
            hit = self._known.get(id(m))
            if hit is None or hit[0] is not m:
                hit = self._known[id(m)] = (m, int(self.estimator.count_chat_tokens("", [m])))
            total += hit[1]
        return total


async def _all(messages: list[Message], calls: Calls) -> tuple[list[Message], str]:
    summary = strip_thinking(await calls.ask(load_prompt("aider"), messages, REQUEST))
    return [Message.user(SUMMARY_LEAD + summary)], summary
