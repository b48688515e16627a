"""Whole-history compaction strategies beside Goose's summary, and whole-session replay.

Layers, smallest first:

- `_base`: the `Strategy` interface (`CompactionRequest` in, `StrategyResult` out).
- `_registry`: ``@strategy("name")``, `get_strategy`, `strategy_names`.
- built-ins, one file each: ``goose`` (`_goose`, Goose's ``compact_messages``), ``none``
  (`_none`), ``mask`` (`_mask`, observation masking), ``truncate`` (`_truncate`, truncation
  only), ``reference`` (`_reference`, the recorded agent's own summary), ``awaken``
  (`_awaken`, the adapter over the faithful port in `workbench.strategies.awaken`).
- `_replay`: `replay_session` walks a recorded session turn by turn under a strategy;
  `_replay_table` turns `ReplayResult` objects into a table and a plot.
"""

from workbench.strategies._awaken import AwakenSettings, AwakenStrategy
from workbench.strategies._base import (
    CompactionRequest,
    NoSettings,
    Strategy,
    StrategyResult,
    render_context,
)
from workbench.strategies._goose import GooseStrategy
from workbench.strategies._mask import (
    MASK_PLACEHOLDER,
    MaskSettings,
    ObservationMasking,
    mask_observations,
)
from workbench.strategies._none import NoCompaction
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
)
from workbench.strategies._replay_table import (
    plot_replay,
    replay_frame,
    replay_ranking,
    replay_table,
)
from workbench.strategies._truncate import TruncateSettings, Truncation, truncate_history

__all__ = [
    "MASK_PLACEHOLDER",
    "STRATEGIES",
    "AwakenSettings",
    "AwakenStrategy",
    "CompactionRequest",
    "CompactionRound",
    "GooseStrategy",
    "MaskSettings",
    "NoCompaction",
    "NoSettings",
    "ObservationMasking",
    "RecordedSummary",
    "ReferenceSettings",
    "ReplayResult",
    "Strategy",
    "StrategyResult",
    "TruncateSettings",
    "Truncation",
    "TurnRow",
    "get_strategy",
    "mask_observations",
    "plot_replay",
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
    "truncate_history",
]
