"""The awaken port over a real recorded session (skips when ../shared is absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.sessions import load_session
from workbench.strategies.awaken import (
    ContextWindowPolicy,
    estimate_message_tokens,
    estimate_tokens,
    find_compaction_boundary,
    latest_user_suffix,
    plan_compaction,
    truncate,
)
from workbench.strategies.awaken._view import call_ids, is_tool, result_ids

SESSION = "claude-code/test/fixtures/transcripts/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"


@pytest.fixture
def thread(shared_sessions: Path) -> list:
    session = load_session(shared_sessions / SESSION)
    return [m for m in session.messages if m.is_agent_visible]


@pytest.mark.parametrize("window", [8_192, 32_768])
def test_truncating_a_real_session_keeps_a_paired_suffix_near_the_budget(thread: list,
                                                                         window: int) -> None:
    policy = ContextWindowPolicy(max_context_tokens=window, max_output_tokens=1_024)
    result = truncate(thread, policy, artifacts=None)
    kept = result.messages
    assert result.truncated and result.dropped > 0
    assert not is_tool(kept[0]), "a kept history never starts on a tool result"
    answered = {cid for m in kept for cid in result_ids(m)}
    assert all(cid in answered for m in kept for cid in call_ids(m))
    originals = [m for m in kept if m in thread]
    assert originals == thread[result.dropped:result.dropped + len(originals)]
    # The budget is soft: at most the backward tool-pair step adds one assistant's worth.
    over = estimate_tokens(kept) - result.available
    assert over <= max(estimate_message_tokens(m) for m in kept)


def test_planning_a_real_session_cuts_at_a_safe_frontier_before_the_latest_user_turn(
        thread: list) -> None:
    plan = plan_compaction(thread, ContextWindowPolicy())
    assert plan is not None
    assert plan.boundary_index < len(thread) - latest_user_suffix(thread)
    assert find_compaction_boundary(thread, 0, plan.boundary_index + 1) == plan.boundary_index
    assert plan.pre_tokens == estimate_tokens(thread[:plan.boundary_index + 1]) >= 1024
    assert plan.transcript and plan.previous_summary is None
