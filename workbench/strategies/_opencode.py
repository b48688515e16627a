"""``opencode``: OpenCode's prune-then-summarise compaction.

Source: sst/opencode, ``packages/opencode/src/session/compaction.ts`` (prune: the 40,000-token
protected span, the 20,000-token minimum, the protected ``skill`` tool, the last two turns
skipped; the summary and the recent tail kept beside it) and ``session/overflow.ts`` (when a
session overflows); summarised in ``../shared/reference/peers.md`` B.10. Token counts are
OpenCode's rough estimate, four characters a token.

- Trigger (overflow): the window less the reply's reserve (OpenCode's output cap, 32,000) less
  a buffer (the smaller of 20,000 and that cap).
- Prune first: walking back from the newest message, past the last two human turns, up to an
  earlier summary, the tool outputs are added up; once they pass 40,000 tokens every older
  output (not of a protected tool, not pruned already) is marked. The marked outputs become a
  placeholder only when they add up to more than 20,000 tokens.
- Then summarise, when pruning did not bring the context under the trigger: the conversation
  before a recent tail goes to the model with a continuation prompt (each tool output cut to
  2,000 characters, pruned ones as their placeholder); the tail is the newest whole human
  turns that fit a quarter of the usable window, at least 2,000 and at most 15,000 tokens.
  The new context is the summary, then the tail.
"""

from __future__ import annotations

from pydantic import Field

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
    replace_outputs,
    strip_thinking,
    tokens_of,
    tool_names,
)
from workbench.strategies._registry import strategy

__all__ = ["PRUNED_PLACEHOLDER", "SUMMARY_LEAD", "OpenCodeSettings", "OpenCodeStrategy", "prune"]

PRUNED_PLACEHOLDER = "[old tool output removed to free context]"
SUMMARY_LEAD = "Summary of the work so far, to continue from:\n\n"
REQUEST = "Summarise the conversation below so the work can continue."
OUTPUT_CHARS = 2_000
"""Each tool output the summariser reads is cut to this many characters."""
PROTECTED_TURNS = 2


class OpenCodeSettings(PolicySettings):
    """Settings of ``opencode`` (defaults: OpenCode's)."""

    output_reserve: TokenAmount = 32_000
    """Tokens kept for the reply (OpenCode's output cap)."""
    buffer: TokenAmount = 20_000
    """A further reserve: the smaller of this and the output reserve."""
    prune_protect: TokenAmount = 40_000
    """The newest tool-output tokens that are never pruned."""
    prune_minimum: TokenAmount = 20_000
    """Prune only when more than this many tokens would be freed."""
    protected_tools: list[str] = Field(default_factory=lambda: ["skill"])
    """Tools whose outputs are never pruned."""
    tail_share: float = Field(default=0.25, ge=0, le=1)
    """The recent tail kept verbatim: this share of the usable window..."""
    tail_min: TokenAmount = 2_000
    """...but at least this many tokens..."""
    tail_max: TokenAmount = 15_000
    """...and at most this many."""


def prune(messages: list[Message], protect: int, minimum: int,
          protected_tools: list[str]) -> tuple[list[Message], int]:
    """OpenCode's prune (module docstring): ``(context, tokens freed)``; `messages` unchanged
    (freed 0) when the marked outputs add up to `minimum` or less."""
    names = tool_names(messages)
    turns = total = freed = 0
    marked: dict[str, str] = {}
    reached = False  # an earlier summary, or outputs pruned before: older ones were seen then
    for m in reversed(messages):
        if human_text(m) is not None:
            turns += 1
        if turns < PROTECTED_TURNS:
            continue
        if m.concat_text().startswith(SUMMARY_LEAD):
            break
        for item in reversed(m.tool_responses()):
            text = item.text()
            if names.get(item.id, "") in protected_tools:
                continue
            if text == PRUNED_PLACEHOLDER:
                reached = True
                break
            cost = approx_tokens(text)
            total += cost
            if total > protect:
                freed += cost
                marked[item.id] = PRUNED_PLACEHOLDER
        if reached:
            break
    if freed <= minimum:
        return messages, 0
    return [replace_outputs(m, marked) for m in messages], freed


def _tail_start(messages: list[Message], budget: int) -> int:
    """Index where the newest whole human turns within `budget` tokens begin (len: none)."""
    starts = [i for i, m in enumerate(messages) if human_text(m) is not None]
    keep = len(messages)
    used = 0
    for start in reversed(starts):
        size = sum(approx_tokens(m.concat_text()) + sum(approx_tokens(r.text())
                                                        for r in m.tool_responses())
                   for m in messages[start:keep])
        if used + size > budget:
            break
        used += size
        keep = start
    return keep


def _for_summary(messages: list[Message]) -> list[Message]:
    texts = {r.id: r.text()[:OUTPUT_CHARS] + "\n[truncated]" for m in messages
             for r in m.tool_responses() if len(r.text()) > OUTPUT_CHARS}
    return [replace_outputs(m, texts) for m in messages] if texts else messages


@strategy("opencode")
class OpenCodeStrategy(Strategy):
    """OpenCode: prune old tool outputs when enough is freed, then summarise (module
    docstring)."""

    Settings = OpenCodeSettings
    settings: OpenCodeSettings
    uses_template = False

    def trigger_tokens(self, window: int) -> int | None:
        """The usable window: less the output reserve and the buffer."""
        s = self.settings
        reserve = tokens_of(s.output_reserve, window)
        return max(1, window - reserve - min(tokens_of(s.buffer, window), reserve))

    async def compact(self, request: CompactionRequest) -> StrategyResult:
        """Prune; summarise when the pruned context is still at the trigger.

        Raises:
            CompactionError: the summary call failed.
            ContextLengthExceeded: the conversation does not fit the summariser's window.
        """
        s, window, est = self.settings, request.window or 0, request.estimator
        messages = [m for m in request.messages if m.is_agent_visible]
        pruned, freed = prune(messages, tokens_of(s.prune_protect, window),
                              tokens_of(s.prune_minimum, window), s.protected_tools)
        usable = self.trigger_tokens(window) if window else None
        if usable is not None and sum(est.count_chat_tokens("", [m]) for m in pruned) < usable:
            return policy_result(pruned, request, compacted=freed > 0, pruned_tokens=freed)
        tail_budget = min(tokens_of(s.tail_max, window),
                          max(tokens_of(s.tail_min, window), int((usable or 0) * s.tail_share)))
        start = _tail_start(pruned, tail_budget)
        if start == 0:  # the tail would be everything: summarise it all instead
            start = len(pruned)
        head = pruned[:start]
        calls = Calls(request.model)
        summary = strip_thinking(await calls.ask(load_prompt("opencode"), _for_summary(head),
                                                 REQUEST))
        context = [Message.user(SUMMARY_LEAD + summary), *pruned[start:]]
        return policy_result(context, request, calls=calls, summary=summary,
                             pruned_tokens=freed, kept_messages=len(pruned) - start)
