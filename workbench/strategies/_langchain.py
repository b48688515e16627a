"""``langchain``: LangChain's ``SummarizationMiddleware``.

Source: the LangChain documentation "Summarization middleware" and its reference
(``langchain.agents.middleware.summarization``: ``trigger``, ``keep`` with 20 messages by default,
``trim_tokens_to_summarize`` 4,000); summarised in ``../shared/reference/peers.md`` B.10. The
middleware has no trigger unless one is given; the documentation's examples trigger at 4,000
tokens, which is the default here.

- Trigger: the conversation reaches 4,000 tokens (``trigger``: a count or a share of the
  window).
- Keep: the last 20 messages stay as they are. The cut never separates a tool output from the
  call that asked for it: when the first kept message is a tool output, the cut moves back to
  the assistant message with the call.
- Summarise the rest, trimmed first to its newest 4,000 tokens (whole messages; the oldest are
  dropped from what the summariser reads), with a prompt asking for the context, key facts,
  actions and open questions. An earlier summary is part of what is summarised again.
- The new context: the summary as a user message, then the kept messages.
"""

from __future__ import annotations

from pydantic import Field

from workbench.messages import Message
from workbench.strategies._base import CompactionRequest, Strategy, StrategyResult
from workbench.strategies._policy import (
    Calls,
    PolicySettings,
    TokenAmount,
    load_prompt,
    policy_result,
    strip_thinking,
    tokens_of,
)
from workbench.strategies._registry import strategy

__all__ = ["SUMMARY_LEAD", "LangChainSettings", "LangChainStrategy", "safe_cut"]

SUMMARY_LEAD = "Here is a summary of the conversation so far:\n\n"
REQUEST = "Summarise these messages as instructed."


class LangChainSettings(PolicySettings):
    """Settings of ``langchain`` (defaults: the middleware's, the trigger from its docs)."""

    trigger: TokenAmount = 4_000
    """Summarise once the conversation reaches this many tokens (or this share)."""
    keep_messages: int = Field(default=20, ge=0)
    """The newest messages kept as they are."""
    trim_tokens: int = Field(default=4_000, ge=1)
    """The summariser reads at most this many tokens of what it summarises (the newest)."""


def safe_cut(messages: list[Message], keep: int) -> int:
    """Index of the first kept message: the last `keep`, moved back so no kept tool output
    loses its call."""
    cut = max(len(messages) - keep, 0)
    requested = {r.id for m in messages[cut:] for r in m.tool_requests()}
    while cut > 0 and any(r.id not in requested for r in messages[cut].tool_responses()):
        cut -= 1
        requested |= {r.id for r in messages[cut].tool_requests()}
    return cut


def _trimmed(messages: list[Message], limit: int, estimator: object) -> list[Message]:
    kept: list[Message] = []
    used = 0
    for m in reversed(messages):
        cost = int(estimator.count_chat_tokens("", [m]))  # type: ignore[attr-defined]
        if used + cost > limit:
            break
        used += cost
        kept.append(m)
    return kept[::-1]


@strategy("langchain")
class LangChainStrategy(Strategy):
    """LangChain's summarisation middleware: summarise all but the last N messages, the input
    trimmed (module docstring)."""

    Settings = LangChainSettings
    settings: LangChainSettings
    uses_template = False

    def trigger_tokens(self, window: int) -> int | None:
        """``trigger`` (a count, or a share of the window)."""
        return max(1, tokens_of(self.settings.trigger, window))

    async def compact(self, request: CompactionRequest) -> StrategyResult:
        """Summarise the older messages, keep the newest.

        Raises:
            CompactionError: the summary call failed.
            ContextLengthExceeded: the trimmed part does not fit the summariser's window.
        """
        s = self.settings
        messages = [m for m in request.messages if m.is_agent_visible]
        cut = safe_cut(messages, s.keep_messages)
        if cut == 0:
            return policy_result(messages, request, compacted=False,
                                 reason="nothing older than the kept messages")
        older = _trimmed(messages[:cut], s.trim_tokens, request.estimator)
        calls = Calls(request.model)
        summary = strip_thinking(await calls.ask(load_prompt("langchain"), older, REQUEST))
        context = [Message.user(SUMMARY_LEAD + summary), *messages[cut:]]
        return policy_result(context, request, calls=calls, summary=summary,
                             summarised_messages=cut, read_by_summariser=len(older))
