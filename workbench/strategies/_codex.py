"""``codex``: OpenAI Codex CLI's local compaction (the path it takes for models that are not
hosted by OpenAI; hosted ones use ``openai-responses-compact``).

Source: openai/codex, ``codex-rs/core/src/compact.rs`` (the compacted history, the 20,000-token
budget for user messages, dropping the oldest item when the compaction request overflows),
``codex-rs/core/templates/compact/`` (the handoff prompt and the note before the summary) and
``protocol/src/openai_models.rs`` (auto-compaction at 90 % of the window); summarised in
``../shared/reference/peers.md`` B.5.

- Trigger: 90 % of the window.
- The summary: the whole conversation goes to the model with a handoff prompt (goal, progress
  and decisions, constraints and preferences, next steps, key data), written for another model
  that continues from it.
- The new context: the newest user messages, walked back from the latest while they fit a
  budget of 20,000 tokens (counted as Codex counts them, about four bytes a token; the first
  that does not fit is cut to what is left and the walk stops), in their original order; then
  the summary, after a note saying another model worked on the task before. Earlier summaries
  are not user messages, so they are not carried again.
- When the compaction request itself does not fit the window, the oldest message is dropped
  and the request sent again.
"""

from __future__ import annotations

from pydantic import Field

from workbench.errors import ContextLengthExceeded
from workbench.messages import Message
from workbench.strategies._base import CompactionRequest, Strategy, StrategyResult
from workbench.strategies._policy import (
    Calls,
    PolicySettings,
    TokenAmount,
    approx_tokens,
    human_text,
    load_prompt,
    policy_result,
    strip_thinking,
    tokens_of,
)
from workbench.strategies._registry import strategy

__all__ = ["HANDOFF_NOTE", "CodexSettings", "CodexStrategy", "kept_user_messages"]

HANDOFF_NOTE = ("Another language model worked on this task before you and wrote the notes "
                "below for you. Continue from them:\n")
"""The note the summary message starts with; it also tells a summary from a user message."""
REQUEST = "Write the handoff notes for the conversation below."
CUT_MARK = "\n[... the rest of this message was cut ...]"


class CodexSettings(PolicySettings):
    """Settings of ``codex`` (defaults: Codex CLI's)."""

    trigger_share: float = Field(default=0.9, gt=0, le=1)
    """Compact when the prompt reaches this share of the window."""
    user_message_budget: TokenAmount = 20_000
    """Tokens of the newest user messages kept verbatim after the summary."""


def kept_user_messages(messages: list[Message], budget: int) -> list[str]:
    """The newest user texts that fit `budget` (see the module docstring), oldest first."""
    texts = [t for m in messages if (t := human_text(m)) and not t.startswith(HANDOFF_NOTE)]
    chosen: list[str] = []
    left = budget
    for text in reversed(texts):
        if left <= 0:
            break
        cost = approx_tokens(text)
        if cost <= left:
            chosen.append(text)
            left -= cost
            continue
        chosen.append(text.encode("utf-8")[:left * 4].decode("utf-8", "ignore") + CUT_MARK)
        break
    return chosen[::-1]


@strategy("codex")
class CodexStrategy(Strategy):
    """Codex CLI's handoff summary with the recent user messages kept (module docstring)."""

    Settings = CodexSettings
    settings: CodexSettings
    uses_template = False

    def trigger_tokens(self, window: int) -> int | None:
        """90 % of the window (``trigger_share``)."""
        return max(1, int(self.settings.trigger_share * window))

    async def compact(self, request: CompactionRequest) -> StrategyResult:
        """Summarise (dropping the oldest messages while the request overflows), then rebuild
        the context from the recent user messages and the summary.

        Raises:
            CompactionError: the summary call failed.
            ContextLengthExceeded: not even the newest message fits the summariser.
        """
        messages = [m for m in request.messages if m.is_agent_visible]
        calls = Calls(request.model)
        sent = list(messages)
        dropped = 0
        while True:
            try:
                reply = await calls.ask(load_prompt("codex"), sent, REQUEST)
                break
            except ContextLengthExceeded:
                if len(sent) <= 1:
                    raise
                sent = sent[1:]
                dropped += 1
        summary = strip_thinking(reply)
        budget = tokens_of(self.settings.user_message_budget, request.window)
        context = [Message.user(t) for t in kept_user_messages(messages, budget)]
        context.append(Message.user(HANDOFF_NOTE + summary))
        return policy_result(context, request, calls=calls, summary=summary,
                             dropped_before_summary=dropped,
                             user_messages_kept=len(context) - 1)
