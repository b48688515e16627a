"""The faithful Python port of awaken's context-window management (a pure library).

awaken (``awakenworks/awaken``, Rust, MIT OR Apache-2.0) trims each request to a budget, turns
oversized tool results into previews, and folds the history before a safe frontier into a rolling
cumulative summary. The reference notes are ``../shared/reference/awaken.md``. Each quirk the
notes flag is reproduced by default; its fix is a keyword option beside it (``frontier_floor``,
``skip_abandoned_calls``, ``single_pass``, ``BackOff``, ``patch_under_budget``, `tiktoken_counter`).

Messages are Goose `Message` objects read through awaken's four roles (see `_view`); System and
internal messages come from `workbench.messages.system_message` / `internal_message`. awaken
keeps two lists apart: the *thread* (what compaction plans over and the trigger estimates; a
stored summary at index 0) and the *request* (agent prompt + thread + injected context; what
`truncate` trims).

Files, smallest first, each mapped to its awaken source (paths under ``crates/``):

* ``_view.py``       <- ``awaken-runtime-contract/src/contract/message.rs``: roles, calls, text.
* ``_policy.py``     <- ``contract/inference.rs`` (policy, mode) and
  ``awaken-runtime/src/context/effective_policy.rs`` (clamp).
* ``_config.py``     <- ``context/plugin/compaction.rs`` (``CompactionConfig``) and
  ``context/transform/compaction.rs`` (``ArtifactCompactionConfig``).
* ``_estimate.py``   <- ``contract/transform.rs``: the byte/4 estimate, tool descriptors.
* ``_tool_pairs.py`` <- ``context/transform/truncation.rs`` (split adjustment) and
  ``contract/transform.rs`` (dangling-call patch).
* ``_previews.py``   <- ``context/transform/compaction.rs``: tool-result previews.
* ``_truncate.py``   <- ``context/transform/mod.rs`` and ``context/transform/truncation.rs``.
* ``_boundary.py``   <- ``context/compaction.rs``: ``find_compaction_boundary``.
* ``_transcript.py`` <- ``context/summarizer.rs`` (transcript, previous summary) and
  ``context/compaction.rs`` (summary message, load trim).
* ``_plan.py``       <- ``context/compaction.rs`` (plan, keep suffix, swap) and
  ``loop_runner/step.rs`` (trigger).
* ``_savings.py``    <- ``context/compaction.rs`` and ``loop_runner/compaction.rs``: ppm gate.
* ``_summary.py``    <- ``context/summarizer.rs``: ``DefaultSummarizer``.
* ``_round.py``      <- ``loop_runner/compaction.rs`` + ``try_consume_compaction_event``: one pass.
* ``_fold.py``       <- ``contract/message.rs`` (durable fold), ``loop_runner/checkpoint.rs``
  (marks) and ``strip_unpaired_tool_calls_from_view``: the committed view on load.
"""

from workbench.strategies.awaken._boundary import abandoned_call_ids, find_compaction_boundary
from workbench.strategies.awaken._config import (
    DEFAULT_SUMMARIZER_SYSTEM_PROMPT,
    DEFAULT_SUMMARIZER_USER_PROMPT,
    ArtifactCompactionConfig,
    CompactionConfig,
    CompactionExecutionMode,
    CompactionRawRetention,
)
from workbench.strategies.awaken._estimate import (
    MessageCounter,
    content_chars,
    estimate_message_tokens,
    estimate_tokens,
    estimate_tool_tokens,
    memo_counter,
    tiktoken_counter,
)
from workbench.strategies.awaken._fold import (
    COMPACTION_MARK_KEY,
    CompactionMark,
    compaction_mark,
    effective_committed_view,
    effective_messages,
    stamp_compaction_mark,
    strip_unpaired_tool_calls,
    with_compaction_mark,
)
from workbench.strategies.awaken._plan import (
    MIN_COMPACTION_GAIN_TOKENS,
    AppliedCompaction,
    CompactionPlan,
    apply_summary,
    compaction_keep_suffix,
    ensure_ids,
    latest_user_suffix,
    plan_compaction,
    should_compact,
)
from workbench.strategies.awaken._policy import (
    ContextCompactionMode,
    ContextWindowPolicy,
    effective_policy,
)
from workbench.strategies.awaken._previews import (
    PREVIEW_MARKER,
    compact_artifact,
    compact_tool_results,
)
from workbench.strategies.awaken._round import BackOff, CompactionOutcome, compact_once
from workbench.strategies.awaken._savings import (
    SKIP_REASON_MIN_SAVINGS_RATIO,
    SavingsCheck,
    check_savings,
    compaction_savings_ratio_ppm,
    min_savings_ratio_ppm,
    ratio_to_ppm,
    summary_message_tokens,
)
from workbench.strategies.awaken._summary import (
    CumulativeSummary,
    SummarizationError,
    build_summary_prompt,
    summarize_cumulative,
)
from workbench.strategies.awaken._tool_pairs import (
    INTERRUPTED_TOOL_RESULT_TEXT,
    adjust_split_for_tool_pairs,
    patch_dangling_tool_calls,
)
from workbench.strategies.awaken._transcript import (
    SUMMARY_CLOSE_TAG,
    SUMMARY_OPEN_TAG,
    extract_previous_summary,
    is_summary_message,
    render_transcript,
    summary_message,
    trim_to_compaction_boundary,
)
from workbench.strategies.awaken._truncate import (
    TruncationResult,
    find_split_point,
    system_prefix_length,
    truncate,
)
from workbench.strategies.awaken._view import role_of

__all__ = [
    "COMPACTION_MARK_KEY", "DEFAULT_SUMMARIZER_SYSTEM_PROMPT", "DEFAULT_SUMMARIZER_USER_PROMPT",
    "INTERRUPTED_TOOL_RESULT_TEXT", "MIN_COMPACTION_GAIN_TOKENS", "PREVIEW_MARKER",
    "SKIP_REASON_MIN_SAVINGS_RATIO", "SUMMARY_CLOSE_TAG", "SUMMARY_OPEN_TAG",
    "AppliedCompaction", "ArtifactCompactionConfig", "BackOff", "CompactionConfig",
    "CompactionMark",
    "CompactionExecutionMode", "CompactionOutcome", "CompactionPlan", "CompactionRawRetention",
    "ContextCompactionMode", "ContextWindowPolicy", "CumulativeSummary", "MessageCounter",
    "SavingsCheck", "SummarizationError", "TruncationResult",
    "abandoned_call_ids", "adjust_split_for_tool_pairs", "apply_summary", "build_summary_prompt",
    "check_savings", "compact_artifact", "compact_once", "compact_tool_results",
    "compaction_keep_suffix", "compaction_mark", "effective_committed_view", "effective_messages", "compaction_savings_ratio_ppm", "content_chars", "effective_policy",
    "ensure_ids", "estimate_message_tokens", "estimate_tokens", "estimate_tool_tokens",
    "extract_previous_summary", "find_compaction_boundary", "find_split_point",
    "is_summary_message", "latest_user_suffix", "memo_counter", "min_savings_ratio_ppm",
    "patch_dangling_tool_calls", "plan_compaction", "ratio_to_ppm", "render_transcript",
    "role_of", "should_compact", "stamp_compaction_mark", "strip_unpaired_tool_calls", "summarize_cumulative", "summary_message",
    "summary_message_tokens", "system_prefix_length", "tiktoken_counter",
    "trim_to_compaction_boundary", "truncate", "with_compaction_mark",
]
