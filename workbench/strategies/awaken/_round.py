"""One whole compaction pass: plan, summarize, gate on savings, swap.

awaken runs this in a background task and swaps at a later loop boundary (``loop_runner/
compaction.rs``, ``try_consume_compaction_event``); here the pass runs to the end in one call, so
a caller that replays a session decides when the swap lands. The boundary is found by id, so a
caller may apply the outcome's summary later with `apply_summary` on a list that has grown.

After a skip or a failure awaken has no back-off: the next inference phase plans the same prefix
and calls the summarizer again. `BackOff` is the fix, offered as an option.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from workbench.compaction import CompactionModel, Usage
from workbench.messages import Message
from workbench.strategies.awaken._config import CompactionConfig
from workbench.strategies.awaken._estimate import MessageCounter
from workbench.strategies.awaken._plan import (
    MIN_COMPACTION_GAIN_TOKENS,
    AppliedCompaction,
    CompactionPlan,
    apply_summary,
    plan_compaction,
)
from workbench.strategies.awaken._policy import ContextWindowPolicy
from workbench.strategies.awaken._savings import SavingsCheck, check_savings
from workbench.strategies.awaken._summary import (
    CumulativeSummary,
    SummarizationError,
    summarize_cumulative,
)

Status = Literal["no_plan", "backed_off", "failed", "skipped", "applied", "boundary_gone"]


@dataclass
class BackOff:
    """The fix for repeated summarizer calls: remember plans that were skipped or failed.

    A plan is identified by its boundary message id and prefix estimate; the same plan is not
    tried again, while a plan that moved (more raw text accumulated) is.
    """

    seen: set[tuple[str, int]] = field(default_factory=set)

    def blocks(self, plan: CompactionPlan) -> bool:
        """True when this plan was already skipped or failed."""
        return (plan.boundary_message_id, plan.pre_tokens) in self.seen

    def remember(self, plan: CompactionPlan) -> None:
        """Record a skipped or failed plan."""
        self.seen.add((plan.boundary_message_id, plan.pre_tokens))


@dataclass
class CompactionOutcome:
    """What one pass did.

    Attributes:
        status: ``no_plan`` (nothing to summarize), ``backed_off`` (the `BackOff` option held the
            call), ``failed`` (summarizer error), ``skipped`` (the savings gate said no),
            ``applied`` (swapped) or ``boundary_gone`` (the boundary id was not found).
        messages: The thread after the pass (the input list's items when nothing was applied).
        plan: The plan, when there was one.
        summary: The summarizer call, when it answered.
        savings: The gate's verdict, when it ran.
        applied: The swap figures, when applied.
        error: The failure, when failed.
        usage: Billed usage of every summarizer call of the pass (an empty reply is billed too).
    """

    status: Status
    messages: list[Message]
    plan: CompactionPlan | None = None
    summary: CumulativeSummary | None = None
    savings: SavingsCheck | None = None
    applied: AppliedCompaction | None = None
    error: SummarizationError | None = None
    usage: list[Usage] = field(default_factory=list)


async def compact_once(messages: Sequence[Message], policy: ContextWindowPolicy,
                       model: CompactionModel, config: CompactionConfig | None = None, *,
                       count: MessageCounter | None = None,
                       min_prefix_tokens: int = MIN_COMPACTION_GAIN_TOKENS,
                       frontier_floor: int | None = None, skip_abandoned_calls: bool = False,
                       single_pass: bool = False, backoff: BackOff | None = None
                       ) -> CompactionOutcome:
    """Run one awaken compaction pass over the thread, start to swap.

    The trigger (`should_compact`) is the caller's; this runs the pass itself. The options are
    the fixes for awaken's quirks and all default to awaken's behaviour: `frontier_floor`
    (`compaction_keep_suffix`), `skip_abandoned_calls` (`find_compaction_boundary`), `single_pass`
    (`build_summary_prompt`) and `backoff` (`BackOff`).

    Args:
        messages: The thread messages (a stored summary at index 0; no agent prompt).
        policy: The (clamped) policy.
        model: The summarizer model.
        config: The summarizer settings; None means awaken's defaults.
        count: Per-message counter; None means awaken's heuristic.
        min_prefix_tokens: The prefix floor (awaken: 1024).
        frontier_floor: See `compaction_keep_suffix`.
        skip_abandoned_calls: See `find_compaction_boundary`.
        single_pass: See `build_summary_prompt`.
        backoff: Remembers skipped and failed plans so they are not retried; None = awaken.
    """
    cfg = config or CompactionConfig()
    thread = list(messages)
    plan = plan_compaction(thread, policy, count=count, min_prefix_tokens=min_prefix_tokens,
                           frontier_floor=frontier_floor,
                           skip_abandoned_calls=skip_abandoned_calls)
    if plan is None:
        return CompactionOutcome("no_plan", thread)
    if backoff is not None and backoff.blocks(plan):
        return CompactionOutcome("backed_off", thread, plan=plan)
    try:
        summary = await summarize_cumulative(model, plan.transcript, plan.previous_summary, cfg,
                                             single_pass=single_pass)
    except SummarizationError as exc:
        if backoff is not None:
            backoff.remember(plan)
        return CompactionOutcome("failed", thread, plan=plan, error=exc,
                                 usage=[u for u in exc.billed_usage if isinstance(u, Usage)])
    savings = check_savings(plan.pre_tokens, summary.text, cfg, count)
    if not savings.passed:
        if backoff is not None:
            backoff.remember(plan)
        return CompactionOutcome("skipped", thread, plan=plan, summary=summary, savings=savings,
                                 usage=[summary.usage])
    swapped = apply_summary(thread, plan.boundary_message_id, summary.text, count=count)
    if swapped is None:
        return CompactionOutcome("boundary_gone", thread, plan=plan, summary=summary,
                                 savings=savings, usage=[summary.usage])
    new_thread, applied = swapped
    # awaken records the larger of the recomputed and the planned prefix estimate.
    applied = AppliedCompaction(applied.boundary_index, max(applied.pre_tokens, plan.pre_tokens),
                                applied.post_tokens)
    return CompactionOutcome("applied", new_thread, plan=plan, summary=summary, savings=savings,
                             applied=applied, usage=[summary.usage])
