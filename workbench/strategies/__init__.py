"""Whole-history compaction strategies beside Goose's summary, and whole-session replay.

Layers, smallest first:

- `_base`: the `Strategy` interface (`CompactionRequest` in, `StrategyResult` out).
- `_registry`: ``@strategy("name")``, `get_strategy`, `strategy_names`.
- built-ins, one file each: ``goose`` (`_goose`, Goose's ``compact_messages``), ``none``
  (`_none`), ``mask`` (`_mask`, observation masking), ``truncate`` (`_truncate`, truncation
  only), ``reference`` (`_reference`, the recorded agent's own summary), ``awaken``
  (`_awaken`, the adapter over the faithful port in `workbench.strategies.awaken`).
- the agents' policies, one file each, on what they share (`_policy`: token amounts, prompts,
  the summariser call): ``claude-code`` (`_claude_code`), ``anthropic-clear-tool-uses``
  (`_clear_tool_uses`), ``codex`` (`_codex`), ``gemini-cli`` (`_gemini_cli`), ``opencode``
  (`_opencode`), ``aider`` (`_aider`), ``langchain`` (`_langchain`), ``sliding-window``
  (`_sliding_window`), and the provider-side ``anthropic-server-compaction``
  (`_anthropic_server`) and ``openai-responses-compact`` (`_openai_compact`) on
  `_provider_side` (``n/a`` without a live model of their provider).
- `_replay`: `replay_session` walks a recorded session turn by turn under a strategy
  (`_replay_result`: what it records; `_replay_probes`: what each round measures);
  `_detectors`: the failures users report and the survival curve (`_survival_plot` draws
  it); `_replay_table` turns `ReplayResult` objects into a table and a plot.
"""

from workbench.strategies._aider import AiderSettings, AiderStrategy
from workbench.strategies._anthropic_server import (
    AnthropicServerCompaction,
    AnthropicServerSettings,
)
from workbench.strategies._awaken import AwakenSettings, AwakenStrategy
from workbench.strategies._base import (
    CompactionRequest,
    NoSettings,
    Strategy,
    StrategyResult,
    render_context,
)
from workbench.strategies._claude_code import ClaudeCodeSettings, ClaudeCodeStrategy
from workbench.strategies._clear_tool_uses import (
    ClearToolUses,
    ClearToolUsesSettings,
    clear_tool_uses,
)
from workbench.strategies._codex import CodexSettings, CodexStrategy
from workbench.strategies._detectors import (
    DETECTOR_COLUMNS,
    RETRIGGER_TURNS,
    cliff,
    detectors,
    survival,
    survival_curve,
    survival_frame,
)
from workbench.strategies._gemini_cli import GeminiCliSettings, GeminiCliStrategy
from workbench.strategies._goose import GooseStrategy
from workbench.strategies._langchain import LangChainSettings, LangChainStrategy
from workbench.strategies._mask import (
    MASK_PLACEHOLDER,
    MaskSettings,
    ObservationMasking,
    mask_observations,
)
from workbench.strategies._none import NoCompaction
from workbench.strategies._openai_compact import OpenAIResponsesCompact, OpenAIResponsesSettings
from workbench.strategies._opencode import OpenCodeSettings, OpenCodeStrategy
from workbench.strategies._policy import TokenAmount, tokens_of
from workbench.strategies._reference import RecordedSummary, ReferenceSettings, reference_summary
from workbench.strategies._registry import (
    STRATEGIES,
    get_strategy,
    strategy,
    strategy_class,
    strategy_names,
)
from workbench.strategies._replay import (
    CompactionRound,
    ReplayResult,
    TurnRow,
    replay_session,
    replay_session_async,
    trigger_for,
)
from workbench.strategies._replay_table import (
    detector_table,
    plot_replay,
    replay_frame,
    replay_ranking,
    replay_table,
    threshold_label,
)
from workbench.strategies._sliding_window import SlidingWindowSettings, SlidingWindowStrategy
from workbench.strategies._survival_plot import plot_survival
from workbench.strategies._truncate import TruncateSettings, Truncation, truncate_history

__all__ = [
    "DETECTOR_COLUMNS",
    "MASK_PLACEHOLDER",
    "POLICIES",
    "RETRIGGER_TURNS",
    "STRATEGIES",
    "AiderSettings",
    "AiderStrategy",
    "AnthropicServerCompaction",
    "AnthropicServerSettings",
    "AwakenSettings",
    "AwakenStrategy",
    "ClaudeCodeSettings",
    "ClaudeCodeStrategy",
    "ClearToolUses",
    "ClearToolUsesSettings",
    "CodexSettings",
    "CodexStrategy",
    "CompactionRequest",
    "CompactionRound",
    "GeminiCliSettings",
    "GeminiCliStrategy",
    "GooseStrategy",
    "LangChainSettings",
    "LangChainStrategy",
    "MaskSettings",
    "NoCompaction",
    "NoSettings",
    "ObservationMasking",
    "OpenAIResponsesCompact",
    "OpenAIResponsesSettings",
    "OpenCodeSettings",
    "OpenCodeStrategy",
    "RecordedSummary",
    "ReferenceSettings",
    "ReplayResult",
    "SlidingWindowSettings",
    "SlidingWindowStrategy",
    "Strategy",
    "StrategyResult",
    "TokenAmount",
    "TruncateSettings",
    "Truncation",
    "TurnRow",
    "clear_tool_uses",
    "cliff",
    "detector_table",
    "detectors",
    "get_strategy",
    "mask_observations",
    "plot_replay",
    "plot_survival",
    "reference_summary",
    "render_context",
    "replay_frame",
    "replay_ranking",
    "replay_session",
    "replay_session_async",
    "replay_table",
    "strategy",
    "strategy_class",
    "strategy_names",
    "survival",
    "survival_curve",
    "survival_frame",
    "threshold_label",
    "tokens_of",
    "trigger_for",
    "truncate_history",
]

POLICIES: tuple[str, ...] = ("claude-code", "anthropic-clear-tool-uses", "codex", "gemini-cli",
                             "opencode", "aider", "langchain", "sliding-window",
                             "anthropic-server-compaction", "openai-responses-compact")
"""The agents' compaction policies (issue 35), in the order tables list them."""
