"""``anthropic-clear-tool-uses``: the Anthropic API's context editing, tool-result clearing
(edit type ``clear_tool_uses_20250919``), run on the client's side of the replay.

Source: the platform documentation "Context editing"
(https://platform.claude.com/docs/en/build-with-claude/context-editing) and the SDKs' typed
parameters; summarised in ``../shared/reference/peers.md`` B.5 and B.10.

- Trigger: once the input reaches 100,000 tokens (``trigger``).
- Keep: the newest 3 tool uses keep their results (``keep``).
- Clear: every older tool use's result is replaced by a short placeholder, oldest first; with
  ``clear_tool_inputs`` the call's arguments are cleared too. Tools named in ``exclude_tools``
  are never cleared, and a result already cleared is not counted again.
- Clear at least: when clearing would free fewer than ``clear_at_least`` tokens, nothing is
  cleared (clearing breaks the prompt cache, so the API only does it when it pays).
- No model is called and nothing is summarised.

The API edits the full history the client sends on every request past the trigger; the
replay keeps the edited context, which is what the API builds at the moment it clears, and
clears again the next time that context reaches the trigger.
"""

from __future__ import annotations

from pydantic import Field

from workbench.messages import Message, ToolRequest
from workbench.strategies._base import CompactionRequest, Strategy, StrategyResult
from workbench.strategies._policy import (
    PolicySettings,
    TokenAmount,
    policy_result,
    replace_outputs,
    tokens_of,
    tool_names,
)
from workbench.strategies._registry import strategy

__all__ = ["CLEARED_PLACEHOLDER", "ClearToolUses", "ClearToolUsesSettings", "clear_tool_uses"]

CLEARED_PLACEHOLDER = "[this tool result was cleared to save context]"
"""What a cleared result becomes."""


class ClearToolUsesSettings(PolicySettings):
    """Settings of ``anthropic-clear-tool-uses`` (defaults: the API's)."""

    trigger: TokenAmount = 100_000
    """Input tokens from which results are cleared."""
    keep: int = Field(default=3, ge=0)
    """The newest tool uses whose results stay."""
    clear_at_least: TokenAmount = 0
    """Clear nothing unless at least this many tokens would be freed."""
    exclude_tools: list[str] = Field(default_factory=list)
    """Tools whose uses are never cleared."""
    clear_tool_inputs: bool = False
    """Also clear the arguments of the cleared calls."""
    placeholder: str = Field(default=CLEARED_PLACEHOLDER, min_length=1)
    """The text a cleared result becomes."""


def _without_inputs(message: Message, ids: set[str]) -> Message:
    if not any(isinstance(c, ToolRequest) and c.id in ids for c in message.content):
        return message
    items = []
    for item in message.content:
        if isinstance(item, ToolRequest) and item.id in ids and item.tool_call.value is not None:
            value = item.tool_call.value.model_copy(update={"arguments": {}})
            item = item.model_copy(update={"tool_call": item.tool_call.model_copy(
                update={"value": value})})
        items.append(item)
    return message.copy_with(content=items)


def clear_tool_uses(messages: list[Message], settings: ClearToolUsesSettings,
                    estimator: object, window: int | None = None) -> tuple[list[Message], int, int]:
    """Clear the results of every tool use but the newest `settings.keep`.

    Args:
        messages: The context.
        settings: The edit's settings.
        estimator: Counts the tokens a cleared result frees.
        window: The window a share in ``clear_at_least`` is taken of.

    Returns:
        ``(context, cleared uses, tokens freed)``; `messages` unchanged (the same list) when
        fewer than ``clear_at_least`` tokens would be freed.
    """
    names = tool_names(messages)
    order = [r.id for m in messages for r in m.tool_requests()]
    kept = set(order[max(len(order) - settings.keep, 0):]) if settings.keep else set()
    excluded = set(settings.exclude_tools)
    texts: dict[str, str] = {}
    freed = 0
    for m in messages:
        for item in m.tool_responses():
            if (item.id in kept or names.get(item.id, "") in excluded
                    or item.text() == settings.placeholder):
                continue
            texts[item.id] = settings.placeholder
            freed += (estimator.count_text_tokens(item.text())  # type: ignore[attr-defined]
                      - estimator.count_text_tokens(settings.placeholder))  # type: ignore[attr-defined]
    at_least = tokens_of(settings.clear_at_least, window)
    if not texts or (at_least > 0 and freed < at_least):
        return messages, 0, 0
    context = [replace_outputs(m, texts) for m in messages]
    if settings.clear_tool_inputs:
        context = [_without_inputs(m, set(texts)) for m in context]
    return context, len(texts), freed


@strategy("anthropic-clear-tool-uses")
class ClearToolUses(Strategy):
    """Anthropic's tool-result clearing: older results become a placeholder (module
    docstring)."""

    Settings = ClearToolUsesSettings
    settings: ClearToolUsesSettings
    uses_model = False
    uses_template = False

    def trigger_tokens(self, window: int) -> int | None:
        """``trigger`` (a count, or a share of the window)."""
        return max(1, tokens_of(self.settings.trigger, window))

    async def compact(self, request: CompactionRequest) -> StrategyResult:
        """Clear older tool results; nothing is billed."""
        visible = [m for m in request.messages if m.is_agent_visible]
        context, cleared, freed = clear_tool_uses(visible, self.settings, request.estimator,
                                                  request.window)
        return policy_result(context, request, compacted=cleared > 0, cleared_uses=cleared,
                             tokens_freed=freed)
