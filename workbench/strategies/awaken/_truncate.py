"""awaken's per-request truncation: drop the oldest history until the request fits.

Mirrors ``context/transform/mod.rs`` (the transform: previews, budget, system prefix, patch) and
``find_split_point`` in ``context/transform/truncation.rs``. Truncation is stateless: it runs on
a copy of every request and never changes the stored history.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from workbench.messages import Message
from workbench.strategies.awaken._config import ArtifactCompactionConfig
from workbench.strategies.awaken._estimate import (
    MessageCounter,
    estimate_message_tokens,
    estimate_tokens,
    estimate_tool_tokens,
)
from workbench.strategies.awaken._policy import ContextWindowPolicy
from workbench.strategies.awaken._previews import compact_tool_results
from workbench.strategies.awaken._tool_pairs import (
    adjust_split_for_tool_pairs,
    patch_dangling_tool_calls,
)
from workbench.strategies.awaken._view import role_of

_DEFAULT_ARTIFACTS = ArtifactCompactionConfig()


def find_split_point(history: Sequence[Message], budget_tokens: int, min_recent: int,
                     count: MessageCounter | None = None) -> int:
    """Where to cut the history so that what follows fits `budget_tokens`.

    The walk goes from newest to oldest. The newest ``min(min_recent, len)`` messages are always
    taken, even past the budget; each older one is taken only while the running total stays within
    the budget, and the walk stops at the first that does not fit (no skipping ahead to smaller,
    older ones), so the kept part is always a contiguous suffix. The split is then adjusted for
    tool pairs.

    Args:
        history: The messages after the system prefix.
        budget_tokens: Tokens the kept history may use.
        min_recent: How many newest messages are kept whatever the budget.
        count: Per-message counter; None means awaken's heuristic.

    Returns:
        The index of the first kept message (``len(history)`` keeps nothing).
    """
    if not history:
        return 0
    counter = count or estimate_message_tokens
    must_keep_start = len(history) - min(min_recent, len(history))
    used = 0
    split = len(history)
    for i in range(len(history) - 1, -1, -1):
        total = used + counter(history[i])
        if i < must_keep_start and total > budget_tokens:
            break
        used = total
        split = i
    return adjust_split_for_tool_pairs(history, split)


def system_prefix_length(messages: Sequence[Message]) -> int:
    """How many leading messages are System messages (the prefix truncation never drops)."""
    for i, msg in enumerate(messages):
        if role_of(msg) != "system":
            return i
    return len(messages)


@dataclass
class TruncationResult:
    """What `truncate` sent and why.

    Attributes:
        messages: The request messages after previews, truncation and the dangling-call patch.
        available: ``max_context - max_output - tool tokens`` (each step saturating at 0).
        total_tokens: The estimate of all messages after previews, before truncation.
        system_prefix: How many leading System messages were protected.
        history_budget: ``available`` minus the system prefix (saturating); None under budget.
        dropped: History messages removed (0 under budget).
        truncated: True when the request was over budget and went through the split.
    """

    messages: list[Message]
    available: int
    total_tokens: int
    system_prefix: int = 0
    history_budget: int | None = None
    dropped: int = 0
    truncated: bool = False


def truncate(messages: Sequence[Message], policy: ContextWindowPolicy,
             tools: Sequence[Mapping[str, object]] | None = None, *,
             count: MessageCounter | None = None,
             artifacts: ArtifactCompactionConfig | None = _DEFAULT_ARTIFACTS,
             patch_under_budget: bool = False) -> TruncationResult:
    """awaken's request transform: previews, then drop-oldest truncation when over budget.

    1. Oversized tool results become previews (`compact_tool_results`), over budget or not.
    2. ``available = max_context_tokens - max_output_tokens - tool tokens``, saturating at 0.
    3. If all messages fit ``available`` they are returned as they are, and (awaken's quirk) the
       dangling-call patch does not run on this path.
    4. Otherwise the leading System messages are kept, the history gets
       ``available - tokens(system prefix)`` (saturating), `find_split_point` with the policy's
       ``min_recent_messages`` cuts it, and unanswered calls get synthetic results. The floor can
       keep the request above the window; nothing reacts to that.

    Pass the policy through `effective_policy` first, as awaken's transform holds the clamped one.

    Args:
        messages: The request: system prompt, thread messages, context injections.
        policy: The (clamped) context-window policy.
        tools: Tool descriptors sent with the request (see `estimate_tool_tokens`).
        count: Per-message counter; None means awaken's heuristic.
        artifacts: Preview settings; None switches previews off.
        patch_under_budget: The fix for the early-return quirk: patch dangling calls on the
            under-budget path too. False reproduces awaken.

    Returns:
        A `TruncationResult`; the input list and its messages are not modified.
    """
    msgs = list(messages) if artifacts is None else compact_tool_results(messages, artifacts)
    available = max(max(policy.max_context_tokens - policy.max_output_tokens, 0)
                    - estimate_tool_tokens(tools), 0)
    total = estimate_tokens(msgs, count)
    if total <= available:
        out = patch_dangling_tool_calls(msgs) if patch_under_budget else msgs
        return TruncationResult(messages=out, available=available, total_tokens=total)
    system_end = system_prefix_length(msgs)
    prefix, history = msgs[:system_end], msgs[system_end:]
    budget = max(available - estimate_tokens(prefix, count), 0)
    split = find_split_point(history, budget, policy.min_recent_messages, count)
    kept = patch_dangling_tool_calls(prefix + history[split:])
    return TruncationResult(messages=kept, available=available, total_tokens=total,
                            system_prefix=system_end, history_budget=budget, dropped=split,
                            truncated=True)
