"""``none``: no compaction, the baseline every strategy must beat on cost and lose to on recall."""

from __future__ import annotations

from workbench.strategies._base import (
    CompactionRequest,
    Strategy,
    StrategyResult,
    scored_view,
)
from workbench.strategies._registry import strategy

__all__ = ["NoCompaction"]


@strategy("none")
class NoCompaction(Strategy):
    """Keep the history exactly as it is (the context may overflow the window)."""

    uses_model = False
    uses_template = False
    compacts = False

    async def compact(self, request: CompactionRequest) -> StrategyResult:
        """Return the history unchanged; nothing is billed."""
        context = list(request.messages)
        text, tokens = scored_view(context, request)
        return StrategyResult(context=context, summary_text=text,
                              retained_tokens=tokens,
                              compacted=False, detail={"reason": "no compaction"})
