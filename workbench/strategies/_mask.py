"""``mask``: observation masking. The last N tool turns keep their outputs verbatim; older tool
outputs become a short placeholder. Nothing is summarized and no model is called.

A *tool turn* is an agent-visible assistant message that requests at least one tool; a tool
output belongs to the turn whose request carries its id (an output with no known request belongs
to the turn before it). Outputs already no longer than the placeholder are left alone, since
masking them would save nothing. Errors are masked like any other output (``is_error`` kept).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from workbench.messages import Message, ToolResponse
from workbench.strategies._base import (
    CompactionRequest,
    Strategy,
    StrategyResult,
    scored_view,
)
from workbench.strategies._registry import strategy

__all__ = ["MASK_PLACEHOLDER", "MaskSettings", "ObservationMasking", "mask_observations"]

MASK_PLACEHOLDER = "[older tool output omitted]"
"""What a masked tool output is replaced with."""


class MaskSettings(BaseModel):
    """Settings of ``mask``."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, frozen=True)

    keep_last: int = Field(default=3, ge=0)
    """How many of the newest tool turns keep their outputs verbatim."""
    placeholder: str = Field(default=MASK_PLACEHOLDER, min_length=1)
    """The text an older output becomes."""


def mask_observations(messages: list[Message], keep_last: int = 3,
                      placeholder: str = MASK_PLACEHOLDER) -> tuple[list[Message], int]:
    """Mask the tool outputs of every tool turn but the newest `keep_last`.

    Args:
        messages: The history; messages hidden from the agent are dropped from the result.
        keep_last: Newest tool turns whose outputs stay verbatim.
        placeholder: Replacement text of a masked output.

    Returns:
        ``(context, masked)``: the agent-visible messages with older outputs replaced (other
        messages are the same objects), and how many outputs were masked.
    """
    visible = [m for m in messages if m.is_agent_visible]
    turn_of_request: dict[str, int] = {}
    turns: list[int] = []
    for i, m in enumerate(visible):
        if m.role == "assistant" and m.tool_requests():
            turns.append(i)
            for req in m.tool_requests():
                turn_of_request[req.id] = i
    kept_turns = set(turns[max(len(turns) - keep_last, 0):]) if keep_last else set()
    out: list[Message] = []
    masked = 0
    last_turn = -1
    for i, m in enumerate(visible):
        if m.role == "assistant" and m.tool_requests():
            last_turn = i
        if not m.tool_responses():
            out.append(m)
            continue
        content = []
        changed = False
        for item in m.content:
            if isinstance(item, ToolResponse):
                turn = turn_of_request.get(item.id, last_turn)
                if turn not in kept_turns and len(item.text()) > len(placeholder):
                    item = _masked(item, placeholder)
                    masked += 1
                    changed = True
            content.append(item)
        out.append(m.copy_with(content=content) if changed else m)
    return out, masked


def _masked(item: ToolResponse, placeholder: str) -> ToolResponse:
    stub = Message.user().with_tool_response(item.id, placeholder,
                                             is_error=item.tool_result.is_error)
    masked = stub.content[0]
    assert isinstance(masked, ToolResponse)
    return masked


@strategy("mask")
class ObservationMasking(Strategy):
    """Observation masking: older tool outputs become `MaskSettings.placeholder`."""

    Settings = MaskSettings
    settings: MaskSettings
    uses_model = False
    uses_template = False

    async def compact(self, request: CompactionRequest) -> StrategyResult:
        """Mask older tool outputs; nothing is billed."""
        s = self.settings
        context, masked = mask_observations(list(request.messages), s.keep_last, s.placeholder)
        text, tokens = scored_view(context, request)
        return StrategyResult(context=context, summary_text=text,
                              retained_tokens=tokens,
                              compacted=masked > 0, detail={"masked_outputs": masked})
