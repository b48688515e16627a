"""The faithful Python port of Goose's ``goose-context-management`` crate.

Layers, smallest first, each file mapped to its Rust counterpart:

* ``_format.py``     <- ``format.rs``: messages rendered as the transcript the summarizer reads.
* ``_model.py``      <- ``model.rs``: `Usage` and the one-method `CompactionModel` protocol.
* ``_templates.py``  <- ``templates.rs`` (+ goose's ``prompt_template`` override lookup): built-in
  templates, `Templates`, and the one sandboxed Jinja renderer (bounded by
  ``_limits.py``: `RenderLimits`).
* ``_candidates.py`` <- the extraction half of ``structured.rs`` (``json_candidates``,
  ``leading_object``) and goose's ``safely_parse_json``.
* ``_structured.py`` <- ``structured.rs``: `StructuredSummary`, lenient reading, rendering.
* ``_summarize.py``  <- ``summarize.rs``: the removal ladder around one model call.
* ``_compact.py``    <- ``lib.rs`` ``compact`` and its input/output traits.
* ``_provider.py``   <- ``provider.rs``: compact-and-retry on context overflow.
* ``_threshold.py``  <- goose ``context_mgmt``: when to compact.
"""

from workbench.compaction._candidates import json_candidates, leading_object, safely_parse_json
from workbench.compaction._compact import (
    CollectedOutput,
    CompactionInput,
    CompactionOutput,
    MessagesInput,
    as_compaction_input,
    compact,
)
from workbench.compaction._format import (
    EMPTY_MESSAGE,
    TranscriptStyle,
    format_content_item,
    format_message_for_compacting,
    format_transcript,
)
from workbench.compaction._model import CompactionModel, Usage
from workbench.compaction._provider import CompactingProvider
from workbench.compaction._structured import (
    FileActivity,
    ParseOutcome,
    ParseReason,
    StructuredSummary,
    stringify,
)
from workbench.compaction._summarize import (
    ELIDED_TOOL_RESPONSE_TEXT,
    EXHAUSTED_REMOVAL_ERROR,
    NO_TOOL_RESPONSES_ERROR,
    REMOVAL_PERCENTAGES,
    SUMMARY_REQUEST,
    Attempt,
    CompactionCallFailed,
    CompactionContextExceeded,
    Summary,
    apply_structured_summary,
    elide_tool_responses,
    filter_tool_responses,
    removal_positions,
    summarize,
)
from workbench.compaction._templates import (
    COMPACTION_SUMMARY_TEMPLATE,
    COMPACTION_TEMPLATE,
    RenderLimits,
    Templates,
    builtin_template,
    code_fence,
    goose_config_dir,
    render,
)
from workbench.compaction._threshold import DEFAULT_COMPACTION_THRESHOLD, auto_compact_enabled
from workbench.compaction._usage_estimate import display_content, ensure_usage_tokens

__all__ = [
    "ELIDED_TOOL_RESPONSE_TEXT",
    "EXHAUSTED_REMOVAL_ERROR",
    "NO_TOOL_RESPONSES_ERROR",
    "REMOVAL_PERCENTAGES",
    "SUMMARY_REQUEST",
    "Attempt",
    "CompactionCallFailed",
    "CompactionContextExceeded",
    "Summary",
    "apply_structured_summary",
    "elide_tool_responses",
    "filter_tool_responses",
    "removal_positions",
    "summarize",
    "display_content",
    "ensure_usage_tokens",
    "CollectedOutput",
    "CompactionInput",
    "CompactionOutput",
    "MessagesInput",
    "as_compaction_input",
    "compact",
    "CompactingProvider",
    "DEFAULT_COMPACTION_THRESHOLD",
    "auto_compact_enabled",
    "COMPACTION_SUMMARY_TEMPLATE",
    "COMPACTION_TEMPLATE",
    "CompactionModel",
    "EMPTY_MESSAGE",
    "FileActivity",
    "ParseOutcome",
    "ParseReason",
    "RenderLimits",
    "StructuredSummary",
    "Templates",
    "TranscriptStyle",
    "Usage",
    "builtin_template",
    "code_fence",
    "format_content_item",
    "format_message_for_compacting",
    "format_transcript",
    "goose_config_dir",
    "json_candidates",
    "leading_object",
    "render",
    "safely_parse_json",
    "stringify",
]
