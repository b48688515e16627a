"""Goose's session-side compaction (``crates/goose/src/context_mgmt/mod.rs``).

Layers, smallest first: `_threshold_config` (when to compact: the threshold as Goose's config
parses it, the strict ``>`` check, the tool-pair cutoff) and `_compact_messages` (how a session is
rewritten: archived originals, summary, continuation, replayed prompt, carried turn context) and
`_tool_pairs` (the oldest tool request/response pairs replaced by short agent-only notes).
"""

from workbench.context_mgmt._compact_messages import (
    CONVERSATION_CONTINUATION_TEXT,
    MANUAL_COMPACT_CONTINUATION_TEXT,
    TOOL_LOOP_CONTINUATION_TEXT,
    CompactionResult,
    compact_messages,
    compacted_conversation,
    summarizer_input,
)
from workbench.context_mgmt._threshold_config import (
    THRESHOLD_ENV,
    check_if_compaction_needed,
    compute_tool_call_cutoff,
    threshold_from_env,
    tool_ids_to_summarize,
)
from workbench.context_mgmt._tool_pairs import (
    NO_AGENT_VISIBLE_PAIR_ERROR,
    TOOL_PAIR_SUMMARY_PROMPT,
    maybe_summarize_tool_pairs,
    summarize_tool_pair,
    tool_pair_groups,
)

__all__ = [
    "CONVERSATION_CONTINUATION_TEXT",
    "MANUAL_COMPACT_CONTINUATION_TEXT",
    "NO_AGENT_VISIBLE_PAIR_ERROR",
    "THRESHOLD_ENV",
    "TOOL_LOOP_CONTINUATION_TEXT",
    "TOOL_PAIR_SUMMARY_PROMPT",
    "CompactionResult",
    "check_if_compaction_needed",
    "compact_messages",
    "compacted_conversation",
    "compute_tool_call_cutoff",
    "maybe_summarize_tool_pairs",
    "summarize_tool_pair",
    "summarizer_input",
    "threshold_from_env",
    "tool_ids_to_summarize",
    "tool_pair_groups",
]
