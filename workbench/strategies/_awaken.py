"""``awaken``: the adapter that runs the faithful awaken port (`workbench.strategies.awaken`) as a
strategy.

One compaction is one awaken pass over the history (`compact_once`: plan before the safe
frontier, cumulative summary, ``min_savings_ratio`` gate, swap), followed by awaken's request
transform (`truncate`: tool-result previews, then drop-oldest truncation to the window) unless
``truncate = false``. The policy's window is the cell's window (awaken's 200k default when the
cell has none), clamped by `effective_policy` as awaken does at resolve time. Every quirk fix of
the port is a setting, off by default (awaken's behaviour).

The messages the pass keeps are handed back as the same objects (awaken needs an id on every
message; ids are given to copies, which are mapped back), so a replay can see which prefix of
the context survived.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from workbench.compaction import Attempt, Usage
from workbench.messages import Message
from workbench.strategies._base import (
    CompactionRequest,
    Strategy,
    StrategyResult,
    scored_view,
)
from workbench.strategies._registry import strategy

if TYPE_CHECKING:
    from workbench.strategies.awaken import ContextWindowPolicy

__all__ = ["AwakenSettings", "AwakenStrategy"]


class AwakenSettings(BaseModel):
    """Settings of ``awaken`` (policy and summarizer fields keep awaken's defaults)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, frozen=True)

    compaction_mode: str = "keep_recent_raw_suffix"
    """``keep_recent_raw_suffix`` (awaken's default) or ``compact_to_safe_frontier``."""
    compaction_raw_suffix_messages: int = Field(default=2, ge=0)
    """The raw floor of suffix mode."""
    min_recent_messages: int = Field(default=10, ge=0)
    """History messages truncation keeps; the raw floor of frontier mode."""
    max_output_tokens: int = Field(default=4096, ge=0)
    """Tokens reserved for the reply (subtracted from the window before truncating)."""
    min_savings_ratio: float = Field(default=0.3, ge=0, le=1)
    """A summary is applied only when it saves at least this share of the prefix estimate."""
    summary_max_tokens: int | None = Field(default=None, gt=0)
    """The summarizer's reply cap (awaken: 1024 when unset)."""
    truncate: bool = True
    """Apply awaken's request transform (previews, then truncation) after the pass."""
    previews: bool = True
    """Tool-result previews inside the transform."""
    tiktoken: bool = False
    """Count with tiktoken o200k instead of awaken's byte/4 heuristic."""
    frontier_floor: int | None = Field(default=None, ge=0)
    """Fix: the raw floor frontier mode uses instead of ``min_recent_messages``."""
    skip_abandoned_calls: bool = False
    """Fix: a call that never got a result no longer freezes the frontier."""
    single_pass: bool = False
    """Fix: substitute ``{previous_summary}`` and ``{messages}`` in one pass (no splice)."""
    backoff: bool = False
    """Fix: do not retry a plan that was skipped or failed (state kept per strategy instance)."""


@strategy("awaken")
class AwakenStrategy(Strategy):
    """awaken's compaction pass plus its request transform, faithful by default."""

    Settings = AwakenSettings
    settings: AwakenSettings
    uses_template = False

    def __init__(self, settings: BaseModel | None = None) -> None:
        super().__init__(settings)
        # The awaken port (~20 modules) loads when the strategy is built, not with the registry
        # every spec read imports.
        from workbench.strategies.awaken import BackOff

        self._backoff = BackOff() if self.settings.backoff else None

    def _policy(self, window: int | None) -> ContextWindowPolicy:
        # the awaken port, as in __init__
        from workbench.strategies.awaken import (
            ContextCompactionMode,
            ContextWindowPolicy,
            effective_policy,
        )

        s = self.settings
        fields: dict[str, object] = {
            "max_output_tokens": s.max_output_tokens,
            "min_recent_messages": s.min_recent_messages,
            "compaction_mode": ContextCompactionMode(s.compaction_mode),
            "compaction_raw_suffix_messages": s.compaction_raw_suffix_messages,
        }
        if window is not None:
            fields["max_context_tokens"] = window
        return effective_policy(ContextWindowPolicy.model_validate(fields), context_window=window)

    async def compact(self, request: CompactionRequest) -> StrategyResult:
        """One awaken pass, then (by default) awaken's request transform.

        Raises:
            SummarizationError: the summarizer call failed (carries the billed usage).
            ValueError: no model was given.
        """
        # the awaken port, as in __init__
        from workbench.strategies.awaken import (
            CompactionConfig,
            compact_once,
            ensure_ids,
            memo_counter,
            tiktoken_counter,
            truncate,
        )

        if request.model is None:
            raise ValueError("the awaken strategy needs a model")
        s = self.settings
        policy = self._policy(request.window)
        count = memo_counter(tiktoken_counter(request.estimator) if s.tiktoken else None)
        visible = [m for m in request.messages if m.is_agent_visible]
        ided = ensure_ids(visible)
        originals = {id(c): o for c, o in zip(ided, visible, strict=True) if c is not o}
        config = CompactionConfig(min_savings_ratio=s.min_savings_ratio,
                                  summary_max_tokens=s.summary_max_tokens)
        outcome = await compact_once(ided, policy, request.model, config, count=count,
                                     frontier_floor=s.frontier_floor,
                                     skip_abandoned_calls=s.skip_abandoned_calls,
                                     single_pass=s.single_pass, backoff=self._backoff)
        attempts = [_attempt(i, u, outcome.status) for i, u in enumerate(outcome.usage, 1)]
        if outcome.status == "failed" and outcome.error is not None:
            outcome.error.attempts = [*attempts]
            raise outcome.error
        thread: list[Message] = [originals.get(id(m), m) for m in outcome.messages]
        context = thread
        dropped = 0
        if s.truncate:
            from workbench.strategies.awaken import ArtifactCompactionConfig  # (as in __init__)

            cut = truncate(thread, policy, count=count,
                           artifacts=ArtifactCompactionConfig() if s.previews else None)
            context, dropped = cut.messages, cut.dropped
        applied = outcome.status == "applied"
        changed = applied or dropped > 0 or any(a is not b for a, b in zip(context, thread,
                                                                            strict=False))
        summary = outcome.summary.text if applied and outcome.summary is not None else None
        text, tokens = scored_view(context, request)
        detail: dict[str, object] = {"status": outcome.status, "truncated_messages": dropped}
        if outcome.savings is not None:
            detail["savings_ppm"] = outcome.savings.savings_ratio_ppm
        return StrategyResult(
            context=context, usages=list(outcome.usage), attempts=attempts,
            summary_text=summary if summary is not None else text,
            retained_tokens=tokens, compacted=changed,
            parse_outcome="text" if outcome.summary is not None else None, structured=False,
            detail=detail)


def _attempt(number: int, usage: Usage, status: str) -> Attempt:
    return Attempt(number=number, removal_percent=0, messages_removed=0,
                   tool_responses_removed=0, outcome="error" if status == "failed" else "ok",
                   usage=usage)
