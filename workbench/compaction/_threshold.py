"""The auto-compaction threshold switch (the crate's ``lib.rs`` constants)."""

from __future__ import annotations

DEFAULT_COMPACTION_THRESHOLD = 0.8
"""Default fraction of the context window at which callers auto-compact."""


def auto_compact_enabled(threshold: float) -> bool:
    """Whether a threshold turns auto-compaction on.

    Only ``0.0 < threshold < 1.0`` is on. ``0.0`` is the documented off switch; ``1.0`` and above
    are off too, so "100%" never means "compact when the window is already full"; negative
    values and NaN are off.

    Args:
        threshold: Fraction of the context window.

    Returns:
        True when auto-compaction should run at this threshold.
    """
    return 0.0 < threshold < 1.0
