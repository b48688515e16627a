"""``goose``: Goose's session compaction (`workbench.context_mgmt.compact_messages`), unchanged.

The harness ran this path directly before strategies existed; behind the interface it gives the
same conversation, usage, attempts and retained tokens.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from workbench.strategies._base import CompactionRequest, Strategy, StrategyResult
from workbench.strategies._registry import strategy

if TYPE_CHECKING:
    from workbench.compaction._summarize import SummarizeOptions

__all__ = ["GooseStrategy"]


@strategy("goose")
class GooseStrategy(Strategy):
    """Goose's structured summary with its tool-response removal ladder (no settings: the
    template variant supplies the templates and ``summarize`` options)."""

    async def compact(self, request: CompactionRequest) -> StrategyResult:
        """Run ``compact_messages`` over the history.

        Raises:
            CompactionError: summarization gave up (carries the billed usage and attempts).
            TemplateError: the compaction template failed to render.
        """
        # Goose's compaction machinery loads when the strategy runs, not with the registry every
        # spec read imports.
        from workbench.context_mgmt import compact_messages

        if request.model is None:
            raise ValueError("the goose strategy needs a model")
        # compact_messages never changes its input (the prompt it preserves is a new copy), so
        # the recorded history goes in as it is.
        result = await compact_messages(
            request.model, list(request.messages), manual_compact=request.manual_compact,
            templates=request.templates, estimator=request.estimator,
            # a variant's options, validated against these names when it was read
            **cast("SummarizeOptions", request.options))
        summary = result.summary
        records = list(summary.attempt_records)
        usages = [r.usage for r in records if r.usage is not None] or [summary.usage]
        return StrategyResult(
            context=result.conversation, usages=usages, attempts=records,
            summary_text=summary.message.concat_text(),
            retained_tokens=result.retained_context_tokens, compacted=True,
            parse_outcome=summary.parse_outcome, structured=bool(summary.structured),
            detail={"summary_attempts": summary.attempts})
