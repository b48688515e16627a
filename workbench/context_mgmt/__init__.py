"""Goose's session-side compaction (``crates/goose/src/context_mgmt/mod.rs``).

Layers, smallest first: `_threshold_config` (when to compact: the threshold as Goose's config
parses it, the strict ``>`` check, the tool-pair cutoff) and `_compact_messages` (how a session is
rewritten: archived originals, summary, continuation, replayed prompt, carried turn context).
"""

from workbench.context_mgmt._compact_messages import (
    CONVERSATION_CONTINUATION_TEXT,
    MANUAL_COMPACT_CONTINUATION_TEXT,
    TOOL_LOOP_CONTINUATION_TEXT,
    CompactionResult,
    compact_messages,
    summarizer_input,
)
from workbench.context_mgmt._threshold_config import (
    THRESHOLD_ENV,
    check_if_compaction_needed,
    compute_tool_call_cutoff,
    threshold_from_env,
    tool_ids_to_summarize,
)

__all__ = [
    "CONVERSATION_CONTINUATION_TEXT",
    "MANUAL_COMPACT_CONTINUATION_TEXT",
    "THRESHOLD_ENV",
    "TOOL_LOOP_CONTINUATION_TEXT",
    "CompactionResult",
    "check_if_compaction_needed",
    "compact_messages",
    "compute_tool_call_cutoff",
    "summarizer_input",
    "threshold_from_env",
    "tool_ids_to_summarize",
]
