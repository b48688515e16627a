"""``openai-responses-compact``: OpenAI's Responses compaction endpoint (``/responses/compact``),
the path Codex CLI takes for the models OpenAI hosts.

Source: the OpenAI API reference for ``POST /v1/responses/compact`` and openai/codex (its remote
compaction for OpenAI-hosted models, openai/codex#17508); summarised in
``../shared/reference/peers.md`` B.10.

- Trigger: Codex's, 90 % of the window.
- The conversation is sent to the endpoint; the answer is the new window: the items it keeps
  and one opaque, encrypted ``compaction`` item that stands for the rest. The replay continues
  from those items; the encrypted text is kept as it came (its tokens are counted as text, an
  estimate: the provider bills what it decodes it to).
- Nothing in an encrypted item can be read, so the probes cannot score a round (its fact
  survival, kept request and finished tasks are left empty rather than scored as lost).
- It runs only with a live OpenAI model through litellm (a key, or an ``api_base``); otherwise
  it is ``n/a`` with the reason.
"""

from __future__ import annotations

from pydantic import Field

from workbench.messages import Message
from workbench.strategies._base import CompactionRequest, StrategyResult
from workbench.strategies._policy import PolicySettings, policy_result
from workbench.strategies._provider_side import ProviderSide
from workbench.strategies._registry import strategy

__all__ = ["OpenAIResponsesCompact", "OpenAIResponsesSettings"]


class OpenAIResponsesSettings(PolicySettings):
    """Settings of ``openai-responses-compact`` (default: Codex's trigger)."""

    trigger_share: float = Field(default=0.9, gt=0, le=1)
    """Compact when the prompt reaches this share of the window."""


@strategy("openai-responses-compact")
class OpenAIResponsesCompact(ProviderSide):
    """OpenAI's ``/responses/compact``, through litellm (module docstring)."""

    Settings = OpenAIResponsesSettings
    settings: OpenAIResponsesSettings
    provider = "openai"
    key_env = "OPENAI_API_KEY"
    feature = "OpenAI's Responses compaction"

    def trigger_tokens(self, window: int) -> int | None:
        """90 % of the window (``trigger_share``)."""
        return max(1, int(self.settings.trigger_share * window))

    async def compact(self, request: CompactionRequest) -> StrategyResult:
        """Send the conversation to the endpoint and continue from the window it returns.

        Raises:
            StrategyUnavailable: no live OpenAI model.
            ContextLengthExceeded, ModelCallError...: the call failed.
        """
        # the provider's API client loads when the policy runs, not with the strategy registry
        from workbench.models._provider_compact import openai_compaction

        live = self._live(request.model, request.window)
        messages = [m for m in request.messages if m.is_agent_visible]
        items, usage = await openai_compaction(live, messages)
        context = [Message.assistant(i["content"]) if i["role"] == "assistant"
                   else Message.user(i["content"]) for i in items]
        opaque = any(i["type"] == "compaction" for i in items)
        result = policy_result(context, request, compacted=bool(items), opaque=opaque,
                               items=len(items))
        result.usages = [usage]
        return result
