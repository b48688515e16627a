"""``anthropic-server-compaction``: the Anthropic API's server-side compaction (beta
``compact-2026-01-12``, edit type ``compact_20260112``).

Source: the platform documentation "Compaction"
(https://platform.claude.com/docs/en/build-with-claude/compaction); the billing of the
summarisation in ``usage.iterations`` as https://velog.io/@jungseonw00/claude-compaction-usage-iterations
describes it; summarised in ``../shared/reference/peers.md`` B.5.

- Trigger: input tokens (default 150,000; the API refuses less than 50,000).
- The API summarises with the request's own model (``instructions`` replaces its prompt) and
  answers with a ``compaction`` block first; the blocks before it are dropped from the next
  request. The replay asks it to stop after compacting (``pause_after_compaction``) and
  continues from the compaction block.
- Billing: the summarisation is a separate sampling step, reported in ``usage.iterations``;
  the strategy bills the top-level usage and every iteration.
- It runs only with a live Anthropic model through litellm (a key, or an ``api_base``);
  otherwise it is ``n/a`` with the reason, and so below a 50,000-token trigger.
"""

from __future__ import annotations

from pydantic import Field

from workbench.messages import Message
from workbench.strategies._base import CompactionRequest, StrategyResult
from workbench.strategies._policy import PolicySettings, TokenAmount, policy_result, tokens_of
from workbench.strategies._provider_side import ProviderSide
from workbench.strategies._registry import strategy

__all__ = ["MIN_TRIGGER", "AnthropicServerCompaction", "AnthropicServerSettings"]

MIN_TRIGGER = 50_000
"""The smallest trigger the API accepts."""
SYSTEM = "You are a coding assistant continuing the conversation below."


class AnthropicServerSettings(PolicySettings):
    """Settings of ``anthropic-server-compaction`` (defaults: the API's)."""

    trigger: TokenAmount = 150_000
    """Input tokens from which the API compacts."""
    instructions: str | None = Field(default=None, min_length=1)
    """Replaces the API's own summarisation prompt."""


@strategy("anthropic-server-compaction")
class AnthropicServerCompaction(ProviderSide):
    """Anthropic's server-side compaction, through litellm (module docstring)."""

    Settings = AnthropicServerSettings
    settings: AnthropicServerSettings
    provider = "anthropic"
    key_env = "ANTHROPIC_API_KEY"
    feature = "Anthropic's server-side compaction"

    def trigger_tokens(self, window: int) -> int | None:
        """``trigger`` (a count, or a share of the window)."""
        return max(1, tokens_of(self.settings.trigger, window))

    async def compact(self, request: CompactionRequest) -> StrategyResult:
        """Send the conversation with the compaction edit and continue from its summary.

        Raises:
            StrategyUnavailable: no live Anthropic model, or a trigger below the API's minimum.
            ContextLengthExceeded, ModelCallError...: the call failed.
        """
        # the provider's API client loads when the policy runs, not with the strategy registry
        from workbench.models._provider_compact import anthropic_compaction

        live = self._live(request.model, request.window)
        trigger = tokens_of(self.settings.trigger, request.window)
        messages = [m for m in request.messages if m.is_agent_visible]
        summary, kept, usage = await anthropic_compaction(
            live, SYSTEM, messages, trigger=trigger, instructions=self.settings.instructions)
        context = [Message.user(summary), *(Message.assistant(k["content"]) for k in kept)]
        result = policy_result(context, request, summary=summary, compacted=bool(summary))
        result.usages = [usage]
        return result

    def limit(self, window: int | None) -> str | None:
        """The API refuses a trigger below `MIN_TRIGGER` tokens."""
        trigger = tokens_of(self.settings.trigger, window)
        if trigger < MIN_TRIGGER:
            return (f"the API compacts from {MIN_TRIGGER:,} input tokens, and this trigger is "
                    f"{trigger:,}")
        return None
