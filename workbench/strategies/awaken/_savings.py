"""awaken's ``min_savings_ratio`` gate, computed in parts per million.

Mirrors ``compaction_savings_ratio_ppm``, ``ratio_to_ppm`` and ``summary_message_tokens``
(``context/compaction.rs``) and the check in the background task (``loop_runner/compaction.rs``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from workbench.strategies.awaken._config import CompactionConfig
from workbench.strategies.awaken._estimate import MessageCounter, estimate_message_tokens
from workbench.strategies.awaken._transcript import summary_message

PPM = 1_000_000
SKIP_REASON_MIN_SAVINGS_RATIO = "min_savings_ratio"


def ratio_to_ppm(ratio: float) -> int:
    """A ratio as parts per million: clamped to [0, 1], scaled, rounded half away from zero.

    A ratio that is not finite gives 0.
    """
    if not math.isfinite(ratio):
        return 0
    return math.floor(min(max(ratio, 0.0), 1.0) * PPM + 0.5)


def compaction_savings_ratio_ppm(pre_tokens: int, post_tokens: int) -> int:
    """``(pre - post) / pre`` in ppm; 0 when ``pre`` is 0 or the summary is not smaller."""
    if pre_tokens == 0 or post_tokens >= pre_tokens:
        return 0
    return ratio_to_ppm((pre_tokens - post_tokens) / pre_tokens)


def min_savings_ratio_ppm(config: CompactionConfig) -> int:
    """The configured ``min_savings_ratio`` in ppm (clamped to [0, 1] on the way)."""
    return ratio_to_ppm(config.min_savings_ratio)


def summary_message_tokens(summary: str, count: MessageCounter | None = None) -> int:
    """The estimate of the stored summary message: tags and the 4-token overhead included."""
    return (count or estimate_message_tokens)(summary_message(summary))


@dataclass(frozen=True)
class SavingsCheck:
    """The gate's verdict on one summary.

    Attributes:
        pre_tokens: The estimate of the prefix the summary would replace.
        post_tokens: The estimate of the summary message.
        savings_ratio_ppm: ``(pre - post) / pre`` in ppm (0 when it does not shrink).
        min_savings_ratio_ppm: The configured minimum in ppm.
    """

    pre_tokens: int
    post_tokens: int
    savings_ratio_ppm: int
    min_savings_ratio_ppm: int

    @property
    def passed(self) -> bool:
        """True when the summary saves at least the minimum (``savings_ppm >= min_ppm``)."""
        return self.savings_ratio_ppm >= self.min_savings_ratio_ppm

    @property
    def savings_ratio(self) -> float:
        """The savings as a float (for display)."""
        return self.savings_ratio_ppm / PPM

    @property
    def min_savings_ratio(self) -> float:
        """The minimum as a float (for display)."""
        return self.min_savings_ratio_ppm / PPM


def check_savings(pre_tokens: int, summary: str, config: CompactionConfig,
                  count: MessageCounter | None = None) -> SavingsCheck:
    """Run awaken's gate: is the summary message small enough compared with the prefix?"""
    post = summary_message_tokens(summary, count)
    return SavingsCheck(pre_tokens=pre_tokens, post_tokens=post,
                        savings_ratio_ppm=compaction_savings_ratio_ppm(pre_tokens, post),
                        min_savings_ratio_ppm=min_savings_ratio_ppm(config))
