"""When a compaction pass starts, what it summarizes, and how the summary is swapped in.

Mirrors ``plan_compaction`` and ``compaction_keep_suffix`` (``context/compaction.rs``), the
trigger in ``loop_runner/step.rs`` and ``apply_summary``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from workbench.messages import Message, new_message_id
from workbench.strategies.awaken._boundary import find_compaction_boundary
from workbench.strategies.awaken._estimate import (
    MessageCounter,
    estimate_message_tokens,
    estimate_tokens,
)
from workbench.strategies.awaken._policy import ContextCompactionMode, ContextWindowPolicy
from workbench.strategies.awaken._transcript import (
    extract_previous_summary,
    render_transcript,
    summary_message,
)
from workbench.strategies.awaken._view import is_internal, role_of

MIN_COMPACTION_GAIN_TOKENS = 1024
"""Despite awaken's name, a floor on the estimate of the summarized prefix, not on the gain."""


def should_compact(thread: Sequence[Message], policy: ContextWindowPolicy,
                   count: MessageCounter | None = None) -> bool:
    """The trigger: a threshold is set and the thread estimate has reached it.

    The estimate covers the thread messages only (the stored summary included; not the system
    prompt, injected context, tools or the output reservation).
    """
    threshold = policy.autocompact_threshold
    return threshold is not None and estimate_tokens(thread, count) >= threshold


def latest_user_suffix(messages: Sequence[Message]) -> int:
    """Messages from the last non-internal User message to the end, counting it; 0 when none."""
    for i in range(len(messages) - 1, -1, -1):
        msg = messages[i]
        if role_of(msg) == "user" and not is_internal(msg):
            return len(messages) - i
    return 0


def compaction_keep_suffix(messages: Sequence[Message], policy: ContextWindowPolicy, *,
                           frontier_floor: int | None = None) -> int:
    """How many trailing messages a pass keeps raw.

    ``min(len, max(configured, latest_user_suffix))`` where `configured` is
    ``compaction_raw_suffix_messages`` in suffix mode and ``min_recent_messages`` in frontier mode.
    At the defaults (2 and 10) frontier mode therefore keeps more raw than suffix mode, against
    its name and docs (awaken's quirk).

    Args:
        messages: The thread messages.
        policy: The policy.
        frontier_floor: The fix: the raw floor frontier mode uses instead of
            ``min_recent_messages`` (0 compacts through the last safe point before the latest
            user turn, as documented). None reproduces awaken.
    """
    if policy.compaction_mode is ContextCompactionMode.COMPACT_TO_SAFE_FRONTIER:
        configured = policy.min_recent_messages if frontier_floor is None else frontier_floor
    else:
        configured = policy.compaction_raw_suffix_messages
    return min(len(messages), max(configured, latest_user_suffix(messages)))


@dataclass(frozen=True)
class CompactionPlan:
    """A snapshot of what one pass summarizes, taken when it is triggered.

    Attributes:
        transcript: `render_transcript` of ``messages[:boundary_index + 1]``.
        previous_summary: The stored cumulative summary, or None.
        boundary_message_id: Id of the last summarized message; the swap finds it by id.
        boundary_index: Its index when planned (not used by the swap).
        pre_tokens: The estimate of ``messages[:boundary_index + 1]`` (an old summary included).
    """

    transcript: str
    previous_summary: str | None
    boundary_message_id: str
    boundary_index: int
    pre_tokens: int


def plan_compaction(messages: Sequence[Message], policy: ContextWindowPolicy, *,
                    count: MessageCounter | None = None,
                    min_prefix_tokens: int = MIN_COMPACTION_GAIN_TOKENS,
                    frontier_floor: int | None = None,
                    skip_abandoned_calls: bool = False) -> CompactionPlan | None:
    """Decide whether a pass can run now and capture its inputs.

    None when: fewer than 2 messages; fewer than 2 messages before the kept suffix
    (`compaction_keep_suffix`: neither mode ever summarizes the latest real user message or what
    follows it); no safe frontier before the suffix (`find_compaction_boundary`); the boundary
    message has no id; the prefix estimate is below `min_prefix_tokens`; or the transcript of the
    prefix is empty.

    Args:
        messages: The thread messages (no agent prompt; a stored summary at index 0).
        policy: The policy (its mode and floors).
        count: Per-message counter; None means awaken's heuristic.
        min_prefix_tokens: The prefix floor (awaken: 1024).
        frontier_floor: The frontier-mode fix, see `compaction_keep_suffix`.
        skip_abandoned_calls: The frozen-frontier fix, see `find_compaction_boundary`.
    """
    if len(messages) < 2:
        return None
    keep = compaction_keep_suffix(messages, policy, frontier_floor=frontier_floor)
    search_end = len(messages) - keep
    if search_end < 2:
        return None
    boundary = find_compaction_boundary(messages, 0, search_end,
                                        skip_abandoned_calls=skip_abandoned_calls)
    if boundary is None:
        return None
    boundary_id = messages[boundary].id
    if not boundary_id:
        return None
    prefix = messages[:boundary + 1]
    pre_tokens = estimate_tokens(prefix, count)
    if pre_tokens < min_prefix_tokens:
        return None
    transcript = render_transcript(prefix)
    if not transcript:
        return None
    return CompactionPlan(transcript=transcript,
                          previous_summary=extract_previous_summary(messages),
                          boundary_message_id=boundary_id, boundary_index=boundary,
                          pre_tokens=pre_tokens)


@dataclass(frozen=True)
class AppliedCompaction:
    """A swap that happened: where, and the estimates before and after."""

    boundary_index: int
    pre_tokens: int
    post_tokens: int


def apply_summary(messages: Sequence[Message], boundary_message_id: str, summary: str, *,
                  count: MessageCounter | None = None
                  ) -> tuple[list[Message], AppliedCompaction] | None:
    """Swap the head of the list, through the boundary message, for the summary message.

    The boundary is found by id, so messages appended while the summary was written stay after
    it; the old summary at index 0 goes with the head.

    Returns:
        The new list and the figures, or None when the boundary message is gone (a benign skip).
    """
    idx = next((i for i, m in enumerate(messages) if m.id == boundary_message_id), None)
    if idx is None:
        return None
    pre = estimate_tokens(messages[:idx + 1], count)
    new = summary_message(summary)
    post = (count or estimate_message_tokens)(new)
    return [new, *messages[idx + 1:]], AppliedCompaction(idx, pre, post)


def ensure_ids(messages: Sequence[Message]) -> list[Message]:
    """Copies of messages that lack an id, given a fresh one (awaken ids every message)."""
    return [m if m.id else m.copy_with(id=new_message_id()) for m in messages]
