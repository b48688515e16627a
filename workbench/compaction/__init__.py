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

The names load lazily (PEP 562): the render process imports only the sandbox's own modules
(``_sandbox_env`` and its limits), not the port, pydantic and the messages it never uses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench._lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "json_candidates": "workbench.compaction._candidates",
    "leading_object": "workbench.compaction._candidates",
    "safely_parse_json": "workbench.compaction._candidates",
    "CollectedOutput": "workbench.compaction._compact",
    "CompactionInput": "workbench.compaction._compact",
    "CompactionOutput": "workbench.compaction._compact",
    "MessagesInput": "workbench.compaction._compact",
    "as_compaction_input": "workbench.compaction._compact",
    "compact": "workbench.compaction._compact",
    "EMPTY_MESSAGE": "workbench.compaction._format",
    "TranscriptStyle": "workbench.compaction._format",
    "format_content_item": "workbench.compaction._format",
    "format_message_for_compacting": "workbench.compaction._format",
    "format_transcript": "workbench.compaction._format",
    "CompactionModel": "workbench.compaction._model",
    "Usage": "workbench.compaction._model",
    "CompactingProvider": "workbench.compaction._provider",
    "FileActivity": "workbench.compaction._structured",
    "ParseOutcome": "workbench.compaction._structured",
    "ParseReason": "workbench.compaction._structured",
    "StructuredSummary": "workbench.compaction._structured",
    "stringify": "workbench.compaction._structured",
    "ELIDED_TOOL_RESPONSE_TEXT": "workbench.compaction._summarize",
    "EXHAUSTED_REMOVAL_ERROR": "workbench.compaction._summarize",
    "NO_TOOL_RESPONSES_ERROR": "workbench.compaction._summarize",
    "REMOVAL_PERCENTAGES": "workbench.compaction._summarize",
    "SUMMARY_REQUEST": "workbench.compaction._summarize",
    "Attempt": "workbench.compaction._summarize",
    "CompactionCallFailed": "workbench.compaction._summarize",
    "CompactionContextExceeded": "workbench.compaction._summarize",
    "Summary": "workbench.compaction._summarize",
    "apply_structured_summary": "workbench.compaction._summarize",
    "elide_tool_responses": "workbench.compaction._summarize",
    "filter_tool_responses": "workbench.compaction._summarize",
    "removal_positions": "workbench.compaction._summarize",
    "summarize": "workbench.compaction._summarize",
    "COMPACTION_SUMMARY_TEMPLATE": "workbench.compaction._templates",
    "COMPACTION_TEMPLATE": "workbench.compaction._templates",
    "RenderLimits": "workbench.compaction._templates",
    "Templates": "workbench.compaction._templates",
    "builtin_template": "workbench.compaction._templates",
    "code_fence": "workbench.compaction._templates",
    "goose_config_dir": "workbench.compaction._templates",
    "render": "workbench.compaction._templates",
    "DEFAULT_COMPACTION_THRESHOLD": "workbench.compaction._threshold",
    "auto_compact_enabled": "workbench.compaction._threshold",
    "display_content": "workbench.compaction._usage_estimate",
    "ensure_usage_tokens": "workbench.compaction._usage_estimate",
}

__getattr__, __dir__ = lazy_exports("workbench.compaction", _EXPORTS, globals())

if TYPE_CHECKING:  # the names as the type checker sees them
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
